"""Issue 20: the GEMM pipelines on the H200 next to the library, in one process:
FP8 W8A8 (gemm_e4m3, or out_proj fp8=1) against torch._scaled_mm, bf16 (out_proj
fp8=0) against torch.matmul. Every variant in DIR (build_shapes.sh output:
NAME.ptx/.json/.cfg) runs at each M of the list:
- checked once on fresh values against the f64 product: e4m3 with R1h's band
  (|y - ref| <= 1 bf16 ulp(ref) + 2^-8 * s * sum|a*w|, docs/numerics.md), its
  count of outputs outside one ulp printed next to the library's on the same
  codes; bf16 with one ulp (R1b, an exact path);
- timed with CUDA events around each launch, copies of A and W rotated so
  operands come from HBM, n = REPS after 5 warm-ups, median/min/max, the library
  timed the same way right before each variant (the ratio of neighbours: the
  library's own rate drifts by several percent within a process).
Launches go through tma_launch.Kernel (tensor maps built like the runtime's).
Usage: hopper.py DIR [REPS] [M,M,...]"""
import json
import math
import statistics
import sys
from pathlib import Path

import torch

from event_times import event_times
from tma_launch import Kernel

SCALE = 0.01  # s_x * s_w of the e4m3 variants
REPS = 30


def timed(f):
    ts = event_times(f, REPS)
    return statistics.median(ts), min(ts), max(ts)


def bf16_ulp(v):
    a = v.abs().clamp_min(2.0 ** -126)
    return torch.exp2(torch.floor(torch.log2(a)) - 7)


def check(y, ref, absum):
    """(outside R1h's band, outside one ulp, worst |err| / band)."""
    err = (y.double() - ref).abs()
    ulp = bf16_ulp(ref)
    band = ulp + 2.0 ** -8 * SCALE * absum
    # NaN (an output never written: the buffers start as NaN) counts as outside.
    return (int((~(err <= band)).sum()), int((~(err <= ulp)).sum()),
            float(torch.nan_to_num(err / band, nan=float("inf")).max()))


def grid_args(cfg, M, N, a, w, c, scale):
    """Grid and arguments of gemm_e4m3 (axis 0: M tiles) or out_proj (axis 0: N
    tiles; fp8=0 is the bf16 form, with no scale)."""
    gm, gn = math.ceil(M / cfg["bm"]), math.ceil(N / cfg["bn"])
    if cfg["kernel"] == "gemm_e4m3":
        return (gm, gn), (a, w, c, M, scale)
    return (gn, gm), (a, w, c, M) + ((scale,) if cfg.get("fp8", 1) else ())


def main():
    global REPS
    D = Path(sys.argv[1])
    REPS = int(sys.argv[2]) if len(sys.argv) > 2 else 30
    MS = [int(m) for m in sys.argv[3].split(",")] if len(sys.argv) > 3 else [4096, 8192]
    dev = "cuda"
    torch.manual_seed(20)
    print("GPU", torch.cuda.get_device_name(), "torch", torch.__version__, flush=True)
    variants = {}
    for p in sorted(D.glob("*.ptx")):
        cfg = json.loads(p.with_suffix(".cfg").read_text())
        fp8 = cfg.get("fp8", 1)
        variants.setdefault((cfg["n"], cfg["k"], fp8), []).append((p.stem, cfg))
    rows = []
    for (N, K, fp8), vs in sorted(variants.items(), reverse=True):
        for M in MS:
            ncopy = max(2, min(8, int(4e8 // ((M * K + N * K) * (1 if fp8 else 2)))))
            dtype = torch.float8_e4m3fn if fp8 else torch.bfloat16
            A = [(torch.randn(M, K, device=dev) * 2).to(dtype) for _ in range(ncopy)]
            W = [(torch.randn(N, K, device=dev) * 2).to(dtype) for _ in range(ncopy)]
            scale = SCALE if fp8 else 1.0
            ref = (A[0].double() @ W[0].double().T) * scale
            # R1b (bf16) is an exact path: its band is one ulp (no sum term).
            absum = (A[0].double().abs() @ W[0].double().abs().T) if fp8 else torch.zeros_like(ref)
            sa = torch.tensor(SCALE, device=dev)
            sb = torch.tensor(1.0, device=dev)
            flops = 2 * M * N * K
            if fp8:
                lib = lambda i: torch._scaled_mm(A[i % ncopy], W[i % ncopy].T, sa, sb,
                                                 out_dtype=torch.bfloat16)
            else:
                lib = lambda i: torch.matmul(A[i % ncopy], W[i % ncopy].T)
            libname = "_scaled_mm" if fp8 else "torch.matmul"
            lib_bad, lib_ulp, lib_worst = check(lib(0), ref, absum)
            for _ in range(3):  # clocks up before anything is timed
                timed(lib)
            print(f"SHAPE M={M} N={N} K={K} {'e4m3' if fp8 else 'bf16'} ({flops / 1e9:.1f} "
                  f"GFLOP, {ncopy} copies): {libname} outside the band {lib_bad}, outside 1 ulp "
                  f"{lib_ulp}", flush=True)
            for name, cfg in vs:
                k = Kernel(D, name)
                c = [torch.full((M, N), float("nan"), device=dev, dtype=torch.bfloat16)
                     for _ in range(2)]
                grid, args = grid_args(cfg, M, N, A[0], W[0], c[0], scale)
                k.launch(grid, args)
                torch.cuda.synchronize()
                bad, ulp1, worst = check(c[0], ref, absum)
                # The library right before the variant: a ratio of neighbours.
                t_lib = timed(lib)
                t = timed(lambda i: k.launch(*grid_args(cfg, M, N, A[i % ncopy], W[i % ncopy],
                                                        c[i % 2], scale)))
                print(f"  {name}: {t[0]:.1f} us (min {t[1]:.1f} max {t[2]:.1f}, n={REPS}) "
                      f"{flops / t[0] / 1e6:.1f} TFLOP/s; {libname} just before {t_lib[0]:.1f} us "
                      f"(min {t_lib[1]:.1f} max {t_lib[2]:.1f}) {flops / t_lib[0] / 1e6:.1f} "
                      f"TFLOP/s; x lib {t_lib[0] / t[0]:.3f}; outside the band {bad}, outside 1 "
                      f"ulp {ulp1} (lib {lib_ulp}), worst {worst:.3f} of the band", flush=True)
                rows.append((M, N, K, name, bad, ulp1, lib_ulp, flops / t[0] / 1e6,
                             flops / t_lib[0] / 1e6, t_lib[0] / t[0]))
    print("\nM     N     K     variant              band  >1ulp   (lib)  TFLOP/s  lib TFLOP/s  "
          "x lib")
    for r in rows:
        print(f"{r[0]:5d} {r[1]:5d} {r[2]:5d} {r[3]:20s} {r[4]:4d} {r[5]:7d} ({r[6]:7d}) "
              f"{r[7]:8.1f} {r[8]:9.1f} {r[9]:8.3f}")


if __name__ == "__main__":
    main()
