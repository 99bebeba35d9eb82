"""varlen_pieces (R9): the chunk metadata tilejit.ops' prefill ops make on the
device, against a plain Python walk over the sequences."""

import pytest
import torch

from tilejit.ops._varlen import chunks_of_sequences

from ops_support import DEV


def walk(lengths, tokens, block):
    """Each sequence cut into pieces of `block` tokens from its start, then
    spare pieces (-1, 0, 0) up to tokens // block + sequences."""
    seq, begin, end, start = [], [], [], 0
    for s, length in enumerate(lengths):
        for b in range(start, start + length, block):
            seq.append(s)
            begin.append(b)
            end.append(min(b + block, start + length))
        start += length
    spare = tokens // block + len(lengths) - len(seq)
    return seq + [-1] * spare, begin + [0] * spare, end + [0] * spare


# More sequences than one search step (16) holds, so the running count of
# pieces carried between steps decides every piece past the first step;
# capacities that do not fill the last program's 128 pieces.
@pytest.mark.parametrize("lengths,block", [
    ([1], 64), ([64], 64), ([65], 64), ([8192], 64), ([300, 1, 64, 129], 32),
    (list(range(1, 41)), 4), ([7] * 200, 8), ([513, 2, 3000, 64, 65, 1] * 7, 64)])
def test_pieces_match_a_walk_over_the_sequences(lengths, block):
    cu = torch.tensor([0] + list(torch.tensor(lengths).cumsum(0)), dtype=torch.int32,
                      device=DEV)
    tokens = sum(lengths)
    got = [t.cpu().tolist() for t in chunks_of_sequences(cu, tokens, block)]
    want = walk(lengths, tokens, block)
    assert [len(g) for g in got] == [len(w) for w in want] == [tokens // block + len(lengths)] * 3
    assert got == list(want)
