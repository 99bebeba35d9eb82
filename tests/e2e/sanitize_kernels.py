#!/usr/bin/env python3
"""Launches each named kernel once for compute-sanitizer (tests/e2e/sanitize_gpu.sh):
small sizes that still leave partial tiles (masked rows, columns and tails), data
from torch, references on the CPU in f64 so that only our kernels run under the
tool (besides torch's fill and copy kernels). A kernel without a recipe here is a
failure, so a newly registered kernel cannot go unchecked silently.

Usage: sanitize_kernels.py DIR KERNEL...   (DIR holds KERNEL.ptx + KERNEL.json;
the GEMMs compiled with n = k = 512)
"""
import json
import math
import sys
from pathlib import Path

import cupy as cp
import numpy as np
import torch

DIR = Path(sys.argv[1])
GEMM_NK = 512
dev = "cuda"
torch.manual_seed(0)
failures = []


def launch(name, grid, args):
    meta = json.loads((DIR / f"{name}.json").read_text())
    fn = cp.RawModule(path=str(DIR / f"{name}.ptx")).get_function(meta["entry"])
    if meta["shared_bytes"] > 48 * 1024:
        fn.max_dynamic_shared_size_bytes = meta["shared_bytes"]
    conv = []
    for p, a in zip(meta["params"], args, strict=True):
        conv.append({"ptr": lambda v: np.uint64(v.data_ptr()), "i32": np.int32,
                     "f32": np.float32}[p["kind"]](a))
    grid = tuple(grid) + (1,) * (3 - len(grid))
    fn(grid, (meta["threads"], 1, 1), tuple(conv), shared_mem=meta["shared_bytes"])
    torch.cuda.synchronize()


def check(name, got, want, atol, rtol):
    got, want = got.cpu().double(), want.cpu().double()
    bad = int((~((got - want).abs() <= atol + rtol * want.abs())).sum())
    print(f"{'PASS' if bad == 0 else 'FAIL'} {name}: {got.numel()} elements, {bad} "
          f"outside atol={atol} rtol={rtol}", flush=True)
    if bad:
        failures.append(name)


def nan(shape, dtype):
    return torch.full(shape, float("nan"), dtype=dtype, device=dev)


def vector_add():
    n = 5000  # 4 full programs of 1024 and a masked tail of 904
    x, y, out = torch.randn(n, device=dev), torch.randn(n, device=dev), nan((n,), torch.float32)
    launch("vector_add", (math.ceil(n / 1024),), (x, y, out, n))
    check("vector_add", out, x.cpu() + y.cpu(), 0.0, 0.0)


def softmax():
    rows, cols = 7, 1000  # 1000 of 1024 columns
    x, out = torch.randn(rows, cols, device=dev) * 4, nan((rows, cols), torch.float32)
    launch("softmax", (rows,), (x, out, rows, cols))
    check("softmax", out, torch.softmax(x.cpu().double(), 1), 1e-7, 1e-5)


def cumsum():
    rows, cols = 5, 100  # 100 of 128 columns
    x, out = torch.randn(rows, cols, device=dev), nan((rows, cols), torch.float32)
    launch("cumsum", (rows,), (x, out, rows, cols))
    check("cumsum", out, torch.cumsum(x.cpu().double(), 1), 1e-5, 1e-5)


def gated_rmsnorm():
    rows, width, group, eps = 3, 4096, 512, 1e-5
    y = torch.randn(rows, width, device=dev).bfloat16()
    z = torch.randn(rows, width, device=dev).bfloat16()
    w = (torch.rand(width, device=dev) + 0.5).bfloat16()
    out = nan((rows, width), torch.bfloat16)
    launch("gated_rmsnorm", (rows, width // group), (y, z, w, out, rows, eps))
    v = y.cpu().double() * torch.nn.functional.silu(z.cpu().double())
    vg = v.view(rows, width // group, group)
    r = torch.rsqrt(vg.pow(2).mean(-1, keepdim=True) + eps)
    ref = (w.cpu().double() * (vg * r).view(rows, width).bfloat16().double()).bfloat16()
    check("gated_rmsnorm", out, ref, 0.0, 2.0 ** -7)


def conv_update():
    batch, channels, slots = 3, 6144, 5
    idx = torch.tensor([2, -1, 4], dtype=torch.int32, device=dev)  # a padding row
    xt = torch.randn(batch, channels, device=dev).bfloat16()
    state = torch.randn(slots, channels, 3, device=dev).bfloat16()
    before = state.cpu()
    w = (torch.randn(channels, 4, device=dev) * 0.5).bfloat16()
    bias = (torch.randn(channels, device=dev) * 0.1).bfloat16()
    out = nan((batch, channels), torch.bfloat16)
    launch("conv_update", (batch, channels // 256), (xt, state, idx, w, bias, out))
    ref_out = torch.zeros(batch, channels, dtype=torch.float64)
    ref_state = before.clone()
    for b, s in enumerate(idx.tolist()):
        if s < 0:
            continue
        taps = torch.cat([before[s].double(), xt[b].cpu().double().unsqueeze(1)], 1)
        ref_out[b] = torch.nn.functional.silu(bias.cpu().double() + (w.cpu().double() * taps).sum(1))
        ref_state[s] = torch.cat([before[s][:, 1:], xt[b].cpu().unsqueeze(1)], 1)
    check("conv_update.out", out, ref_out.bfloat16(), 0.0, 2.0 ** -7)
    check("conv_update.state", state, ref_state, 0.0, 0.0)


def gemm_bf16():
    m = 200  # one full 128-row tile and a masked one of 72
    a = torch.randn(m, GEMM_NK, device=dev).bfloat16()
    b = torch.randn(GEMM_NK, GEMM_NK, device=dev).bfloat16()
    c = nan((m, GEMM_NK), torch.bfloat16)
    launch("gemm_bf16", (math.ceil(m / 128), GEMM_NK // 128), (a, b, c, m))
    check("gemm_bf16", c, (a.cpu().double() @ b.cpu().double()).bfloat16(), 1e-2, 2.0 ** -7)


def gemm_e4m3():
    m, scale = 200, 0.01
    a = (torch.randn(m, GEMM_NK, device=dev) * 2).to(torch.float8_e4m3fn)
    w = (torch.randn(GEMM_NK, GEMM_NK, device=dev) * 2).to(torch.float8_e4m3fn)
    c = nan((m, GEMM_NK), torch.bfloat16)
    launch("gemm_e4m3", (math.ceil(m / 128), GEMM_NK // 128), (a, w, c, m, scale))
    ref = ((a.cpu().double() @ w.cpu().double().T) * scale).bfloat16()
    check("gemm_e4m3", c, ref, 1e-2, 2.0 ** -7)


RECIPES = {f.__name__: f for f in (vector_add, softmax, cumsum, gated_rmsnorm, conv_update,
                                   gemm_bf16, gemm_e4m3)}
for kernel in sys.argv[2:]:
    if kernel not in RECIPES:
        print(f"FAIL {kernel}: no sanitizer recipe in sanitize_kernels.py", flush=True)
        failures.append(kernel)
        continue
    RECIPES[kernel]()
print(f"{len(sys.argv) - 2 - len(set(f.split('.')[0] for f in failures))} kernels passed, "
      f"failures: {failures or 'none'}")
sys.exit(1 if failures else 0)
