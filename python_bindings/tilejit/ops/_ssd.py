"""mamba_chunk_scan_combined (mamba_ssm's batch-major form) and
mamba_chunk_scan_combined_varlen (the token-major form serving engines call):
docs/numerics.md R5p with R4, on the registered SSD kernels (_ssd_schedule)."""

from types import SimpleNamespace

import torch

from . import _checks
from ._plan import cached
from ._recording import keep, per_call, uncacheable
from ._launch import (FLOAT_TYPES, INDEX_TYPES, as_tensor, check, check_aligned,
                      check_no_overlap, check_strides, element_type, fail, packed_rows,
                      row_stride)
from ._ssd_schedule import KERNEL_CHUNK, kernel_chunk, scan, uses_spans
from ._varlen import check_varlen, chunks_of_caller_chunks, chunks_of_sequences


def _rows(op, name, t):
    """t [T, ...] as the [T, width] rows a kernel reads in place (each row
    contiguous, 16-byte aligned) and their stride; a tensor laid out otherwise
    is copied once into such rows (its dtype kept)."""
    tokens, width = t.shape[0], t[0].numel()
    inner = t[0].is_contiguous()
    stride = t.stride(0) if tokens > 1 else width
    size = t.element_size()
    if inner and stride >= width and t.data_ptr() % 16 == 0 and (stride * size) % 16 == 0:
        return torch.as_strided(t, (tokens, width), (stride, 1)), stride
    padded = -(-width * size // 16) * 16 // size
    return per_call(_padded_copy, t, padded), padded


def _padded_copy(t, padded):
    """t [T, ...] copied into new [T, padded] rows."""
    tokens, width = t.shape[0], t[0].numel()
    rows = torch.empty(tokens, padded, dtype=t.dtype, device=t.device)
    rows[:, :width] = t.reshape(tokens, width)
    return rows


def _vector(op, name, t, heads, device):
    """A per-head parameter [heads] (any float type), or zeros for None."""
    if t is None:
        return keep(torch.zeros(heads, device=device))
    check(op, name, t, FLOAT_TYPES, (heads,), device)
    return t if t.stride(0) == 1 else per_call(torch.Tensor.contiguous, t)


def _skip_coefficient(op, D, heads, head_dim, device):
    """D as ssd_prefill reads it: [heads], or [heads, head_dim] rows (d_per_p);
    a stride-0 expand over head_dim is its [heads] column."""
    if D is None or D.dim() == 1:
        return _vector(op, "D", D, heads, device), 0
    check(op, "D", D, FLOAT_TYPES, (heads, head_dim), device)
    if D.stride(1) == 0 or head_dim == 1:
        return _vector(op, "D", D[:, 0], heads, device), 0
    return (D if D.stride(1) == 1 and D.stride(0) == head_dim else
            per_call(torch.Tensor.contiguous, D)), 1


def _token_major(op, x, dt, A, B, C, D, z, dt_bias, dt_limit):
    """x [T, H, P], dt [T, H], B and C [T, G, N] and the per-head parameters,
    each f32, f16 or bf16, checked; the operands and constants the SSD kernels
    take (element types as specialization constants, no conversion)."""
    check(op, "x", x, FLOAT_TYPES)
    if x.dim() != 3:
        raise fail(op, f"x has shape {tuple(x.shape)}, expected (tokens, nheads, headdim)")
    tokens, heads, head_dim = x.shape
    if tokens == 0:
        raise fail(op, "x holds no tokens: empty batches are refused (R9)")
    device = x.device
    check(op, "B", B, FLOAT_TYPES, (tokens, None, None), device)
    groups, state = B.shape[1], B.shape[2]
    check(op, "C", C, (B.dtype,), (tokens, groups, state), device)
    check(op, "dt", dt, FLOAT_TYPES, (tokens, heads), device)
    if heads % groups:
        raise fail(op, f"nheads ({heads}) is not a multiple of ngroups ({groups})")
    s = SimpleNamespace(tokens=tokens, heads=heads, head_dim=head_dim, groups=groups,
                        state=state, device=device, type_of=element_type)
    s.A = _vector(op, "A", check(op, "A", A, FLOAT_TYPES, (heads,), device), heads, device)
    s.dt_bias = _vector(op, "dt_bias", dt_bias, heads, device)
    d, d_per_p = _skip_coefficient(op, D, heads, head_dim, device)
    # dt is read in place, rows of any stride (a column range of in_proj's output).
    check_strides(op, "dt", dt, (None, 1))
    dt_stride = row_stride(op, "dt", dt, heads)
    # Pointer parameters start on 16 bytes: a dt that does not (columns at an
    # odd offset of their row) goes as the aligned address below it, widened
    # by the columns in between (dt_col), so the kernel reads the same elements
    # inside the tensor it is given.
    dt_col = (dt.data_ptr() % 16) // dt.element_size()
    s.constants = dict(x_type=element_type(x), bc_type=element_type(B),
                       dt_type=element_type(dt), a_type=element_type(s.A),
                       dt_bias_type=element_type(s.dt_bias), dt_stride=dt_stride, dt_col=dt_col)
    s.inputs = dict(dt=torch.as_strided(dt, (dt.shape[0], dt.shape[1] + dt_col), dt.stride(),
                                        dt.storage_offset() - dt_col) if dt_col else dt)
    channels = heads * head_dim + 2 * groups * state
    xbc = packed_rows([x, B, C], channels) if x.dtype == B.dtype else None
    if xbc is not None:  # column ranges of one xBC row, read in place
        for name, t in zip("xBC", [x, B, C]):
            check_aligned(op, name, t)
        s.inputs["xbc"] = check_aligned(op, "x, B and C packed", xbc, (0,))
        s.constants.update(split_xbc=0)
    else:
        (s.inputs["x"], xs), (s.inputs["b"], bs), (s.inputs["c"], cs) = (
            _rows(op, n, t) for n, t in [("x", x), ("B", B), ("C", C)])
        s.constants.update(split_xbc=1, x_stride=xs, b_stride=bs, c_stride=cs)
    s.prefill_constants = dict(d_per_p=d_per_p, d_type=element_type(d), gate=int(z is not None))
    s.prefill_inputs = dict(d=d)
    if z is not None:
        check(op, "z", z, FLOAT_TYPES, (tokens, heads, head_dim), device)
        s.prefill_inputs["z"], z_stride = _rows(op, "z", z)
        s.prefill_constants.update(z_type=element_type(z), z_stride=z_stride)
    lo, hi = dt_limit
    s.dt_min, s.dt_max = float(lo), float(hi)
    return s


def _states(op, name, t, sequences, s):
    """Initial states [S, H, P, N] (any float type) as the page the kernel
    reads in place."""
    check(op, name, t, FLOAT_TYPES, (sequences, s.heads, s.head_dim, s.state), s.device)
    return t if t.is_contiguous() else per_call(torch.Tensor.contiguous, t)


@cached
def mamba_chunk_scan_combined_varlen(x, dt, A, B, C, chunk_size, cu_seqlens, cu_chunk_seqlens,
                                     last_chunk_indices, seq_idx, out, D=None, z=None,
                                     dt_bias=None, initial_states=None, dt_softplus=False,
                                     dt_limit=(0.0, float("inf")),
                                     return_intermediate_states=False, state_dtype=None):
    """The chunked SSD (R5p) of a packed varlen batch, as vLLM calls it.

    x (T, H, P), dt (T, H), B and C (T, G, N) (B and C of one dtype), A (H,),
    dt_bias (H,), D (H,) or (H, P), z (T, H, P) (y * silu(z)), each f32, f16
    or bf16; cu_seqlens (S + 1,); the caller's chunks: cu_chunk_seqlens
    (nchunks + 1,), seq_idx (nchunks,) the sequence of each chunk,
    last_chunk_indices (S,); out (T, H, P) f32, f16 or bf16, written;
    initial_states (S, H, P, N) or None. Returns the final states (S, H, P,
    N), or with return_intermediate_states the state after each of the
    caller's chunks (nchunks, H, P, N), in state_dtype (None: C's dtype),
    computed in f32. The metadata (int32 or int64) is checked on the device
    against R9 and the caller's chunking (docs/python.md, "Checks on the
    device"); nothing is read on the host.
    """
    op = "mamba_chunk_scan_combined_varlen"
    x, dt, A, B, C, out, D, z, dt_bias, initial_states = (
        as_tensor(op, n, v) for n, v in
        [("x", x), ("dt", dt), ("A", A), ("B", B), ("C", C), ("out", out), ("D", D), ("z", z),
         ("dt_bias", dt_bias), ("initial_states", initial_states)])
    cu_seqlens, cu_chunk_seqlens, last_chunk_indices, seq_idx = (
        as_tensor(op, n, v) for n, v in
        [("cu_seqlens", cu_seqlens), ("cu_chunk_seqlens", cu_chunk_seqlens),
         ("last_chunk_indices", last_chunk_indices), ("seq_idx", seq_idx)])
    s = _token_major(op, x, dt, A, B, C, D, z, dt_bias, dt_limit)
    if not isinstance(chunk_size, int) or chunk_size <= 0:
        raise fail(op, f"chunk_size must be a positive int, got {chunk_size!r}")
    check(op, "cu_seqlens", cu_seqlens, INDEX_TYPES, (None,), s.device)
    sequences = cu_seqlens.numel() - 1
    if sequences < 1:
        raise fail(op, f"cu_seqlens has {cu_seqlens.numel()} element(s): it needs at least 2 "
                       "(one sequence)")
    check(op, "cu_chunk_seqlens", cu_chunk_seqlens, INDEX_TYPES, (None,), s.device)
    nchunks = cu_chunk_seqlens.numel() - 1
    check(op, "seq_idx", seq_idx, INDEX_TYPES, (nchunks,), s.device)
    check(op, "last_chunk_indices", last_chunk_indices, INDEX_TYPES, (sequences,), s.device)
    check(op, "out", out, FLOAT_TYPES, (s.tokens, s.heads, s.head_dim), s.device)
    check_strides(op, "out", out, (s.heads * s.head_dim, s.head_dim, 1))
    check_aligned(op, "out", out)  # rows and heads at any offset: the kernel narrows
    check_no_overlap(op, "out", out, x=x, dt=dt, B=B, C=C, z=z, initial_states=initial_states)
    state_dtype = state_dtype if state_dtype is not None else C.dtype
    if state_dtype not in FLOAT_TYPES:
        raise fail(op, f"state_dtype {state_dtype} is not a floating type")
    states = per_call("empty", sequences, s.heads, s.head_dim, s.state, dtype=state_dtype,
                      device=s.device)
    page = states if initial_states is None else _states(op, "initial_states", initial_states,
                                                         sequences, s)
    init = keep(torch.full((sequences,), int(initial_states is not None), dtype=torch.int32,
                           device=s.device))
    status = check_varlen(op, s.device, cu_seqlens, s.tokens,
                          (cu_chunk_seqlens, seq_idx, last_chunk_indices, chunk_size))
    chunk_states = None
    if return_intermediate_states:
        chunk_states = per_call("empty", nchunks, s.heads, s.head_dim, s.state,
                                dtype=state_dtype, device=s.device)
    chunk = kernel_chunk(return_intermediate_states, s.head_dim, s.state)
    capacity = s.tokens // chunk + (nchunks if return_intermediate_states else sequences)
    guarded = (uses_spans(capacity, s.head_dim, s.state) or return_intermediate_states
               or chunk != KERNEL_CHUNK)
    # The single walk reads the verdict itself (NaN outputs, no page touched).
    # Elsewhere metadata the check refused becomes an empty batch (no kernel
    # reads or writes through it) and the outputs NaN. What passed fits int32.
    good = per_call(torch.eq, status, 0)
    cu = per_call(_passed, cu_seqlens, good if guarded else None)
    if return_intermediate_states:
        meta = (cu,) + per_call(chunks_of_caller_chunks,
                                per_call(_passed, cu_chunk_seqlens, good, torch.int64),
                                seq_idx, s.tokens, chunk)
    else:
        meta = (cu,) + chunks_of_sequences(cu, s.tokens, chunk) + (None,)
    s.y_type = element_type(out)
    scan(s, meta, page, init, out.view(s.tokens, s.heads * s.head_dim), dt_softplus,
         page_out=states, chunk_states=chunk_states, checked=(op, status))
    if guarded:
        per_call(_nan_where_refused, good, out, states, chunk_states)
    _checks.after(op, s.device)
    return chunk_states if return_intermediate_states else states


def _passed(t, good, dtype=torch.int32):
    """Metadata the device check passed (good, or None: unguarded) as `dtype`,
    zeros where it refused it (an empty batch no kernel reads or writes through)."""
    return (t if good is None else torch.where(good, t, 0)).to(dtype)


def _nan_where_refused(good, *outputs):
    """NaN over every output when the check refused the metadata; returns no tensor."""
    for t in outputs:
        if t is not None:
            t.masked_fill_(~good.view((1,) * t.dim()), float("nan"))
    return ()


def _sequences(op, batch, seqlen, seq_idx, cu_seqlens, device):
    """(cu_seqlens of the flattened stream, index of each row's first and last
    sequence): each batch row, cut where seq_idx changes."""
    if seq_idx is None:
        cu = [b * seqlen for b in range(batch + 1)]
        return cu, list(range(batch)), list(range(batch))
    check(op, "seq_idx", seq_idx, (torch.int32, torch.int64), (batch, seqlen), device)
    uncacheable()
    values = seq_idx.tolist()  # a host read: the batch-major form plans on the host
    cu, firsts, lasts = [0], [], []
    for b, row in enumerate(values):
        firsts.append(len(cu) - 1)
        for t in range(1, seqlen):
            if row[t] != row[t - 1]:
                if row[t] < row[t - 1]:
                    raise fail(op, f"seq_idx[{b}] decreases at token {t} "
                                   f"({row[t - 1]} -> {row[t]})")
                cu.append(b * seqlen + t)
        cu.append((b + 1) * seqlen)
        lasts.append(len(cu) - 2)
    if cu_seqlens is not None:
        check(op, "cu_seqlens", cu_seqlens, (torch.int32, torch.int64), (None,), device)
        if [int(v) for v in cu_seqlens.tolist()] != cu:
            raise fail(op, f"cu_seqlens {cu_seqlens.tolist()} disagrees with the sequences "
                           f"seq_idx marks ({cu})")
    return cu, firsts, lasts


@cached
def mamba_chunk_scan_combined(x, dt, A, B, C, chunk_size, D=None, z=None, dt_bias=None,
                              initial_states=None, seq_idx=None, cu_seqlens=None,
                              dt_softplus=False, dt_limit=(0.0, float("inf")),
                              return_final_states=False, return_varlen_states=False,
                              state_dtype=None):
    """The chunked SSD (R5p) in mamba_ssm's batch-major form.

    x (b, L, H, P), dt (b, L, H), B and C (b, L, G, N), z (b, L, H, P); A
    (H,), dt_bias (H,), D (H,) or (H, P), each f32, f16 or bf16;
    initial_states (b, H, P, N) for the first sequence of each row; seq_idx
    (b, L) cuts rows into sequences (read on the host). Returns out (b, L, H,
    P) in x's dtype, then final_states (b, H, P, N) f32 and varlen_states
    (sequences, H, P, N) f32 as asked. state_dtype (mamba_ssm's dtype of the
    per-chunk states it keeps) is checked and changes none of these.
    """
    op = "mamba_chunk_scan_combined"
    x, dt, A, B, C, D, z, dt_bias, initial_states, seq_idx, cu_seqlens = (
        as_tensor(op, n, v) for n, v in
        [("x", x), ("dt", dt), ("A", A), ("B", B), ("C", C), ("D", D), ("z", z),
         ("dt_bias", dt_bias), ("initial_states", initial_states), ("seq_idx", seq_idx),
         ("cu_seqlens", cu_seqlens)])
    check(op, "x", x, FLOAT_TYPES)
    if x.dim() != 4:
        raise fail(op, f"x has shape {tuple(x.shape)}, expected (batch, seqlen, nheads, "
                       "headdim)")
    batch, seqlen, heads, head_dim = x.shape
    if batch == 0 or seqlen == 0:
        raise fail(op, f"x has shape {tuple(x.shape)}: empty sequences are refused (R9)")
    if not isinstance(chunk_size, int) or chunk_size <= 0:
        raise fail(op, f"chunk_size must be a positive int, got {chunk_size!r}")
    if state_dtype is not None and state_dtype not in FLOAT_TYPES:
        raise fail(op, f"state_dtype {state_dtype} is not a floating type")
    if return_varlen_states and (seq_idx is None or batch != 1):
        raise fail(op, "return_varlen_states needs batch 1 and seq_idx marking the sequences")
    if initial_states is not None and seq_idx is not None:
        raise fail(op, "initial_states together with seq_idx is not supported (which of a "
                       "row's sequences it starts is ambiguous): give each sequence its own "
                       "row, or use mamba_chunk_scan_combined_varlen")
    flat = [None if t is None else _flatten(op, n, t, batch, seqlen)
            for n, t in [("x", x), ("dt", dt), ("B", B), ("C", C), ("z", z)]]
    s = _token_major(op, *flat[:2], A, *flat[2:4], D, flat[4], dt_bias, dt_limit)
    cu, _, lasts = _sequences(op, batch, seqlen, seq_idx, cu_seqlens, s.device)
    sequences = len(cu) - 1
    states = per_call("empty", sequences, heads, head_dim, s.state, device=s.device)
    # Without seq_idx each row is one sequence, so the initial states are the
    # page as given (with seq_idx they are refused above).
    page = states if initial_states is None else _states(op, "initial_states", initial_states,
                                                         batch, s)
    init = keep(torch.full((sequences,), int(initial_states is not None), dtype=torch.int32,
                           device=s.device))
    chunk = kernel_chunk(False, s.head_dim, s.state)
    if seq_idx is None:  # built on the device: the default call is graph-capturable
        meta = tuple(map(keep, _row_chunks(batch, seqlen, s.device, chunk))) + (None,)
    else:
        meta = tuple(torch.tensor(v, dtype=torch.int32, device=s.device)
                     for v in [cu] + _host_chunks(cu, chunk)) + (None,)
    out = per_call("empty", batch, seqlen, heads, head_dim, dtype=x.dtype, device=s.device)
    s.y_type = element_type(out)
    scan(s, meta, page, init, out.view(batch * seqlen, -1), dt_softplus, page_out=states)
    results = [out]
    if return_final_states:
        results.append(states if seq_idx is None else states[lasts])
    if return_varlen_states:
        results.append(states)
    return results[0] if len(results) == 1 else tuple(results)


def _flatten(op, name, t, batch, seqlen):
    """[b, L, ...] as the token-major [b * L, ...] view (no copy)."""
    if t is None or t.dim() < 3 or tuple(t.shape[:2]) != (batch, seqlen):
        raise fail(op, f"{name} has shape {None if t is None else tuple(t.shape)}, expected "
                       f"({batch}, {seqlen}, ...)")
    if batch > 1 and t.stride(0) != seqlen * t.stride(1):
        raise fail(op, f"{name} has strides {tuple(t.stride())}: its batch rows are not one "
                       "token stream (stride(0) must be seqlen * stride(1))")
    return t.view(batch * seqlen, *t.shape[2:]) if t.is_contiguous() else \
        torch.as_strided(t, (batch * seqlen,) + tuple(t.shape[2:]), t.stride()[1:])


def _row_chunks(batch, seqlen, device, chunk):
    """cu_seqlens and R9's chunks of `chunk` tokens when each batch row is
    one sequence, with torch ops on `device` (what _host_chunks gives)."""
    per_row = -(-seqlen // chunk)
    index = torch.arange(batch * per_row, dtype=torch.int32, device=device)
    seq = index // per_row
    begin = seq * seqlen + (index % per_row) * chunk
    end = torch.minimum(begin + chunk, (seq + 1) * seqlen)
    cu = torch.arange(batch + 1, dtype=torch.int32, device=device) * seqlen
    return cu, seq, begin, end


def _host_chunks(cu, chunk):
    """R9's chunks of `chunk` tokens tiling each sequence, on the host."""
    seq, begin, end = [], [], []
    for i in range(len(cu) - 1):
        for b in range(cu[i], cu[i + 1], chunk):
            seq.append(i)
            begin.append(b)
            end.append(min(b + chunk, cu[i + 1]))
    return [seq, begin, end]

