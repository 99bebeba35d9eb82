"""causal_conv1d_fn (varlen prefill) and causal_conv1d_update (decode) in vLLM's
form: docs/numerics.md R3 / R3d with SiLU, R8 pages and R9 metadata, on the
registered `conv_prefill` and `conv_update` kernels."""

import torch

from . import _checks
from ._launch import (INDEX_TYPES, as_tensor, check, check_aligned, check_distinct_slots,
                      check_pad_slot_id, check_strides, fail, host_ints, launch, row_stride,
                      slot_table)
from ._ssm import PAD_SLOT_ID
from ._varlen import check_varlen, chunks_of_sequences

WIDTH = 4  # the conv width the kernels are built for (docs/numerics.md#geometry)
_BLOCK_T = 64  # conv_prefill's default block_t: its chunks


def _activation(op, activation):
    if activation is True or activation in ("silu", "swish"):
        return
    raise fail(op, f"activation={activation!r}: tilejit's conv kernels apply SiLU (R3); pass "
                   "activation='silu'")


def _weight_and_bias(op, weight, bias, dim, device):
    check(op, "weight", weight, (torch.bfloat16,), device=device)
    if weight.dim() == 3 and weight.shape[1] == 1:  # nn.Conv1d's (dim, 1, width)
        weight = weight[:, 0]
    check(op, "weight", weight, (torch.bfloat16,), (dim, None))
    if weight.shape[1] != WIDTH:
        raise fail(op, f"weight has width {weight.shape[1]}: tilejit's conv kernels are built "
                       f"for width {WIDTH}")
    check_strides(op, "weight", weight, (WIDTH, 1))
    if bias is None:
        bias = torch.zeros(dim, dtype=torch.bfloat16, device=device)
    check(op, "bias", bias, (torch.bfloat16,), (dim,), device)
    check_strides(op, "bias", bias, (1,))
    return weight, bias


def _state_layout(op, name, conv_state, dim, device):
    """0 for pages [slots, dim, 3] (tilejit's), 1 for vLLM's channel-last ones
    ((slots, dim, 3) viewed over [slots, 3, dim] memory)."""
    check(op, name, conv_state, (torch.bfloat16,), (None, dim, None), device)
    if conv_state.shape[2] != WIDTH - 1:
        raise fail(op, f"{name} keeps {conv_state.shape[2]} taps: tilejit's pages keep exactly "
                       f"width - 1 = {WIDTH - 1}")
    slot = dim * (WIDTH - 1)
    strides = conv_state.stride()
    if strides == (slot, WIDTH - 1, 1) or conv_state.shape[0] == 1 and strides[1:] == (3, 1):
        return 0
    if strides == (slot, 1, dim) or conv_state.shape[0] == 1 and strides[1:] == (1, dim):
        return 1
    raise fail(op, f"{name} has strides {tuple(strides)}: tilejit reads pages of strides "
                   f"({slot}, 3, 1) or channel-last ({slot}, 1, {dim})")


def _slots(op, name, indices, rows, num_slots, device, check_slots):
    """The slot table as the kernels read it (int32 or int64, unconverted) and
    whether it is int64; check_slots=True (debug) also refuses duplicates on
    the host (R8). Out-of-range slots are checked on the device."""
    if indices is None:
        if rows > num_slots:
            raise fail(op, f"{rows} rows but {num_slots} state slots, and no {name}")
        return torch.arange(rows, dtype=torch.int32, device=device), False
    slots, wide = slot_table(op, name, indices, rows, device)
    values = host_ints(op, name, slots, check_slots)
    if values is not None:
        check_distinct_slots(op, name, values, num_slots)
    return slots, wide


def _refuse_set(op, **arguments):
    for name, value in arguments.items():
        if value is not None:
            raise fail(op, f"{name} is not supported (prefix caching and speculative decoding "
                           "are not implemented by tilejit's conv kernels); pass None")


def causal_conv1d_update(x, conv_state, weight, bias=None, activation=None,
                         conv_state_indices=None, num_accepted_tokens=None,
                         query_start_loc=None, max_query_len=-1, pad_slot_id=PAD_SLOT_ID,
                         block_idx_last_scheduled_token=None, initial_state_idx=None,
                         validate_data=False, *, cache_seqlens=None, check_slots=False):
    """One decode token per row through the causal conv + SiLU (R3d); the conv
    state of the row's slot is shifted in place.

    x (b, dim) or (b, dim, 1) bf16, channels contiguous (rows of any stride);
    conv_state (slots, dim, 3) bf16, tilejit's or vLLM's channel-last layout;
    weight (dim, 4) or (dim, 1, 4); bias (dim,) or None; activation 'silu'.
    conv_state_indices (b,) int32 or int64 (default: row i uses slot i); a
    negative index is a padding row: state untouched, output 0; an index at or
    past the slot count is checked on the device (docs/python.md, "Checks on
    the device"). check_slots=True (debug) also refuses duplicate indices on
    the host. Returns out shaped as x (bf16).
    """
    op = "causal_conv1d_update"
    x, conv_state, weight, bias, conv_state_indices = (
        as_tensor(op, n, v) for n, v in
        [("x", x), ("conv_state", conv_state), ("weight", weight), ("bias", bias),
         ("conv_state_indices", conv_state_indices)])
    _activation(op, activation)
    _refuse_set(op, num_accepted_tokens=num_accepted_tokens, query_start_loc=query_start_loc,
                block_idx_last_scheduled_token=block_idx_last_scheduled_token,
                initial_state_idx=initial_state_idx, cache_seqlens=cache_seqlens)
    check_pad_slot_id(op, pad_slot_id)
    check(op, "x", x, (torch.bfloat16,))
    shape = x.shape
    if x.dim() == 3:
        if x.shape[2] != 1:
            raise fail(op, f"x has {x.shape[2]} tokens per row: tilejit's conv update takes one")
        x = x[:, :, 0]
    if x.dim() != 2:
        raise fail(op, f"x has shape {tuple(shape)}, expected (batch, dim) or (batch, dim, 1)")
    rows, dim = x.shape
    device = x.device
    check_strides(op, "x", x, (None, 1))
    weight, bias = _weight_and_bias(op, weight, bias, dim, device)
    layout = _state_layout(op, "conv_state", conv_state, dim, device)
    slots, wide = _slots(op, "conv_state_indices", conv_state_indices, rows,
                         conv_state.shape[0], device, check_slots)
    out = torch.empty(rows, dim, dtype=torch.bfloat16, device=device)
    block = 256
    launch("conv_update",
           dict(channels=dim, block=block, x_stride=row_stride(op, "x", x, dim),
                state_layout=layout, slots_i64=int(wide), checked=1),
           device, (rows, -(-dim // block)), x=x, conv_state=conv_state, slots=slots,
           weight=weight, bias=bias, out=out, errors=_checks.error_word(device),
           op=_checks.op_number(op), num_slots=conv_state.shape[0])
    _checks.after(op, device)
    return out.view(shape)


def causal_conv1d_fn(x, weight, bias, conv_states, query_start_loc, cache_indices=None,
                     has_initial_state=None, activation="silu", pad_slot_id=PAD_SLOT_ID,
                     block_idx_first_scheduled_token=None, block_idx_last_scheduled_token=None,
                     initial_state_idx=None, num_computed_tokens=None, block_size_to_align=0,
                     metadata=None, validate_data=False, *, check_slots=False):
    """The causal conv + SiLU (R3) of a packed varlen batch, conv pages read and
    written (R8).

    x (dim, T) bf16, channel-last (x.stride(0) == 1: the transpose of a [T, row]
    token-major buffer, read in place); weight (dim, 4); bias (dim,) or None;
    conv_states (slots, dim, 3), tilejit's or vLLM's channel-last layout;
    query_start_loc (S + 1,) int32 or int64; cache_indices (S,) (default:
    sequence i uses slot i), a negative index is a padding sequence (zero
    output, page untouched); has_initial_state (S,) (default: all start from
    zeros). query_start_loc (0, rising strictly, ending at T) and the slots'
    range are checked on the device (docs/python.md, "Checks on the device");
    check_slots=True (debug) also refuses duplicate cache_indices on the host.
    Returns out (dim, T) bf16, the transpose of a new [T, dim] tensor.
    `metadata` (vLLM's launch cache for its own kernel) is not needed and not
    read.
    """
    op = "causal_conv1d_fn"
    x, weight, bias, conv_states, query_start_loc, cache_indices, has_initial_state = (
        as_tensor(op, n, v) for n, v in
        [("x", x), ("weight", weight), ("bias", bias), ("conv_states", conv_states),
         ("query_start_loc", query_start_loc), ("cache_indices", cache_indices),
         ("has_initial_state", has_initial_state)])
    _activation(op, activation)
    _refuse_set(op, block_idx_first_scheduled_token=block_idx_first_scheduled_token,
                block_idx_last_scheduled_token=block_idx_last_scheduled_token,
                initial_state_idx=initial_state_idx, num_computed_tokens=num_computed_tokens)
    check_pad_slot_id(op, pad_slot_id)
    check(op, "x", x, (torch.bfloat16,))
    if x.dim() != 2:
        raise fail(op, f"x has shape {tuple(x.shape)}, expected (dim, tokens)")
    dim, tokens = x.shape
    device = x.device
    if tokens == 0:
        raise fail(op, "x holds no tokens: empty batches are refused (R9)")
    if dim > 1 and x.stride(0) != 1:
        raise fail(op, f"x has strides {tuple(x.stride())}: tilejit reads it channel-last "
                       "(stride(0) == 1, the transpose of a token-major [tokens, dim] buffer, "
                       "as vLLM passes it)")
    row = x.stride(1) if tokens > 1 else dim
    if row < dim:
        raise fail(op, f"x has strides {tuple(x.stride())}: its token rows overlap")
    check_aligned(op, "x", x, (1,))
    weight, bias = _weight_and_bias(op, weight, bias, dim, device)
    check_aligned(op, "bias", bias)
    layout = _state_layout(op, "conv_states", conv_states, dim, device)
    check_aligned(op, "conv_states", conv_states, (0, 2) if layout else ())
    check(op, "query_start_loc", query_start_loc, INDEX_TYPES, (None,), device)
    sequences = query_start_loc.numel() - 1
    if sequences < 1:
        raise fail(op, f"query_start_loc has {query_start_loc.numel()} element(s): it needs "
                       "at least 2 (one sequence)")
    status = check_varlen(op, device, query_start_loc, tokens)
    cu = query_start_loc.to(torch.int32).contiguous()  # used only if the check passes
    slots, wide = _slots(op, "cache_indices", cache_indices, sequences, conv_states.shape[0],
                         device, check_slots)
    if has_initial_state is None:
        init = torch.zeros(sequences, dtype=torch.int32, device=device)
    else:
        check(op, "has_initial_state", has_initial_state, (torch.bool, torch.int32),
              (sequences,), device)
        init = has_initial_state.to(torch.int32).contiguous()
    chunk_seq, chunk_begin, chunk_end = chunks_of_sequences(cu, tokens, _BLOCK_T)
    out = check_aligned(op, "the output", torch.empty(tokens, dim, dtype=torch.bfloat16,
                                                      device=device), (0,))
    # The kernel reads xBC at column `inner` of rows of inner + channels + heads:
    # x's rows are read from their first channel, the rest of each row unread.
    launch("conv_prefill",
           dict(inner=0, channels=dim, heads=row - dim, block_t=_BLOCK_T, state_layout=layout,
                slots_i64=int(wide), checked=1),
           device, (-(-dim // 1024), chunk_seq.numel()), zxbcdt=x.t(), weight=weight,
           bias=bias, cu_seqlens=cu, slots=slots, init=init, chunk_seq=chunk_seq,
           chunk_begin=chunk_begin, chunk_end=chunk_end, conv_state=conv_states, out=out,
           num_slots=conv_states.shape[0], errors=_checks.error_word(device),
           op=_checks.op_number(op), status=status, tokens=tokens)
    _checks.after(op, device)
    return out.t()
