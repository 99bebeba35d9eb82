"""What the selective_state_update grid tests (test_ops_ssu_*.py) share: the
peers' input recipes at reduced sizes and one verifier that holds a call to
R5d/R8/R8s's bands, pairs each band with counterfactuals that must land
outside it, and checks that every slot the call may not write is unchanged."""

import torch

import ssu_reference as R
from ops_support import DEV, assert_band, outside

ITYPES = [torch.float32, torch.float16, torch.bfloat16]


def randn(gen, *shape, dtype=torch.float32):
    return torch.randn(*shape, generator=gen).to(dtype).to(DEV)


def rand(gen, *shape, lo=0.0, hi=1.0):
    return (torch.rand(*shape, generator=gen) * (hi - lo) + lo).to(DEV)


def head_inputs(gen, rows, heads, head_dim, dstate, groups, itype, tie, has_z):
    """The peers' multi-head recipe: x, dt, z in itype; B, C, A, D and dt_bias
    f32; tied (per-head) parameters as stride-0 expands, untied per p."""
    x = randn(gen, rows, heads, head_dim, dtype=itype)
    if tie:
        dt = randn(gen, rows, heads, dtype=itype)[:, :, None].expand(rows, heads, head_dim)
        dt_bias = (rand(gen, heads) - 4)[:, None].expand(heads, head_dim)
        A = (-rand(gen, heads) - 1)[:, None, None].expand(heads, head_dim, dstate)
        D = randn(gen, heads)[:, None].expand(heads, head_dim)
    else:
        dt = randn(gen, rows, heads, head_dim, dtype=itype)
        dt_bias = rand(gen, heads, head_dim) - 4
        A = -rand(gen, heads, head_dim, dstate) - 1
        D = randn(gen, heads, head_dim)
    B, C = randn(gen, rows, groups, dstate), randn(gen, rows, groups, dstate)
    z = randn(gen, rows, heads, head_dim, dtype=itype) if has_z else None
    return dict(x=x, dt=dt, A=A, B=B, C=C, D=D, z=z, dt_bias=dt_bias)


def verify(out, page, before, inputs, counterfactuals=(), softplus=True, **forms):
    """out and the page after the call against the oracle run on `before`
    (both 4-D): y in R5d's band (plus the output's rounding), every written
    state in R8s's, every other slot byte-identical, and each counterfactual
    (name, changed oracle arguments, "y" or "state", least share outside)
    outside its band on at least that share of the elements."""
    y, writes = R.run(before, softplus=softplus, **inputs, **forms)
    covered = ~torch.isnan(y)
    assert bool(covered.all()), "every row belongs to a sequence"
    rtol = R.out_rtol(out.dtype)
    assert_band(out.reshape(y.shape), y, 1e-3, rtol, y.numel())
    per_slot = before[0].numel()
    checked = 0
    for slot, S in writes.items():
        assert R.state_outside(page[slot], S, page.dtype) == 0, f"slot {slot} out of band"
        checked += S.numel()
    assert checked == len(writes) * per_slot
    for slot in range(page.shape[0]):
        if slot not in writes:
            assert torch.equal(page[slot], before[slot]), f"slot {slot} changed"
    for name, change, where, share in counterfactuals:
        args = {**inputs, **forms, **change}
        cf_page = args.pop("page", before)
        y2, w2 = R.run(cf_page, softplus=softplus, **args)
        if where == "y":
            n, total = outside(out.reshape(y.shape), y2, 1e-3, rtol), y.numel()
        else:
            # A slot the counterfactual never writes is outside everywhere.
            n = sum(R.state_outside(page[s], w2[s], page.dtype) if s in w2 else per_slot
                    for s in writes)
            total = checked
        assert total > 0 and n > share * total, f"{name}: only {n} of {total} outside"
    return y, writes
