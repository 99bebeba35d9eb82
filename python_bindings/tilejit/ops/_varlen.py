"""The chunk metadata of a packed varlen batch (docs/numerics.md R9) as the
prefill kernels read it: int32 chunk_seq / chunk_begin / chunk_end, chunks of
1..block tokens that never cross a sequence. Built with torch ops on the
tensors' device, so a device-side cu_seqlens is never read on the host; the
arrays have a fixed capacity and end in spare chunks (sequence -1, no tokens)
that the kernels skip."""

import torch


def chunks_of_sequences(cu_seqlens, total_tokens, block):
    """Chunks tiling each sequence of `cu_seqlens` ([S + 1]) from its first
    token; capacity total_tokens // block + S, which no batch of that many
    tokens exceeds (sum ceil(L / block) <= T / block + S)."""
    cu = cu_seqlens.long()
    sequences = cu.numel() - 1
    lengths = cu[1:] - cu[:-1]
    counts = (lengths + block - 1) // block
    ends = torch.cumsum(counts, 0)
    index = torch.arange(total_tokens // block + sequences, device=cu.device)
    seq = torch.searchsorted(ends, index, right=True)
    real = seq < sequences
    seq = seq.clamp(max=sequences - 1)
    begin = cu[seq] + (index - (ends[seq] - counts[seq])) * block
    end = torch.minimum(begin + block, cu[seq + 1])
    return _int32(torch.where(real, seq, -1), torch.where(real, begin, 0),
                  torch.where(real, end, 0))


def split_chunks(cu_chunk_seqlens, chunk_seq, chunk_size, block):
    """A caller's chunks ([chunks + 1] token boundaries, the sequence of each)
    cut into pieces of at most `block` tokens. A chunk shorter than
    chunk_size leaves spare pieces (sequence -1, begin = end = the chunk's
    end, which is past every sequence start): they carry the state through
    unchanged."""
    begin0, end0 = cu_chunk_seqlens[:-1].long(), cu_chunk_seqlens[1:].long()
    pieces = -(-chunk_size // block)
    step = torch.arange(pieces, device=begin0.device) * block
    begin = begin0[:, None] + step[None, :]
    real = begin < end0[:, None]
    end = torch.minimum(begin + block, end0[:, None])
    seq = torch.where(real, chunk_seq.long()[:, None], -1)
    begin = torch.where(real, begin, end0[:, None])
    end = torch.where(real, end, end0[:, None])
    return _int32(seq.reshape(-1), begin.reshape(-1), end.reshape(-1))


def _int32(*tensors):
    return tuple(t.to(torch.int32).contiguous() for t in tensors)
