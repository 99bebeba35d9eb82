"""The JIT runtime without a GPU (compile-only): caches and load statistics."""

import pytest

import tilejit as tj
from test_builder import build_scale


def test_disk_cache_hit_in_a_second_runtime(tmp_path):
    module = build_scale()
    first = tj.Runtime("compile-only", arch="sm_90a", cache_dir=str(tmp_path))
    kernel = tj.device_kernel(module, first)
    kernel.compile()
    assert kernel.origin == "compiler" and ".target sm_90a" in kernel.ptx
    stats = first.stats()
    assert (stats.modules_compiled, stats.disk_hits, stats.bytes_uploaded) == (1, 0, 0)
    assert stats.compile_ms_by_stage and "compiled 1" in str(stats)

    second = tj.Runtime("compile-only", arch="sm_90a", cache_dir=str(tmp_path))
    again = tj.device_kernel(module, second)
    again.compile()
    assert again.origin == "disk" and again.disk_key == kernel.disk_key
    assert (second.stats().modules_compiled, second.stats().disk_hits) == (0, 1)
    assert again.ptx == kernel.ptx


def test_another_arch_is_another_key(tmp_path):
    module = build_scale()
    keys = set()
    for arch in ("sm_90", "sm_90a"):
        kernel = tj.Runtime("compile-only", arch=arch, cache_dir=str(tmp_path))._kernel(module)
        kernel.compile()
        keys.add(kernel.disk_key)
    assert len(keys) == 2


def test_compile_only_refuses_launches(monkeypatch):
    monkeypatch.delenv("TILEJIT_ARCH", raising=False)
    rt = tj.Runtime("compile-only", arch="sm_90a", disk_cache=False)
    assert not rt.can_launch and rt.arch == "sm_90a"
    with pytest.raises(tj.DeviceError, match="compile-only runtime cannot load or launch"):
        rt._kernel(build_scale()).prepare()
    with pytest.raises(tj.ArgumentError, match="needs an arch"):
        tj.Runtime("compile-only", disk_cache=False)
    with pytest.raises(tj.ArgumentError, match="unknown device 'tpu'"):
        tj.Runtime("tpu")


def test_an_explicit_arch_ignores_the_environment(monkeypatch):
    # A stale TILEJIT_ARCH broke every Runtime(arch=...) (issue #33).
    monkeypatch.setenv("TILEJIT_ARCH", "sm_110")
    rt = tj.Runtime("compile-only", arch="sm_121a", disk_cache=False)
    assert rt.arch == "sm_121a"
    with pytest.raises(tj.DeviceError, match="TILEJIT_ARCH: arch 'sm_110' is not supported"):
        tj.Runtime("compile-only", disk_cache=False)
    monkeypatch.setenv("TILEJIT_NO_CACHE", "maybe")
    with pytest.raises(tj.DeviceError, match="TILEJIT_NO_CACHE='maybe': expected 1, true"):
        tj.Runtime("compile-only", arch="sm_90a")
