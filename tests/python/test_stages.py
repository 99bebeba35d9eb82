"""Compiling for an arch and dumping every stage of the pipeline."""

import os

import pytest

import tilejit as tj
from test_builder import build_scale


def test_every_stage_in_pipeline_order():
    module = build_scale()
    result = module.compile("sm_90a")
    names = [name for name, _ in result.stages]
    assert names[0] == "tile" and names[-2:] == ["llvm", "ptx"]
    assert any(n.startswith("mlir.convert-tile-to-llvm") for n in names), names
    assert result.entry == "scale"
    assert ".target sm_90a" in result.ptx and ".entry scale" in result.ptx
    assert result.stages[-1][1] == result.ptx
    assert result.threads > 0
    assert [p[0] for p in result.params] == ["x", "out", "n", "scale"]
    assert set(result.timings_ms) == {"lower", "translate", "optimize", "codegen"}


@pytest.mark.parametrize("arch", ["sm_90", "sm_110a", "sm_121a"])
def test_each_arch_gets_its_target(arch):
    assert f".target {arch}" in build_scale().compile(arch, stages=False).ptx


def test_the_module_stays_tile_ir_and_names_python_lines():
    module = build_scale()
    before = module.tile_ir()
    module.compile("sm_90a", stages=False)
    assert module.tile_ir() == before and "tile.kernel" in before
    located = module.tile_ir(locations=True)
    assert "test_builder.py" in located  # build_scale's lines, not the C++ binding's
    assert "Bindings.cpp" not in located
    assert "loc(" not in module.canonical_ir and "tile.kernel" in module.canonical_ir


def test_registered_kernels_compile_for_sm_90a():
    for kernel in tj.kernels:
        result = kernel.build().compile("sm_90a", stages=False)
        assert ".target sm_90a" in result.ptx, kernel.name
