#!/usr/bin/env python3
"""The prefill's streaming kernels (gated_rmsnorm with its e4m3 quant,
conv_prefill, quantize_e4m3) in their plan forms and the forms their constants
select, beside a torch copy of the same bytes (the floor) and vLLM's
rms_norm_gated, at NemotronH geometry and T = 8192 and 2048.

Every form is first checked against an f64 reference (R6 with its e4m3 output,
R3, R1's quant) on the GPU, and against the plan form's output bit for bit
(printed: forms of the same arithmetic must differ in 0 elements; fast_silu may
move a bf16 rounding). Timing: `--launches` launches over `copies` rotated
buffer sets (their bytes together past 2.5x the L2) captured in one CUDA graph,
replayed `--replays` times between two events: median / min / max per launch,
n replays, bytes read + written, TB/s, and the floor's time over the form's
(>= 0.85 is the target).

Usage (GPU host, the Python kit on PYTHONPATH, vLLM's op files in .peers):
  PYTHONPATH=$KIT:.peers python3 bench/prefill/stream_gpu.py [--launches 20]
      [--replays 15] [--tokens 8192,2048] [--only norm|conv|quant]
Without CUDA it runs the checks on the interpreter at --tokens 64 (no timing)."""
import argparse
import itertools
import math
import sys
from pathlib import Path

import torch
import torch.nn.functional as F

from tilejit.ops import rms_norm_gated
from tilejit.ops._launch import launch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from ops_torch_bench import graph_timed  # noqa: E402

I, CD, HEADS, HIDDEN, GROUP = 4096, 6144, 64, 2688, 512
ROW = I + CD + HEADS  # in_proj's output: z | xBC | dt
S_X = 1.0 / 56        # an input scale
# Debian's torch (the interpreter smoke run) has no float8: e4m3 travels as
# uint8 codes there, rounded and decoded by the tests' numpy reference.
E4M3 = getattr(torch, "float8_e4m3fn", torch.uint8)
F64 = torch.float64
NORM_PLAN = dict(width=I, group_size=GROUP, fp8_out=1, z_stride=ROW, dependent=1)
# The first form of each kernel is the one the others are compared with bit for
# bit: gated_rmsnorm's plan form before param_rows became its default.
NORM_FORMS = {
    "param_rows 0 (old plan)": dict(param_rows=0), "plan (param_rows 1)": {},
    "quant_fma": dict(quant_fma=1), "fast_silu": dict(fast_silu=1),
    "quant_fma+fast_silu": dict(quant_fma=1, fast_silu=1),
    "qf+fs rows2": dict(quant_fma=1, fast_silu=1, rows_per_program=2),
    "qf+fs rows4 w4": dict(quant_fma=1, fast_silu=1, rows_per_program=4, warps=4),
    "qf+fs w1": dict(quant_fma=1, fast_silu=1, warps=1),
    "quant_fma rows2": dict(quant_fma=1, rows_per_program=2),
    "quant_fma w1": dict(quant_fma=1, warps=1),
}
OPS_FORMS = {"ops param_rows 0 (old)": dict(param_rows=0), "ops default": {},
             "ops fast_silu": dict(fast_silu=1), "ops rows2": dict(rows_per_program=2),
             "ops w1": dict(warps=1), "ops fast_silu w1": dict(fast_silu=1, warps=1)}
CONV_PLAN = dict(inner=I, channels=CD, heads=HEADS, block_t=32)
CONV_FORMS = {
    "plan (block_t 32)": {}, "splits 2": dict(splits=2), "splits 4": dict(splits=4),
    "rows_per_step 4": dict(rows_per_step=4), "rps 4 splits 2": dict(rows_per_step=4, splits=2),
    "block_c 512": dict(block_c=512), "block_c 512 splits 2": dict(block_c=512, splits=2),
    "block_c 512 splits 4": dict(block_c=512, splits=4),
    "block_c 1024 warps 8": dict(warps=8), "block_c 512 rps 16": dict(block_c=512, rows_per_step=16),
    "block_t 64 (default)": dict(block_t=64),
}
QUANT_PLAN = dict(width=HIDDEN)
QUANT_FORMS = {"plan": {}, "flat 1024": dict(flat=1, block=1024),
               "flat 2048": dict(flat=1, block=2048), "flat 4096": dict(flat=1, block=4096),
               "flat 4096 w8": dict(flat=1, block=4096, warps=8)}


def silu(v):
    return v / (1 + torch.exp(-v))


def e4m3_of(v):
    """f64 values -> e4m3 values (f64), saturating as satfinite does."""
    v = v.clamp(-448, 448)
    if E4M3 is torch.uint8:
        sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests" / "python"))
        from mamba2_reference import round_e4m3
        return torch.from_numpy(round_e4m3(v.cpu().numpy()))
    return v.float().to(E4M3).to(F64)


def values(t):
    """A kernel output as f64 values (e4m3 codes decoded)."""
    if t.dtype is torch.uint8:
        from mamba2_reference import e4m3_decode
        import numpy as np
        return torch.from_numpy(np.asarray(e4m3_decode(t.numpy()), np.float64))
    return t.to(F64)


def norm_reference(y, z, w, whole_row=False):
    """R6 in f64 with its two bf16 rounding points, [rows, I] bf16 values."""
    v = y.to(F64) * silu(z.to(F64))
    g = v.view(v.shape[0], -1, I if whole_row else GROUP)
    r = 1 / torch.sqrt((g * g).mean(-1, keepdim=True) + 1e-5)
    normed = (g * r).view_as(v).bfloat16().to(F64)
    return (w.to(F64) * normed).bfloat16().to(F64)


def conv_reference(xbc, w, b, state):
    """R3 over one sequence continuing from `state` [CD, 3], f64 silu(conv)."""
    u = torch.cat([state.to(F64).t(), xbc.to(F64)], 0)  # [3 + T, CD]
    pre = F.conv1d(u.t().unsqueeze(0), w.to(F64).unsqueeze(1), b.to(F64), groups=CD)[0].t()
    return silu(pre)


class Case:
    """One kernel's buffers at T tokens: `copies` sets rotated by launch index."""

    def __init__(self, dev, T, copies, make):
        self.sets = [make(dev, T) for _ in range(copies)]


def outside(got, want, atol, rtol):
    return int(((got - want).abs() > atol + rtol * want.abs()).sum()) + \
        int(torch.isnan(got).sum())


def norm_set(dev, T):
    zx = (torch.randn(T, ROW, device=dev) * 1.5).bfloat16()
    y = torch.randn(T, I, device=dev).bfloat16()
    w = (torch.rand(I, device=dev) + 0.5).bfloat16()
    return dict(y=y, z=zx, weight=w, out=torch.empty(T, I, dtype=E4M3, device=dev),
                zc=zx[:, :I].contiguous(), bf=torch.empty(T, I, dtype=torch.bfloat16, device=dev))


def run_norm(s, consts, T, ops_form=False):
    c = dict(NORM_PLAN, **consts)
    r = c.get("rows_per_program", 1)
    grid = (-(-T // r), I // GROUP)
    if ops_form:
        c = dict(c, fp8_out=0, z_stride=0)
        launch("gated_rmsnorm", c, s["y"].device, grid, y=s["y"], z=s["zc"],
               weight=s["weight"], out=s["bf"], rows=T, eps=1e-5)
        return s["bf"]
    launch("gated_rmsnorm", c, s["y"].device, grid, y=s["y"], z=s["z"], weight=s["weight"],
           out=s["out"], rows=T, eps=1e-5, input_scale=S_X)
    return s["out"]


def conv_set(dev, T):
    return dict(zx=torch.randn(T, ROW, device=dev).bfloat16(),
                weight=(torch.rand(CD, 4, device=dev) * 2 - 1).bfloat16(),
                bias=(torch.rand(CD, device=dev) - 0.5).bfloat16(),
                page=torch.randn(2, CD, 3, device=dev).bfloat16(),
                out=torch.empty(T, CD, dtype=torch.bfloat16, device=dev))


def run_conv(s, consts, T):
    c = dict(CONV_PLAN, **consts)
    bt, dev = c["block_t"], s["zx"].device
    i32 = lambda v: torch.tensor(v, dtype=torch.int32, device=dev)  # noqa: E731
    begins = list(range(0, T, bt))
    # Made once per set (graph_time's first round runs outside the capture: a
    # host-to-device copy inside one is an error).
    if ("md", bt) not in s:
        s["md", bt] = dict(
            cu_seqlens=i32([0, T]), slots=i32([0]), init=i32([1]),
            chunk_seq=i32([0] * len(begins)), chunk_begin=i32(begins),
            chunk_end=i32([min(b + bt, T) for b in begins]))
    md = s["md", bt]
    launch("conv_prefill", c, dev, (-(-CD // c.get("block_c", 1024)), len(begins),
                                    c.get("splits", 1)),
           zxbcdt=s["zx"], weight=s["weight"], bias=s["bias"], conv_state=s["page"],
           out=s["out"], num_slots=2, **md)
    return s["out"]


def quant_set(dev, T):
    return dict(x=(torch.randn(T, HIDDEN, device=dev) * 2).bfloat16(),
                out=torch.empty(T, HIDDEN, dtype=E4M3, device=dev))


def run_quant(s, consts, T):
    c = dict(QUANT_PLAN, **consts)
    block = c.get("block", 1024)
    grid = (-(-T * HIDDEN // block), 1) if c.get("flat") else (-(-HIDDEN // block), T)
    launch("quantize_e4m3", c, s["x"].device, grid, x=s["x"], out=s["out"], rows=T,
           input_scale=S_X)
    return s["out"]


def check(name, got, want, atol, rtol, base, counterfactual):
    g = values(got)
    bad = outside(g, want, atol, rtol)
    same = "-" if base is None else int((got.view(torch.uint8) if got.element_size() == 1
                                         else got.view(torch.int16)).ne(
        base.view(torch.uint8) if base.element_size() == 1 else base.view(torch.int16)).sum())
    cf = outside(counterfactual, want, atol, rtol)
    print(f"CHECK {'PASS' if bad == 0 else 'FAIL'} {name}: {got.numel()} elements, {bad} outside "
          f"{atol:g} + {rtol:g}|want|; differ from the plan form: {same}; counterfactual "
          f"outside: {cf}", flush=True)
    return bad == 0


def graph_time(fn, launches, replays):
    """ops_torch_bench's graph timing of fn(i), i counting the calls from 0, so
    the captured launches rotate over the buffer sets."""
    for i in range(launches):  # every set's lazily made inputs, before the capture
        fn(i)
    calls = itertools.count()
    return graph_timed(lambda: fn(next(calls)), replays, launches)


def row(label, t, nbytes, floor, n):
    med, lo, hi = t
    ratio = f"{floor / med:.2f}x floor" if floor else "floor"
    print(f"PERF {label:<34} {med:8.2f} us ({lo:.2f}-{hi:.2f}) n={n} "
          f"{nbytes / 1e6:7.1f} MB {nbytes / med / 1e6:5.2f} TB/s {ratio}", flush=True)
    return med


def floor_time(dev, nbytes, copies, args):
    """A torch copy moving nbytes (half read, half written), rotated the same way."""
    half = nbytes // 2
    src = [torch.empty(half, dtype=torch.uint8, device=dev) for _ in range(copies)]
    dst = [torch.empty(half, dtype=torch.uint8, device=dev) for _ in range(copies)]
    return graph_time(lambda i: dst[i % copies].copy_(src[i % copies]), args.launches,
                      args.replays)


def bench_kernel(kind, dev, T, args, l2):
    specs = {"norm": (norm_set, NORM_FORMS, 2 * T * I * 2 + T * I),
             "ops": (norm_set, OPS_FORMS, 3 * T * I * 2),
             "conv": (conv_set, CONV_FORMS, 2 * T * CD * 2),
             "quant": (quant_set, QUANT_FORMS, 3 * T * HIDDEN)}
    make, forms, nbytes = specs[kind]
    copies = 1 if dev.type == "cpu" else max(3, math.ceil(2.5 * l2 / nbytes))
    case = Case(dev, T, copies, make)
    s0 = case.sets[0]
    run = {"norm": run_norm, "ops": lambda s, c, T: run_norm(s, c, T, True),
           "conv": run_conv, "quant": run_quant}[kind]
    if kind in ("norm", "ops"):
        zin = s0["z"][:, :I]
        want = norm_reference(s0["y"], zin, s0["weight"])
        cf = norm_reference(s0["y"], zin, s0["weight"], whole_row=True)
        if kind == "norm":
            want, cf = e4m3_of(want / S_X), e4m3_of(cf / S_X)
            band = (2.0 ** -9, 2.0 ** -3)  # one e4m3 step
        else:
            band = (5e-2, 1e-2)  # R6's bf16 band
    elif kind == "conv":
        want = conv_reference(s0["zx"][:, I:I + CD], s0["weight"], s0["bias"], s0["page"][0])
        cf = conv_reference(s0["zx"][:, I:I + CD], s0["weight"], s0["bias"],
                            torch.zeros_like(s0["page"][0]))
        band = (1e-5, 2.0 ** -7)
    else:
        want = e4m3_of(s0["x"].to(F64) / S_X)
        cf = e4m3_of(s0["x"].to(F64))
        band = (2.0 ** -9, 2.0 ** -3)
    base, ok = None, True
    for name, consts in forms.items():
        if kind == "conv":  # the page is rewritten by each launch: restore it
            page = s0["page"].clone()
        got = run(s0, consts, T).clone()
        if kind == "conv":
            s0["page"].copy_(page)
        ok &= check(f"{kind} {name} T={T}", got, want, *band, base, cf)
        base = got if base is None else base
    if dev.type == "cpu":
        return ok
    print(f"{kind} T={T}: {nbytes / 1e6:.1f} MB a launch, {copies} buffer sets rotated over "
          f"{args.launches} launches a graph, {args.replays} replays", flush=True)
    floor = row(f"{kind} torch copy of the same bytes", floor_time(dev, nbytes, copies, args),
                nbytes, None, args.replays)
    for name, consts in forms.items():
        row(f"{kind} {name}", graph_time(lambda i: run(case.sets[i % copies], consts, T),
                                         args.launches, args.replays),
            nbytes, floor, args.replays)
    if kind == "ops":
        peers(case, T, copies, args, nbytes, floor)
    return ok


def peers(case, T, copies, args, nbytes, floor):
    """tilejit.ops.rms_norm_gated and vLLM's on the ops form's operands."""
    kw = dict(z=None, eps=1e-5, group_size=GROUP, norm_before_gate=False)
    calls = {"tilejit.ops.rms_norm_gated": rms_norm_gated}
    try:
        from vllm.model_executor.layers.mamba.ops import layernorm_gated as v_norm
        calls["vLLM rms_norm_gated"] = v_norm.rms_norm_gated
    except Exception as error:  # noqa: BLE001 - reported, the rest still runs
        print(f"vLLM's rms_norm_gated not importable: {error}", flush=True)
    for label, fn in calls.items():
        def one(i, fn=fn):
            s = case.sets[i % copies]
            return fn(s["y"], s["weight"], None, **dict(kw, z=s["zc"]))
        row(label, graph_time(one, args.launches, args.replays), nbytes, floor, args.replays)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--launches", type=int, default=20)
    parser.add_argument("--replays", type=int, default=15)
    parser.add_argument("--tokens", default=None)
    parser.add_argument("--only", action="append", choices=["norm", "ops", "conv", "quant"])
    args = parser.parse_args()
    cuda = torch.cuda.is_available()
    dev = torch.device("cuda", 0) if cuda else torch.device("cpu")
    tokens = [int(t) for t in (args.tokens or ("8192,2048" if cuda else "64")).split(",")]
    l2 = torch.cuda.get_device_properties(0).L2_cache_size if cuda else 0
    if cuda:
        print(f"{torch.cuda.get_device_name()}, L2 {l2 / 2**20:.0f} MiB, torch "
              f"{torch.__version__}", flush=True)
    torch.manual_seed(0)
    ok = True
    for T in tokens:
        for kind in args.only or ["norm", "ops", "conv", "quant"]:
            ok &= bench_kernel(kind, dev, T, args, l2)
    print("all checks passed" if ok else "SOME CHECKS FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
