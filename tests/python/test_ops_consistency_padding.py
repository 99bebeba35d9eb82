"""One padding convention for every op with a slot table (issue 32): vLLM's null
block (tilejit.ops.NULL_BLOCK_ID, slot 0) by default, as vLLM's callers rely on
without naming it; a caller's table only (the default table, row i on slot i,
has none); null_block_id=None for mamba_ssm's callers, whose slot 0 is real;
every negative index pads, so a non-negative pad_slot_id is refused."""

import pytest

torch = pytest.importorskip("torch", reason="tilejit.ops works on torch tensors")

import tilejit as tj  # noqa: E402
import tilejit.ops as ops  # noqa: E402

from ops_support import DEV  # noqa: E402


def _rand(gen, *shape, dtype=torch.float32):
    return (torch.rand(*shape, generator=gen) * 2 - 1).to(dtype).to(DEV)


def _ssu(gen):
    state = _rand(gen, 4, 2, 16, 16)
    args = (_rand(gen, 2, 2, 16), _rand(gen, 2, 2), -_rand(gen, 2).abs() - 0.5,
            _rand(gen, 2, 1, 16), _rand(gen, 2, 1, 16))
    return state, lambda s, **kw: ops.selective_state_update(s, *args, **kw)


def _conv(gen):
    state = _rand(gen, 4, 32, 3)
    x, weight = _rand(gen, 2, 32), _rand(gen, 32, 4)
    return state, lambda s, **kw: ops.causal_conv1d_update(x, s, weight, **kw)


def test_one_definition_exported():
    assert (ops.NULL_BLOCK_ID, ops.PAD_SLOT_ID) == (0, -1)


@pytest.mark.parametrize("make, table_arg", [(_ssu, "state_batch_indices"),
                                             (_conv, "conv_state_indices")])
def test_null_block_by_default_in_a_callers_table_only(make, table_arg):
    state, call = make(torch.Generator().manual_seed(3400))
    before = state.clone()
    table = torch.tensor([0, 2], dtype=torch.int32, device=DEV)
    out = call(state, **{table_arg: table})
    assert bool((out[0] == 0).all()) and torch.equal(state[0], before[0]), "slot 0 pads"
    assert not torch.equal(state[2], before[2])
    state.copy_(before)
    out = call(state, **{table_arg: table, "null_block_id": None})  # mamba_ssm's callers
    assert not torch.equal(state[0], before[0]) and not bool((out[0] == 0).all())
    state.copy_(before)
    call(state)  # the default table: row 0 on slot 0, a real slot
    assert not torch.equal(state[0], before[0])
    with pytest.raises(tj.ArgumentError, match="pad_slot_id 3"):
        call(state, pad_slot_id=3)
    with pytest.raises(tj.ArgumentError, match="null_block_id 0.5 must be an int or None"):
        call(state, **{table_arg: table, "null_block_id": 0.5})
