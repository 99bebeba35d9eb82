"""selective_state_update with mamba_ssm's and vLLM's signatures (vLLM's
speculative-decoding and varlen forms, its null-block padding): docs/numerics.md
R5d with R4, R8 and R8s, on the registered `ssm_update` kernel."""

import torch

from . import _checks
from ._plan import cached
from ._recording import keep, per_call
from ._launch import (FLOAT_TYPES, INDEX_TYPES, as_tensor, check, check_aligned,
                      check_distinct_slots, check_no_overlap, check_pad_slot_id, check_strides,
                      element_type, fail, host_ints, launch, row_stride)

# vLLM's padding values (vllm/v1/attention/backends/utils.py), the defaults of
# every op with a slot table: a table entry equal to NULL_BLOCK_ID (the slot
# vLLM reserves) or negative is a padding row. mamba_ssm's callers, whose slot
# 0 is an ordinary slot, pass null_block_id=None (docs/python.md, "Padding").
PAD_SLOT_ID = -1
NULL_BLOCK_ID = 0
# The kernel's per_p bits (models/mamba2/SsmUpdate.h): which per-head
# parameters vary over p (A over p and n).
_PER_P = {"dt": 1, "dt_bias": 2, "D": 4, "A": 8}


@cached
def selective_state_update(state, x, dt, A, B, C, D=None, z=None, dt_bias=None,
                           dt_softplus=False, state_batch_indices=None,
                           dst_state_batch_indices=None, pad_slot_id=PAD_SLOT_ID, out=None,
                           num_accepted_tokens=None, cu_seqlens=None, is_blackwell=False,
                           enable_stochastic_rounding=False, cache_philox_rounds=0, *,
                           null_block_id=NULL_BLOCK_ID, rounding_seed=None, check_slots=False):
    """One decode step of the SSM (R5d), the state updated in place; with
    cu_seqlens, a few tokens per sequence stepped in order (vLLM's varlen and
    speculative-decoding forms). docs/python-ops.md, "selective_state_update".

    state (slots, H, P, N) f32, bf16 or f16 (R8s: a 16-bit page is widened,
    updated in f32 and rounded once, to nearest even or, with
    enable_stochastic_rounding, stochastically: bits from a counter-based hash
    of (rounding_seed, slot, element), cache_philox_rounds > 2 rounds of it;
    rounding_seed an int or a device int64 tensor [1], None: drawn on the
    device per call as vLLM does; y uses the f32 state).
    x and z (rows, H, P); dt (rows, H, P) (stride 0 over P: one per head) or
    (rows, H); A (H, P, N) or (H,); D and dt_bias (H, P) or (H,); B and C
    (rows, G, N): each f32, f16 or bf16, read in place with its own row stride.
    out = y * silu(z) with z. The single-head form (state (slots, P, N)) is
    the H = 1 case. In a caller's table an index equal to null_block_id
    (vLLM's null block, 0 by default; None for mamba_ssm's callers, whose slot
    0 is real) or negative (pad_slot_id must be) is padding: no state read or
    written, its rows' output 0. Index tables are int32 or int64, 1-D or
    (rows, T) (column 0 read; with num_accepted_tokens, vLLM's columns).
    check_slots=True (a debug option) reads the tables on the host to refuse
    two rows on one slot (R8), which a CUDA graph capture forbids.
    is_blackwell only picks vLLM's launch config: accepted and ignored.
    """
    op = "selective_state_update"
    state, x, dt, A, B, C, D, z, dt_bias, out, state_batch_indices, dst_state_batch_indices, \
        num_accepted_tokens, cu_seqlens = (as_tensor(op, n, v) for n, v in [
            ("state", state), ("x", x), ("dt", dt), ("A", A), ("B", B), ("C", C), ("D", D),
            ("z", z), ("dt_bias", dt_bias), ("out", out),
            ("state_batch_indices", state_batch_indices),
            ("dst_state_batch_indices", dst_state_batch_indices),
            ("num_accepted_tokens", num_accepted_tokens), ("cu_seqlens", cu_seqlens)])
    check(op, "state", state, FLOAT_TYPES)
    if enable_stochastic_rounding and state.dtype == torch.float32:
        raise fail(op, "enable_stochastic_rounding needs a bfloat16 or float16 state "
                       "(an f32 state is stored as computed)")
    single_head = state.dim() == 3
    if single_head:
        state, x, dt, B, C, z, out = (_unsqueeze(t, 1, 3) for t in (state, x, dt, B, C, z, out))
        A, D, dt_bias = (_unsqueeze(t, 0, 2 if t is A else 1) for t in (A, D, dt_bias))
    if state.dim() != 4:
        raise fail(op, f"state has shape {tuple(state.shape)}, expected (slots, nheads, "
                       "headdim, dstate) or (slots, dim, dstate)")
    num_slots, heads, head_dim, dstate = state.shape
    check_strides(op, "state", state, (heads * head_dim * dstate, head_dim * dstate, dstate, 1))
    device = state.device
    rows = _per_row(op, "x", x, (None, heads, head_dim), device).shape[0]
    groups = check(op, "B", B, FLOAT_TYPES, (rows, None, dstate), device).shape[1]
    if groups == 0 or heads % groups:
        raise fail(op, f"nheads ({heads}) is not a multiple of ngroups ({groups})")
    for name, t in (("B", B), ("C", C)):
        _per_row(op, name, t, (rows, groups, dstate), device)
    if z is not None:
        _per_row(op, "z", z, (rows, heads, head_dim), device)
    dt, dt_per_p = _dt(op, dt, rows, heads, head_dim, device)
    A, a_per_p = _parameter(op, "A", A, heads, (head_dim, dstate), device)
    D, d_per_p = _parameter(op, "D", D, heads, (head_dim,), device)
    dt_bias, bias_per_p = _parameter(op, "dt_bias", dt_bias, heads, (head_dim,), device)
    if out is None:
        out = per_call("empty", rows, heads, head_dim, dtype=x.dtype, device=device)
    check(op, "out", out, FLOAT_TYPES, (rows, heads, head_dim), device)
    check_strides(op, "out", out, (heads * head_dim, head_dim, 1))
    check_no_overlap(op, "out", out, state=state, x=x, dt=dt, B=B, C=C, z=z)

    varlen = cu_seqlens is not None
    seqs = _sequences(op, cu_seqlens, device) if varlen else rows
    tables = _slot_tables(op, state_batch_indices, dst_state_batch_indices,
                          num_accepted_tokens, seqs, num_slots, device)
    pad = padding(op, null_block_id, pad_slot_id, state_batch_indices)
    if check_slots:
        _check_rows(op, tables, pad, num_slots)

    # Offsets within a row are kernel constants the lowering sizes its vectors
    # by; the rows' starts must be 16-byte aligned.
    for name, t, dims in (("x", x, (0,)), ("B", B, (0,)), ("C", C, (0,)), ("z", z, (0,)),
                          ("state", state, (0, 1, 2)), ("out", out, (0, 1)),
                          ("dt", dt if dt_per_p else None, (0,)), ("A", A, ()), ("D", D, ()),
                          ("dt_bias", dt_bias, ())):
        if t is not None:
            check_aligned(op, name, t, dims)
    # block_p is a power of two (a tile dimension); a head_dim it does not
    # divide gets a last, partial block, which the kernel's views mask.
    block_p = min(16, 1 << (head_dim - 1).bit_length())
    per_p = sum(_PER_P[n] for n, f in (("dt", dt_per_p), ("dt_bias", bias_per_p),
                                       ("D", d_per_p), ("A", a_per_p)) if f)
    constants = dict(
        heads=heads, head_dim=head_dim, state=dstate, groups=groups, block_p=block_p, a_log=0,
        dt_softplus=int(bool(dt_softplus)), dt_stride=row_stride(op, "dt", dt, dt[0].numel()),
        y_type=element_type(out), x_type=element_type(x), dt_type=element_type(dt),
        b_type=element_type(B), c_type=element_type(C),
        z_type=element_type(z) if z is not None else 0, d_type=element_type(D),
        dt_bias_type=element_type(dt_bias), a_type=element_type(A),
        state_type=element_type(state), split=1, x_stride=row_stride(op, "x", x, heads * head_dim),
        b_stride=row_stride(op, "B", B, groups * dstate),
        c_stride=row_stride(op, "C", C, groups * dstate), gate=int(z is not None),
        z_stride=row_stride(op, "z", z, heads * head_dim) if z is not None else 0, per_p=per_p,
        varlen=int(varlen), cu_seqlens_i64=int(varlen and cu_seqlens.dtype == torch.int64),
        pad_id=int(pad is not None), checked=1, stochastic=int(bool(enable_stochastic_rounding)),
        random_mixes=min(max(2, int(cache_philox_rounds)), 16), **tables["constants"])
    args = dict(x=x, b=B, c=C, dt=dt, a=A, dt_bias=dt_bias, d=D, ssm_state=state,
                y=out.view(rows, heads * head_dim), dt_min=float("-inf"), dt_max=float("inf"),
                errors=_checks.error_word(device), op=_checks.op_number(op),
                num_slots=num_slots, **tables["args"])
    if z is not None:
        args["z"] = z
    if varlen:  # the device check holds its sequences to x's rows
        args.update(cu_seqlens=cu_seqlens, num_rows=rows)
    if pad is not None:
        args["pad_slot"] = pad
    if enable_stochastic_rounding:
        args["seed"] = _seed(op, rounding_seed, device)
    launch("ssm_update", constants, device, (-(-head_dim // block_p), heads, seqs), **args)
    _checks.after(op, device)
    return out.squeeze(1) if single_head else out


def padding(op, null_block_id, pad_slot_id, table):
    """The padding arguments of every op with a slot table, checked: returns
    the null block a caller's `table` pads with beside the negative indices
    (None: none; the default table, row i on slot i, has none, as in vLLM)."""
    check_pad_slot_id(op, pad_slot_id)
    if null_block_id is not None and (not isinstance(null_block_id, int) or
                                      isinstance(null_block_id, bool)):
        raise fail(op, f"null_block_id {null_block_id!r} must be an int or None")
    return null_block_id if table is not None else None


def _sequences(op, cu_seqlens, device):
    """The sequence count of vLLM's cu_seqlens [batch + 1] (its values are
    device data the kernel reads: a sequence is cu_seqlens[i] .. [i + 1])."""
    check(op, "cu_seqlens", cu_seqlens, INDEX_TYPES, (None,), device)
    check_strides(op, "cu_seqlens", cu_seqlens, (1,))
    if cu_seqlens.shape[0] < 2:
        raise fail(op, "cu_seqlens has no sequence (it needs at least 2 entries)")
    return cu_seqlens.shape[0] - 1


def _seed(op, seed, device):
    """Stochastic rounding's seed as the kernel reads it: an int64 [1] on the
    device (None: a fresh one drawn there, as vLLM draws its rand_seed)."""
    if seed is None:
        return per_call("randint", 0, 2 ** 32, (1,), dtype=torch.int64, device=device)
    if isinstance(seed, int) and not isinstance(seed, bool):
        return keep(torch.full((1,), seed & 0xFFFFFFFF, dtype=torch.int64, device=device))
    seed = as_tensor(op, "rounding_seed", seed)
    return check_strides(op, "rounding_seed",
                         check(op, "rounding_seed", seed, (torch.int64,), (1,), device), (1,))


def _unsqueeze(t, dim, below):
    """The single-head form's tensors as the H = 1 case (those of `below`
    dimensions or fewer gain a heads dimension at `dim`)."""
    return t.unsqueeze(dim) if t is not None and t.dim() < below + 1 else t


def _per_row(op, name, t, shape, device):
    """x, z, B, C: [rows, heads or groups, width], read in place from any row
    stride; within a row contiguous."""
    check(op, name, t, FLOAT_TYPES, shape, device)
    return check_strides(op, name, t, (None, t.shape[2], 1))


def _dt(op, dt, rows, heads, head_dim, device):
    """dt as the kernel reads it and whether it varies over p: (rows, H, P)
    with stride 0 over P (the expand serving engines pass) is one per head."""
    check(op, "dt", dt, FLOAT_TYPES, device=device)
    if dt.dim() == 3:
        check(op, "dt", dt, FLOAT_TYPES, (rows, heads, head_dim))
        if dt.stride(2) != 0 and head_dim != 1:
            return check_strides(op, "dt", dt, (None, head_dim, 1)), True
        dt = dt[:, :, 0]
    check(op, "dt", dt, FLOAT_TYPES, (rows, heads))
    return check_strides(op, "dt", dt, (None, 1)), False


def _parameter(op, name, t, heads, trailing, device):
    """A, D or dt_bias: [heads] (None: zeros), a stride-0 expand of it over
    `trailing`, or one value per (p[, n]) as a contiguous [heads, *trailing];
    and whether it varies."""
    if t is None:
        return keep(torch.zeros(heads, device=device)), False
    check(op, name, t, FLOAT_TYPES, device=device)
    if t.dim() == 1:
        return check_strides(op, name, check(op, name, t, FLOAT_TYPES, (heads,)), (1,)), False
    check(op, name, t, FLOAT_TYPES, (heads,) + tuple(trailing))
    varies = [s != 0 and n != 1 for s, n in zip(t.stride()[1:], t.shape[1:])]
    if not any(varies):
        return check_strides(op, name, t[(slice(None),) + (0,) * len(trailing)], (1,)), False
    if not all(varies) and any(n != 1 for n in t.shape[1:]):
        raise fail(op, f"{name} of shape {tuple(t.shape)} and strides {tuple(t.stride())} "
                       "varies over some of its last dimensions only: tilejit takes one "
                       f"value per head or a contiguous {name} of shape {tuple(t.shape)}")
    want, step = [], 1
    for n in reversed(t.shape):
        want.insert(0, step)
        step *= n
    return check_strides(op, name, t, tuple(want)), True


def _table(op, name, t, seqs, device):
    """An index table: (>= seqs,) or (>= seqs, T), int32 or int64, rows
    contiguous; its row stride (0 for 1-D) and width."""
    check(op, name, t, INDEX_TYPES, device=device)
    if t.dim() not in (1, 2) or t.shape[0] < seqs or 0 in t.shape:
        raise fail(op, f"{name} has shape {tuple(t.shape)}, expected ({seqs},) or "
                       f"({seqs}, max_seqlen)")
    check_strides(op, name, t, (None, 1) if t.dim() == 2 else (1,))
    if t.dim() == 1:
        return 0, 1
    return (t.stride(0) if t.shape[0] > 1 else t.shape[1]), t.shape[1]


def _slot_tables(op, src, dst, accepted, seqs, num_slots, device):
    """The kernel's slot-table constants and arguments, vLLM's forms: 1-D or
    2-D tables, dst defaulting to src, num_accepted_tokens choosing the
    column read."""
    spec = accepted is not None
    if src is None:
        if spec or dst is not None:
            raise fail(op, "num_accepted_tokens and dst_state_batch_indices need "
                           "state_batch_indices")
        if seqs > num_slots:
            raise fail(op, f"{seqs} rows but {num_slots} state slots, and no "
                           "state_batch_indices")
        src = keep(torch.arange(seqs, dtype=torch.int32, device=device))
    src_stride, width = _table(op, "state_batch_indices", src, seqs, device)
    if spec:
        check(op, "num_accepted_tokens", accepted, INDEX_TYPES, (seqs,), device)
        check_strides(op, "num_accepted_tokens", accepted, (1,))
        if src.dim() != 2 or (dst is not None and dst.dim() != 2):
            raise fail(op, "num_accepted_tokens needs 2-D (batch, max_seqlen) "
                           "state_batch_indices and dst_state_batch_indices")
        if dst is None:
            dst = src
    dst_stride, dst_width = 0, width
    if dst is not None:
        dst_stride, dst_width = _table(op, "dst_state_batch_indices", dst, seqs, device)
        if dst.dtype != src.dtype:
            raise fail(op, f"state_batch_indices is {src.dtype} and dst_state_batch_indices "
                           f"{dst.dtype}: tilejit takes one index type per call")
    constants = dict(dst_slots=int(dst is not None), slots_i64=int(src.dtype == torch.int64),
                     slots_stride=src_stride, dst_stride=dst_stride, spec=int(spec),
                     accepted_i64=int(spec and accepted.dtype == torch.int64))
    args = dict(slots=src)
    if dst is not None:
        args["dst_slots"] = dst
    if spec:  # the device checks hold num_accepted_tokens and cu_seqlens to the columns
        args.update(num_accepted_tokens=accepted, table_columns=min(width, dst_width))
    return dict(constants=constants, args=args, src=src, dst=dst, accepted=accepted,
                width=width)


def _check_rows(op, tables, pad, num_slots):
    """R8 on the host (check_slots=True): the slots read and written are in
    range, no two rows write one slot, and no row writes a slot another reads."""
    def values(name, t):
        got = host_ints(op, name, t.reshape(-1), True)
        return [-1 if v == pad else v for v in got]
    width = tables["width"]
    src = values("state_batch_indices", tables["src"])
    if tables["accepted"] is not None:
        accepted = host_ints(op, "num_accepted_tokens", tables["accepted"], True)
        reads = [src[i * width + max(a - 1, 0)] for i, a in enumerate(accepted)]
    else:
        reads = src[::width]
    dst = values("dst_state_batch_indices", tables["dst"]) if tables["dst"] is not None \
        else None
    if dst is None:
        check_distinct_slots(op, "state_batch_indices", reads, num_slots)
        return
    writes = dst if tables["accepted"] is not None else dst[::width]
    check_distinct_slots(op, "state_batch_indices", reads, num_slots)
    check_distinct_slots(op, "dst_state_batch_indices", writes, num_slots)
    owner = {s: i for i, s in enumerate(reads) if s >= 0}
    for j, s in enumerate(writes):
        row = j // width if tables["accepted"] is not None else j
        if s >= 0 and s in owner and owner[s] != row:
            raise fail(op, f"dst_state_batch_indices[{row}] = {s} is the slot row "
                           f"{owner[s]} reads: the write would race with that read (R8)")
