"""mamba_chunk_scan_combined (mamba_ssm's batch-major form) and
mamba_chunk_scan_combined_varlen (the token-major form serving engines call):
docs/numerics.md R5p with R4, on the registered `ssd_prefill` kernel."""

from types import SimpleNamespace

import torch

from . import _checks
from ._launch import (INDEX_TYPES, as_tensor, check, check_aligned, check_no_overlap,
                      check_strides, fail, launch, pack_rows, packed_rows, per_head, row_stride)
from ._varlen import check_varlen, chunks_of_sequences

# ssd_prefill's chunk: R5p is invariant to it, so the kernel chunks each
# sequence by it whatever the caller's chunk_size (whose chunks are checked,
# not used).
KERNEL_CHUNK = 32


def _token_major(op, x, dt, A, B, C, D, z, dt_bias, dt_limit):
    """x [T, H, P], dt [T, H], B and C [T, G, N] bf16 and the per-head f32
    parameters, checked; the operands as ssd_prefill reads them."""
    if z is not None:
        raise fail(op, "z (the gate y * silu(z)) is not supported: tilejit applies the "
                       "gate in the norm (rms_norm_gated, docs/numerics.md R6), as "
                       "NemotronH's mixer does; pass z=None")
    bf16 = (torch.bfloat16,)
    check(op, "x", x, bf16)
    if x.dim() != 3:
        raise fail(op, f"x has shape {tuple(x.shape)}, expected (tokens, nheads, headdim)")
    tokens, heads, head_dim = x.shape
    if tokens == 0:
        raise fail(op, "x holds no tokens: empty batches are refused (R9)")
    device = x.device
    check(op, "B", B, bf16, (tokens, None, None), device)
    groups, state = B.shape[1], B.shape[2]
    check(op, "C", C, bf16, (tokens, groups, state), device)
    check(op, "dt", dt, bf16, (tokens, heads), device)
    if heads % groups:
        raise fail(op, f"nheads ({heads}) is not a multiple of ngroups ({groups})")
    check_strides(op, "A", check(op, "A", A, (torch.float32,), (heads,), device), (1,))
    s = SimpleNamespace()
    s.tokens, s.heads, s.head_dim, s.groups, s.state = tokens, heads, head_dim, groups, state
    s.device, s.A = device, A
    s.D = per_head(op, "D", check(op, "D", D, (torch.float32,), device=device), heads,
                   (head_dim,)) if D is not None else torch.zeros(heads, device=device)
    s.dt_bias = (per_head(op, "dt_bias", check(op, "dt_bias", dt_bias, (torch.float32,),
                                               device=device), heads, ())
                 if dt_bias is not None else torch.zeros(heads, device=device))
    # dt is read in place, rows of any stride (a column range of in_proj's output).
    check_strides(op, "dt", dt, (None, 1))
    s.dt_stride = row_stride(op, "dt", dt, heads)
    # Pointer parameters start on 16 bytes: a dt that does not (columns at an
    # odd offset of their row) goes as the aligned address below it, widened
    # by the columns in between (dt_col), so the kernel reads the same elements
    # inside the tensor it is given.
    s.dt_col = (dt.data_ptr() % 16) // dt.element_size()
    s.dt = (torch.as_strided(dt, (dt.shape[0], dt.shape[1] + s.dt_col), dt.stride(),
                             dt.storage_offset() - s.dt_col) if s.dt_col else dt)
    channels = heads * head_dim + 2 * groups * state
    parts = [x, B, C]
    s.xbc = packed_rows(parts, channels)
    if s.xbc is None:  # not column ranges of one xBC row: one copy into that layout
        s.xbc = pack_rows(parts)
    else:
        for name, t in zip("xBC", parts):
            check_aligned(op, name, t)
    check_aligned(op, "x, B and C packed", s.xbc, (0,))
    lo, hi = dt_limit
    s.dt_min, s.dt_max = float(lo), float(hi)
    return s


def _scan(s, cu_seqlens, chunk_seq, chunk_begin, chunk_end, states, init, y, dt_softplus,
          checked=None):
    """One ssd_prefill launch: sequence i reads its initial state from
    states[i] when init[i], and leaves its final state there. `checked` =
    (op, status): the launch reads check_varlen's verdict first (metadata
    from the caller); None: metadata built here, trusted."""
    # A head_dim block_p does not divide gets a last, partial block, which the
    # kernel's views mask.
    block_p = 32 if s.head_dim % 32 == 0 else 16
    sequences = cu_seqlens.numel() - 1
    slots = torch.arange(sequences, dtype=torch.int32, device=s.device)
    constants = dict(heads=s.heads, head_dim=s.head_dim, state=s.state, groups=s.groups,
                     chunk=KERNEL_CHUNK, dt_stride=s.dt_stride, dt_col=s.dt_col, block_p=block_p,
                     a_log=0, dt_softplus=int(bool(dt_softplus)),
                     y_f32=int(y.dtype == torch.float32), checked=int(checked is not None))
    args = dict(xbc=s.xbc, dt=s.dt, a=s.A, dt_bias=s.dt_bias, d=s.D, cu_seqlens=cu_seqlens,
                slots=slots, init=init, chunk_seq=chunk_seq, chunk_begin=chunk_begin,
                chunk_end=chunk_end, ssm_state=states, y=y, chunks=chunk_seq.numel(),
                dt_min=s.dt_min, dt_max=s.dt_max)
    if checked is not None:
        op, status = checked
        args.update(status=status, tokens=s.tokens, sequences=sequences,
                    errors=_checks.error_word(s.device), op=_checks.op_number(op))
    launch("ssd_prefill", constants, s.device, (-(-s.head_dim // block_p), s.heads), **args)


def _initial_page(op, initial_states, sequences, s):
    """The f32 state page the scan reads and writes: the initial states (a
    widening copy when they are bf16 or f16) or zeros."""
    page = torch.zeros(sequences, s.heads, s.head_dim, s.state, device=s.device)
    if initial_states is None:
        return page, torch.zeros(sequences, dtype=torch.int32, device=s.device)
    check(op, "initial_states", initial_states,
          (torch.float32, torch.bfloat16, torch.float16),
          (sequences, s.heads, s.head_dim, s.state), s.device)
    page.copy_(initial_states)
    return page, torch.ones(sequences, dtype=torch.int32, device=s.device)


def mamba_chunk_scan_combined_varlen(x, dt, A, B, C, chunk_size, cu_seqlens, cu_chunk_seqlens,
                                     last_chunk_indices, seq_idx, out, D=None, z=None,
                                     dt_bias=None, initial_states=None, dt_softplus=False,
                                     dt_limit=(0.0, float("inf")),
                                     return_intermediate_states=False, state_dtype=None):
    """The chunked SSD (R5p) of a packed varlen batch, as vLLM calls it.

    x (T, H, P), dt (T, H) and B, C (T, G, N) bf16; A (H,), dt_bias (H,) and D
    (H,) or a stride-0 (H, P) f32; cu_seqlens (S + 1,); the caller's chunks:
    cu_chunk_seqlens (nchunks + 1,), seq_idx (nchunks,) the sequence of each
    chunk, last_chunk_indices (S,); out (T, H, P) bf16 or f32, written;
    initial_states (S, H, P, N) or None. Returns the final states (S, H, P, N)
    in state_dtype (None: C's dtype), computed in f32. The metadata (int32 or
    int64) is checked on the device against R9 and the caller's chunking
    (docs/python.md, "Checks on the device"); the kernel chunks each sequence
    itself (R5p is invariant to the chunking).
    """
    op = "mamba_chunk_scan_combined_varlen"
    x, dt, A, B, C, out, D, dt_bias, initial_states = (
        as_tensor(op, n, v) for n, v in
        [("x", x), ("dt", dt), ("A", A), ("B", B), ("C", C), ("out", out), ("D", D),
         ("dt_bias", dt_bias), ("initial_states", initial_states)])
    cu_seqlens, cu_chunk_seqlens, last_chunk_indices, seq_idx = (
        as_tensor(op, n, v) for n, v in
        [("cu_seqlens", cu_seqlens), ("cu_chunk_seqlens", cu_chunk_seqlens),
         ("last_chunk_indices", last_chunk_indices), ("seq_idx", seq_idx)])
    if return_intermediate_states:
        raise fail(op, "return_intermediate_states=True is not supported: ssd_prefill keeps "
                       "the chunk states in registers and writes only each sequence's last")
    s = _token_major(op, x, dt, A, B, C, D, z, dt_bias, dt_limit)
    if not isinstance(chunk_size, int) or chunk_size <= 0:
        raise fail(op, f"chunk_size must be a positive int, got {chunk_size!r}")
    check(op, "cu_seqlens", cu_seqlens, INDEX_TYPES, (None,), s.device)
    sequences = cu_seqlens.numel() - 1
    if sequences < 1:
        raise fail(op, f"cu_seqlens has {cu_seqlens.numel()} element(s): it needs at least 2 "
                       "(one sequence)")
    check(op, "cu_chunk_seqlens", cu_chunk_seqlens, INDEX_TYPES, (None,), s.device)
    check(op, "seq_idx", seq_idx, INDEX_TYPES, (cu_chunk_seqlens.numel() - 1,), s.device)
    check(op, "last_chunk_indices", last_chunk_indices, INDEX_TYPES, (sequences,), s.device)
    check(op, "out", out, (torch.bfloat16, torch.float32), (s.tokens, s.heads, s.head_dim),
          s.device)
    check_strides(op, "out", out, (s.heads * s.head_dim, s.head_dim, 1))
    check_aligned(op, "out", out, (0, 1))
    check_no_overlap(op, "out", out, x=x, dt=dt, B=B, C=C, initial_states=initial_states)
    state_dtype = state_dtype if state_dtype is not None else C.dtype
    if state_dtype not in (torch.float32, torch.bfloat16, torch.float16):
        raise fail(op, f"state_dtype {state_dtype} is not a floating type")
    states, init = _initial_page(op, initial_states, sequences, s)
    status = check_varlen(op, s.device, cu_seqlens, s.tokens,
                          (cu_chunk_seqlens, seq_idx, last_chunk_indices, chunk_size))
    # Used only where the check passed: then every value fits i32.
    cu = cu_seqlens.to(torch.int32)
    chunk_seq, chunk_begin, chunk_end = chunks_of_sequences(cu, s.tokens, KERNEL_CHUNK)
    _scan(s, cu, chunk_seq, chunk_begin, chunk_end, states, init,
          out.view(s.tokens, s.heads * s.head_dim), dt_softplus, checked=(op, status))
    _checks.after(op, s.device)
    return states if state_dtype == torch.float32 else states.to(state_dtype)


def _sequences(op, batch, seqlen, seq_idx, cu_seqlens, device):
    """(cu_seqlens of the flattened stream, index of each row's first and last
    sequence): each batch row, cut where seq_idx changes."""
    if seq_idx is None:
        cu = [b * seqlen for b in range(batch + 1)]
        return cu, list(range(batch)), list(range(batch))
    check(op, "seq_idx", seq_idx, (torch.int32, torch.int64), (batch, seqlen), device)
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


def mamba_chunk_scan_combined(x, dt, A, B, C, chunk_size, D=None, z=None, dt_bias=None,
                              initial_states=None, seq_idx=None, cu_seqlens=None,
                              dt_softplus=False, dt_limit=(0.0, float("inf")),
                              return_final_states=False, return_varlen_states=False):
    """The chunked SSD (R5p) in mamba_ssm's batch-major form.

    x (b, L, H, P), dt (b, L, H), B and C (b, L, G, N) bf16; A (H,), dt_bias
    (H,), D (H,) or a stride-0 (H, P) f32; initial_states (b, H, P, N) for the
    first sequence of each row; seq_idx (b, L) cuts rows into sequences (read
    on the host). Returns out (b, L, H, P) bf16, then final_states (b, H, P, N)
    f32 and varlen_states (sequences, H, P, N) f32 as asked.
    """
    op = "mamba_chunk_scan_combined"
    x, dt, A, B, C, D, dt_bias, initial_states, seq_idx, cu_seqlens = (
        as_tensor(op, n, v) for n, v in
        [("x", x), ("dt", dt), ("A", A), ("B", B), ("C", C), ("D", D), ("dt_bias", dt_bias),
         ("initial_states", initial_states), ("seq_idx", seq_idx),
         ("cu_seqlens", cu_seqlens)])
    check(op, "x", x, (torch.bfloat16,))
    if x.dim() != 4:
        raise fail(op, f"x has shape {tuple(x.shape)}, expected (batch, seqlen, nheads, "
                       "headdim)")
    batch, seqlen, heads, head_dim = x.shape
    if batch == 0 or seqlen == 0:
        raise fail(op, f"x has shape {tuple(x.shape)}: empty sequences are refused (R9)")
    if not isinstance(chunk_size, int) or chunk_size <= 0:
        raise fail(op, f"chunk_size must be a positive int, got {chunk_size!r}")
    if return_varlen_states and (seq_idx is None or batch != 1):
        raise fail(op, "return_varlen_states needs batch 1 and seq_idx marking the sequences")
    if initial_states is not None and seq_idx is not None:
        raise fail(op, "initial_states together with seq_idx is not supported (which of a "
                       "row's sequences it starts is ambiguous): give each sequence its own "
                       "row, or use mamba_chunk_scan_combined_varlen")
    flat = [_flatten(op, n, t, batch, seqlen) for n, t in [("x", x), ("dt", dt), ("B", B),
                                                          ("C", C)]]
    s = _token_major(op, *flat[:2], A, *flat[2:], D, z, dt_bias, dt_limit)
    cu, firsts, lasts = _sequences(op, batch, seqlen, seq_idx, cu_seqlens, s.device)
    sequences = len(cu) - 1
    page = torch.zeros(sequences, heads, head_dim, s.state, device=s.device)
    init = torch.zeros(sequences, dtype=torch.int32)
    if initial_states is not None:
        check(op, "initial_states", initial_states,
              (torch.float32, torch.bfloat16, torch.float16),
              (batch, heads, head_dim, s.state), s.device)
        page[firsts] = initial_states.float()
        init[firsts] = 1
    chunks = _host_chunks(cu)
    meta = [torch.tensor(v, dtype=torch.int32, device=s.device) for v in [cu] + chunks]
    out = torch.empty(batch, seqlen, heads, head_dim, dtype=torch.bfloat16, device=s.device)
    _scan(s, meta[0], *meta[1:], page, init.to(s.device), out.view(batch * seqlen, -1),
          dt_softplus)
    results = [out]
    if return_final_states:
        results.append(page[lasts])
    if return_varlen_states:
        results.append(page)
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


def _host_chunks(cu):
    """R9's chunks of KERNEL_CHUNK tokens tiling each sequence, on the host."""
    seq, begin, end = [], [], []
    for i in range(len(cu) - 1):
        for b in range(cu[i], cu[i + 1], KERNEL_CHUNK):
            seq.append(i)
            begin.append(b)
            end.append(min(b + KERNEL_CHUNK, cu[i + 1]))
    return [seq, begin, end]

