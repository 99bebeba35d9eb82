"""sanitize_kernels.py's recipes for the decode kernels and the activation quant:
R1's quant, R6 (bf16 and e4m3 out), R3d, the fused in_proj + conv update and
out_proj in each of the plans' tiles, R5d; with R4's inputs the SSD recipes share."""
import math

import numpy as np

from sanitize_builds import constants, randn_bf16, rng
from sanitize_support import (BF16_ULP, bf16, bf16_bits, check, check_exact, e4m3,
                              e4m3_codes, e4m3_order, failures, from_bf16, gemm_band, get,
                              launch, poison, put, quant_with_ties, separates, silu,
                              softplus)


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
