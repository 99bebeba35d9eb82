#!/bin/sh
# `pip install --no-build-isolation .` of the source tree into a fresh virtual
# environment that sees the system's packages (Debian's setuptools, wheel,
# numpy; no package index), then imports the installed package from outside
# both trees, before and after torch (each order in a fresh interpreter, an op
# run in each so a library that loads but binds wrongly shows). Usage: pip-install-test.sh PYTHON SOURCE_DIR VENV_DIR
# (TILEJIT_BUILD_DIR names the CMake build the wheel is made from).
set -eu
python=$1 source=$2 venv=$3
rm -rf "$venv"
"$python" -m venv --system-site-packages "$venv"
"$venv/bin/python3" -m pip install --quiet --no-build-isolation --no-index "$source"
cd "$venv"
"$venv/bin/python3" - "$venv" <<'PY'
import os, sys
import tilejit
venv = os.path.realpath(sys.argv[1])
assert os.path.realpath(tilejit.__file__).startswith(venv), tilejit.__file__
print("tilejit", tilejit.__version__, "from", os.path.dirname(tilejit.__file__))
assert [k.name for k in tilejit.kernels], "the installed package lists no kernels"
PY
"$venv/bin/python3" -c "import tilejit; print(tilejit.__version__)"
use='x = torch.randn(2, 64, dtype=torch.bfloat16)
q, scale = tilejit.ops.scaled_fp8_quant(x, 0.5)
assert q.shape == (2, 64) and float(scale) == 0.5
print("ok:", order)'
"$venv/bin/python3" -X faulthandler -c "order = 'tilejit first'
import tilejit, tilejit.ops
import torch
$use"
"$venv/bin/python3" -X faulthandler -c "order = 'torch first'
import torch
import tilejit, tilejit.ops
$use"
