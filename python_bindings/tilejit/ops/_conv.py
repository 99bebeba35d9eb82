"""causal_conv1d_fn (varlen prefill) and causal_conv1d_update (decode and
speculative decoding) in vLLM's form: docs/numerics.md R3 / R3d with SiLU or no
activation, R8 pages (vLLM's null block as padding) and R9 metadata, on the
registered `conv_prefill` and `conv_update` kernels. Every float operand keeps
its own dtype (bf16, f16 or f32): the kernels take each as a constant, with
vLLM's rounding points (x rounded to the page's dtype, the output rounded to
the page's dtype and then to x's)."""

import torch

from . import _checks
from ._launch import (FLOAT_TYPES, INDEX_TYPES, as_tensor, check, check_aligned,
                      check_distinct_slots, check_strides, element_type,
                      fail, host_ints, launch, slot_table)
from ._plan import cached
from ._recording import keep, per_call
from ._ssm import NULL_BLOCK_ID, PAD_SLOT_ID, padding
from ._varlen import check_varlen, chunks_of_sequences

PREFILL_WIDTH = 4  # conv_prefill's width (docs/numerics.md#geometry)
_BLOCK_T = 64  # conv_prefill's default block_t: its chunks
_BLOCK = 256  # conv_update's channels per program


def _silu(op, activation):
    """vLLM's activation argument as conv kernels' `silu` constant."""
    if activation is True or activation in ("silu", "swish"):
        return 1
    if activation is None or activation is False:
        return 0
    raise fail(op, f"activation={activation!r}: expected None, 'silu', 'swish' or a bool")


def _weight_and_bias(op, weight, bias, dim, device):
    """weight (dim, width) (nn.Conv1d's (dim, 1, width) viewed so) and the
    form constants of their dtypes; bias may be None (has_bias 0)."""
    check(op, "weight", weight, FLOAT_TYPES, device=device)
    if weight.dim() == 3 and weight.shape[1] == 1:
        weight = weight[:, 0]
    check(op, "weight", weight, FLOAT_TYPES, (dim, None))
    width = weight.shape[1]
    if not 2 <= width <= 8:
        raise fail(op, f"weight has width {width}: tilejit's conv kernels take 2 to 8")
    check_strides(op, "weight", weight, (width, 1))
    constants = dict(weight_type=element_type(weight), has_bias=int(bias is not None))
    if bias is not None:
        check(op, "bias", bias, FLOAT_TYPES, (dim,), device)
        check_strides(op, "bias", bias, (1,))
        constants["bias_type"] = element_type(bias)
    return weight, bias, constants


def _null_block(op, null_block_id, pad_slot_id, indices):
    """The null-block constant and argument (none for the default table)."""
    null = padding(op, null_block_id, pad_slot_id, indices)
    if null is None:
        return {}, {}
    return dict(null_block=1), dict(null_block_id=null)


def _prefill_page_layout(op, conv_state, dim):
    """0 for pages [slots, dim, 3] (tilejit's), 1 for vLLM's channel-last ones
    ((slots, dim, 3) viewed over [slots, 3, dim] memory): conv_prefill's."""
    if conv_state.shape[2] != PREFILL_WIDTH - 1:
        raise fail(op, f"conv_states keeps {conv_state.shape[2]} taps: causal_conv1d_fn's "
                       f"pages keep exactly width - 1 = {PREFILL_WIDTH - 1}")
    slot = dim * (PREFILL_WIDTH - 1)
    strides = conv_state.stride()
    if strides == (slot, PREFILL_WIDTH - 1, 1) or conv_state.shape[0] == 1 and \
            strides[1:] == (3, 1):
        return 0
    if strides == (slot, 1, dim) or conv_state.shape[0] == 1 and strides[1:] == (1, dim):
        return 1
    raise fail(op, f"conv_states has strides {tuple(strides)}: causal_conv1d_fn reads pages "
                   f"of strides ({slot}, 3, 1) or channel-last ({slot}, 1, {dim})")


def _check_written(op, name, written, null_block_id, num_slots, check_slots):
    """check_slots=True (debug): the slots the rows write (`written`, one a
    row) read on the host and refused when two rows share one (R8); padding
    rows (negative or the null block) share nothing."""
    values = host_ints(op, name, written, check_slots)
    if values is not None:
        check_distinct_slots(op, name, [-1 if v == null_block_id else v for v in values],
                             num_slots)


def _as_rows(t, varlen):
    """x or out as (rows, dim, tokens): varlen (num_tokens, dim) as one row."""
    if varlen:
        return t.t().unsqueeze(0)
    return t.unsqueeze(-1) if t.dim() == 2 else t


def _update_x(op, x, out, query_start_loc, max_query_len):
    """x and out as the general conv_update reads them, channels contiguous.
    Returns out (a new tensor shaped as x when None), the tokens a row has
    (at most) and the row and token strides of both."""
    check(op, "x", x, FLOAT_TYPES)
    varlen = query_start_loc is not None
    if varlen:
        if x.dim() != 2:
            raise fail(op, f"x has shape {tuple(x.shape)}: with query_start_loc it is "
                           "(num_tokens, dim)")
        if not isinstance(max_query_len, int) or max_query_len < 1:
            raise fail(op, f"max_query_len={max_query_len!r}: with query_start_loc pass the "
                           "longest row's token count (tilejit reads no device data on the "
                           "host)")
        tokens = max_query_len
    elif x.dim() in (2, 3):
        tokens = 1 if x.dim() == 2 else x.shape[2]
    else:
        raise fail(op, f"x has shape {tuple(x.shape)}, expected (batch, dim), "
                       "(batch, dim, seqlen) or, with query_start_loc, (num_tokens, dim)")
    x3 = _as_rows(x, varlen)
    if not 1 <= tokens <= 64:
        raise fail(op, f"{tokens} tokens per row: tilejit's conv update takes 1 to 64")
    if x3.shape[1] > 1 and x3.stride(1) != 1:
        raise fail(op, f"x has strides {tuple(x.stride())}: tilejit reads its channels "
                       "contiguous (stride 1, as vLLM's validate_data asks)")
    if out is None:  # channels contiguous, token-major within a row
        out = per_call("empty", x3.shape[0], x3.shape[2], x3.shape[1], dtype=x.dtype,
                       device=x.device).transpose(1, 2)
        out = out[0].t() if varlen else out.reshape(x.shape)
    check(op, "out", out, (x.dtype,), tuple(x.shape), x.device)
    out3 = _as_rows(out, varlen)
    if out3.shape[1] > 1 and out3.stride(1) != 1:
        raise fail(op, f"out has strides {tuple(out.stride())}: tilejit writes its "
                       "channels contiguous (stride 1)")
    for name, t in (("x", x3), ("out", out3)):
        if t.shape[0] > 1 and t.stride(0) == 0:
            raise fail(op, f"{name} has stride 0 over its {t.shape[0]} rows (an expand): "
                           f"tilejit reads rows in place; pass {name}.contiguous()")
    strides = dict(x_row_stride=x3.stride(0), x_token_stride=x3.stride(2),
                   out_row_stride=out3.stride(0), out_token_stride=out3.stride(2))
    return out, tokens, strides


def _update_slots(op, indices, rows, num_slots, device, apc):
    """The slot table (rows,) or (rows, blocks) as conv_update reads it, its
    row stride, and whether it is int64."""
    if indices is None:
        if apc:
            raise fail(op, "prefix caching (block_idx_last_scheduled_token) needs "
                           "conv_state_indices")
        if rows > num_slots:
            raise fail(op, f"{rows} rows but {num_slots} state slots, and no "
                           "conv_state_indices")
        return keep(torch.arange(rows, dtype=torch.int32, device=device)), 1, False
    check(op, "conv_state_indices", indices, INDEX_TYPES, device=device)
    if indices.dim() == 1:
        slots, wide = slot_table(op, "conv_state_indices", indices, rows, device)
        return slots, 1, wide
    check(op, "conv_state_indices", indices, INDEX_TYPES, (rows, None), device)
    check_strides(op, "conv_state_indices", indices, (None, 1))
    return indices, indices.stride(0), indices.dtype == torch.int64


def _row_table(op, name, t, rows, device):
    check(op, name, t, (torch.int32,), (rows,), device)
    return check_strides(op, name, t, (1,))


@cached
def causal_conv1d_update(x, conv_state, weight, bias=None, activation=None,
                         conv_state_indices=None, num_accepted_tokens=None,
                         query_start_loc=None, max_query_len=-1, null_block_id=NULL_BLOCK_ID,
                         block_idx_last_scheduled_token=None, initial_state_idx=None,
                         validate_data=False, out=None, *, pad_slot_id=PAD_SLOT_ID,
                         cache_seqlens=None, check_slots=False):
    """vLLM's causal_conv1d_update: each row's tokens through the causal conv
    (R3d; SiLU with activation 'silu'/'swish'/True), the row's conv page rolled
    in place as vLLM's kernel rolls it.

    x (batch, dim), (batch, dim, seqlen) or, with query_start_loc (batch + 1,)
    int32 and max_query_len, (num_tokens, dim); channels contiguous; bf16, f16
    or f32. conv_state (slots, dim, state_len >= width - 1), any dtype and
    strides; weight (dim, width) or (dim, 1, width), width 2..8; bias (dim,) or
    None. conv_state_indices (batch,) or (batch, blocks) int32/int64 (default:
    row i on slot i); an entry equal to null_block_id (vLLM's null block, 0 by
    default; None: none) or negative is a padding row: page untouched, output
    0. num_accepted_tokens (batch,) int32: speculative decoding (the window
    starts at tap num_accepted_tokens - 1; state_len >= width - 2 + seqlen).
    block_idx_last_scheduled_token and initial_state_idx (batch,) int32:
    prefix caching, the page read at conv_state_indices[i, initial_state_idx[i]]
    and written at [i, block_idx_last_scheduled_token[i]]. Slots past the page
    are checked on the device; check_slots=True (debug) also refuses duplicate
    slots on the host. Returns `out` (x's shape and dtype; a new tensor when
    None: x is never overwritten). cache_seqlens (causal-conv1d's circular
    buffer) is refused.
    """
    op = "causal_conv1d_update"
    (x, conv_state, weight, bias, conv_state_indices, num_accepted_tokens, query_start_loc,
     block_idx_last_scheduled_token, initial_state_idx, out) = (
        as_tensor(op, n, v) for n, v in
        [("x", x), ("conv_state", conv_state), ("weight", weight), ("bias", bias),
         ("conv_state_indices", conv_state_indices),
         ("num_accepted_tokens", num_accepted_tokens), ("query_start_loc", query_start_loc),
         ("block_idx_last_scheduled_token", block_idx_last_scheduled_token),
         ("initial_state_idx", initial_state_idx), ("out", out)])
    silu = _silu(op, activation)
    if cache_seqlens is not None:
        raise fail(op, "cache_seqlens (a circular conv state) is not supported: vLLM's "
                       "kernel rolls the page instead; pass None")
    if (block_idx_last_scheduled_token is None) != (initial_state_idx is None):
        raise fail(op, "prefix caching needs both block_idx_last_scheduled_token and "
                       "initial_state_idx")
    device = x.device
    out, tokens, strides = _update_x(op, x, out, query_start_loc, max_query_len)
    dim = x.shape[1]
    weight, bias, constants = _weight_and_bias(op, weight, bias, dim, device)
    width = weight.shape[1]
    check(op, "conv_state", conv_state, FLOAT_TYPES, (None, dim, None), device)
    spec = num_accepted_tokens is not None
    taps = width - 1 + (tokens - 1 if spec else 0)
    if conv_state.shape[2] < taps:
        raise fail(op, f"conv_state keeps {conv_state.shape[2]} taps: this call needs "
                       f"{taps} (width - 1" + (" + seqlen - 1 with num_accepted_tokens)"
                                               if spec else ")"))
    num_slots = conv_state.shape[0]
    if num_slots > 1 and conv_state.stride(0) == 0:
        raise fail(op, "conv_state has stride 0 over its slots (an expand)")
    apc = block_idx_last_scheduled_token is not None
    if query_start_loc is not None:
        if conv_state_indices is None:
            raise fail(op, "query_start_loc needs conv_state_indices (its rows)")
        rows = conv_state_indices.shape[0]
        query_start_loc = _row_table(op, "query_start_loc", query_start_loc, rows + 1, device)
    else:
        rows = x.shape[0]
    slots, slot_stride, wide = _update_slots(op, conv_state_indices, rows, num_slots, device,
                                             apc)
    tables = {}
    if spec:
        tables["num_accepted_tokens"] = _row_table(op, "num_accepted_tokens",
                                                   num_accepted_tokens, rows, device)
    # The device checks hold query_start_loc to x's tokens and the prefix
    # caching columns to the slot table's.
    if query_start_loc is not None:
        tables.update(query_start_loc=query_start_loc, num_tokens=x.shape[0])
    if apc:
        tables["slot_columns"] = slots.shape[1] if slots.dim() == 2 else 1
        tables["initial_state_idx"] = _row_table(op, "initial_state_idx", initial_state_idx,
                                                 rows, device)
        tables["block_idx_last_scheduled_token"] = _row_table(
            op, "block_idx_last_scheduled_token", block_idx_last_scheduled_token, rows, device)
    null_constants, null_args = _null_block(op, null_block_id, pad_slot_id,
                                            conv_state_indices)
    if check_slots and conv_state_indices is not None:
        written = slots if slots.dim() == 1 else slots[:, 0] if not apc else \
            slots.gather(1, tables["block_idx_last_scheduled_token"].long()[:, None])[:, 0]
        _check_written(op, "conv_state_indices", written, null_block_id, num_slots,
                       check_slots)
    constants.update(channels=dim, block=_BLOCK, x_type=element_type(x),
                     state_type=element_type(conv_state), out_type=element_type(out),
                     silu=silu, width=width, tokens=tokens,
                     varlen=int(query_start_loc is not None), spec=int(spec), apc=int(apc),
                     slots_i64=int(wide), checked=1, **null_constants)
    args = dict(x=x, conv_state=conv_state, slots=slots, weight=weight, out=out,
                slot_row_stride=slot_stride, page_slot_stride=conv_state.stride(0),
                page_channel_stride=conv_state.stride(1), page_tap_stride=conv_state.stride(2),
                num_slots=num_slots, errors=_checks.error_word(device),
                op=_checks.op_number(op), **strides, **tables, **null_args)
    if bias is not None:
        args["bias"] = bias
    _launch_update(constants, device, rows, dim, args)
    _checks.after(op, device)
    return out


def _plan_form(constants, rows, dim, args):
    """conv_update's plans' form (strides as constants) where the call fits it
    (bf16, width 4, one token, SiLU, a bias, a page of 3 taps in either
    layout, a 1-D slot table, out rows packed); else None."""
    if any(constants.get(k, 0) for k in ("x_type", "weight_type", "bias_type", "state_type",
                                         "out_type", "varlen", "spec", "apc")):
        return None
    if (constants["width"], constants["tokens"], constants["silu"],
            constants["has_bias"]) != (4, 1, 1, 1):
        return None
    page, slot = args["conv_state"], dim * 3
    layout = {(slot, 3, 1): 0, (slot, 1, dim): 1}.get(page.stride())
    if page.shape[2] != 3 or layout is None or args["slot_row_stride"] != 1 or \
            rows > 1 and args["out_row_stride"] != dim:
        return None
    return dict(channels=dim, block=_BLOCK, x_stride=args["x_row_stride"] if rows > 1 else dim,
                state_layout=layout, slots_i64=constants["slots_i64"], checked=1,
                null_block=constants.get("null_block", 0))


def _launch_update(constants, device, rows, dim, args):
    grid = (rows, -(-dim // _BLOCK))
    plan = _plan_form(constants, rows, dim, args)
    if plan is None:
        return launch("conv_update", dict(constants, general=1), device, grid, **args)
    launch("conv_update", plan, device, grid,
           **{k: args[k] for k in ("x", "conv_state", "slots", "weight", "bias", "out",
                                   "errors", "op", "num_slots", "null_block_id") if k in args})


def _prefill_slots(op, indices, sequences, num_slots, device, null_block_id, check_slots):
    """cache_indices as conv_prefill reads it (int32 or int64, unconverted),
    whether int64; default: sequence i on slot i."""
    if indices is None:
        if sequences > num_slots:
            raise fail(op, f"{sequences} sequences but {num_slots} state slots, and no "
                           "cache_indices")
        return keep(torch.arange(sequences, dtype=torch.int32, device=device)), False
    check(op, "cache_indices", indices, INDEX_TYPES, (None,), device)
    if indices.numel() < sequences:
        raise fail(op, f"cache_indices has {indices.numel()} entries for {sequences} "
                       "sequences")
    # vLLM reads the first S entries of a longer (padded) table.
    slots, wide = slot_table(op, "cache_indices", indices[:sequences], sequences, device)
    _check_written(op, "cache_indices", slots, null_block_id, num_slots, check_slots)
    return slots, wide


def _int32(t):
    """t as contiguous int32 (t itself when it is)."""
    return t.to(torch.int32).contiguous()


@cached
def causal_conv1d_fn(x, weight, bias, conv_states, query_start_loc, cache_indices=None,
                     has_initial_state=None, activation="silu", pad_slot_id=PAD_SLOT_ID,
                     null_block_id=NULL_BLOCK_ID, block_idx_first_scheduled_token=None,
                     block_idx_last_scheduled_token=None, initial_state_idx=None,
                     num_computed_tokens=None, block_size_to_align=0, metadata=None,
                     validate_data=False, *, check_slots=False):
    """vLLM's causal_conv1d_fn: the causal conv (R3; SiLU with activation
    'silu'/'swish'/True, none with None) of a packed varlen batch, conv pages
    read and written (R8).

    x (dim, T) bf16, f16 or f32, channel-last (x.stride(0) == 1: the transpose
    of a [T, row] token-major buffer, read in place); weight (dim, 4) or
    (dim, 1, 4); bias (dim,) or None; conv_states (slots, dim, 3), tilejit's or
    vLLM's channel-last layout; query_start_loc (S + 1,) int32 or int64;
    cache_indices (S,) (default: sequence i uses slot i); an entry equal to
    null_block_id (vLLM's null block, 0 by default; None: none) or negative is
    a padding sequence (zero output, page untouched); has_initial_state (S,)
    (default: all start from zeros). query_start_loc (0, rising strictly,
    ending at T) and the slots' range are checked on the device (docs/python.md,
    "Checks on the device"); check_slots=True (debug) also refuses duplicate
    cache_indices on the host. Returns out (dim, T) in x's dtype, the
    transpose of a new [T, dim] tensor. Prefix caching (block_idx_*,
    initial_state_idx, num_computed_tokens) is refused; `metadata` (vLLM's
    launch cache for its own kernel) is not needed and not read.
    """
    op = "causal_conv1d_fn"
    x, weight, bias, conv_states, query_start_loc, cache_indices, has_initial_state = (
        as_tensor(op, n, v) for n, v in
        [("x", x), ("weight", weight), ("bias", bias), ("conv_states", conv_states),
         ("query_start_loc", query_start_loc), ("cache_indices", cache_indices),
         ("has_initial_state", has_initial_state)])
    silu = _silu(op, activation)
    for name, value in (("block_idx_first_scheduled_token", block_idx_first_scheduled_token),
                        ("block_idx_last_scheduled_token", block_idx_last_scheduled_token),
                        ("initial_state_idx", initial_state_idx),
                        ("num_computed_tokens", num_computed_tokens)):
        if value is not None:
            raise fail(op, f"{name} is not supported (prefix caching: the intermediate "
                           "states of block-aligned chunks are not written by tilejit's "
                           "conv_prefill); pass None")
    check(op, "x", x, FLOAT_TYPES)
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
    weight, bias, constants = _weight_and_bias(op, weight, bias, dim, device)
    if weight.shape[1] != PREFILL_WIDTH:
        raise fail(op, f"weight has width {weight.shape[1]}: causal_conv1d_fn is built for "
                       f"width {PREFILL_WIDTH} (the model's; vLLM's prefill tests run only "
                       "it); causal_conv1d_update takes 2 to 8")
    if bias is not None:
        check_aligned(op, "bias", bias)
    check(op, "conv_states", conv_states, FLOAT_TYPES, (None, dim, None), device)
    layout = _prefill_page_layout(op, conv_states, dim)
    check_aligned(op, "conv_states", conv_states, (0, 2) if layout else ())
    check(op, "query_start_loc", query_start_loc, INDEX_TYPES, (None,), device)
    sequences = query_start_loc.numel() - 1
    if sequences < 1:
        raise fail(op, f"query_start_loc has {query_start_loc.numel()} element(s): it needs "
                       "at least 2 (one sequence)")
    status = check_varlen(op, device, query_start_loc, tokens)
    cu = per_call(_int32, query_start_loc)  # used only if the check passes
    slots, wide = _prefill_slots(op, cache_indices, sequences, conv_states.shape[0], device,
                                 null_block_id, check_slots)
    if has_initial_state is None:
        init = keep(torch.zeros(sequences, dtype=torch.int32, device=device))
    else:
        check(op, "has_initial_state", has_initial_state, (torch.bool, torch.int32),
              (sequences,), device)
        init = per_call(_int32, has_initial_state)
    chunk_seq, chunk_begin, chunk_end = chunks_of_sequences(cu, tokens, _BLOCK_T)
    out = check_aligned(op, "the output", per_call("empty", tokens, dim, dtype=x.dtype,
                                                   device=device), (0,))
    null_constants, null_args = _null_block(op, null_block_id, pad_slot_id, cache_indices)
    bias_arg = {} if bias is None else dict(bias=bias)
    # The kernel reads xBC at column `inner` of rows of inner + channels + heads:
    # x's rows are read from their first channel, the rest of each row unread.
    launch("conv_prefill",
           dict(inner=0, channels=dim, heads=row - dim, block_t=_BLOCK_T, state_layout=layout,
                slots_i64=int(wide), checked=1, x_type=element_type(x),
                state_type=element_type(conv_states), out_type=element_type(x), silu=silu,
                # The division-free SiLU is within a 16-bit rounding's ulp, not an
                # f32 output's.
                fast_silu=int(x.dtype != torch.float32 or conv_states.dtype != torch.float32),
                **constants, **null_constants),
           device, (-(-dim // 1024), chunk_seq.numel()), zxbcdt=x.t(), weight=weight,
           cu_seqlens=cu, slots=slots, init=init, chunk_seq=chunk_seq,
           chunk_begin=chunk_begin, chunk_end=chunk_end, conv_state=conv_states, out=out,
           num_slots=conv_states.shape[0], errors=_checks.error_word(device),
           op=_checks.op_number(op), status=status, tokens=tokens, **bias_arg, **null_args)
    _checks.after(op, device)
    return out.t()
