"""tilejit.ops.selective_state_update on the parameter grids of the peers'
state-update tests (vLLM's kernels/mamba/test_mamba_ssm.py, mamba_ssm's
ops/triton/test_selective_state_update.py) at reduced sizes, against
our f64 oracle (ssu_reference.py): every dtype mix they run (x, dt, z and the
state in f32, f16 or bf16 beside f32 B, C, A, D, dt_bias), the single-head
and multi-head forms, tied and untied parameters, groups, slot tables with
and without null-block padding. Each band is paired with counterfactuals
shown to land outside it; outputs are poisoned; untouched slots compared
byte for byte."""

import pytest

torch = pytest.importorskip("torch", reason="tilejit.ops works on torch tensors")

import tilejit.ops as ops  # noqa: E402

from ops_support import DEV, poisoned  # noqa: E402,F401
from ssu_support import ITYPES, head_inputs, rand, randn, verify  # noqa: E402


def single_head_inputs(gen, rows, dim, dstate, itype, has_z):
    """The peers' single-head recipe (Mamba-1 shapes): A (dim, dstate), dt,
    D and dt_bias per dim."""
    return dict(x=randn(gen, rows, dim, dtype=itype), dt=randn(gen, rows, dim, dtype=itype),
                A=-rand(gen, dim, dstate) - 1, B=randn(gen, rows, dstate),
                C=randn(gen, rows, dstate), D=randn(gen, dim), dt_bias=rand(gen, dim) - 4,
                z=randn(gen, rows, dim, dtype=itype) if has_z else None)


def as_heads(inputs):
    """The single-head form's tensors as the oracle's H = 1 case."""
    lift = {"x": 1, "dt": 1, "B": 1, "C": 1, "z": 1, "A": 0, "D": 0, "dt_bias": 0}
    return {k: (v.unsqueeze(lift[k]) if v is not None else None) for k, v in inputs.items()}


def drop_carry(page):
    return ("dropped carry", {"page": torch.zeros_like(page)}, "y", 0.25)


def per_head_d(inputs):
    """D's first column for every p: separates on y wherever x is not tiny."""
    D = inputs["D"]
    return ("D per head instead of per p", {"D": D[..., :1].expand_as(D)}, "y", 0.25)


def no_gate(inputs):
    return [("gate dropped", {"z": None}, "y", 0.25)] if inputs["z"] is not None else []


# vLLM test_selective_state_update (itype f32/bf16, has_z, dstate 16/64,
# dim 2048/2064/4096) and mamba_ssm's (itype f32/f16/bf16, dstate 16/32/64).
@pytest.mark.parametrize("itype", ITYPES)
@pytest.mark.parametrize("has_z", [False, True])
@pytest.mark.parametrize("dstate", [16, 32, 64])
@pytest.mark.parametrize("dim", [32, 48])
def test_single_head(poisoned, itype, has_z, dstate, dim):
    gen = torch.Generator().manual_seed(1000 + dim + dstate + 7 * has_z)
    rows = 2
    state = randn(gen, rows, dim, dstate, dtype=itype)
    inputs = single_head_inputs(gen, rows, dim, dstate, itype, has_z)
    before = state.clone()
    out = ops.selective_state_update(state, dt_softplus=True, **inputs)
    assert out.dtype == itype and out.shape == (rows, dim)  # empty_like(x), as mamba_ssm
    heads = as_heads(inputs)
    cfs = [drop_carry(before.unsqueeze(1)), per_head_d(heads)] + no_gate(heads)
    if itype == torch.float32:  # A per (p, n): separates on an f32 page
        A = heads["A"]
        cfs.append(("A per head", {"A": A[:, :1, :1].expand_as(A)}, "state", 0.25))
    verify(out.unsqueeze(1), state.unsqueeze(1), before.unsqueeze(1), heads, cfs)


# vLLM test_selective_state_update_with_batch_indices (with_padding: null-block
# rows; itype f32/bf16, dstate 16/64, dims) and mamba_ssm's (itype f32/f16/bf16,
# has_z both, dstate 16/32/64): 10 slots per row, random distinct slots.
@pytest.mark.parametrize("itype", ITYPES)
@pytest.mark.parametrize("has_z", [False, True])
@pytest.mark.parametrize("dstate", [16, 64])
@pytest.mark.parametrize("padding", [0, 5])
def test_single_head_batch_indices(poisoned, itype, has_z, dstate, padding):
    gen = torch.Generator().manual_seed(2000 + dstate + padding + 7 * has_z)
    batch, dim = 3, 48
    slots = 10 * batch
    state = randn(gen, slots, dim, dstate, dtype=itype)
    # vLLM excludes slot 0 (its null block); padding rows name it.
    picked = (torch.randperm(slots - 1, generator=gen)[:batch] + 1).to(torch.int32)
    indices = torch.cat([picked, torch.zeros(padding, dtype=torch.int32)]).to(DEV)
    inputs = single_head_inputs(gen, batch + padding, dim, dstate, itype, has_z)
    before = state.clone()
    out = torch.full((batch + padding, dim), float("nan"), dtype=itype, device=DEV)
    ops.selective_state_update(state, dt_softplus=True, state_batch_indices=indices,
                               null_block_id=0, out=out, **inputs)
    assert bool((out[batch:] == 0).all()), "null-block rows write 0 (R8)"
    heads = as_heads(inputs)
    _, writes = verify(out.unsqueeze(1), state.unsqueeze(1), before.unsqueeze(1), heads,
                       [drop_carry(before.unsqueeze(1)), per_head_d(heads)] + no_gate(heads),
                       src=indices, pad=0)
    assert sorted(writes) == sorted(int(s) for s in picked)


# vLLM test_selective_state_update_with_heads_with_batch_indices (tie_hdim,
# ngroups 1/4, itype f32/bf16) and mamba_ssm's test_selective_state_update_with_heads
# (ngroups 1/2/4, itype f32/f16/bf16, dstate 16/32/64), with and without indices.
@pytest.mark.parametrize("itype", ITYPES)
@pytest.mark.parametrize("has_z", [False, True])
@pytest.mark.parametrize("tie", [False, True])
@pytest.mark.parametrize("ngroups", [1, 2, 4])
@pytest.mark.parametrize("dstate", [16, 64])
@pytest.mark.parametrize("indexed", [False, True])
def test_heads(poisoned, itype, has_z, tie, ngroups, dstate, indexed):
    gen = torch.Generator().manual_seed(3000 + 10 * ngroups + dstate + 2 * tie + has_z)
    batch, heads, head_dim = 3, 4, 16
    slots = 10 * batch if indexed else batch
    state = randn(gen, slots, heads, head_dim, dstate, dtype=itype)
    inputs = head_inputs(gen, batch, heads, head_dim, dstate, ngroups, itype, tie, has_z)
    indices = (torch.randperm(slots, generator=gen)[:batch].to(torch.int32).to(DEV)
               if indexed else None)
    before = state.clone()
    # mamba_ssm's slot 0 is an ordinary slot: its callers pass null_block_id=None.
    out = ops.selective_state_update(state, dt_softplus=True, state_batch_indices=indices,
                                     null_block_id=None, **inputs)
    cfs = [drop_carry(before)] + no_gate(inputs)
    if not tie:
        cfs.append(per_head_d(inputs))
    if ngroups > 1:  # every head reading group 0
        B, C = inputs["B"], inputs["C"]
        cfs.append(("groups ignored", {"B": B[:, :1].expand_as(B), "C": C[:, :1].expand_as(C)},
                    "y", 0.25))
    verify(out, state, before, inputs, cfs, src=indices)
