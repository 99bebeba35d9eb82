"""tilejit.ops' plan cache (ops/_plan.py, module/OpSignature.cpp): a call whose
metadata matches an earlier call's launches that call's prepared kernels with
the new data pointers, and computes bit for bit what the full path computes; a
call whose dtype, shape, strides, alignment or aliasing differ is checked in
full again (refused as the full path refuses it, or planned anew), never
launched with the old plan. On the GPU when there is one, else the interpreter."""

import gc
import weakref

import pytest

torch = pytest.importorskip("torch")

import tilejit as tj  # noqa: E402
import tilejit.ops as ops  # noqa: E402
from tilejit.ops import _launch, _plan  # noqa: E402

from ops_support import CHANNELS, DEV, G, H, N, P  # noqa: E402

E4M3 = _launch.E4M3 or torch.uint8
ROWS, SLOTS, DIM, WIDTH = 3, 6, 64, 64


def _gen(seed):
    return torch.Generator().manual_seed(seed)


def _rand(gen, *shape, dtype=torch.bfloat16, lo=-1.0, hi=1.0):
    return (torch.rand(*shape, generator=gen) * (hi - lo) + lo).to(dtype).to(DEV)


def _slots(gen, rows, dtype=torch.int32):
    return torch.randperm(SLOTS, generator=gen)[:rows].to(dtype).to(DEV)


def ssu(gen, rows=ROWS, dt_dtype=torch.bfloat16, index=torch.int32, **changes):
    """selective_state_update on x, B, C as views of one xBC buffer (vLLM's)."""
    xbc = _rand(gen, rows, CHANNELS, lo=-2, hi=2)
    x = xbc[:, :H * P].view(rows, H, P)
    B = xbc[:, H * P:H * P + G * N].view(rows, G, N)
    C = xbc[:, H * P + G * N:].view(rows, G, N)
    args = dict(state=_rand(gen, SLOTS, H, P, N, dtype=torch.float32), x=x,
                dt=_rand(gen, rows, H, dtype=dt_dtype, lo=-3, hi=1),
                A=-_rand(gen, H, dtype=torch.float32, lo=0.5, hi=2), B=B, C=C,
                D=_rand(gen, H, dtype=torch.float32), dt_bias=_rand(gen, H, dtype=torch.float32),
                dt_softplus=True, state_batch_indices=_slots(gen, rows, index))
    args.update(changes)
    return ops.selective_state_update, args


def conv_update(gen, rows=ROWS, x_dtype=torch.bfloat16, channel_last=False, **changes):
    """causal_conv1d_update with vLLM's arguments."""
    page = _rand(gen, SLOTS, 3, DIM).transpose(1, 2) if channel_last else \
        _rand(gen, SLOTS, DIM, 3)
    args = dict(x=_rand(gen, rows, DIM, dtype=x_dtype), conv_state=page,
                weight=_rand(gen, DIM, 4, lo=-0.5, hi=0.5), bias=_rand(gen, DIM, lo=-0.1, hi=0.1),
                activation="silu", conv_state_indices=_slots(gen, rows))
    args.update(changes)
    return ops.causal_conv1d_update, args


def conv_fn(gen, tokens=40, x_dtype=torch.bfloat16, **changes):
    """causal_conv1d_fn over two sequences (x channel-last, vLLM's pages)."""
    xt = _rand(gen, tokens, DIM, dtype=x_dtype, lo=-2, hi=2)
    args = dict(x=xt.t(), weight=_rand(gen, DIM, 4, lo=-0.5, hi=0.5),
                bias=_rand(gen, DIM, lo=-0.1, hi=0.1),
                conv_states=_rand(gen, SLOTS, 3, DIM).transpose(1, 2),
                query_start_loc=torch.tensor([0, 15, tokens], dtype=torch.int32, device=DEV),
                cache_indices=_slots(gen, 2), has_initial_state=torch.tensor(
                    [True, False], device=DEV))
    args.update(changes)
    return ops.causal_conv1d_fn, args


def ssd(gen, lengths=(23, 41), index=torch.int32, **changes):
    """mamba_chunk_scan_combined_varlen on x, B, C views of one xBC buffer, the
    caller's chunks of 16 tokens."""
    tokens = sum(lengths)
    cu, cu_chunks, seq_idx, last = [0], [0], [], []
    for s, n in enumerate(lengths):
        for c in range(cu[-1], cu[-1] + n, 16):
            cu_chunks.append(min(c + 16, cu[-1] + n))
            seq_idx.append(s)
        last.append(len(seq_idx) - 1)
        cu.append(cu[-1] + n)
    _, ssu_args = ssu(gen, rows=tokens)
    args = {k: ssu_args[k] for k in ("x", "dt", "A", "B", "C", "D", "dt_bias", "dt_softplus")}
    args.update(chunk_size=16, out=torch.empty(tokens, H, P, dtype=torch.bfloat16, device=DEV),
                state_dtype=torch.float32,
                **{k: torch.tensor(v, dtype=index, device=DEV) for k, v in (
                    ("cu_seqlens", cu), ("cu_chunk_seqlens", cu_chunks), ("seq_idx", seq_idx),
                    ("last_chunk_indices", last))})
    args.update(changes)
    return ops.mamba_chunk_scan_combined_varlen, args


def norm(gen, rows=ROWS, x_dtype=torch.bfloat16, op=ops.rms_norm_gated, **changes):
    """rms_norm_gated (or layernorm_fn) gated by z after the norm, groups of 32."""
    args = dict(x=_rand(gen, rows, WIDTH, dtype=x_dtype, lo=-2, hi=2),
                weight=_rand(gen, WIDTH, lo=0.5, hi=1.5), bias=None,
                z=_rand(gen, rows, WIDTH, lo=-3, hi=3), eps=1e-5, group_size=32,
                norm_before_gate=False)
    args.update(changes)
    return op, args


def quant(gen, rows=ROWS, scale=0.5, **changes):
    args = dict(input=_rand(gen, rows, WIDTH, lo=-100, hi=100), scale=scale)
    args.update(changes)
    return ops.scaled_fp8_quant, args


def linear(gen, rows=ROWS, input_scale=0.05, **changes):
    """w8a8_linear: the quant and scaled_mm, two ops, one plan."""
    weight = _rand(gen, 96, WIDTH, dtype=torch.float32, lo=-8, hi=8).to(E4M3)
    args = dict(x=_rand(gen, rows, WIDTH, lo=-6, hi=6), weight=weight,
                weight_scale=torch.tensor([0.01], device=DEV), input_scale=input_scale)
    args.update(changes)
    return ops.w8a8_linear, args


OPS = {"ssu": ssu, "conv_update": conv_update, "conv_fn": conv_fn, "ssd": ssd, "norm": norm,
       "layernorm": lambda gen, **c: norm(gen, op=ops.layernorm_fn, **c), "quant": quant,
       "linear": linear}


def _bits(t):
    return t.detach().cpu().contiguous().view(torch.uint8)


def _tensors(value):
    """Every tensor of a call's arguments (in-place states included) or result."""
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, (tuple, list)):
        return [t for v in value for t in _tensors(v)]
    return []


def _same(a, b):
    assert len(a) == len(b)
    for x, y in zip(a, b):
        assert x.shape == y.shape and x.dtype == y.dtype and x.stride() == y.stride()
        assert torch.equal(_bits(x), _bits(y))


@pytest.fixture
def launches(monkeypatch):
    """How many kernel launches went through the full path (a cached call makes
    none: its prepared launches bypass Launch)."""
    count = [0]
    real = _launch.Launch.__call__

    def counted(self, *args, **kwargs):
        count[0] += 1
        return real(self, *args, **kwargs)

    monkeypatch.setattr(_launch.Launch, "__call__", counted)
    return count


def _planned(make, seed, **changes):
    """The op called twice with inputs of `seed`: the second call records the
    plan of their key (a key is recorded the second time it comes)."""
    for _ in range(2):
        op, args = make(_gen(seed), **changes)
        op(**args)
    return op


def _cached_and_full(make, seed, **changes):
    """The op on inputs of `seed` through its plan (of inputs of another seed,
    the same metadata) and through the full path (op.__wrapped__) on an
    identical copy: (cached outputs, full outputs)."""
    _planned(make, seed + 100, **changes)
    op, args = make(_gen(seed), **changes)
    result = op(**args)
    cached = _tensors(result) + _tensors(args)
    op, args = make(_gen(seed), **changes)
    full = _tensors(op.__wrapped__(**args)) + _tensors(args)
    return cached, full


@pytest.mark.parametrize("name", sorted(OPS))
def test_a_cached_call_launches_the_plan_and_matches_the_full_path(name, launches):
    make = OPS[name]
    op, args = make(_gen(1))
    _plan.clear()
    op(**args)
    assert not op.plans  # a key seen once
    op(**args)
    plans = dict(op.plans)
    assert len(plans) == 1 and all(plans.values()), plans
    assert launches[0] >= 1
    op, args = make(_gen(2))  # new tensors, the same metadata
    before = launches[0]
    cached = _tensors(op(**args)) + _tensors(args)
    assert op.plans == plans and launches[0] == before  # the plan, not the full path
    op, args = make(_gen(2))
    _same(cached, _tensors(op.__wrapped__(**args)) + _tensors(args))


def test_a_plan_returns_the_callers_out_and_views_of_its_own():
    gen = _gen(3)
    op, args = ssu(gen)
    out = torch.empty(ROWS, H, P, dtype=torch.bfloat16, device=DEV)
    for _ in range(2):
        assert op(**args, out=out) is out
    # The single-head form returns a view of the output it allocates.
    state = _rand(gen, SLOTS, P, N, dtype=torch.float32)
    x, dt = _rand(gen, ROWS, P), _rand(gen, ROWS, P, dtype=torch.float32, lo=0, hi=0.1)
    B, C = _rand(gen, ROWS, N), _rand(gen, ROWS, N)
    A = -_rand(gen, P, N, dtype=torch.float32, lo=0.5, hi=2)
    got = [op(state.clone(), x, dt, A, B, C) for _ in range(2)]
    _same(got[:1], got[1:])
    assert got[1].shape == (ROWS, P)


# A change after a cached call, and whether the full path refuses it ("refused")
# or plans it anew ("planned").
CHANGES = [
    ("ssu", "dt f32", dict(dt_dtype=torch.float32), "planned"),
    ("ssu", "dt f64", dict(dt_dtype=torch.float64), "refused"),
    ("ssu", "more rows", dict(rows=5), "planned"),
    ("ssu", "int64 slots", dict(index=torch.int64), "planned"),
    ("ssu", "state not contiguous",
     dict(state=torch.zeros(SLOTS, H, P, 2 * N, device=DEV)[..., :N]), "refused"),
    ("ssu", "x misaligned",
     dict(x=torch.zeros(ROWS, H * P + 8, dtype=torch.bfloat16, device=DEV)[:, 1:1 + H * P]
          .view(ROWS, H, P)), "refused"),
    ("ssu", "x rows further apart",
     dict(x=torch.zeros(ROWS, H * P + 8, dtype=torch.bfloat16, device=DEV)[:, 8:]
          .view(ROWS, H, P)), "planned"),
    ("ssu", "B transposed",
     dict(B=torch.zeros(ROWS, N, G, dtype=torch.bfloat16, device=DEV).transpose(1, 2)),
     "refused"),
    ("conv_update", "x f16", dict(x_dtype=torch.float16), "planned"),
    ("conv_update", "x f64", dict(x_dtype=torch.float64), "refused"),
    ("conv_update", "channel-last pages", dict(channel_last=True), "planned"),
    ("conv_update", "one row", dict(rows=1), "planned"),
    ("conv_update", "x expanded over rows",
     dict(x=torch.zeros(1, DIM, dtype=torch.bfloat16, device=DEV).expand(ROWS, DIM)),
     "refused"),
    ("conv_fn", "more tokens", dict(tokens=70), "planned"),
    ("conv_fn", "int64 query_start_loc",
     dict(query_start_loc=torch.tensor([0, 15, 40], device=DEV)), "planned"),
    ("conv_fn", "no initial states", dict(has_initial_state=None), "planned"),
    ("conv_fn", "x token-major",
     dict(x=torch.zeros(DIM, 40, dtype=torch.bfloat16, device=DEV)), "refused"),
    ("ssd", "more sequences", dict(lengths=(23, 41, 5)), "planned"),
    ("ssd", "int64 metadata", dict(index=torch.int64), "planned"),
    ("ssd", "initial states",
     dict(initial_states=torch.ones(2, H, P, N, device=DEV)), "planned"),
    ("ssd", "intermediate states", dict(return_intermediate_states=True), "planned"),
    ("ssd", "chunk_size 0", dict(chunk_size=0), "refused"),
    ("ssd", "another dt_limit", dict(dt_limit=(0.0, 0.2)), "planned"),
    ("norm", "x f32", dict(x_dtype=torch.float32), "planned"),
    ("norm", "another eps", dict(eps=0.5), "planned"),
    ("norm", "another group", dict(group_size=64), "planned"),
    ("norm", "a group that does not divide", dict(group_size=48), "refused"),
    ("norm", "no gate", dict(z=None), "planned"),
    ("norm", "x columns strided",
     dict(x=torch.zeros(ROWS, 2 * WIDTH, dtype=torch.bfloat16, device=DEV)[:, ::2]), "refused"),
    ("quant", "another scale", dict(scale=0.25), "planned"),
    ("quant", "a scale tensor", dict(scale=torch.tensor([0.25], device=DEV)), "planned"),
    ("quant", "input f32", dict(input=torch.zeros(ROWS, WIDTH, device=DEV)), "refused"),
    ("linear", "another input scale", dict(input_scale=0.1), "planned"),
    ("linear", "more rows", dict(rows=17), "planned"),
]


@pytest.mark.parametrize("name, change, kwargs, outcome", CHANGES,
                         ids=[f"{c[0]}-{c[1]}" for c in CHANGES])
def test_a_changed_call_after_a_cached_one_is_checked_in_full(name, change, kwargs, outcome):
    make = OPS[name]
    _plan.clear()
    _planned(make, 4)
    op, args = make(_gen(5), **kwargs)
    if outcome == "refused":
        with pytest.raises(tj.ArgumentError) as cached:
            op(**args)
        with pytest.raises(tj.ArgumentError) as full:
            op.__wrapped__(**args)
        assert str(cached.value) == str(full.value)
        return
    cached, full = _cached_and_full(make, 5, **kwargs)
    assert len(op.plans) == 2
    _same(cached, full)


def test_an_output_that_overlaps_an_input_is_refused_after_a_cached_call():
    op, args = ssu(_gen(6))
    args["x"] = args["x"].contiguous()
    for _ in range(2):
        op(**args, out=torch.empty(ROWS, H, P, dtype=torch.bfloat16, device=DEV))
    # The same dtype, shape, strides and alignment as the outputs before, but x's memory.
    with pytest.raises(tj.ArgumentError, match="out overlaps x in memory"):
        op(**args, out=args["x"])


def test_x_b_c_apart_after_views_of_one_buffer_are_planned_anew():
    """x, B and C of one xBC row share memory at fixed distances; given apart
    (the same metadata each), the key differs and the call is planned anew."""
    op, args = ssu(_gen(7))
    _plan.clear()
    op = _planned(ssu, 7)
    for seed in (8, 9):
        _, base = ssu(_gen(seed))
        apart = dict(base, x=base["x"].clone(), B=base["B"].clone(), C=base["C"].clone())
        cached = _tensors(op(**apart)) + _tensors(apart)
        _, again = ssu(_gen(seed))
        apart = dict(again, x=again["x"].clone(), B=again["B"].clone(), C=again["C"].clone())
        _same(cached, _tensors(op.__wrapped__(**apart)) + _tensors(apart))
    assert len(op.plans) == 2


def test_device_checks_still_raise_on_a_cached_call():
    op, args = ssu(_gen(10))
    for _ in range(2):
        op(**args)
    args["state_batch_indices"] = torch.tensor([0, SLOTS, 1], dtype=torch.int32, device=DEV)
    # The same metadata: the plan's launch, checked on the device.
    with pytest.raises(tj.ArgumentError, match=r"state_batch_indices\[1\] is at or past"):
        op(**args)
        ops.check_errors()


def test_varlen_metadata_is_checked_on_a_cached_prefill_call():
    """causal_conv1d_fn's plan replays its metadata steps (the device check,
    the chunks built from query_start_loc) with the call's own tensors."""
    op, args = conv_fn(_gen(14))
    for _ in range(2):
        op(**args)
    args["query_start_loc"] = torch.tensor([0, 41, 40], dtype=torch.int32, device=DEV)
    with pytest.raises(tj.ArgumentError, match=r"query_start_loc\[1\] >= query_start_loc"):
        op(**args)
        ops.check_errors()


class _Producer:
    """A DLPack producer that is not a torch tensor."""

    def __init__(self, tensor):
        self.tensor = tensor

    def __dlpack__(self, stream=None):
        return self.tensor.__dlpack__()

    def __dlpack_device__(self):
        return self.tensor.__dlpack_device__()


def test_host_reads_dlpack_and_full_caches_take_the_full_path(monkeypatch, launches):
    op, args = ssu(_gen(11))
    _plan.clear()
    for _ in range(2):
        op(**args, check_slots=True)  # reads the slot table on the host every call
    assert list(op.plans.values()) == [False] and launches[0] == 2
    op(**dict(args, state=_Producer(args["state"])))  # keyed by nothing: no plan
    assert len(op.plans) == 1 and launches[0] == 3
    monkeypatch.setattr(_plan, "MAX_PLANS", 1)
    for _ in range(2):
        op(**args)  # a new key past MAX_PLANS: the full path, no plan
    assert len(op.plans) == 1 and launches[0] == 5


def test_a_plan_holds_no_tensor_of_its_calls():
    op, args = ssu(_gen(12))
    _plan.clear()
    op(**args)
    held = [weakref.ref(t) for t in _tensors(args)]
    result = weakref.ref(op(**args))
    assert op.plans
    del args
    gc.collect()
    assert all(r() is None for r in held + [result])


@pytest.mark.skipif(DEV.type != "cuda", reason="needs a GPU (CUDA graph capture)")
def test_a_call_first_made_inside_a_capture_keeps_no_plan():
    """Its outputs and kept tensors would be the graph's: such a key stays
    unplanned until an eager call plans it."""
    op, args = norm(_gen(13))
    op(**args)  # the kernels compiled and the error word made, eagerly
    op, args = norm(_gen(13), rows=7)
    _plan.clear()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        op(**args)
        out = op(**args)  # the key's second call: recorded, not kept
    graph.replay()
    torch.cuda.synchronize()
    assert op.plans == {}
    _same([out], [op.__wrapped__(**args)])


@pytest.mark.skipif(DEV.type != "cuda", reason="needs a GPU (CUDA graph capture)")
@pytest.mark.parametrize("name", sorted(OPS))
def test_a_cached_call_is_graph_capturable(name):
    """A plan recorded eagerly serves a call inside a capture: the replayed
    graph computes what the full path computes (test_ops_consistency_capture.py
    captures the full path)."""
    make = OPS[name]
    _plan.clear()
    op = _planned(make, 15)
    plans = dict(op.plans)
    op, args = make(_gen(16))
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        result = op(**args)
    assert op.plans == plans  # the plan served the capture
    graph.replay()
    torch.cuda.synchronize()
    ops.check_errors()
    captured = _tensors(result) + _tensors(args)
    op, args = make(_gen(16))
    _same(captured, _tensors(op.__wrapped__(**args)) + _tensors(args))


def test_the_key_tells_apart_what_the_checks_read():
    key = tj._tilejit._op_signature
    base = torch.zeros(4, 32)
    x = base[:, :16]

    def of(*args, **kwargs):
        signature = key(args, kwargs)
        return None if signature is None else signature[0]

    same = of(x, 1, eps=0.5)
    assert same == of(torch.zeros(4, 32)[:, :16], 1, eps=0.5)  # new memory, same metadata
    assert key((x, 1), {})[1] == (x.data_ptr(),)
    others = [of(x.double(), 1, eps=0.5), of(base[:3, :16], 1, eps=0.5),
              of(x.contiguous(), 1, eps=0.5), of(base[:, 1:17], 1, eps=0.5),
              of(x, 2, eps=0.5), of(x, 1.0, eps=0.5), of(x, True, eps=0.5),
              of(x, 1, eps=0.25), of(x, 1, epsilon=0.5), of(x, eps=0.5),
              of(x, 1, eps=(0.5,))]
    assert same not in others and len(set(others)) == len(others)
    # Which tensors share memory, and how far apart: x with its own columns 16..31
    # (inside x's span), with another buffer's, with itself.
    assert len({of(x, base[:, 16:]), of(x, torch.zeros(4, 32)[:, 16:]), of(x, x)}) == 3
    for unkeyable in ([x], (x,), object(), x.numpy(), 2 ** 70):
        assert key((unkeyable,), {}) is None
