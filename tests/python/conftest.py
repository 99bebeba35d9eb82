"""Shared by the tilejit Python tests: an f64 reference toolkit independent of
tilejit (bf16 rounding written here in numpy), and a seeded generator."""

import numpy as np
import pytest


def round_bf16(x):
    """float values -> the nearest bf16 (ties to even), as float64. Written from
    the bit layout, independently of tilejit's converters."""
    bits = np.asarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16
    return (rounded.astype(np.uint32) << 16).view(np.float32).astype(np.float64)


def bf16_bits(x):
    """The bf16 bit patterns (uint16) of values already representable in bf16."""
    return (np.asarray(x, dtype=np.float32).view(np.uint32) >> 16).astype(np.uint16)


def from_bf16_bits(bits):
    return (np.asarray(bits, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32) \
        .astype(np.float64)


def silu(v):
    return v / (1.0 + np.exp(-v))


def assert_close(got, want, atol, rtol, count):
    """|got - want| <= atol + rtol*|want| everywhere, over exactly `count` elements."""
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    assert got.size == want.size == count, (got.size, want.size, count)
    err = np.abs(got - want)
    bad = err > atol + rtol * np.abs(want)
    assert not bad.any(), (f"{bad.sum()} of {count} elements out of band; worst "
                           f"|err| {err.max():.3g} at {np.unravel_index(err.argmax(), err.shape)}")


@pytest.fixture
def rng():
    return np.random.default_rng(20261130)
