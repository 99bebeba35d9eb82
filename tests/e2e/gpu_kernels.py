#!/usr/bin/env python3
"""GPU check of the registered kernels: PTX compiled by `tilejit compile` (with
--meta) is loaded by the driver (through CuPy) and launched on torch tensors;
each kernel is compared with a torch reference on sizes that are not multiples
of its tile, element counts asserted. `--perf` also times the GEMMs against
torch.matmul / torch._scaled_mm measured in the same run.

Usage: gpu_kernels.py DIR [--perf]   (DIR holds KERNEL.ptx + KERNEL.json)
"""
import json
import math
import statistics
import sys
from pathlib import Path

import cupy as cp
import numpy as np
import torch

DIR = Path(sys.argv[1])
PERF = "--perf" in sys.argv
torch.manual_seed(0)
dev = "cuda"
results = []


def load(name):
    meta = json.loads((DIR / f"{name}.json").read_text())
    module = cp.RawModule(path=str(DIR / f"{name}.ptx"))
    fn = module.get_function(meta["entry"])
    if meta["shared_bytes"] > 48 * 1024:
        fn.max_dynamic_shared_size_bytes = meta["shared_bytes"]
    return fn, meta


def launch(name, grid, args):
    fn, meta = load(name)
    conv = []
    for (p, a) in zip(meta["params"], args):
        kind = p["kind"]
        if kind == "ptr":
            conv.append(np.uint64(a.data_ptr()))
        elif kind == "i32":
            conv.append(np.int32(a))
        elif kind == "f32":
            conv.append(np.float32(a))
        else:
            raise ValueError(kind)
    grid = tuple(grid) + (1,) * (3 - len(grid))
    fn(grid, (meta["threads"], 1, 1), tuple(conv), shared_mem=meta["shared_bytes"])
    return fn, meta, grid, tuple(conv)


def check(name, got, want, atol, rtol, count):
    got = got.double()
    want = want.double()
    assert got.numel() == count, f"{name}: examined {got.numel()} elements, expected {count}"
    bad = ~((got - want).abs() <= atol + rtol * want.abs())
    nbad = int(bad.sum())
    err = float(((got - want).abs() / (atol + rtol * want.abs()).clamp_min(1e-30)).max())
    ok = nbad == 0
    results.append((name, ok, count, nbad, err))
    print(f"{'PASS' if ok else 'FAIL'} {name}: {count} elements, {nbad} outside "
          f"atol={atol} rtol={rtol}, max |err|/band {err:.3g}", flush=True)


def poison(shape, dtype):
    return torch.full(shape, float("nan"), dtype=dtype, device=dev)


# vector_add: n not a multiple of 1024; exact f32 adds.
n = 1_000_003
x, y = torch.randn(n, device=dev), torch.randn(n, device=dev)
out = poison((n,), torch.float32)
launch("vector_add", (math.ceil(n / 1024),), (x, y, out, n))
torch.cuda.synchronize()
check("vector_add", out, x + y, 0.0, 0.0, n)

# softmax: 1000 of 1024 columns; ex2.approx and a 1000-term f32 sum -> 1e-5.
rows, cols = 37, 1000
x = torch.randn(rows, cols, device=dev) * 4
out = poison((rows, cols), torch.float32)
launch("softmax", (rows,), (x, out, rows, cols))
torch.cuda.synchronize()
check("softmax", out, torch.softmax(x.double(), 1), 1e-7, 1e-5, rows * cols)

# cumsum: 100 of 128 columns; f32 prefix sums of |x|~1 over <=100 terms.
rows, cols = 19, 100
x = torch.randn(rows, cols, device=dev)
out = poison((rows, cols), torch.float32)
launch("cumsum", (rows,), (x, out, rows, cols))
torch.cuda.synchronize()
check("cumsum", out, torch.cumsum(x.double(), 1), 1e-5, 1e-5, rows * cols)

# gated_rmsnorm (R6): two bf16 rounding points; approximate rsqrt/exp may move
# a result by one bf16 ulp (2^-8 relative), so the band is 1 ulp.
rows, width, group = 5, 4096, 512
yv = torch.randn(rows, width, device=dev).bfloat16()
zv = torch.randn(rows, width, device=dev).bfloat16()
w = (torch.rand(width, device=dev) + 0.5).bfloat16()
out = poison((rows, width), torch.bfloat16)
eps = 1e-5
launch("gated_rmsnorm", (rows, width // group), (yv, zv, w, out, rows, eps))
torch.cuda.synchronize()
v = yv.double() * torch.nn.functional.silu(zv.double())
vg = v.view(rows, width // group, group)
r = torch.rsqrt(vg.pow(2).mean(-1, keepdim=True) + eps)
ref = (w.double() * (vg * r).view(rows, width).bfloat16().double()).bfloat16()
check("gated_rmsnorm", out, ref, 0.0, 2.0 ** -7, rows * width)

# conv_update (R3d): batch 3 with a padding row; untouched slots byte-identical.
batch, channels, slots = 3, 6144, 5
slot_idx = torch.tensor([2, -1, 4], dtype=torch.int32, device=dev)
xt = torch.randn(batch, channels, device=dev).bfloat16()
state = torch.randn(slots, channels, 3, device=dev).bfloat16()
before = state.clone()
wconv = (torch.randn(channels, 4, device=dev) * 0.5).bfloat16()
bias = (torch.randn(channels, device=dev) * 0.1).bfloat16()
out = poison((batch, channels), torch.bfloat16)
launch("conv_update", (batch, channels // 256), (xt, state, slot_idx, wconv, bias, out))
torch.cuda.synchronize()
ref_out = torch.zeros(batch, channels, dtype=torch.float64, device=dev)
ref_state = before.clone()
for b in range(batch):
    s = int(slot_idx[b])
    if s < 0:
        continue
    taps = torch.cat([before[s].double(), xt[b].double().unsqueeze(1)], 1)
    pre = bias.double() + (wconv.double() * taps).sum(1)
    ref_out[b] = torch.nn.functional.silu(pre)
    ref_state[s] = torch.cat([before[s][:, 1:], xt[b].unsqueeze(1)], 1)
check("conv_update.out", out, ref_out.bfloat16(), 0.0, 2.0 ** -7, batch * channels)
check("conv_update.state", state, ref_state, 0.0, 0.0, slots * channels * 3)

# GEMMs: M = 1000 is not a multiple of the 128-row tile.
m, nn, kk = 1000, 4096, 4096
a = torch.randn(m, kk, device=dev).bfloat16()
bmat = torch.randn(kk, nn, device=dev).bfloat16()
c = poison((m, nn), torch.bfloat16)
launch("gemm_bf16", (math.ceil(m / 128), nn // 128), (a, bmat, c, m))
torch.cuda.synchronize()
check("gemm_bf16", c, (a.float() @ bmat.float()).bfloat16(), 1e-2, 2.0 ** -7, m * nn)

a8 = (torch.randn(m, kk, device=dev) * 2).to(torch.float8_e4m3fn)
w8 = (torch.randn(nn, kk, device=dev) * 2).to(torch.float8_e4m3fn)
scale = 0.01
c = poison((m, nn), torch.bfloat16)
launch("gemm_e4m3", (math.ceil(m / 128), nn // 128), (a8, w8, c, m, scale))
torch.cuda.synchronize()
ref = ((a8.double() @ w8.double().T) * scale).bfloat16()
check("gemm_e4m3", c, ref, 1e-2, 2.0 ** -7, m * nn)


def time_cupy(fn, grid, block, args, shared, reps=20):
    for _ in range(3):
        fn(grid, block, args, shared_mem=shared)
    times = []
    for _ in range(reps):
        s, e = cp.cuda.Event(), cp.cuda.Event()
        s.record()
        fn(grid, block, args, shared_mem=shared)
        e.record()
        e.synchronize()
        times.append(cp.cuda.get_elapsed_time(s, e))
    return times


def time_torch(f, reps=20):
    for _ in range(3):
        f()
    times = []
    for _ in range(reps):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        f()
        e.record()
        e.synchronize()
        times.append(s.elapsed_time(e))
    return times


def report(label, times, flops):
    med = statistics.median(times)
    print(f"PERF {label}: n={len(times)} median {med:.3f} ms min {min(times):.3f} "
          f"max {max(times):.3f} -> {flops / med / 1e9:.1f} TFLOP/s", flush=True)
    return med


if PERF:
    m = nn = kk = 4096
    flops = 2 * m * nn * kk
    a = torch.randn(m, kk, device=dev).bfloat16()
    bmat = torch.randn(kk, nn, device=dev).bfloat16()
    c = torch.empty(m, nn, device=dev, dtype=torch.bfloat16)
    fn, meta, grid, args = launch("gemm_bf16", (m // 128, nn // 128), (a, bmat, c, m))
    ours = report("gemm_bf16 tilejit", time_cupy(fn, grid, (meta["threads"], 1, 1), args,
                                                 meta["shared_bytes"]), flops)
    ref = report("gemm_bf16 torch.matmul", time_torch(lambda: a @ bmat), flops)
    print(f"PERF gemm_bf16 ratio tilejit/torch throughput {ref / ours:.3f}")
    a8 = torch.randn(m, kk, device=dev).to(torch.float8_e4m3fn)
    w8 = torch.randn(nn, kk, device=dev).to(torch.float8_e4m3fn)
    fn, meta, grid, args = launch("gemm_e4m3", (m // 128, nn // 128), (a8, w8, c, m, 0.01))
    ours = report("gemm_e4m3 tilejit", time_cupy(fn, grid, (meta["threads"], 1, 1), args,
                                                 meta["shared_bytes"]), flops)
    one = torch.tensor(1.0, device=dev)
    ref = report("gemm_e4m3 torch._scaled_mm",
                 time_torch(lambda: torch._scaled_mm(a8, w8.T, one, one, out_dtype=torch.bfloat16)),
                 flops)
    print(f"PERF gemm_e4m3 ratio tilejit/torch throughput {ref / ours:.3f}")

failed = [r for r in results if not r[1]]
print(f"{len(results) - len(failed)} passed, {len(failed)} failed")
sys.exit(1 if failed else 0)
