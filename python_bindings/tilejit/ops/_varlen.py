"""The chunk metadata of a packed varlen batch (docs/numerics.md R9) as the
prefill kernels read it: int32 chunk_seq / chunk_begin / chunk_end, chunks of
1..block tokens that never cross a sequence. Built on the tensors' device (a
kernel, or torch ops for the caller's chunks), so a device-side cu_seqlens is
never read on the host; the
arrays have a fixed capacity and end in spare chunks (sequence -1, no tokens)
that the kernels skip. And check_varlen, the device-side check of the
metadata a caller hands in."""

import torch

from . import _checks
from ._launch import INDEX_TYPES, check, check_strides, fail, launch
from ._recording import per_call


def check_varlen(op, device, cu_seqlens, tokens, chunks=None):
    """The device-side check of a varlen batch's metadata (check_varlen, R9):
    cu_seqlens rising strictly from 0 to `tokens` and, with `chunks` =
    (cu_chunk_seqlens, seq_idx, last_chunk_indices, chunk_size), the caller's
    chunks rising strictly from 0 to `tokens`, none longer than chunk_size,
    each inside its sequence, sequences never going back, and each sequence's
    last chunk named. Returns the verdict (an int64 [1]) the checked kernels
    read; a bad one also lands in the device's error word."""
    tensors = [cu_seqlens] + ([] if chunks is None else list(chunks[:3]))
    for name, t in zip(["cu_seqlens", "cu_chunk_seqlens", "seq_idx", "last_chunk_indices"],
                       tensors):
        check(op, name, t, INDEX_TYPES, (None,), device)
        check_strides(op, name, t, (1,))
    wide = any(t.dtype == torch.int64 for t in tensors)
    if wide:
        tensors = [per_call(torch.Tensor.to, t, torch.int64) for t in tensors]
    status = per_call("empty", 1, dtype=torch.int64, device=device)
    args = dict(cu_seqlens=tensors[0], status=status, sequences=cu_seqlens.numel() - 1,
                tokens=tokens, errors=_checks.error_word(device), op=_checks.op_number(op))
    if chunks is not None:
        cu_chunks, seq_idx, last, chunk_size = chunks
        if cu_chunks.numel() < 2:
            raise fail(op, "cu_chunk_seqlens needs at least 2 elements (one chunk)")
        args.update(cu_chunk_seqlens=tensors[1], seq_idx=tensors[2],
                    last_chunk_indices=tensors[3], nchunks=cu_chunks.numel() - 1,
                    chunk_size=chunk_size)
    launch("check_varlen", dict(index_i64=int(wide), chunks=int(chunks is not None)), device,
           (1, 1, 1), **args)
    return status


def chunks_of_sequences(cu_seqlens, total_tokens, block):
    """Chunks tiling each sequence of `cu_seqlens` (int32 [S + 1]) from its
    first token; capacity total_tokens // block + S, which no batch of that many
    tokens exceeds (sum ceil(L / block) <= T / block + S). One launch of
    varlen_pieces (a handful of torch operations would each be a launch from the
    host, most of an eager prefill call's host time)."""
    sequences = cu_seqlens.numel() - 1
    capacity = total_tokens // block + sequences
    device = cu_seqlens.device
    seq, begin, end = (per_call("empty", capacity, dtype=torch.int32, device=device)
                       for _ in range(3))
    launch("varlen_pieces", {}, device, (-(-capacity // _PIECES_TILE),), cu_seqlens=cu_seqlens,
           chunk_seq=seq, chunk_begin=begin, chunk_end=end, sequences=sequences,
           capacity=capacity, block=block)
    return seq, begin, end


# varlen_pieces' registered `tile`: pieces per program.
_PIECES_TILE = 128


def chunks_of_caller_chunks(cu_chunk_seqlens, seq_idx, total_tokens, block):
    """The caller's chunks (cu_chunk_seqlens [nchunks + 1], each of sequence
    seq_idx) cut into pieces of at most `block` tokens: (chunk_seq,
    chunk_begin, chunk_end, chunk_state_index), int32; the index names the
    caller chunk a piece ends (-1 where it ends none, or is spare)."""
    chunk, begin, end, ends = pieces(cu_chunk_seqlens, total_tokens, block)
    real = chunk >= 0
    seq = torch.where(real, seq_idx.long()[chunk.clamp(min=0)], -1)
    return _int32(seq, begin, end, torch.where(ends, chunk, -1))


def pieces(bounds, total_tokens, block):
    """Pieces of 1..block tokens tiling each segment [bounds[i], bounds[i+1])
    from its start, then spare pieces (segment -1, no tokens) up to the
    capacity total_tokens // block + segments: (segment, begin, end, whether
    the piece ends its segment), int64."""
    cu = bounds.long()
    segments = cu.numel() - 1
    lengths = cu[1:] - cu[:-1]
    counts = (lengths + block - 1) // block
    ends = torch.cumsum(counts, 0)
    index = torch.arange(total_tokens // block + segments, device=cu.device)
    seg = torch.searchsorted(ends, index, right=True)
    real = seg < segments
    seg = seg.clamp(max=segments - 1)
    begin = cu[seg] + (index - (ends[seg] - counts[seg])) * block
    end = torch.minimum(begin + block, cu[seg + 1])
    return (torch.where(real, seg, -1), torch.where(real, begin, 0), torch.where(real, end, 0),
            real & (end == cu[seg + 1]))


def _int32(*tensors):
    return tuple(t.to(torch.int32).contiguous() for t in tensors)
