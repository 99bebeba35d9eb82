#!/usr/bin/env python3
"""Launches every registered kernel once for compute-sanitizer (tests/e2e/sanitize_gpu.sh):
small sizes that still leave partial tiles (masked rows, columns, K steps and tails),
inputs made here with numpy, every output poisoned first and compared element by
element against an f64 reference on the CPU written from docs/numerics.md, so
that only our kernels run under the tool (cupy adds copies, no kernels). A kernel
without a recipe is a failure, so a newly registered kernel cannot go unchecked.

A kernel with variants is compiled once per build name, KERNEL@VARIANT, with the
constants of BUILDS (the projections' GEMV and tensor-core tiles, FP8 and bf16;
the model kernels at reduced geometry so that racecheck finishes).

Usage:
  sanitize_kernels.py --builds KERNEL...  one line per build: NAME KERNEL [k=v ...]
                                          (a kernel without a recipe: NAME = KERNEL)
  sanitize_kernels.py DIR NAME...         on the GPU: DIR holds NAME.ptx + NAME.json
  sanitize_kernels.py --interpreter NAME...  the same recipes on tilejit's CPU
                                          interpreter (the Python package), no GPU
  sanitize_kernels.py --planted DIR       a planted bug for memcheck to report:
                                          vector_add told n = 2^20 over 16-element buffers
Each recipe prints "RUN NAME" first: the tool's reports name only the kernel's
entry, which the variants of one kernel share.
"""
import math
import sys

import numpy as np

from sanitize_support import (BF16_ULP, F32_EPS, spans_of, Cuda, Interpreter, bf16,
                              bf16_bits, check, check_exact, e4m3, e4m3_codes, e4m3_order,
                              failures, from_bf16, get, launch, poison, put, quant_with_ties,
                              separates, silu, softplus, use)

# Reduced model geometry (docs/numerics.md#geometry scaled down; the kernels'
# structure is the same at any of these sizes).
IN_PROJ = {"hidden": 200, "inner": 128, "channels": 256, "heads": 8}  # 392 output columns
OUT_PROJ = {"inner": 384, "hidden": 200}
SSM = {"heads": 8, "head_dim": 32, "state": 32, "groups": 2}          # xBC: 256 + 2*2*32
SSD_DT_STRIDE, SSD_DT_COL = 648, 640  # dt read in place from a z | xBC | dt row (256 + 384 + 8)
CONV_PREFILL = {"inner": 128, "channels": 256, "heads": 8, "block_t": 32}
GEMM_NK = {"n": 512, "k": 512}

# name -> (registered kernel, constants passed as --set). Everything a recipe
# depends on is spelled out here, not taken from the registry's defaults.
BUILDS = {
    "vector_add": ("vector_add", {}),
    "softmax": ("softmax", {}),
    "cumsum": ("cumsum", {}),
    "read_bytes": ("read_bytes", {"block": 2048, "steps": 4}),
    "gemm_bf16": ("gemm_bf16", GEMM_NK),
    "gemm_e4m3": ("gemm_e4m3", GEMM_NK),
    "quantize_e4m3": ("quantize_e4m3", {"width": 2688, "block": 1024}),
    "gated_rmsnorm": ("gated_rmsnorm", {"width": 4096, "group_size": 512, "fp8_out": 0,
                                        "z_stride": 0}),
    # decode's FP8 layers: the norm quantizes for out_proj; prefill reads z in place.
    "gated_rmsnorm@fp8_out": ("gated_rmsnorm", {"width": 1024, "group_size": 256,
                                                "fp8_out": 1, "z_stride": 1100}),
    "conv_update": ("conv_update", {"channels": 6144, "block": 256}),
    # The decode plan's choices: GEMV below 16 rows, 16-row tensor-core tiles above.
    "in_proj_conv@gemv_fp8": ("in_proj_conv", {**IN_PROJ, "fp8": 1, "block_m": 1,
                                               "block_n": 16, "block_k": 128}),
    "in_proj_conv@gemv_bf16": ("in_proj_conv", {**IN_PROJ, "fp8": 0, "block_m": 1,
                                                "block_n": 8, "block_k": 128}),
    "in_proj_conv@tile_fp8": ("in_proj_conv", {**IN_PROJ, "fp8": 1, "block_m": 16,
                                               "block_n": 32, "block_k": 64}),
    "in_proj_conv@tile_bf16": ("in_proj_conv", {**IN_PROJ, "fp8": 0, "block_m": 16,
                                                "block_n": 32, "block_k": 64}),
    "out_proj@gemv_fp8": ("out_proj", {**OUT_PROJ, "fp8": 1, "block_m": 1, "block_n": 4,
                                       "block_k": 512}),
    "out_proj@gemv_bf16": ("out_proj", {**OUT_PROJ, "fp8": 0, "block_m": 1, "block_n": 4,
                                        "block_k": 256}),
    "out_proj@tile_fp8": ("out_proj", {**OUT_PROJ, "fp8": 1, "block_m": 16, "block_n": 64,
                                       "block_k": 64}),
    "out_proj@tile_bf16": ("out_proj", {**OUT_PROJ, "fp8": 0, "block_m": 16, "block_n": 64,
                                        "block_k": 64}),
    # The prefill plan's GEMM tile (both projections): 64 x 128, wgmma on sm_90a.
    "out_proj@wgmma_fp8": ("out_proj", {**OUT_PROJ, "fp8": 1, "block_m": 64, "block_n": 128,
                                        "block_k": 128, "warps": 4, "stages": 3}),
    "out_proj@wgmma_bf16": ("out_proj", {**OUT_PROJ, "fp8": 0, "block_m": 64, "block_n": 128,
                                         "block_k": 64, "warps": 4, "stages": 3}),
    "ssm_update": ("ssm_update", {**SSM, "block_p": 16, "warps": 4}),
    "ssd_prefill": ("ssd_prefill", {**SSM, "chunk": 32, "block_p": 16, "warps": 4,
                                    "dt_stride": SSD_DT_STRIDE, "dt_col": SSD_DT_COL}),
    # The prefill plan's span schedule: the three launches run together by each of
    # these builds' recipe (spans of two chunks, so sequences cross spans).
    "ssd_prefill@spans": ("ssd_prefill", {**SSM, "chunk": 32, "block_p": 16, "warps": 4,
                                          "dt_stride": SSD_DT_STRIDE, "dt_col": SSD_DT_COL,
                                          "span_states": 1}),
    "ssd_span_state": ("ssd_span_state", {**SSM, "chunk": 32, "block_p": 16, "warps": 4,
                                          "dt_stride": SSD_DT_STRIDE, "dt_col": SSD_DT_COL}),
    "ssd_state_pass": ("ssd_state_pass", {"heads": 8, "head_dim": 32, "state": 32,
                                          "block": 256, "warps": 4}),
    "conv_prefill": ("conv_prefill", {**CONV_PREFILL, "block_c": 1024, "rows_per_step": 16,
                                      "warps": 4}),
}

rng = np.random.default_rng(20261130)


def randn_bf16(*shape, scale=1.0):
    return bf16(rng.standard_normal(shape) * scale)


def constants(name):
    return BUILDS[name][1]


# ---- recipes: the examples

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


def gemm_band(scale, a, w, wgmma):
    """R1/R1b's band for y = bf16(s * sum_k a*w), as (atol, rtol): one bf16 ulp
    (the f32 sum in another order can move the rounding), f32 accumulation in any
    order (K * 2^-24 * s * sum|a*w|), and on sm_90a's e4m3 wgmma its weaker
    accumulation, s * 2^-8 * sum|a*w| (tests/python/test_gpu_vs_interpreter.py,
    docs/BENCHMARKS.md). mma.sync and the GEMV sum in f32."""
    absum = scale * (np.abs(a) @ np.abs(w).T)
    return 1e-6 + (2.0 ** -8 if wgmma else a.shape[1] * F32_EPS) * absum, BF16_ULP


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


# ---- recipes: the Mamba2 kernels

def quantize_e4m3(name):
    rows, width, scale = 3, constants(name)["width"], 0.011  # 2688: 2 x 1024 + 640
    x = randn_bf16(rows, width)
    x[0, :16] = bf16(np.linspace(-12, 12, 16))  # beyond 448 * s: saturates
    out = poison((rows, width), np.uint8)
    launch(name, (math.ceil(width / constants(name)["block"]), rows), put(bf16_bits(x)), out,
           rows, scale)
    got = e4m3_order(get(out))
    q, lo, hi = (e4m3_order(e4m3_codes(v)) for v in quant_with_ties(x / float(np.float32(scale))))
    # R1: the exact code, or its neighbour where x / s is within 2^-20 of a
    # rounding boundary (x * (1 / s) in f32 may land on either side). A
    # dropped or inverted scale, or a truncating conversion, misses by codes.
    ties = int((lo != hi).sum())
    bad = int((~((got == q) | ((got == lo) | (got == hi)))).sum())
    print(f"{'FAIL' if bad else 'PASS'} {name}: {got.size} codes of {rows * width}, {bad} "
          f"not R1's (ties allowing a neighbour: {ties})", flush=True)
    if bad or got.size != rows * width:
        failures.append(name)


def gated_rmsnorm(name):
    g = constants(name)
    rows, width, group, eps, scale = 3, g["width"], g["group_size"], 1e-5, 0.05
    z_stride = g["z_stride"] or width
    y, w = randn_bf16(rows, width), bf16(rng.random(width) + 0.5)
    z = randn_bf16(rows, z_stride)  # z in the first `width` columns of each row
    fp8 = g["fp8_out"] != 0
    out = poison((rows, width), np.uint8 if fp8 else np.uint16)
    args = [put(bf16_bits(y)), put(bf16_bits(z)), put(bf16_bits(w)), out, rows, eps]
    launch(name, (rows, width // group), *(args + [scale] if fp8 else args))

    def norm(z_rows, per_group=True):
        """R6 with both rounding points."""
        v = (y * silu(z_rows)).reshape(rows, width // group, group)
        axes = -1 if per_group else (-2, -1)
        r = 1.0 / np.sqrt((v ** 2).mean(axes, keepdims=True) + eps)
        return bf16(w * bf16(v * r).reshape(rows, width))

    want = norm(z[:, :width])
    if not fp8:
        # R6: rsqrt.approx and silu's exp before two bf16 roundings: one ulp.
        # A whole-row instead of per-group mean moves outputs by > 1e-2.
        check(name, from_bf16(get(out)), want, 0.0, BF16_ULP, rows * width)
        separates(f"{name}: whole-row norm", norm(z[:, :width], per_group=False), want, 0.0,
                  BF16_ULP, 0.5)
        return
    # e4m3(out / s): the bf16 out may be one ulp off R6's, so the code one step
    # off: a band of one code. It separates a dropped scale or a wrong z stride
    # (the norm's semantics are the bf16 variant's check).
    got = e4m3_order(get(out))
    want_codes = e4m3_order(e4m3_codes(e4m3(want / float(np.float32(scale)))))
    bad = int((np.abs(got - want_codes) > 1).sum())
    print(f"{'FAIL' if bad else 'PASS'} {name}: {got.size} codes of {rows * width}, {bad} more "
          f"than one code off", flush=True)
    if bad or got.size != rows * width:
        failures.append(name)
    wrong_z = norm(z.reshape(-1)[:rows * width].reshape(rows, width))
    wrong_z = e4m3_order(e4m3_codes(e4m3(wrong_z / float(np.float32(scale)))))
    separates(f"{name}: z read at stride width", wrong_z, want_codes, 1, 0.0, 0.3)


def conv_update_ref(state, xt, w, bias):
    """R3d for one row: (bf16 out, new taps) from taps [C, 3] and xt [C] (f64)."""
    pre = bias + (w[:, :3] * state).sum(1) + w[:, 3] * xt
    return bf16(silu(pre)), np.concatenate([state[:, 1:], xt[:, None]], 1)


def conv_update(name):
    batch, channels, slots = 3, constants(name)["channels"], 5
    idx = np.array([2, -1, 4], np.int32)  # a padding row
    xt, state = randn_bf16(batch, channels), randn_bf16(slots, channels, 3)
    w, bias = randn_bf16(channels, 4, scale=0.5), randn_bf16(channels, scale=0.1)
    state_buf, out = put(bf16_bits(state)), poison((batch, channels), np.uint16)
    launch(name, (batch, math.ceil(channels / constants(name)["block"])), put(bf16_bits(xt)),
           state_buf, put(idx), put(bf16_bits(w)), put(bf16_bits(bias)), out)
    want, want_state = np.zeros((batch, channels)), state.copy()
    for b, s in enumerate(idx):
        if s >= 0:
            want[b], want_state[s] = conv_update_ref(state[s], xt[b], w, bias)
    check(f"{name}.out", from_bf16(get(out)), want, 1e-6, BF16_ULP, batch * channels)
    check_exact(f"{name}.state", get(state_buf), bf16_bits(want_state))
    separates(f"{name}: taps newest first", conv_update_ref(state[2][:, ::-1], xt[0], w, bias)[0],
              want[0], 1e-6, BF16_ULP, 0.5)


def distinct_slots(rows, num_slots, padding):
    """Distinct slot per row (R8: duplicates are an error), -1 at `padding`."""
    slots = rng.permutation(num_slots)[:rows].astype(np.int32)
    slots[list(padding)] = -1
    return slots


def in_proj_conv(name):
    g = constants(name)
    hidden, inner, channels, heads = g["hidden"], g["inner"], g["channels"], g["heads"]
    out_cols, fp8, bm, bn = inner + channels + heads, g["fp8"] != 0, g["block_m"], g["block_n"]
    # GEMV: 3 rows; tiles: 20 rows = a full 16-row tile and one of 4. Columns:
    # 392 leave a partial last column tile; K = 200 a partial last K step.
    rows = 3 if bm == 1 else 20
    num_slots = rows + 2
    slots = distinct_slots(rows, num_slots, [1] if bm == 1 else [1, 17])
    live = slots >= 0
    x = randn_bf16(rows, hidden)
    s_x, s_w = 0.0213, 0.01  # x / s_x rarely near an e4m3 rounding boundary: a tight band
    if fp8:
        w = e4m3(rng.standard_normal((out_cols, hidden)) * 2)
        w_buf, scales = put(e4m3_codes(w)), [s_x, float(np.float32(s_x * s_w))]
    else:
        w = randn_bf16(out_cols, hidden, scale=0.05)
        w_buf, scales = put(bf16_bits(w)), []
    state = randn_bf16(num_slots, channels, 3, scale=0.5)
    cw, cb = randn_bf16(channels, 4, scale=0.5), randn_bf16(channels, scale=0.1)
    state_buf = put(bf16_bits(state))
    z, xbc, dt = (poison((rows, c), np.uint16) for c in (inner, channels, heads))
    launch(name, (math.ceil(out_cols / bn), math.ceil(rows / bm)), put(bf16_bits(x)), w_buf,
           put(slots), state_buf, put(bf16_bits(cw)), put(bf16_bits(cb)), z, xbc, dt, rows,
           *scales)

    # R1 / R1b: the projection, [rows, out_cols].
    if fp8:
        s = scales[1]
        a, a_lo, a_hi = quant_with_ties(x / float(np.float32(s_x)))
        atol, rtol = gemm_band(s, a, w, wgmma=False)
        atol = atol + s * (np.abs(a_hi - a_lo) @ np.abs(w).T)  # R1's one code at ties
        print(f"     {name}: {int((a_hi != a_lo).sum())} activations at an e4m3 tie")
        proj, unquantized = bf16(s * (a @ w.T)), bf16(s * ((x / s_x) @ w.T))
    else:
        a, s = x, 1.0
        atol, rtol = gemm_band(1.0, x, w, wgmma=False)
        proj, unquantized = bf16(x @ w.T), None
    atol = np.where(live[:, None], atol, 0.0)  # padding rows: exact zeros
    proj = np.where(live[:, None], proj, 0.0)
    cols = {"z": slice(0, inner), "xbc": slice(inner, inner + channels),
            "dt": slice(inner + channels, out_cols)}
    check(f"{name}.z", from_bf16(get(z)), proj[:, cols["z"]], atol[:, cols["z"]], rtol,
          rows * inner)
    check(f"{name}.dt", from_bf16(get(dt)), proj[:, cols["dt"]], atol[:, cols["dt"]], rtol,
          rows * heads)
    separates(f"{name}: K step of 8 dropped",
              bf16(s * (a[:, :-8] @ w[:, :-8].T))[live], proj[live], atol[live], rtol, 0.5)
    if unquantized is not None:  # R1: W8A16 is not the op
        separates(f"{name}: activation not quantized (W8A16)", unquantized[live], proj[live],
                  atol[live], rtol, 0.5)

    # R3d over the xBC columns (R8: taps shift in live slots only). The new tap
    # is the projection's bf16 output (checked in the projection's band); the
    # conv output is checked against R3d of that stored tap, in R3d's band.
    new_state = from_bf16(get(state_buf))
    want_state, want_out = state.copy(), np.zeros((rows, channels))
    xt_kernel = np.zeros((rows, channels))
    for r in np.flatnonzero(live):
        xt_kernel[r] = new_state[slots[r], :, 2]
        want_out[r], want_state[slots[r]] = conv_update_ref(state[slots[r]], xt_kernel[r], cw, cb)
    live_slots = slots[live]
    check(f"{name}.conv_state.new_tap", new_state[live_slots, :, 2],
          proj[live][:, cols["xbc"]], atol[live][:, cols["xbc"]], rtol, live.sum() * channels)
    check_exact(f"{name}.conv_state.shifted", bf16_bits(new_state[live_slots, :, :2]),
                bf16_bits(want_state[live_slots, :, :2]))
    others = np.setdiff1d(np.arange(num_slots), live_slots)
    check_exact(f"{name}.conv_state.other_slots", bf16_bits(new_state[others]),
                bf16_bits(state[others]))
    check(f"{name}.xbc", from_bf16(get(xbc)), want_out, np.where(live[:, None], 1e-6, 0.0),
          BF16_ULP, rows * channels)


def out_proj(name):
    g = constants(name)
    inner, hidden, fp8, bm, bn = g["inner"], g["hidden"], g["fp8"] != 0, g["block_m"], g["block_n"]
    # GEMV 3 rows; 16-row tiles 20 = 16 + 4; 64-row tiles 100 = 64 + 36. Columns:
    # 200 leave partial column tiles of 64 and 128; K = 384 a partial GEMV K step.
    rows = {1: 3, 16: 20}.get(bm, 100)
    wgmma = fp8 and bm >= 64  # e4m3 wgmma needs 64-row tiles (sm_90a)
    if fp8:
        a = e4m3(rng.standard_normal((rows, inner)) * 4)
        w = e4m3(rng.standard_normal((hidden, inner)))
        s = float(np.float32(2e-3))
        bufs, scales = [put(e4m3_codes(a)), put(e4m3_codes(w))], [s]
    else:
        a, w, s = randn_bf16(rows, inner), randn_bf16(hidden, inner, scale=0.05), 1.0
        bufs, scales = [put(bf16_bits(a)), put(bf16_bits(w))], []
    out = poison((rows, hidden), np.uint16)
    launch(name, (math.ceil(hidden / bn), math.ceil(rows / bm)), *bufs, out, rows, *scales)
    want = bf16(s * (a @ w.T))
    atol, rtol = gemm_band(s, a, w, wgmma)
    check(name, from_bf16(get(out)), want, atol, rtol, rows * hidden)
    separates(f"{name}: K step of 32 dropped", bf16(s * (a[:, 32:] @ w[:, 32:].T)), want, atol,
              rtol, 0.5)


def dt_params(heads):
    """R4's inputs: A_log, dt_bias (f32) and the clamp, chosen so that dt' hits
    the upper clamp on some tokens and the decay stays moderate (a carried
    state must still be visible a few tokens later)."""
    a_log = np.log(rng.uniform(1, 4, heads)).astype(np.float32)
    dt_bias = rng.uniform(-1.5, 0.5, heads).astype(np.float32)
    return a_log, dt_bias, rng.standard_normal(heads).astype(np.float32), 0.0, 1.0


def dt_prime(dt_raw, dt_bias, dt_min, dt_max):
    return np.clip(softplus(dt_raw + dt_bias.astype(np.float64)), dt_min, dt_max)


def ssm_update(name):
    g = constants(name)
    heads, p, n, groups = g["heads"], g["head_dim"], g["state"], g["groups"]
    inner, channels, rows, num_slots = heads * p, heads * p + 2 * groups * n, 3, 5
    slots = np.array([3, -1, 0], np.int32)  # a padding row
    xbc, dt = randn_bf16(rows, channels, scale=0.5), randn_bf16(rows, heads, scale=0.5)
    a_log, dt_bias, d, dt_min, dt_max = dt_params(heads)
    state = rng.standard_normal((num_slots, heads, p, n)).astype(np.float32)
    state_buf, y = put(state), poison((rows, inner), np.uint16)
    launch(name, (math.ceil(p / g["block_p"]), heads, rows), put(bf16_bits(xbc)),
           put(bf16_bits(dt)), put(a_log), put(dt_bias), put(d), put(slots), state_buf, y,
           dt_min, dt_max)
    # R5d: one step of R5 per live row; y from the un-rounded new state.
    want_state, want_y = state.astype(np.float64), np.zeros((rows, heads, p))
    zero_carry = want_state.copy()
    for r in np.flatnonzero(slots >= 0):
        x = xbc[r, :inner].reshape(heads, p)
        bc = xbc[r, inner:].reshape(2, groups, n)
        dtp = dt_prime(dt[r], dt_bias, dt_min, dt_max)
        decay = np.exp(-np.exp(a_log.astype(np.float64)) * dtp)
        b, c = (np.repeat(m, heads // groups, 0) for m in bc)  # head h uses group h // (H/G)
        inc = dtp[:, None, None] * x[:, :, None] * b[:, None, :]
        want_state[slots[r]] = decay[:, None, None] * state[slots[r]] + inc
        zero_carry[slots[r]] = inc
        want_y[r] = (want_state[slots[r]] * c[:, None, :]).sum(-1) + d[:, None] * x
    live = slots[slots >= 0]
    got_state = get(state_buf)
    # R5d: f32 atol 1e-3 / rtol 3e-4; y adds one bf16 ulp.
    check(f"{name}.state", got_state[live], want_state[live], 1e-3, 3e-4, live.size * heads * p * n)
    separates(f"{name}.state: dropped carry", zero_carry[live], want_state[live], 1e-3, 3e-4, 0.5)
    others = np.setdiff1d(np.arange(num_slots), live)
    check_exact(f"{name}.state.other_slots", got_state[others], state[others])
    check(f"{name}.y", from_bf16(get(y)), want_y.reshape(rows, inner),
          np.where(slots[:, None] >= 0, 1e-3, 0.0), BF16_ULP, rows * inner)


def varlen_batch(lengths, chunk):
    """R9: cu_seqlens and chunks of <= `chunk` tokens tiling each sequence from
    its start (chunk_seq, chunk_begin, chunk_end)."""
    cu = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
    seq, begin, end = [], [], []
    for i in range(len(lengths)):
        for b in range(cu[i], cu[i + 1], chunk):
            seq.append(i), begin.append(b), end.append(min(b + chunk, cu[i + 1]))
    return cu, *(np.array(v, np.int32) for v in (seq, begin, end))


# A mixed batch: continued and fresh sequences, a padding sequence, sequences
# shorter than a chunk and than the conv's 3 taps, one over two chunks, one a
# chunk and a token; (length, slot, continue from the slot).
PREFILL_BATCH = [(70, 4, 1), (2, 0, 0), (5, -1, 1), (33, 6, 0), (1, 2, 1), (20, 1, 0)]
PREFILL_SLOTS = 7


def prefill_batch(chunk):
    lengths, slots, init = (np.array(v, np.int32) for v in zip(*PREFILL_BATCH))
    return (lengths, slots, init) + varlen_batch(lengths, chunk)


def conv_prefill(name):
    g = constants(name)
    inner, channels, heads = g["inner"], g["channels"], g["heads"]
    lengths, slots, init, cu, cseq, cbegin, cend = prefill_batch(g["block_t"])
    tokens, chunks = int(cu[-1]), len(cseq)
    zxbcdt = randn_bf16(tokens, inner + channels + heads)
    w, bias = randn_bf16(channels, 4, scale=0.5), randn_bf16(channels, scale=0.1)
    page = randn_bf16(PREFILL_SLOTS, channels, 3)
    page_buf, out = put(bf16_bits(page)), poison((tokens, channels), np.uint16)
    launch(name, (math.ceil(channels / g["block_c"]), chunks), put(bf16_bits(zxbcdt)),
           put(bf16_bits(w)), put(bf16_bits(bias)), put(cu), put(slots), put(init), put(cseq),
           put(cbegin), put(cend), page_buf, out, PREFILL_SLOTS)

    def reference(carry):
        """R3 per sequence: u(-3..-1) from the slot (continued) or zeros."""
        want, state = np.zeros((tokens, channels)), page.copy()
        for i, (t0, t1) in enumerate(zip(cu[:-1], cu[1:])):
            if slots[i] < 0:
                continue
            past = page[slots[i]].T if (init[i] and carry) else np.zeros((3, channels))
            u = np.concatenate([past, zxbcdt[t0:t1, inner:inner + channels]])
            for t in range(t1 - t0):
                want[t0 + t] = bf16(silu(bias + (w.T * u[t:t + 4]).sum(0)))
            state[slots[i]] = u[-3:].T
        return want, state

    want, want_state = reference(carry=True)
    live_rows = np.repeat(slots >= 0, lengths)
    atol = np.where(live_rows[:, None], 1e-6, 0.0)  # padding rows: exact zeros
    check(f"{name}.out", from_bf16(get(out)), want, atol, BF16_ULP, tokens * channels)
    # The new taps are copies of inputs; the other slots stay untouched.
    check_exact(f"{name}.conv_state", get(page_buf), bf16_bits(want_state))
    # A dropped carry changes the first 3 tokens of each continued sequence.
    dropped, _ = reference(carry=False)
    head = np.concatenate([np.arange(t0, min(t0 + 3, t1))
                           for i, (t0, t1) in enumerate(zip(cu[:-1], cu[1:]))
                           if init[i] and slots[i] >= 0])
    separates(f"{name}.out: dropped carry", dropped[head], want[head], atol[head], BF16_ULP, 0.5)


SPAN_CHUNKS = 2  # spans of two chunks: sequences cross spans, spans hold several


def ssd_spans(name):
    ssd_prefill("ssd_prefill@spans")


def ssd_prefill(name):
    g = constants(name)
    heads, p, n, groups, q = g["heads"], g["head_dim"], g["state"], g["groups"], g["chunk"]
    inner, channels = heads * p, heads * p + 2 * groups * n
    lengths, slots, init, cu, cseq, cbegin, cend = prefill_batch(q)
    tokens, chunks = int(cu[-1]), len(cseq)
    xbc = randn_bf16(tokens, channels, scale=0.5)
    zxbcdt = randn_bf16(tokens, g["dt_stride"], scale=0.5)  # dt at dt_col + h; the rest unread
    dt = zxbcdt[:, g["dt_col"]:g["dt_col"] + heads]
    a_log, dt_bias, d, dt_min, dt_max = dt_params(heads)
    page = rng.standard_normal((PREFILL_SLOTS, heads, p, n)).astype(np.float32)
    page_buf, y = put(page), poison((tokens, inner), np.uint16)
    args = (put(bf16_bits(xbc)), put(bf16_bits(zxbcdt)), put(a_log), put(dt_bias), put(d),
            put(cu), put(slots), put(init), put(cseq), put(cbegin), put(cend), page_buf, y,
            chunks, dt_min, dt_max)
    if not g.get("span_states"):
        launch(name, (math.ceil(p / g["block_p"]), heads), *args)
    else:
        # ssd_span_state, ssd_state_pass, then this build over the spans.
        first, sslot, flags = spans_of(cu, slots, init, q, SPAN_CHUNKS)
        spans = len(sslot)
        states = poison((spans, heads, p, n), np.float32)
        tail = poison((spans, heads, p, n), np.float32)
        decay = poison((spans * heads,), np.float32)
        span_chunk = put(first)
        launch("ssd_span_state", (math.ceil(p / constants("ssd_span_state")["block_p"]), heads,
                                  spans),
               args[0], args[1], args[2], args[3], args[5], args[8], span_chunk, args[9],
               args[10], states, decay, dt_min, dt_max)
        launch("ssd_state_pass", (p * n // constants("ssd_state_pass")["block"], heads),
               put(sslot), put(flags), decay, states, tail, page_buf, spans)
        launch(name, (math.ceil(p / g["block_p"]), heads, spans), *args, span_chunk, states,
               tail)

    def reference(carry):
        """R5, sequentially in f64, per sequence from the slot or zeros."""
        want_y, state = np.zeros((tokens, heads, p)), page.astype(np.float64)
        a = -np.exp(a_log.astype(np.float64))
        for i, (t0, t1) in enumerate(zip(cu[:-1], cu[1:])):
            if slots[i] < 0:
                continue
            s = state[slots[i]].copy() if (init[i] and carry) else np.zeros((heads, p, n))
            for t in range(t0, t1):
                x = xbc[t, :inner].reshape(heads, p)
                b, c = (np.repeat(m, heads // groups, 0)
                        for m in xbc[t, inner:].reshape(2, groups, n))
                dtp = dt_prime(dt[t], dt_bias, dt_min, dt_max)
                s = np.exp(a * dtp)[:, None, None] * s + \
                    dtp[:, None, None] * x[:, :, None] * b[:, None, :]
                want_y[t] = (s * c[:, None, :]).sum(-1) + d[:, None] * x
            state[slots[i]] = s
        return want_y.reshape(tokens, inner), state

    want_y, want_state = reference(carry=True)
    live_rows = np.repeat(slots >= 0, lengths)
    live = slots[slots >= 0]
    # R5p's bands vs the sequential f64 R5 (<= 256 tokens): bf16 y 5e-2 / 5e-2,
    # f32 state 8e-3 / 5e-3; padding rows exact zeros.
    check(f"{name}.y", from_bf16(get(y)), want_y, np.where(live_rows[:, None], 5e-2, 0.0), 5e-2,
          tokens * inner)
    got_state = get(page_buf)
    check(f"{name}.state", got_state[live], want_state[live], 8e-3, 5e-3,
          live.size * heads * p * n)
    others = np.setdiff1d(np.arange(PREFILL_SLOTS), live)
    check_exact(f"{name}.state.other_slots", got_state[others], page[others])
    # The zeroed twin: a dropped carry, visible in the final state of the
    # one-token continued sequence and in the first tokens' y.
    dropped_y, dropped_state = reference(carry=False)
    one = slots[[i for i in range(len(lengths)) if lengths[i] == 1 and init[i]]]
    separates(f"{name}.state: dropped carry", dropped_state[one], want_state[one], 8e-3, 5e-3,
              0.5)
    first = cu[:-1][(init != 0) & (slots >= 0)]
    separates(f"{name}.y: dropped carry", dropped_y[first], want_y[first], 5e-2, 5e-2, 0.5)


RECIPES = {
    "vector_add": vector_add, "softmax": softmax, "cumsum": cumsum, "read_bytes": read_bytes,
    "gemm_bf16": gemm_bf16, "gemm_e4m3": gemm_e4m3, "quantize_e4m3": quantize_e4m3,
    "gated_rmsnorm": gated_rmsnorm, "conv_update": conv_update, "in_proj_conv": in_proj_conv,
    "out_proj": out_proj, "ssm_update": ssm_update, "ssd_prefill": ssd_prefill,
    "ssd_prefill@spans": ssd_spans, "ssd_span_state": ssd_spans, "ssd_state_pass": ssd_spans,
    "conv_prefill": conv_prefill,
}


def print_builds(kernels):
    for kernel in kernels:
        names = [name for name, (k, _) in BUILDS.items() if k == kernel]
        for name in names or [kernel]:  # no recipe: compiled as is, fails when run
            sets = " ".join(f"{k}={v}" for k, v in BUILDS[name][1].items()) if names else ""
            print(f"{name} {kernel} {sets}".rstrip())


def main(argv):
    if argv[0] == "--builds":
        print_builds(argv[1:])
        return 0
    if argv[0] == "--planted":
        use(Cuda(argv[1]))
        x, y, out = (put(np.ones(16, np.float32)) for _ in range(3))
        n = 1 << 20  # megabytes past the ends of the buffers
        print("PLANTED vector_add: n = 2^20 over buffers of 16", flush=True)
        launch("vector_add", (n // 1024,), x, y, out, n)
        return 0
    use(Interpreter(BUILDS) if argv[0] == "--interpreter" else Cuda(argv[0]))
    names = argv[1:]
    for name in names:
        print(f"RUN {name}", flush=True)
        recipe = RECIPES.get(name) or RECIPES.get(BUILDS.get(name, (None,))[0])
        if recipe is None:
            print(f"FAIL {name}: no sanitizer recipe in sanitize_kernels.py", flush=True)
            failures.append(name)
            continue
        recipe(name)
    failed = {f.split(".")[0].split(":")[0] for f in failures}
    print(f"{len(names) - len(failed)} passed, {len(failed)} failed"
          + (f": {' '.join(sorted(failed))}" if failed else ""))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
