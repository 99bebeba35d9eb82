#!/usr/bin/env python3
"""Launches every registered kernel once for compute-sanitizer (tests/e2e/sanitize_gpu.sh):
small sizes that still leave partial tiles (masked rows, columns, K steps and tails),
inputs made here with numpy, every output poisoned first and compared element by
element against an f64 reference on the CPU written from docs/numerics.md, so
that only our kernels run under the tool (cupy adds copies, no kernels). A kernel
without a recipe is a failure, so a newly registered kernel cannot go unchecked.

A kernel with variants is compiled once per build name, KERNEL@VARIANT, with the
constants of BUILDS (sanitize_builds.py: the projections' GEMV and tensor-core
tiles, FP8 and bf16; the model kernels at reduced geometry so that racecheck
finishes). The recipes: sanitize_examples.py, sanitize_decode.py,
sanitize_prefill.py; what they share: sanitize_support.py.

Usage:
  sanitize_kernels.py --builds KERNEL...  one line per build: NAME KERNEL [k=v ...]
                                          (a kernel without a recipe: NAME = KERNEL)
  sanitize_kernels.py DIR NAME...         on the GPU: DIR holds NAME.ptx + NAME.json
  sanitize_kernels.py --interpreter NAME...  the same recipes on tilejit's CPU
                                          interpreter (the Python package), no GPU
  sanitize_kernels.py --planted DIR       a planted bug for memcheck to report:
                                          vector_add told n = 2^20 over 16-element buffers
Each recipe prints "RUN NAME" first: the tool's reports name only the kernel's
entry, which the variants of one kernel share.
"""
import sys

import numpy as np

from sanitize_builds import BUILDS
from sanitize_decode import (conv_update, gated_rmsnorm, in_proj_conv, out_proj,
                             quantize_e4m3, ssm_update)
from sanitize_examples import cumsum, gemm_bf16, gemm_e4m3, read_bytes, softmax, vector_add
from sanitize_prefill import conv_prefill, ssd_prefill, ssd_spans
from sanitize_support import Cuda, Interpreter, failures, launch, put, use

RECIPES = {
    "vector_add": vector_add, "softmax": softmax, "cumsum": cumsum, "read_bytes": read_bytes,
    "gemm_bf16": gemm_bf16, "gemm_e4m3": gemm_e4m3, "quantize_e4m3": quantize_e4m3,
    "gated_rmsnorm": gated_rmsnorm, "conv_update": conv_update, "in_proj_conv": in_proj_conv,
    "out_proj": out_proj, "ssm_update": ssm_update, "ssd_prefill": ssd_prefill,
    "ssd_prefill@spans": ssd_spans, "ssd_span_state": ssd_spans, "ssd_state_pass": ssd_spans,
    "conv_prefill": conv_prefill,
}


def print_builds(kernels):
    for kernel in kernels:
        names = [name for name, (k, _) in BUILDS.items() if k == kernel]
        for name in names or [kernel]:  # no recipe: compiled as is, fails when run
            sets = " ".join(f"{k}={v}" for k, v in BUILDS[name][1].items()) if names else ""
            print(f"{name} {kernel} {sets}".rstrip())


def main(argv):
    if argv[0] == "--builds":
        print_builds(argv[1:])
        return 0
    if argv[0] == "--planted":
        use(Cuda(argv[1]))
        x, y, out = (put(np.ones(16, np.float32)) for _ in range(3))
        n = 1 << 20  # megabytes past the ends of the buffers
        print("PLANTED vector_add: n = 2^20 over buffers of 16", flush=True)
        launch("vector_add", (n // 1024,), x, y, out, n)
        return 0
    use(Interpreter(BUILDS) if argv[0] == "--interpreter" else Cuda(argv[0]))
    names = argv[1:]
    for name in names:
        print(f"RUN {name}", flush=True)
        recipe = RECIPES.get(name) or RECIPES.get(BUILDS.get(name, (None,))[0])
        if recipe is None:
            print(f"FAIL {name}: no sanitizer recipe in sanitize_kernels.py", flush=True)
            failures.append(name)
            continue
        recipe(name)
    failed = {f.split(".")[0].split(":")[0] for f in failures}
    print(f"{len(names) - len(failed)} passed, {len(failed)} failed"
          + (f": {' '.join(sorted(failed))}" if failed else ""))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
