#!/bin/sh
# Builds the tilejit Python module on a host without LLVM (the GPU host), against
# the core library of this kit (made by `ninja tilejit-python-gpu-kit` in a
# TILEJIT_STATIC_LLVM=ON build). Needs g++ >= 12, the Python headers and pybind11
# (the pybind11 package, else the copy inside torch). Usage: build-module.sh [PYTHON]
# PYBIND11_INCLUDE picks other pybind11 headers and TILEJIT_MODULE_CXXFLAGS adds
# compiler flags (tests/e2e/python_import_order.sh builds its variants so).
set -eu
kit=$(cd "$(dirname "$0")" && pwd)
python=${1:-python3}
include=$("$python" -c 'import sysconfig; print(sysconfig.get_paths()["include"])')
if [ ! -f "$include/Python.h" ]; then
  echo "build-module.sh: no Python.h in $include (install the Python headers)" >&2
  exit 1
fi
pybind=${PYBIND11_INCLUDE:-$("$python" -c 'import pybind11; print(pybind11.get_include())' \
  2>/dev/null ||
  "$python" -c 'import os, torch; print(os.path.join(os.path.dirname(torch.__file__), "include"))')}
suffix=$("$python" -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))')
flags="-O2 -std=c++20 -fPIC -fvisibility=hidden -I$kit/include -I$include -I$pybind \
${TILEJIT_MODULE_CXXFLAGS:-}"
objects=""
for src in "$kit"/module/*.cpp; do
  obj="$kit/module/$(basename "$src" .cpp).o"
  rm -f "$obj"
  ${CXX:-g++} $flags -c "$src" -o "$obj" &
  objects="$objects $obj"
done
wait
for obj in $objects; do [ -f "$obj" ] || { echo "build-module.sh: compile failed" >&2; exit 1; }; done
# The module exports PyInit__tilejit alone (module/exports.map), so nothing it
# holds binds for torch's libraries or theirs for it, in either import order.
${CXX:-g++} -shared $objects -L"$kit/tilejit" -ltilejit_python -Wl,-rpath,'$ORIGIN' \
  -Wl,--version-script="$kit/module/exports.map" -o "$kit/tilejit/_tilejit$suffix"
echo "built $kit/tilejit/_tilejit$suffix against pybind11 in $pybind"
