#!/usr/bin/env python3
"""The host cost of a tilejit.ops call (issue 32): per op, at NemotronH geometry
(docs/numerics.md#geometry), microseconds per call:

- eager: `--calls` back-to-back calls between two CUDA events, divided by the
  count (the larger of the host's and the GPU's time per call), served by the
  op's plan (every call after the first has the same metadata);
- uncached: the same with the plan cache bypassed (every call the full path:
  the checks in Python, the specialization lookup), the baseline of the same run;
- graphed: the same calls captured in one CUDA graph and replayed (the GPU's
  time alone; "-" with the reason when the op cannot be captured);
- host, host-unc: the wall time of the eager and uncached calls on the host,
  before the synchronization (what Python, the plan cache and the launch path
  cost);
- record: the host time of a call that records its plan (a key's second call
  after the plans were dropped: the full path and the recording; the kernels
  stay compiled), over `--calls` / 10 calls. A key's first call costs what an
  uncached call does.

`launch floor` is launch() alone on the smallest registered kernel with its
arguments ready, so the op's own Python shows as the difference. Median of
`--trials` trials each. With --cpu it runs on the CPU with the interpreter given
an empty grid (no program runs): the host columns alone, at small sizes, which
is how the launch path is compared on a machine without a GPU.

Usage: ops_launch_bench.py [--trials N (10)] [--calls C (100)] [--cpu] [--only NAME]
Needs torch and the tilejit package (PYTHONPATH or pip install)."""

import argparse
import contextlib
import inspect
import statistics
import time

import torch

import tilejit as tj
import tilejit.ops as ops
from tilejit.ops import _launch
from ops_torch_bench import graph_timed

try:
    from tilejit.ops import _plan
except ImportError:  # a tree before the plan cache
    _plan = None

Hd, H, P, N, G, K = 2688, 64, 64, 128, 8, 4
I, Cd = H * P, H * P + 2 * G * N
E4M3 = getattr(torch, "float8_e4m3fn", None) or torch.uint8


def rnd(device, *shape, lo=-1.0, hi=1.0, dtype=torch.float32):
    return (torch.rand(*shape, device=device) * (hi - lo) + lo).to(dtype)


def host_us(fn, calls):
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - start) * 1e6 / calls


def eager_us(fn, calls):
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    host = host_us(fn, calls)
    end.record()
    end.synchronize()
    return start.elapsed_time(end) * 1000 / calls, host


def graphed_us(fn, calls, trials):
    try:
        return f"{graph_timed(fn, trials, calls)[0]:.1f}"
    except Exception as error:  # reported in the table, the other columns still stand
        return f"- ({type(error).__name__}: {str(error).splitlines()[0][:60]})"


def record_us(fn, calls):
    """Host time of calls that record their plan: each the second call of its
    key after the plans were dropped (the full path and the recording)."""
    spent = 0.0
    for _ in range(calls):
        if _plan is not None:
            _plan.clear()
            fn()
        start = time.perf_counter()
        fn()
        spent += time.perf_counter() - start
    return spent * 1e6 / calls


@contextlib.contextmanager
def uncached():
    """Every op call takes the full path and records nothing (a tree before the
    plan cache has no other)."""
    if _plan is None:
        yield
        return
    _plan.clear()
    saved, _plan.MAX_PLANS = _plan.MAX_PLANS, 0
    try:
        yield
    finally:
        _plan.MAX_PLANS = saved


def row(name, fn, a):
    if a.only and a.only not in name:
        return
    for _ in range(3):
        fn()
    record_calls = max(1, a.calls // 10)
    if a.cpu:
        host = statistics.median(host_us(fn, a.calls) for _ in range(a.trials))
        with uncached():
            base = statistics.median(host_us(fn, a.calls) for _ in range(a.trials))
        record = statistics.median(record_us(fn, record_calls) for _ in range(a.trials))
        print(f"{name:<36} {'-':>9} {'-':>9} {'-':>9} {host:>9.1f} {base:>9.1f} {record:>9.1f}",
              flush=True)
        return
    torch.cuda.synchronize()
    runs = [eager_us(fn, a.calls) for _ in range(a.trials)]
    with uncached():
        base = [eager_us(fn, a.calls) for _ in range(a.trials)]
    eager, host = (statistics.median(r[i] for r in runs) for i in (0, 1))
    eager_base, host_base = (statistics.median(r[i] for r in base) for i in (0, 1))
    record = statistics.median(record_us(fn, record_calls) for _ in range(a.trials))
    torch.cuda.synchronize()
    print(f"{name:<36} {eager:>9.1f} {eager_base:>9.1f} {graphed_us(fn, a.calls, a.trials):>9} "
          f"{host:>9.1f} {host_base:>9.1f} {record:>9.1f}", flush=True)


def empty_grid_on_cpu():
    """The interpreter runs no program: the host path is all that is timed. (Also
    on a tree before issue 32, whose Launch took the grid and named arguments.)"""
    call = _launch.Launch.__call__
    if "device" in inspect.signature(call).parameters:
        _launch.Launch.__call__ = lambda self, device, grid, args: call(self, device, (0,), args)
    else:
        _launch.Launch.__call__ = lambda self, grid, **args: call(self, (0,), **args)


def ssm_update(dev, b):
    xbc = rnd(dev, b, Cd, lo=-2, hi=2, dtype=torch.bfloat16)
    x, B, C = xbc[:, :I].view(b, H, P), xbc[:, I:I + G * N].view(b, G, N), \
        xbc[:, I + G * N:].view(b, G, N)
    dt = rnd(dev, b, H, lo=-3, hi=1, dtype=torch.bfloat16)
    A, dt_bias, D = -torch.exp(rnd(dev, H, lo=-2, hi=0.5)), rnd(dev, H, lo=-1, hi=0), rnd(dev, H)
    state = rnd(dev, 2 * b, H, P, N)
    idx = torch.randperm(2 * b, device=dev)[:b].to(torch.int32)
    out = torch.empty(b, H, P, dtype=torch.bfloat16, device=dev)
    return lambda: ops.selective_state_update(
        state, x, dt[:, :, None].expand(b, H, P), A[:, None, None].expand(H, P, N), B, C,
        D=D[:, None].expand(H, P), dt_bias=dt_bias[:, None].expand(H, P), dt_softplus=True,
        state_batch_indices=idx, out=out)


def conv_update(dev, b):
    xd = rnd(dev, b, Cd, lo=-2, hi=2, dtype=torch.bfloat16)
    weight = rnd(dev, Cd, K, lo=-0.5, hi=0.5, dtype=torch.bfloat16)
    bias = rnd(dev, Cd, lo=-0.1, hi=0.1, dtype=torch.bfloat16)
    page = rnd(dev, 2 * b, K - 1, Cd, dtype=torch.bfloat16).transpose(1, 2)
    idx = torch.randperm(2 * b, device=dev)[:b].to(torch.int32)
    return lambda: ops.causal_conv1d_update(xd, page, weight, bias, activation="silu",
                                            conv_state_indices=idx)


def gated_norm(dev, t):
    y = rnd(dev, t, I, lo=-2, hi=2, dtype=torch.bfloat16)
    z = rnd(dev, t, I, lo=-3, hi=3, dtype=torch.bfloat16)
    w = rnd(dev, I, lo=0.5, hi=1.5, dtype=torch.bfloat16)
    return lambda: ops.rms_norm_gated(y, w, None, z=z, eps=1e-5, group_size=512,
                                      norm_before_gate=False)


def conv_fn(dev, t):
    xt = rnd(dev, t, Cd, lo=-2, hi=2, dtype=torch.bfloat16)
    weight = rnd(dev, Cd, K, lo=-0.5, hi=0.5, dtype=torch.bfloat16)
    bias = rnd(dev, Cd, lo=-0.1, hi=0.1, dtype=torch.bfloat16)
    pages = torch.zeros(2, K - 1, Cd, dtype=torch.bfloat16, device=dev).transpose(1, 2)
    qsl = torch.tensor([0, t], dtype=torch.int32, device=dev)
    one = torch.ones(1, dtype=torch.int32, device=dev)
    fresh = torch.zeros(1, dtype=torch.bool, device=dev)
    return lambda: ops.causal_conv1d_fn(xt.t(), weight, bias, pages, qsl, cache_indices=one,
                                        has_initial_state=fresh)


def ssd(dev, lengths, chunk=256):
    """mamba_chunk_scan_combined_varlen over sequences of `lengths` tokens, with
    vLLM's chunk metadata (chunks of `chunk` inside each sequence)."""
    t = sum(lengths)
    cu, cu_chunks, seq_idx, last = [0], [0], [], []
    for s, n in enumerate(lengths):
        for c in range(cu[-1], cu[-1] + n, chunk):
            cu_chunks.append(min(c + chunk, cu[-1] + n))
            seq_idx.append(s)
        last.append(len(seq_idx) - 1)
        cu.append(cu[-1] + n)
    cu, cu_chunks, seq_idx, last = (torch.tensor(v, dtype=torch.int32, device=dev)
                                    for v in (cu, cu_chunks, seq_idx, last))
    xbc = rnd(dev, t, Cd, dtype=torch.bfloat16)
    x, B, C = xbc[:, :I].view(t, H, P), xbc[:, I:I + G * N].view(t, G, N), \
        xbc[:, I + G * N:].view(t, G, N)
    dt = rnd(dev, t, H, lo=-4, hi=-1, dtype=torch.bfloat16)
    A, dt_bias, D = -torch.exp(rnd(dev, H, lo=-2, hi=0.5)), rnd(dev, H, lo=-1, hi=0), rnd(dev, H)
    out = torch.empty(t, H, P, dtype=torch.bfloat16, device=dev)
    return lambda: ops.mamba_chunk_scan_combined_varlen(
        x, dt, A, B, C, chunk, cu, cu_chunks, last, seq_idx, out, D=D, dt_bias=dt_bias,
        dt_softplus=True, state_dtype=torch.float32)


def quant(dev, m):
    x = rnd(dev, m, Hd, lo=-4, hi=4, dtype=torch.bfloat16)
    return lambda: ops.scaled_fp8_quant(x, 0.02)


def linear(dev, m):
    # NemotronH's in_proj: K = hidden, N = z, xBC and dt side by side.
    n = I + Cd + H
    x = rnd(dev, m, Hd, dtype=torch.bfloat16)
    w = rnd(dev, n, Hd, lo=-0.5, hi=0.5).to(E4M3)
    s_w, s_x = torch.tensor([0.01], device=dev), torch.tensor([0.02], device=dev)
    return lambda: ops.w8a8_linear(x, w, s_w, s_x)


def launch_floor(dev):
    x = rnd(dev, 1, 64, dtype=torch.bfloat16)
    out = torch.empty(1, 64, dtype=E4M3, device=dev)
    scale = torch.tensor([0.5], device=dev)
    constants = dict(width=64, block=1024, scale_ptr=1)
    return lambda: _launch.launch("quantize_e4m3", constants, x.device, (1, 1), x=x, out=out,
                                  rows=1, input_scale=scale)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=10)
    parser.add_argument("--calls", type=int, default=100)
    parser.add_argument("--cpu", action="store_true",
                        help="host time on the CPU, the interpreter given an empty grid")
    parser.add_argument("--only", default="", help="the rows whose name contains this")
    a = parser.parse_args()
    torch.manual_seed(0)
    dev = torch.device("cpu" if a.cpu else "cuda")
    if a.cpu:
        empty_grid_on_cpu()
        where = "CPU (interpreter, empty grid)"
    else:
        where = f"{torch.cuda.get_device_name()} ({tj.runtime().arch})"
    print(f"{where}; torch {torch.__version__}; tilejit {tj.__version__}; "
          f"{a.calls} calls a trial, median of {a.trials}; microseconds per call")
    print(f"{'op':<36} {'eager':>9} {'uncached':>9} {'graphed':>9} {'host':>9} "
          f"{'host-unc':>9} {'record':>9}")
    row("launch floor (quantize_e4m3 1x64)", launch_floor(dev), a)
    for b in (1, 8, 64, 256):
        row(f"selective_state_update B={b}", ssm_update(dev, b), a)
    for b in (1, 64, 256):
        row(f"causal_conv1d_update B={b}", conv_update(dev, b), a)
    tokens = 256 if a.cpu else 8192
    row(f"causal_conv1d_fn T={tokens}", conv_fn(dev, tokens), a)
    row(f"rms_norm_gated T={64 if a.cpu else 8192}", gated_norm(dev, 64 if a.cpu else 8192), a)
    for name, lengths in (((f"T={tokens}", [tokens]), ("8x32", [32] * 8)) if a.cpu else
                          (("T=8192", [8192]), ("64x512", [512] * 64))):
        row(f"mamba_chunk_scan_combined {name}", ssd(dev, lengths), a)
    for m in ((8, 64) if a.cpu else (8, 256, 8192)):
        row(f"scaled_fp8_quant M={m}", quant(dev, m), a)
        row(f"w8a8_linear in_proj M={m}", linear(dev, m), a)


if __name__ == "__main__":
    main()
