#!/usr/bin/env python3
"""tilejit.ops beside vLLM's own Triton ops, on the same inputs, in the same run,
at NemotronH geometry (docs/numerics.md#geometry): per op, per call in
microseconds, eager (back-to-back calls from Python, what a caller pays on the
host included) and graphed (the same calls captured in one CUDA graph, replayed).

vLLM's op files come from bench/peers/extract_vllm.sh (PYTHONPATH=.peers); the
W8A8 linear is compared with what vLLM runs for it without its compiled ops: a
static quant in torch and torch._scaled_mm. Method: after three warm-up calls
(compilation and autotuning stay out), each trial times `--calls` calls between
two CUDA events; n trials give median, min and max. The last column is the
largest |tilejit - vLLM| over the op's output, a sanity check (the bands live in
tests/python/test_ops_*.py). Inputs are fresh random values, never zeros. A
form that cannot run (a capture that fails, an argument refused) prints why.

Usage: ops_vllm_bench.py [--trials N] [--calls C] [--only SUBSTRING]"""

import argparse
import traceback

import torch

import tilejit as tj
import tilejit.ops as ops
from ops_torch_bench import graph_timed as graphed
from ops_torch_bench import timed as eager
from vllm.model_executor.layers.mamba.ops import causal_conv1d as v_conv
from vllm.model_executor.layers.mamba.ops import layernorm_gated as v_norm
from vllm.model_executor.layers.mamba.ops import mamba_ssm as v_ssm
from vllm.model_executor.layers.mamba.ops import ssd_combined as v_ssd

Hd, H, P, N, G, K = 2688, 64, 64, 128, 8, 4
I, Cd = H * P, H * P + 2 * G * N
Q = 128  # NemotronH's chunk_size, the chunks vLLM's metadata describes
E4M3 = torch.float8_e4m3fn


def stats(fn, timer, trials, calls):
    try:
        return "%8.1f %8.1f %8.1f" % timer(fn, trials, calls)
    except Exception as error:  # a form that cannot run is reported, not fatal
        first = str(error).strip().splitlines()[0][:70] if str(error).strip() else ""
        torch.cuda.synchronize()
        return f"  ({type(error).__name__}: {first})"


def row(name, tj_fn, peer_fn, compare, trials, calls, peer_graphable=True):
    try:
        diff = f"{compare():.3g}"
    except Exception as error:
        diff = f"({type(error).__name__}: {str(error).strip().splitlines()[0][:90]})"
        traceback.print_exc()
    cells = [stats(tj_fn, eager, trials, calls), stats(peer_fn, eager, trials, calls),
             stats(tj_fn, graphed, trials, calls),
             stats(peer_fn, graphed, trials, calls) if peer_graphable else "  (syncs)"]
    print(f"{name:<34} n={trials:<3}| " + " | ".join(cells) + f" | {diff}", flush=True)


def rnd(*shape, lo=-1.0, hi=1.0, dtype=torch.float32):
    return (torch.rand(*shape, device="cuda") * (hi - lo) + lo).to(dtype)


def max_diff(a, b):
    return float((a.float() - b.float()).abs().max())


# --- the ops -------------------------------------------------------------------

def state_update(b, a):
    slots = 2 * b + 1
    A = -torch.exp(rnd(H, lo=-2, hi=0.5))
    dt_bias, D = rnd(H, lo=-1, hi=0), rnd(H)
    xbc = rnd(b, Cd, lo=-2, hi=2, dtype=torch.bfloat16)
    x, B, C = xbc[:, :I].view(b, H, P), xbc[:, I:I + G * N].view(b, G, N), \
        xbc[:, I + G * N:].view(b, G, N)
    dt = rnd(b, H, lo=-3, hi=1, dtype=torch.bfloat16)[:, :, None].expand(b, H, P)
    state = rnd(slots, H, P, N)
    # Slot 0 is vLLM's null block: live rows use 1..slots-1.
    idx = (torch.randperm(slots - 1, device="cuda")[:b] + 1).to(torch.int32)
    out_t = torch.empty(b, H, P, dtype=torch.bfloat16, device="cuda")
    out_v = torch.empty_like(out_t)
    args = (x, dt, A[:, None, None].expand(H, P, N), B, C)
    per = dict(D=D[:, None].expand(H, P), dt_bias=dt_bias[:, None].expand(H, P),
               dt_softplus=True, state_batch_indices=idx)

    def tj_fn(s=state):
        return ops.selective_state_update(s, *args, out=out_t, **per)

    def peer_fn(s=state):
        v_ssm.selective_state_update(s, *args, out=out_v, **per)
        return out_v

    def compare():
        s0 = state.clone()
        return max_diff(tj_fn(s0.clone()), peer_fn(s0.clone()))
    row(f"selective_state_update B={b}", tj_fn, peer_fn, compare, a.trials, a.calls)


def conv_update(b, a):
    slots = 2 * b + 1
    x = rnd(b, Cd, lo=-2, hi=2, dtype=torch.bfloat16)
    weight = rnd(Cd, K, lo=-0.5, hi=0.5, dtype=torch.bfloat16)
    bias = rnd(Cd, lo=-0.1, hi=0.1, dtype=torch.bfloat16)
    page = rnd(slots, K - 1, Cd, dtype=torch.bfloat16).transpose(1, 2)  # vLLM's layout
    idx = (torch.randperm(slots - 1, device="cuda")[:b] + 1).to(torch.int32)
    out_v = torch.empty_like(x)

    def tj_fn(p=page):
        return ops.causal_conv1d_update(x, p, weight, bias, activation="silu",
                                        conv_state_indices=idx)

    def peer_fn(p=page):
        return v_conv.causal_conv1d_update(x, p, weight, bias, activation="silu",
                                           conv_state_indices=idx, out=out_v)

    def compare():
        return max_diff(tj_fn(page.clone()), peer_fn(page.clone()))
    row(f"causal_conv1d_update B={b}", tj_fn, peer_fn, compare, a.trials, a.calls)


def conv_fn(T, a):
    xt = rnd(T, Cd, lo=-2, hi=2, dtype=torch.bfloat16)
    weight = rnd(Cd, K, lo=-0.5, hi=0.5, dtype=torch.bfloat16)
    bias = rnd(Cd, lo=-0.1, hi=0.1, dtype=torch.bfloat16)
    pages = torch.zeros(2, K - 1, Cd, dtype=torch.bfloat16, device="cuda").transpose(1, 2)
    qsl = torch.tensor([0, T], dtype=torch.int32, device="cuda")
    one = torch.ones(1, dtype=torch.int32, device="cuda")
    fresh = torch.zeros(1, dtype=torch.bool, device="cuda")

    def tj_fn():
        return ops.causal_conv1d_fn(xt.t(), weight, bias, pages, qsl, cache_indices=one,
                                    has_initial_state=fresh)

    def peer_fn():
        return v_conv.causal_conv1d_fn(xt.t(), weight, bias, pages, qsl, cache_indices=one,
                                       has_initial_state=fresh)
    row(f"causal_conv1d_fn T={T}", tj_fn, peer_fn, lambda: max_diff(tj_fn(), peer_fn()),
        a.trials, a.calls, peer_graphable=False)


def norm(T, a):
    y = rnd(T, I, lo=-2, hi=2, dtype=torch.bfloat16)
    z = rnd(T, I, lo=-3, hi=3, dtype=torch.bfloat16)
    w = rnd(I, lo=0.5, hi=1.5, dtype=torch.bfloat16)
    kw = dict(z=z, eps=1e-5, group_size=I // G, norm_before_gate=False)

    def tj_fn():
        return ops.rms_norm_gated(y, w, None, **kw)

    def peer_fn():
        return v_norm.rms_norm_gated(y, w, None, **kw)
    row(f"rms_norm_gated T={T}", tj_fn, peer_fn, lambda: max_diff(tj_fn(), peer_fn()),
        a.trials, a.calls)


def chunk_metadata(lengths):
    """vLLM's varlen chunk metadata: chunks of Q inside each sequence."""
    cu, cu_chunks, seq_idx, last = [0], [0], [], []
    for s, n in enumerate(lengths):
        start = cu[-1]
        for c in range(start, start + n, Q):
            cu_chunks.append(min(c + Q, start + n))
            seq_idx.append(s)
        last.append(len(seq_idx) - 1)
        cu.append(start + n)
    t = lambda v: torch.tensor(v, dtype=torch.int32, device="cuda")  # noqa: E731
    return t(cu), t(cu_chunks), t(last), t(seq_idx)


def ssd(lengths, a, name):
    T = sum(lengths)
    A = -torch.exp(rnd(H, lo=-2, hi=0.5))
    dt_bias, D = rnd(H, lo=-1, hi=0), rnd(H)
    xbc = rnd(T, Cd, dtype=torch.bfloat16)
    x = xbc[:, :I].view(T, H, P)
    B, C = xbc[:, I:I + G * N].view(T, G, N), xbc[:, I + G * N:].view(T, G, N)
    dt = rnd(T, H, lo=-4, hi=-1, dtype=torch.bfloat16)
    cu, cu_chunks, last, seq_idx = chunk_metadata(lengths)
    out_t = torch.empty(T, H, P, dtype=torch.bfloat16, device="cuda")
    out_v = torch.empty_like(out_t)
    kw = dict(D=D, dt_bias=dt_bias, dt_softplus=True, state_dtype=torch.float32)

    def tj_fn():
        return ops.mamba_chunk_scan_combined_varlen(x, dt, A, B, C, Q, cu, cu_chunks, last,
                                                    seq_idx, out_t, **kw)

    def peer_fn():
        return v_ssd.mamba_chunk_scan_combined_varlen(x, dt, A, B, C, Q, cu, cu_chunks, last,
                                                      seq_idx, out_v, **kw)

    def compare():
        st, sv = tj_fn(), peer_fn()
        return max(max_diff(out_t, out_v), max_diff(st, sv))
    trials = max(5, a.trials // 2)
    row(f"mamba_chunk_scan_combined {name}", tj_fn, peer_fn, compare, trials, 1)


def w8a8(m, a):
    x = rnd(m, Hd, lo=-4, hi=4, dtype=torch.bfloat16)
    w = rnd(Cd + I + H, Hd, lo=-1, hi=1).to(E4M3)
    s_x, s_w = torch.tensor(0.02, device="cuda"), torch.tensor(0.01, device="cuda")

    def tj_fn():
        return ops.w8a8_linear(x, w, s_w, s_x)

    def peer_fn():  # a static quant, rows padded to 16 as cuBLASLt asks, _scaled_mm
        q = (x.float() / s_x).clamp(-448, 448).to(E4M3)
        if m % 16:
            q = torch.cat([q, torch.zeros(16 - m % 16, Hd, device="cuda").to(E4M3)])
        return torch._scaled_mm(q, w.t(), scale_a=s_x, scale_b=s_w,
                                out_dtype=torch.bfloat16)[:m]
    row(f"w8a8_linear in_proj M={m}", tj_fn, peer_fn, lambda: max_diff(tj_fn(), peer_fn()),
        a.trials, a.calls)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=20)
    parser.add_argument("--calls", type=int, default=20)
    parser.add_argument("--only", default="")
    a = parser.parse_args()
    torch.manual_seed(0)
    rt = tj.runtime()
    print(f"device: {torch.cuda.get_device_name()} ({rt.arch}); torch {torch.__version__}; "
          f"tilejit {tj.__version__}; per call, microseconds: median min max")
    print(f"{'op':<34} {'n':<5}| {'tilejit eager':^26} | {'vLLM eager':^26} | "
          f"{'tilejit graphed':^26} | {'vLLM graphed':^26} | max|diff|")
    cases = [(f"ssu{b}", lambda b=b: state_update(b, a)) for b in (1, 8, 64, 256)]
    cases += [(f"convu{b}", lambda b=b: conv_update(b, a)) for b in (1, 64, 256)]
    cases += [("convfn", lambda: conv_fn(8192, a)), ("norm", lambda: norm(8192, a))]
    cases += [("ssd8192", lambda: ssd([8192], a, "T=8192")),
              ("ssd2048", lambda: ssd([2048], a, "T=2048")),
              ("ssd64x512", lambda: ssd([512] * 64, a, "64x512"))]
    cases += [(f"w8a8_{m}", lambda m=m: w8a8(m, a)) for m in (1, 8, 64, 256, 8192)]
    for key, case in cases:
        if a.only and a.only not in key:
            continue
        try:
            case()
        except Exception:
            print(f"{key}: failed", flush=True)
            traceback.print_exc()


if __name__ == "__main__":
    main()
