"""sanitize_kernels.py's recipes for the example kernels: vector_add, softmax,
cumsum, read_bytes and the two GEMMs, each at sizes that leave masked tails."""
import math

import numpy as np

from sanitize_builds import constants, randn_bf16, rng
from sanitize_support import (F32_EPS, bf16, bf16_bits, check, e4m3, e4m3_codes, from_bf16,
                              gemm_band, get, launch, poison, put, separates)


def vector_add(name):
    n = 5000  # 4 full programs of 1024 and a masked tail of 904
    x, y = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    out = poison(n, np.float32)
    launch(name, (math.ceil(n / 1024),), put(x), put(y), out, n)
    check(name, get(out), x + y, 0.0, 0.0, n)  # one f32 add: exact


def softmax(name):
    rows, cols = 7, 1000  # 1000 of 1024 columns
    x = (rng.standard_normal((rows, cols)) * 4).astype(np.float32)
    out = poison((rows, cols), np.float32)
    launch(name, (rows,), put(x), out, rows, cols)
    e = np.exp(x - x.max(1, keepdims=True).astype(np.float64))
    check(name, get(out), e / e.sum(1, keepdims=True), 1e-7, 1e-5, rows * cols)


def cumsum(name):
    rows, cols = 5, 100  # 100 of 128 columns
    x = rng.standard_normal((rows, cols)).astype(np.float32)
    out = poison((rows, cols), np.float32)
    launch(name, (rows,), put(x), out, rows, cols)
    check(name, get(out), np.cumsum(x.astype(np.float64), 1), 1e-5, 1e-5, rows * cols)


def read_bytes(name):
    per_program = constants(name)["block"] * constants(name)["steps"]
    n = 2 * per_program + 3616  # two full programs and a masked tail
    programs = math.ceil(n / per_program)
    x = rng.standard_normal(n).astype(np.float32)
    out = poison(programs, np.float32)
    launch(name, (programs,), put(x), out, n)
    parts = np.split(x.astype(np.float64), np.arange(1, programs) * per_program)
    want = np.array([p.sum() for p in parts])
    # f32 sums in any order: within (depth of the sum) * 2^-24 * sum|x|, far
    # below one dropped step of 2048 words.
    atol = np.array([32 * F32_EPS * np.abs(p).sum() for p in parts])
    check(name, get(out), want, atol, 0.0, programs)
    separates(f"{name}: dropped step", [p[:-2048].sum() for p in parts], want, atol, 0.0, 1.0)


def gemm_bf16(name):
    m, n, k = 200, constants(name)["n"], constants(name)["k"]  # a full 128-row tile, one of 72
    a, b = randn_bf16(m, k), randn_bf16(k, n)
    c = poison((m, n), np.uint16)
    launch(name, (math.ceil(m / 128), n // 128), put(bf16_bits(a)), put(bf16_bits(b)), c, m)
    want = bf16(a @ b)
    atol, rtol = gemm_band(1.0, a, b.T, wgmma=False)
    check(name, from_bf16(get(c)), want, atol, rtol, m * n)
    separates(f"{name}: K step of 32 dropped", bf16(a[:, 32:] @ b[32:]), want, atol, rtol, 0.5)


def gemm_e4m3(name):
    m, n, k, scale = 200, constants(name)["n"], constants(name)["k"], 0.01
    a, w = e4m3(rng.standard_normal((m, k)) * 2), e4m3(rng.standard_normal((n, k)) * 2)
    c = poison((m, n), np.uint16)
    launch(name, (math.ceil(m / 128), n // 128), put(e4m3_codes(a)), put(e4m3_codes(w)), c, m,
           scale)
    s = float(np.float32(scale))
    want = bf16(s * (a @ w.T))
    atol, rtol = gemm_band(s, a, w, wgmma=True)  # 128-row tiles: wgmma on sm_90a
    check(name, from_bf16(get(c)), want, atol, rtol, m * n)
    separates(f"{name}: K step of 32 dropped", bf16(s * (a[:, 32:] @ w[:, 32:].T)), want, atol,
              rtol, 0.5)
