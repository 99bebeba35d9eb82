"""tilejit imported before and after torch, each order in a fresh interpreter
(issue 32: with the GPU kit, importing tilejit first crashed `import torch`).
tests/e2e/python_import_order.sh is the GPU host's diagnostic of the same."""

import os
import subprocess
import sys

import pytest

import tilejit

pytest.importorskip("torch")

# An op runs in each order too, so a library that loads but binds wrongly shows.
_USE = """
x = torch.randn(2, 64, dtype=torch.bfloat16)
q, scale = tilejit.ops.scaled_fp8_quant(x, 0.5)
assert q.shape == (2, 64) and float(scale) == 0.5
print("ok", torch.__version__)
"""


def _run(imports):
    package_parent = os.path.dirname(os.path.dirname(os.path.abspath(tilejit.__file__)))
    env = dict(os.environ, PYTHONPATH=package_parent, PYTHONDONTWRITEBYTECODE="1")
    return subprocess.run([sys.executable, "-X", "faulthandler", "-c", imports + _USE],
                          env=env, capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("imports", ["import tilejit, tilejit.ops\nimport torch\n",
                                     "import torch\nimport tilejit, tilejit.ops\n"],
                         ids=["tilejit-first", "torch-first"])
def test_import_order(imports):
    result = _run(imports)
    assert result.returncode == 0 and result.stdout.startswith("ok"), (
        f"exit status {result.returncode}\n{result.stdout}\n{result.stderr[-4000:]}")
