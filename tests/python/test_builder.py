"""Kernels written in Python with the builder, run on the interpreter, checked
against numpy f64 references."""

import numpy as np

import tilejit as tj
from conftest import assert_close, bf16_bits, from_bf16_bits, round_bf16


def build_scale(block=128):
    k = tj.Kernel("scale")
    x, out = k.ptr_param("x", tj.f32), k.ptr_param("out", tj.bf16)
    n, scale = k.scalar_param("n", tj.i32), k.scalar_param("scale", tj.f32)
    offs = tj.program_id(0) * block + tj.arange(0, block)
    mask = offs < n
    tj.store(out + offs, (tj.load(x + offs, mask, 0.0) * scale).to(tj.bf16), mask)
    return k.finish()


def test_masked_scale_rounds_to_bf16_and_leaves_the_tail(rng):
    module = build_scale()
    assert [(p.name, p.pointer, p.dtype) for p in module.params] == [
        ("x", True, tj.f32), ("out", True, tj.bf16), ("n", False, tj.i32),
        ("scale", False, tj.f32)]
    n = 300  # not a multiple of the block: the mask must hold back the tail
    x = rng.standard_normal(384).astype(np.float32)
    out = np.full(384, 0x7FC0, np.uint16)  # poison: a bf16 NaN
    module.run((3,), x, out, n, 1.5)
    # The kernel's f32 product (one IEEE rounding, as numpy's f32 multiply), then bf16.
    want = round_bf16(x[:n] * np.float32(1.5))
    assert_close(from_bf16_bits(out[:n]), want, 0, 0, n)
    assert (out[n:] == 0x7FC0).all(), "masked elements were written"


def test_row_softmax_with_reductions(rng):
    rows, width = 5, 64
    k = tj.Kernel("softmax")
    x, y = k.ptr_param("x", tj.f32), k.ptr_param("y", tj.f32)
    row = tj.program_id(0)
    view_x = tj.make_view(x, [rows, width], [width, 1])
    view_y = tj.make_view(y, [rows, width], [width, 1])
    t = tj.load(view_x, [row, 0], [1, width])
    e = tj.exp(t - tj.expand_dims(tj.max(t, 1), 1))
    tj.store(view_y, [row, 0], e / tj.expand_dims(tj.sum(e, 1), 1))
    module = k.finish()
    xs = (rng.standard_normal((rows, width)) * 4).astype(np.float32)
    ys = np.full_like(xs, np.nan)
    module.run(rows, xs, ys)
    e = np.exp(xs - xs.max(1, keepdims=True))
    want = e / e.sum(1, keepdims=True)
    # f32 exp within 0.5 ulp and a 64-term f32 sum: ~1e-6 relative; a dropped
    # max subtraction still matches, a wrong axis does not (rows sum to 1).
    assert_close(ys, want, 1e-7, 1e-5, rows * width)
    assert_close(ys.sum(1), np.ones(rows), 1e-5, 0, rows)


def test_for_range_carries_an_accumulator_and_views_pad(rng):
    # out[i] = sum over j < n of x[j, i], in chunks of 8 rows; rows past n pad 0.
    width, chunk, n = 32, 8, 21
    k = tj.Kernel("column_sum")
    x, out = k.ptr_param("x", tj.f32), k.ptr_param("out", tj.f32)
    rows = k.scalar_param("rows", tj.i32)
    view = tj.make_view(x, [rows, width], [width, 1])
    acc, = tj.for_range(0, rows, chunk, [tj.zeros([width], tj.f32)],
                        lambda j, carried: [carried[0] + tj.sum(
                            tj.load(view, [j, 0], [chunk, width], padding=0.0), 0)])
    tj.store(tj.make_view(out, [width], [1]), [0], acc)
    module = k.finish()
    xs = rng.standard_normal((n + 3, width)).astype(np.float32)
    xs[n:] = 1e6  # beyond `rows`: must be padded, not read
    got = np.zeros(width, np.float32)
    module.run(1, xs, got, n)
    assert_close(got, xs[:n].astype(np.float64).sum(0), 1e-5, 1e-5, width)


def test_if_then_and_where(rng):
    k = tj.Kernel("clamp_first")
    x = k.ptr_param("x", tj.f32)
    offs = tj.arange(0, 16)
    t = tj.load(x + offs)
    tj.if_then(tj.program_id(0) == 0,
               lambda: tj.store(x + offs, tj.where(t < 0.0, 0.0, t)))
    module = k.finish()
    xs = rng.standard_normal(16).astype(np.float32)
    before = xs.copy()
    module.run(1, xs)
    assert (xs == np.maximum(before, 0)).all()


def test_dot_bf16_accumulates_in_f32(rng):
    m, kk, n = 16, 32, 16
    k = tj.Kernel("gemm")
    a, b, c = (k.ptr_param(name, t) for name, t in (("a", tj.bf16), ("b", tj.bf16),
                                                     ("c", tj.f32)))
    ta = tj.load(tj.make_view(a, [m, kk], [kk, 1]), [0, 0], [m, kk])
    tb = tj.load(tj.make_view(b, [kk, n], [n, 1]), [0, 0], [kk, n])
    tj.store(tj.make_view(c, [m, n], [n, 1]), [0, 0], tj.dot(ta, tb, tj.zeros([m, n], tj.f32)))
    module = k.finish()
    fa, fb = round_bf16(rng.standard_normal((m, kk))), round_bf16(rng.standard_normal((kk, n)))
    out = np.zeros((m, n), np.float32)
    module.run(1, bf16_bits(fa), bf16_bits(fb), out)
    # bf16 products are exact in f32, so the only error is the f32 summation:
    # at most kk * 2^-24 * sum|a||b| per element (a bf16 accumulator, 2^-8, is not).
    bound = kk * 2.0**-24 * (np.abs(fa) @ np.abs(fb))
    assert out.size == m * n and (np.abs(out - fa @ fb) <= bound).all()


def test_cumsum_and_math(rng):
    k = tj.Kernel("scan")
    x, y = k.ptr_param("x", tj.f32), k.ptr_param("y", tj.f32)
    offs = tj.arange(0, 64)
    t = tj.load(x + offs)
    tj.store(y + offs, tj.cumsum(tj.softplus(t), 0) + tj.sqrt(tj.abs(t)))
    module = k.finish()
    xs = rng.standard_normal(64).astype(np.float32) * 3
    ys = np.zeros(64, np.float32)
    module.run(1, xs, ys)
    v = xs.astype(np.float64)
    want = np.cumsum(np.where(v > 20, v, np.log1p(np.exp(v)))) + np.sqrt(np.abs(v))
    assert_close(ys, want, 1e-5, 1e-5, 64)


def test_bit_ops_xor_shifts_and_bitcast(rng):
    # A hash of f32 bit patterns: y = shr(bits ^ (i << 7), 3), stored as i32.
    k = tj.Kernel("hash")
    x, y = k.ptr_param("x", tj.f32), k.ptr_param("y", tj.i32)
    offs = tj.arange(0, 64)
    bits = tj.bitcast(tj.load(x + offs), tj.i32)
    mixed = bits ^ (offs << 7)
    tj.store(y + offs, tj.shr(mixed, 3) ^ 0x5A5A)
    module = k.finish()
    xs = rng.standard_normal(64).astype(np.float32)  # half negative: the sign bit is set
    ys = np.zeros(64, np.int32)
    module.run(1, xs, ys)
    u = xs.view(np.uint32) ^ (np.arange(64, dtype=np.uint32) << 7)
    want = ((u >> 3) ^ 0x5A5A).view(np.int32)
    assert (ys == want).all()
    # shr is logical: an arithmetic shift would keep the sign bits of the
    # negative patterns, which these inputs have.
    arithmetic = (u.view(np.int32) >> 3) ^ 0x5A5A
    assert (ys != arithmetic).sum() == (xs < 0).sum() > 0


def test_values_report_shape_and_dtype():
    k = tj.Kernel("shapes")
    x = k.ptr_param("x", tj.f16)
    t = tj.expand_dims(tj.arange(0, 8), 1)
    assert (t.shape, t.dtype, t.is_tile, x.is_pointer) == ((8, 1), tj.i32, True, True)
    assert tj.broadcast_to(t, [8, 4]).shape == (8, 4)
    assert tj.transpose(tj.broadcast_to(t, [8, 4]), [1, 0]).shape == (4, 8)
    assert tj.reshape(tj.broadcast_to(t, [8, 4]), [32]).shape == (32,)
    assert repr(t) == "Value(tile<8x1xi32>)"
    tj.store(x + tj.arange(0, 8), tj.full([8], 1.0, tj.f16))
    k.finish()


def build_fma(n=128):
    """fused = fma(a, b, c) and split = a * b + c, elementwise over n floats."""
    k = tj.Kernel("fma")
    a, b, c = (k.ptr_param(name, tj.f32) for name in "abc")
    fused, split = k.ptr_param("fused", tj.f32), k.ptr_param("split", tj.f32)
    offs = tj.arange(0, n)
    x, y, z = tj.load(a + offs), tj.load(b + offs), tj.load(c + offs)
    tj.store(fused + offs, tj.fma(x, y, z))
    tj.store(split + offs, x * y + z)
    return k.finish()


def fma_inputs(rng, n=128):
    """Random f32 operands; element 0 is (1 + 2^-12)^2 - 1 = 2^-11 + 2^-24 exactly,
    whose rounded product loses the 2^-24 (a tie to even)."""
    xs, ys, zs = (rng.standard_normal(n).astype(np.float32) for _ in range(3))
    xs[0] = ys[0] = np.float32(1 + 2.0 ** -12)
    zs[0] = -1.0
    return xs, ys, zs


def test_fma_rounds_once(rng):
    """fma(a, b, c) rounds a*b + c once; `a * b + c` rounds the product first,
    so the two spellings differ on element 0 by 2^-24."""
    n = 128
    xs, ys, zs = fma_inputs(rng, n)
    out_fused, out_split = np.zeros(n, np.float32), np.zeros(n, np.float32)
    build_fma(n).run((1,), xs, ys, zs, out_fused, out_split)
    # The f32 product is exact in f64; the f64 sum rounded to f32 is the fused
    # result here (a double rounding could differ by one ulp; none does at this seed).
    exact = (xs.astype(np.float64) * ys + zs).astype(np.float32)
    assert out_fused[0] == np.float32(2.0 ** -11 + 2.0 ** -24)
    assert out_split[0] == np.float32(2.0 ** -11)
    assert_close(out_fused, exact, 0, 0, n)
    assert_close(out_split, (xs * ys + zs), 0, 0, n)


def test_dependent_launch_reads_weights_before_the_wait(rng):
    # A kernel that may start while the one before it drains: the invariant
    # weight is prefetched and read before the wait, the activation after.
    k = tj.Kernel("dependent_scale")
    w, x, out = (k.ptr_param("w", tj.f32), k.ptr_param("x", tj.f32),
                 k.ptr_param("out", tj.f32))
    k.mark_invariant(w)
    offs = tj.arange(0, 64)
    tj.prefetch_l2(w, 256)
    wt = tj.load(w + offs)
    tj.wait_for_predecessors()
    tj.launch_dependents()
    tj.store(out + offs, wt * tj.load(x + offs))
    module = k.finish()
    ir = module.tile_ir()
    assert "tile.grid_dep_wait" in ir and "tile.invariant" in ir
    wv, xv = (rng.standard_normal(64).astype(np.float32) for _ in range(2))
    out_v = np.zeros(64, np.float32)
    module.run((1,), wv, xv, out_v)
    assert (out_v == wv * xv).all()


def test_dependent_launch_refuses_an_early_read():
    k = tj.Kernel("early_read")
    x, out = k.ptr_param("x", tj.f32), k.ptr_param("out", tj.f32)
    offs = tj.arange(0, 64)
    xt = tj.load(x + offs)
    tj.wait_for_predecessors()
    tj.store(out + offs, xt)
    try:
        k.finish()
    except tj.BuildError as e:
        assert "through parameter 'x', which is not marked tile.invariant" in str(e)
        assert "test_builder.py" in str(e)
    else:
        raise AssertionError("a read before the wait was accepted")
