"""The launches behind tilejit.ops' chunked SSD (docs/numerics.md R5p): the
single walk (ssd_prefill alone) or the prefill plan's span schedule
(ssd_span_state, ssd_state_pass, ssd_prefill over spans; docs/models.md),
chosen by the batch's chunk capacity as the plan chooses, or the chunk-parallel
schedule (one-chunk spans, ssd_chunk_scan) where TILEJIT_SSD_SCHEDULE=chunked;
and the span metadata they read, built with torch ops on the tensors' device
(no host read)."""

import os

import torch

from . import _checks
from ._launch import launch
from ._recording import keep, per_call

# ssd_prefill's chunk: R5p is invariant to it, so the kernel chunks each
# sequence by it whatever the caller's chunk_size.
KERNEL_CHUNK = 32
# The plan's spans: PlanOptions::ssdSpanTokens (512) tokens' worth of chunks.
SPAN_CHUNKS = 512 // KERNEL_CHUNK
# SsdSpanFlags (models/mamba2/Kernels.h).
SPAN_TAIL_STARTS, SPAN_TAIL_FROM_PAGE, SPAN_TAIL_ENDS = 2, 4, 8
# The chunk-parallel schedule's chunk and ssd_chunk_scan's rows per program.
CHUNKED_CHUNK, CHUNKED_BLOCK_M = 128, 32


def kernel_chunk(intermediate, head_dim, state):
    """The chunk the kernels (and so the metadata) use: CHUNKED_CHUNK for the
    chunk-parallel schedule, taken where TILEJIT_SSD_SCHEDULE=chunked (read
    per call; a cached call keeps the schedule it was planned with:
    tilejit.ops._plan.clear) unless the caller wants the state after each of
    its chunks (the span schedule's ssd_prefill writes them) or the state is
    not whole 16-byte vectors for ssd_state_pass; else KERNEL_CHUNK."""
    chunked = (os.environ.get("TILEJIT_SSD_SCHEDULE", "span") == "chunked"
               and not intermediate and (head_dim * state) % 8 == 0)
    return CHUNKED_CHUNK if chunked else KERNEL_CHUNK


def uses_spans(capacity, head_dim, state):
    """Whether the plan would cut `capacity` chunks into several spans (with
    one span its schedule is the single walk plus two launches), for a state
    ssd_state_pass can walk in 16-byte vectors (P x N a multiple of 8)."""
    return capacity > SPAN_CHUNKS and (head_dim * state) % 8 == 0


def block_config(head_dim, state):
    """(block_p, warps): a head_dim that 32 does not divide gets a last,
    partial block the views mask; a 16 x 16 state tile spreads over 2 warps."""
    block_p = 32 if head_dim % 32 == 0 else 16
    tile = max(16, 1 << (state - 1).bit_length())
    return block_p, (4 if block_p * tile >= 512 else 2)


def _span_metadata(chunk_seq, chunk_end, cu, init, device, span_chunks):
    """span_chunk [spans + 1], span_slot and span_flags [spans] (int32) of
    windows of span_chunks chunks, as PrefillMetadata records them: each
    span's tail sequence (slot = sequence; -1 for spare chunks), whether the
    tail starts in the span, from the page when `init` says so, and whether
    it ends there."""
    capacity, sequences = chunk_seq.numel(), cu.numel() - 1
    spans = -(-capacity // span_chunks)
    seq = chunk_seq.long()
    bounds = (torch.arange(spans + 1, device=device) * span_chunks).clamp(max=capacity)
    tail = seq[bounds[1:] - 1]
    real = tail >= 0
    # The first chunk of the tail's sequence: the chunks run through the
    # sequences in order, then the spares (sequence -1, ranked last).
    first = torch.searchsorted(torch.where(seq >= 0, seq, sequences), tail.clamp(min=0))
    starts = ~real | (first >= bounds[:-1])
    from_page = real & (init.long()[tail.clamp(min=0)] != 0)
    ends = real & (chunk_end.long()[bounds[1:] - 1] == cu.long()[tail.clamp(min=0) + 1])
    flags = (starts.long() * SPAN_TAIL_STARTS + from_page.long() * SPAN_TAIL_FROM_PAGE
             + ends.long() * SPAN_TAIL_ENDS)
    return (bounds.to(torch.int32), torch.where(real, tail, -1).to(torch.int32),
            flags.to(torch.int32))


def scan(s, meta, page, init, y, dt_softplus, page_out=None, chunk_states=None,
         checked=None):
    """R5p over the kernel chunks `meta` = (cu_seqlens, chunk_seq, chunk_begin,
    chunk_end, chunk_state_index or None): sequence i starts from page[i]
    when init[i], its final state lands in page_out[i] (in page[i] when
    None), and with `chunk_states` the state after each caller chunk the
    index names. `checked` = (op, status): the single walk reads
    check_varlen's verdict (the span kernels take metadata the caller has
    zeroed where the verdict failed)."""
    cu, chunk_seq, chunk_begin, chunk_end, state_index = meta
    block_p, warps = block_config(s.head_dim, s.state)
    chunk = kernel_chunk(chunk_states is not None, s.head_dim, s.state)
    shared = dict(s.constants, heads=s.heads, head_dim=s.head_dim, state=s.state,
                  groups=s.groups, chunk=chunk, block_p=block_p, warps=warps,
                  a_log=0, dt_softplus=int(bool(dt_softplus)))
    inputs = dict(s.inputs, a=s.A, dt_bias=s.dt_bias, cu_seqlens=cu, chunk_seq=chunk_seq,
                  chunk_begin=chunk_begin, chunk_end=chunk_end, dt_min=s.dt_min,
                  dt_max=s.dt_max)
    chunked = chunk == CHUNKED_CHUNK
    spans = chunked or uses_spans(chunk_seq.numel(), s.head_dim, s.state)
    constants = dict(shared, y_type=s.y_type, init_type=s.type_of(page),
                     state_type=s.type_of(page if page_out is None else page_out),
                     page_out=int(page_out is not None),
                     chunk_states=int(chunk_states is not None), span_states=int(spans),
                     checked=int(checked is not None and not spans), **s.prefill_constants)
    sequences = cu.numel() - 1
    args = dict(inputs, **s.prefill_inputs,
                slots=keep(torch.arange(sequences, dtype=torch.int32, device=s.device)), init=init,
                ssm_state=page, y=y, chunks=chunk_seq.numel())
    if page_out is not None:
        args["ssm_state_out"] = page_out
    if chunk_states is not None:
        args.update(chunk_state_index=state_index, chunk_states=chunk_states)
    blocks = -(-s.head_dim // block_p)
    if not spans:
        if checked is not None:
            op, status = checked
            args.update(status=status, tokens=s.tokens, sequences=sequences,
                        errors=_checks.error_word(s.device), op=_checks.op_number(op))
        launch("ssd_prefill", constants, s.device, (blocks, s.heads), **args)
        return
    span_chunk, span_slot, span_flags = per_call(_span_metadata, chunk_seq, chunk_end, cu,
                                                 init, s.device, 1 if chunked else SPAN_CHUNKS)
    count = span_slot.numel()
    span_states, span_tail = (per_call("empty", count, s.heads, s.head_dim, s.state,
                                       device=s.device) for _ in range(2))
    span_decay = per_call("empty", count * s.heads, device=s.device)
    # A chunk of 128 is a [128, 32] x tile per program: 8 warps where 4 would spill.
    state_warps = 8 if chunked and warps == 4 else warps
    launch("ssd_span_state", dict(shared, warps=state_warps), s.device,
           (blocks, s.heads, count), span_chunk=span_chunk, span_states=span_states,
           span_decay=span_decay, **inputs)
    size = s.head_dim * s.state
    # As the prefill plan: blocks of 256 with four spans' loads a step keep the
    # serial walk over the spans fed (docs/BENCHMARKS.md, "The state pass").
    block = min(256, 1 << (size - 1).bit_length())
    pass_constants = dict(heads=s.heads, head_dim=s.head_dim, state=s.state, block=block,
                          unroll=4, page_type=s.type_of(page))
    pass_args = dict(span_slot=span_slot, span_flags=span_flags, span_decay=span_decay,
                     span_states=span_states, span_tail=span_tail, ssm_state=page, spans=count)
    if chunked:
        # No walk writes the final states: the pass does, at each sequence's end.
        out_page = page if page_out is None else page_out
        pass_constants.update(write_page=1, state_type=s.type_of(out_page))
        pass_args.update(ssm_state_out=out_page)
    launch("ssd_state_pass", pass_constants, s.device, (-(-size // block), s.heads),
           **pass_args)
    if chunked:
        launch("ssd_chunk_scan", dict(shared, block_m=CHUNKED_BLOCK_M, y_type=s.y_type,
                                      **s.prefill_constants),
               s.device, (chunk // CHUNKED_BLOCK_M * blocks, count, s.heads),
               **inputs, **s.prefill_inputs, slots=args["slots"], chunk_states=span_states,
               chunk_tail=span_tail, y=y)
        return
    args.update(span_chunk=span_chunk, span_states=span_states, span_tail=span_tail)
    launch("ssd_prefill", constants, s.device, (blocks, s.heads, count), **args)
