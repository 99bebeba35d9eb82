"""tilejit.mamba2.describe_plan: the text of the plan a decode or prefill step runs,
made by the models' front door for the arch the interpreter is told to plan for or
the arch of the runtime passed in (tests/e2e/FrontDoorTest.cpp holds it to the
text of `tilejit run --dry-run` and of the embedding API). The full NemotronH
geometry, one Mamba layer, synthetic weights; nothing is compiled."""

import functools

import pytest

import tilejit as tj

KNOWN_ARCHES = ("sm_90", "sm_90a", "sm_110a", "sm_121a")


@functools.cache
def decode_plan(plan_arch, rows=64):
    return tj.mamba2.describe_plan(rows=rows, slots=rows, plan_arch=plan_arch)


def launched(plan):
    """The kernels the plan launches, in order."""
    return [line.split()[1] for line in plan.splitlines() if line.startswith("launch ")]


def test_the_arch_picks_the_64_row_decode_plan():
    hopper, gb10 = decode_plan("sm_90a"), decode_plan("sm_121a")
    assert hopper.splitlines()[0] == gb10.splitlines()[0] == "rows 64, slots 64, layers 1"
    assert hopper != gb10
    # From 64 rows both quantize the activations and run in_proj as an e4m3 GEMM
    # fed by TMA (wgmma's tiles on sm_90a, mma.sync's on sm_121a), then the conv
    # on its own; the split in K is the arch's: sm_90a splits both GEMMs, each
    # summed by split_k_sum (docs/decode-projections.md#split-k), GB10's fewer
    # multiprocessors leave its in_proj whole.
    assert launched(hopper) == ["quantize_e4m3", "out_proj", "split_k_sum", "conv_update",
                                "ssm_update", "gated_rmsnorm", "out_proj", "split_k_sum"]
    assert launched(gb10) == ["quantize_e4m3", "out_proj", "conv_update", "ssm_update",
                              "gated_rmsnorm", "out_proj", "split_k_sum"]
    assert "in_proj_conv" not in gb10
    # One row fewer, sm_90a plans the fused in_proj_conv too, on its skinny
    # form behind the e4m3 quant (docs/decode-projections.md#the-skinny-form).
    assert launched(decode_plan("sm_90a", rows=63))[:2] == ["quantize_e4m3", "in_proj_conv"]


def test_an_unknown_plan_arch_names_the_known_ones():
    with pytest.raises(tj.ArgumentError, match="unknown arch 'sm_99'") as raised:
        tj.mamba2.describe_plan(rows=64, plan_arch="sm_99")
    for arch in KNOWN_ARCHES:
        assert arch in str(raised.value)


def test_prefill_sequences_give_a_prefill_plan():
    plan = tj.mamba2.describe_plan(prefill=[(300, 0, False)])
    kernels = launched(plan)
    assert "conv_prefill" in kernels and "ssd_prefill" in kernels
    assert "conv_update" not in kernels and "ssm_update" not in kernels
    lines = plan.splitlines()
    assert "buffer act0 input bf16 [300, 2688] layer -1" in lines
    assert "buffer cu_seqlens input i32 [2] layer -1" in lines
    with pytest.raises(tj.ArgumentError, match="prefill sequence 0 has 0 tokens"):
        tj.mamba2.describe_plan(prefill=[(0, 0, False)])


def test_a_compile_only_runtime_plans_for_its_arch(tmp_path, monkeypatch):
    # A tuning database without entries (a missing file would let the shipped
    # one stand in): a runtime's plan is then its arch's untuned one, as the
    # interpreter's.
    empty = tmp_path / "empty.tune.json"
    empty.write_text('{"format": "tilejit-tune-db/1", "entries": []}')
    monkeypatch.setenv("TILEJIT_TUNE_DB", str(empty))
    for arch in ("sm_121a", "sm_90a"):
        runtime = tj.Runtime("compile-only", arch=arch, cache_dir=str(tmp_path))
        assert runtime.arch == arch and not runtime.can_launch
        plan = tj.mamba2.describe_plan(rows=64, slots=64, runtime=runtime)
        assert plan == decode_plan(arch)
    assert decode_plan("sm_121a") != decode_plan("sm_90a")
    # A plan arch is the interpreter's: a runtime plans for its own.
    with pytest.raises(tj.ArgumentError, match="a runtime plans for its own arch"):
        tj.mamba2.describe_plan(rows=64, slots=64, runtime=runtime, plan_arch="sm_121a")
