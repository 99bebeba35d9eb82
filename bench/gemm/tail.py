"""Issue 31 part 4: the prefill GEMMs' last wave. For each shape (out_proj M 8192
N 2688 K 4096; in_proj M 8192 N 10304 K 2688; 4096^3), e4m3 and bf16, in one run:
the library (torch._scaled_mm / torch.matmul), tilejit's planned GEMM (out_proj
on its prefill tiles, unsplit), the same with tail_splits S (the split rows as
tilejit.ops chooses them, `tail_rows`: none where the last wave is nearly full)
and with S forced on the last TAIL_FORCED row tiles. Each variant is checked
against the library's output first (a NaN-poisoned output; e4m3 within
2^-7 |y| + 1e-2 of it, bf16 2^-6 |y| + 1e-2), then timed with CUDA events over
NCOPY operand copies rotated so that the weights come from HBM, not L2.
Prints one line per variant: median/min/max us, n, TFLOP/s, ratio to the library.
Usage: PYTHONPATH=KIT python3 tail.py [REPS] (about 1-2 minutes, most of it compiles)"""
import statistics, sys

import torch

from event_times import event_times

import tilejit as tj
from tilejit import _tilejit
from tilejit.ops import _fp8
from tilejit.ops._launch import launch

REPS = int(sys.argv[1]) if len(sys.argv) > 1 else 50
NCOPY, SCALE, SPLITS, TAIL_FORCED = 4, 0.01, (2, 3, 4), 1
dev = torch.device("cuda")
print("GPU", torch.cuda.get_device_name(), "SMs",
      torch.cuda.get_device_properties(dev).multi_processor_count, "torch", torch.__version__,
      flush=True)
SHAPES = [("out_proj", 8192, 2688, 4096), ("in_proj", 8192, 10304, 2688),
          ("4096^3", 4096, 4096, 4096)]


def timed(f):
    return event_times(f, REPS)


def report(label, ts, flops, base):
    med = statistics.median(ts)
    ratio = f" = {base / med:.3f}x the library" if base else ""
    print(f"PERF {label:<34} n={len(ts)} median {med:8.1f} us min {min(ts):8.1f} "
          f"max {max(ts):8.1f} {flops / med / 1e6:6.1f} TFLOP/s{ratio}", flush=True)
    return med


def bench(name, m, n, k, fp8):
    tag = f"{name} {'e4m3' if fp8 else 'bf16'}"
    flops = 2 * m * n * k
    dtype = torch.float8_e4m3fn if fp8 else torch.bfloat16
    A = [torch.randn(m, k, device=dev).mul(2).to(dtype) for _ in range(NCOPY)]
    W = [torch.randn(n, k, device=dev).mul(2 if fp8 else 0.05).to(dtype) for _ in range(NCOPY)]
    scales = tuple(torch.tensor([v], device=dev) for v in (SCALE, 1.0)) if fp8 else None
    if fp8:
        lib = lambda i: torch._scaled_mm(A[i % NCOPY], W[i % NCOPY].t(), scales[0], scales[1],
                                         out_dtype=torch.bfloat16)
    else:
        lib = lambda i: torch.matmul(A[i % NCOPY], W[i % NCOPY].t())
    want = lib(0).float()
    band = (2.0 ** -7 if fp8 else 2.0 ** -6) * want.abs() + 1e-2
    base = report(f"{tag} library", timed(lib), flops, None)
    geometry = dict(inner=k, hidden=n, fp8=int(fp8), out_f32=0)
    if fp8:
        geometry["scale_ptr"] = 1
    planned = _tilejit._plan_projection(tj.runtime(0), m, geometry)
    columns = -(-n // planned["block_n"])
    variants = [("unsplit", planned, None)]
    for s in SPLITS:
        split = dict(planned, tail_splits=s)
        chosen = _fp8.tail_rows(m, planned["block_m"], columns, s,
                                torch.cuda.get_device_properties(dev).multi_processor_count)
        variants.append((f"tail S={s} ({chosen} rows)", split, None))
        forced = m - (-(-m // planned["block_m"]) - TAIL_FORCED) * planned["block_m"]
        variants.append((f"tail S={s} forced ({forced} rows)", split, forced))
    for label, constants, tail in variants:
        out = torch.full((m, n), float("nan"), device=dev, dtype=torch.bfloat16)

        def run(i, constants=constants, tail=tail):
            a, w = A[i % NCOPY], W[i % NCOPY]
            if constants.get("tail_splits", 1) > 1:
                return _fp8._tail_split_mm(constants, dev, a, w, out, scales, tail)
            grid = (columns, -(-m // constants["block_m"]))
            extra = dict(scale_a=scales[0], scale_b=scales[1]) if fp8 else {}
            launch("out_proj", constants, dev, grid, a=a, weight=w, out=out, rows=m, **extra)
            return out

        bad = int((~((run(0).float() - want).abs() <= band)).sum())
        print(f"CHECK {tag} {label}: {bad} of {out.numel()} outside", flush=True)
        report(f"{tag} {label}", timed(run), flops, base)


for name, m, n, k in SHAPES:
    for fp8 in (True, False):
        bench(name, m, n, k, fp8)
