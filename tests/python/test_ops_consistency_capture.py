"""Every tilejit.ops op's default path (the arguments a caller leaves out left
out) under a CUDA graph capture (issue 32): no host read, host sync or
pageable copy while capturing, so the captured graph replays to what the eager
call computes, states included. On the interpreter the same calls run eagerly
(the inputs are valid there too); the capture itself needs a GPU."""

import pytest

torch = pytest.importorskip("torch", reason="tilejit.ops works on torch tensors")

import tilejit.ops as ops  # noqa: E402

from ops_support import vllm_chunks  # noqa: E402

CUDA = torch.cuda.is_available()


def _rand(gen, *shape, dtype=torch.bfloat16, lo=-1.0, hi=1.0):
    return (torch.rand(*shape, generator=gen) * (hi - lo) + lo).to(dtype)


def _ints(values):
    return torch.as_tensor(values).to(torch.int32)


def _ssu(gen):
    tensors = dict(state=_rand(gen, 4, 2, 16, 16, dtype=torch.float32),
                   x=_rand(gen, 2, 2, 16), dt=_rand(gen, 2, 2),
                   A=-_rand(gen, 2, dtype=torch.float32, lo=0.5, hi=1.5),
                   B=_rand(gen, 2, 1, 16), C=_rand(gen, 2, 1, 16))
    return tensors, lambda t: ops.selective_state_update(**t)


def _conv_update(gen):
    tensors = dict(x=_rand(gen, 2, 64), conv_state=_rand(gen, 4, 64, 3),
                   weight=_rand(gen, 64, 4))
    return tensors, lambda t: ops.causal_conv1d_update(**t)


def _conv_fn(gen):
    tensors = dict(x=_rand(gen, 10, 64), weight=_rand(gen, 64, 4), bias=None,
                   conv_states=_rand(gen, 3, 64, 3), query_start_loc=_ints([0, 4, 10]))
    return tensors, lambda t: ops.causal_conv1d_fn(t["x"].t(), t["weight"], None,
                                                   t["conv_states"], t["query_start_loc"])


def _norms(gen):
    tensors = dict(x=_rand(gen, 4, 64), weight=_rand(gen, 64), z=_rand(gen, 4, 64))
    return tensors, lambda t: (ops.rms_norm_gated(t["x"], t["weight"], None),
                               ops.rmsnorm_fn(t["x"], t["weight"], None, z=t["z"]),
                               ops.layernorm_fn(t["x"], t["weight"], None))


def _ssd_varlen(gen):
    lengths, heads, head_dim, dstate = [5, 11], 2, 16, 16
    cu_chunks, seq_idx, last = vllm_chunks(lengths, 8, [8, 8])
    tokens = sum(lengths)
    tensors = dict(x=_rand(gen, tokens, heads, head_dim), dt=_rand(gen, tokens, heads),
                   A=-_rand(gen, heads, dtype=torch.float32, lo=0.5, hi=1.5),
                   B=_rand(gen, tokens, 1, dstate), C=_rand(gen, tokens, 1, dstate),
                   cu_seqlens=_ints([0, 5, 16]), cu_chunk_seqlens=_ints(cu_chunks),
                   seq_idx=_ints(seq_idx), last_chunk_indices=_ints(last),
                   out=torch.zeros(tokens, heads, head_dim, dtype=torch.bfloat16))
    return tensors, lambda t: ops.mamba_chunk_scan_combined_varlen(chunk_size=8, **t)


def _ssd_batch(gen):
    batch, seqlen, heads, head_dim, dstate = 2, 12, 2, 16, 16
    tensors = dict(x=_rand(gen, batch, seqlen, heads, head_dim),
                   dt=_rand(gen, batch, seqlen, heads),
                   A=-_rand(gen, heads, dtype=torch.float32, lo=0.5, hi=1.5),
                   B=_rand(gen, batch, seqlen, 1, dstate), C=_rand(gen, batch, seqlen, 1, dstate))
    return tensors, lambda t: ops.mamba_chunk_scan_combined(chunk_size=8, **t)


def _fp8(gen):
    # Scales as device tensors, as vLLM passes them (a Python float becomes a
    # tensor copied from the host).
    tensors = dict(x=_rand(gen, 4, 64), weight=_rand(gen, 32, 64),
                   input_scale=torch.tensor([0.05]), weight_scale=torch.tensor([0.02]))

    def call(t):
        weight, _ = ops.scaled_fp8_quant(t["weight"], t["weight_scale"])
        a, s_x = ops.scaled_fp8_quant(t["x"], t["input_scale"])
        return (ops.scaled_mm(a, weight.t(), s_x, t["weight_scale"]),
                ops.w8a8_linear(t["x"], weight, t["weight_scale"], t["input_scale"]))
    return tensors, call


CASES = {"selective_state_update": _ssu, "causal_conv1d_update": _conv_update,
         "causal_conv1d_fn": _conv_fn, "norms": _norms,
         "mamba_chunk_scan_combined_varlen": _ssd_varlen,
         "mamba_chunk_scan_combined": _ssd_batch, "fp8": _fp8}


def _inputs(case, device):
    tensors, call = CASES[case](torch.Generator().manual_seed(3300))
    return {k: None if v is None else v.to(device) for k, v in tensors.items()}, call


def _flat(result):
    return list(result) if isinstance(result, (tuple, list)) else [result]


def _same(a, b):
    return a.shape == b.shape and bool(torch.equal(a.float().nan_to_num(7.0),
                                                   b.float().nan_to_num(7.0)))


@pytest.mark.parametrize("case", sorted(CASES))
def test_default_path_runs_on_the_interpreter(case):
    tensors, call = _inputs(case, "cpu")
    assert all(r is not None for r in _flat(call(tensors)))


@pytest.mark.skipif(not CUDA, reason="a CUDA graph capture needs a GPU")
@pytest.mark.parametrize("case", sorted(CASES))
def test_default_path_is_graph_capturable(case):
    eager_inputs, call = _inputs(case, "cuda")
    eager = _flat(call(eager_inputs))  # also compiles and loads the kernels
    ops.check_errors()
    captured_inputs, _ = _inputs(case, "cuda")
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        captured = _flat(call(captured_inputs))
    graph.replay()
    torch.cuda.synchronize()
    ops.check_errors()
    for got, want in zip(captured, eager):
        assert _same(got, want), case
    for name, t in captured_inputs.items():  # in-place states: one step each
        if t is not None:
            assert _same(t, eager_inputs[name]), (case, name)
