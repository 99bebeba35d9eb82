"""GEMM variants on the GPU: each checked at M = 1000 (a partial tile) against
torch, then timed at 4096^3 next to torch.matmul / torch._scaled_mm in the same
run; first the mma.sync ceilings of mma_peak.cu. DIR holds what
build_variants.sh made (var/, mb/mma_peak.cubin).

Usage: bench.py DIR"""
import json, math, statistics, sys
from pathlib import Path
import cupy as cp, numpy as np, torch

D = Path(sys.argv[1])
dev = "cuda"
torch.manual_seed(1)

def fnmeta(p):
    meta = json.loads(p.with_suffix(".json").read_text())
    fn = cp.RawModule(path=str(p)).get_function(meta["entry"])
    if meta["shared_bytes"] > 48 * 1024:
        fn.max_dynamic_shared_size_bytes = meta["shared_bytes"]
    return fn, meta

def args_of(meta, vals):
    out = []
    for p, a in zip(meta["params"], vals):
        k = p["kind"]
        out.append(np.uint64(a.data_ptr()) if k == "ptr" else np.int32(a) if k == "i32" else np.float32(a))
    return tuple(out)

def bench(f, reps=20):
    for _ in range(3): f()
    ts = []
    for _ in range(reps):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record(); f(); e.record(); e.synchronize(); ts.append(s.elapsed_time(e))
    return ts

def rep(label, ts, flops):
    med = statistics.median(ts)
    print(f"PERF {label}: n={len(ts)} median {med:.3f} ms min {min(ts):.3f} max {max(ts):.3f} -> {flops/med/1e9:.1f} TFLOP/s", flush=True)
    return med

# mma.sync ceilings (operands from randn data)
mod = cp.RawModule(path=str(D / "mb/mma_peak.cubin"))
outp = torch.empty(132 * 8 * 256, device=dev)
bufs = {"bf16": torch.randn(128, device=dev).bfloat16().view(torch.int32),
        "f16": torch.randn(128, device=dev).half().view(torch.int32),
        "e4m3": torch.randn(256, device=dev).to(torch.float8_e4m3fn).view(torch.int32)}
for name, fl, data in (("peak_bf16", 4096, "bf16"), ("peak_f16", 4096, "f16"),
                       ("peak_e4m3_varying", 8192, "e4m3")):
    fn, buf = mod.get_function(name), bufs[data]
    iters, blocks = 2048, 132 * 8
    f = lambda: fn((blocks,), (256,), (np.uint64(buf.data_ptr()), np.uint64(outp.data_ptr()), np.int32(iters)))
    rep(f"mma.sync {name} (8 acc/warp, {blocks}x256 threads)", bench(f), blocks * 8 * iters * 8 * fl)

m = nn = kk = 4096
flops = 2 * m * nn * kk
A = torch.randn(m, kk, device=dev).bfloat16(); B = torch.randn(kk, nn, device=dev).bfloat16()
A8 = torch.randn(m, kk, device=dev).to(torch.float8_e4m3fn); W8 = torch.randn(nn, kk, device=dev).to(torch.float8_e4m3fn)
C = torch.empty(m, nn, device=dev, dtype=torch.bfloat16)
one = torch.tensor(1.0, device=dev)
ref = {"gemm_bf16": rep("torch.matmul bf16", bench(lambda: A @ B), flops),
       "gemm_e4m3": rep("torch._scaled_mm e4m3", bench(lambda: torch._scaled_mm(A8, W8.T, one, one, out_dtype=torch.bfloat16)), flops)}
rows = []
for p in sorted((D / "var").glob("*.ptx")):
    cfg = json.loads(p.with_suffix(".cfg").read_text())
    k, bm, bn = cfg["kernel"], cfg["bm"], cfg["bn"]
    try:
        fn, meta = fnmeta(p)
    except Exception as ex:
        print(f"LOADFAIL {p.stem}: {ex}"); continue
    # correctness, M = 1000
    mc = 1000
    if k == "gemm_bf16":
        a = torch.randn(mc, kk, device=dev).bfloat16(); b = torch.randn(kk, nn, device=dev).bfloat16()
        want = (a.float() @ b.float()).bfloat16(); vals = lambda c: (a, b, c, mc)
    else:
        a = (torch.randn(mc, kk, device=dev) * 2).to(torch.float8_e4m3fn); b = (torch.randn(nn, kk, device=dev) * 2).to(torch.float8_e4m3fn)
        want = ((a.double() @ b.double().T) * 0.01).bfloat16(); vals = lambda c: (a, b, c, mc, 0.01)
    c = torch.full((mc, nn), float("nan"), device=dev, dtype=torch.bfloat16)
    fn((math.ceil(mc / bm), nn // bn, 1), (meta["threads"], 1, 1), args_of(meta, vals(c)), shared_mem=meta["shared_bytes"])
    torch.cuda.synchronize()
    g, w = c.double(), want.double()
    nbad = int((~((g - w).abs() <= 1e-2 + 2.0 ** -7 * w.abs())).sum())
    # timing
    if k == "gemm_bf16":
        args = args_of(meta, (A, B, C, m))
    else:
        args = args_of(meta, (A8, W8, C, m, 0.01))
    grid = (m // bm, nn // bn, 1)
    f = lambda: fn(grid, (meta["threads"], 1, 1), args, shared_mem=meta["shared_bytes"])
    med = rep(f"{p.stem} ({'PASS' if nbad == 0 else 'FAIL %d bad' % nbad})", bench(f), flops)
    rows.append((p.stem, nbad, flops / med / 1e9, ref[k] / med))
print("\nvariant                 bad  TFLOP/s  ratio")
for r in rows:
    print(f"{r[0]:22s} {r[1]:4d} {r[2]:8.1f} {r[3]:6.3f}")
