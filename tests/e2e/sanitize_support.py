"""What tests/e2e/sanitize_kernels.py's recipes share: f64 rounding to bf16 and e4m3
written from the formats' definitions (standalone: the script runs under
compute-sanitizer on a host without the test suite's dependencies), the element
checks, and the two places a recipe runs: the GPU (cupy, compiled PTX) or
tilejit's CPU interpreter (the Python package)."""
import json
from pathlib import Path

import numpy as np

BF16_ULP = 2.0 ** -7   # one bf16 ulp, relative (8 significant bits: 2^-8 .. 2^-7)
F32_EPS = 2.0 ** -24   # f32 unit roundoff
BF16_NAN, E4M3_NAN = 0x7FC0, 0x7F

failures = []  # the failed checks
backend = None


# ---- f64 rounding, from the formats' definitions

def bf16(v):
    """Nearest bf16 value (ties to even) of f64 values, as f64."""
    m, e = np.frexp(np.asarray(v, np.float64))
    return np.ldexp(np.rint(m * 256.0), e - 8)


def bf16_bits(v):
    """uint16 patterns of values that are already bf16."""
    return (np.asarray(v, np.float32).view(np.uint32) >> 16).astype(np.uint16)


def from_bf16(bits):
    return (np.asarray(bits, np.uint16).astype(np.uint32) << 16).view(np.float32).astype(
        np.float64)


_CODES = np.arange(256)
_MAG = np.where(((_CODES >> 3) & 15) == 0, (_CODES & 7) * 2.0 ** -9,
                (1 + (_CODES & 7) / 8.0) * 2.0 ** (((_CODES >> 3) & 15) - 7.0))


def e4m3(v):
    """Nearest e4m3fn value (ties to even), saturating at +-448, as f64."""
    v = np.asarray(v, np.float64)
    a = np.abs(v)
    m, e = np.frexp(np.maximum(a, 2.0 ** -6))  # normals: 4 significant bits
    q = np.where(a < 2.0 ** -6, np.rint(a * 2.0 ** 9) * 2.0 ** -9, np.ldexp(np.rint(m * 16), e - 4))
    return np.copysign(np.minimum(q, 448.0), v)


def e4m3_codes(values):
    """uint8 codes of e4m3 values."""
    mag = np.searchsorted(_MAG[:127], np.abs(values))
    assert np.array_equal(_MAG[mag], np.abs(values)), "not e4m3 values"
    return (mag | np.where(np.signbit(values), 0x80, 0)).astype(np.uint8)


def e4m3_order(codes):
    """Codes as a monotone integer scale (+-0 both 0; NaN codes far away), so that
    'one e4m3 code apart' is |difference| <= 1."""
    c = np.asarray(codes, np.int64)
    mag = np.where((c & 0x7F) == 0x7F, 10 ** 6, c & 0x7F)
    return np.where(c & 0x80, -mag, mag)


def quant_with_ties(v):
    """R1's a_q = e4m3(v) and the codes a kernel may pick instead: v computed in
    f32 (x * (1 / s)) lies within ~2^-22 of the exact quotient, so where v sits
    that close to a rounding boundary either neighbour is allowed (lo, hi)."""
    return e4m3(v), e4m3(v * (1 - 2.0 ** -20)), e4m3(v * (1 + 2.0 ** -20))


def silu(v):
    return v / (1.0 + np.exp(-v))


def softplus(v):
    return np.where(v > 20, v, np.log1p(np.exp(np.minimum(v, 20))))


# ---- checking

def check(name, got, want, atol, rtol, count):
    """|got - want| <= atol + rtol * |want| for each of exactly `count` elements
    (atol may be per element); NaN (the poison of an unwritten output) fails."""
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    atol = np.broadcast_to(np.asarray(atol, np.float64), want.shape)
    if got.size != count or want.size != count:
        print(f"FAIL {name}: {got.size} elements examined, {want.size} expected, geometry "
              f"says {count}", flush=True)
        failures.append(name)
        return
    err = np.abs(got - want)
    bad = ~(err <= atol + rtol * np.abs(want))
    worst = float(np.nanmax(np.where(np.isnan(err), np.inf, err))) if err.size else 0.0
    print(f"{'FAIL' if bad.any() else 'PASS'} {name}: {count} elements, {int(bad.sum())} "
          f"outside atol={np.max(atol, initial=0):.3g} rtol={rtol:.3g} (worst |err| "
          f"{worst:.3g})", flush=True)
    if bad.any():
        failures.append(name)


def check_exact(name, got, want):
    """Byte-identical (copies, untouched state slots: R8)."""
    same = np.array_equal(np.asarray(got).view(np.uint8), np.asarray(want).view(np.uint8))
    print(f"{'PASS' if same else 'FAIL'} {name}: {np.asarray(want).size} elements "
          f"{'byte-identical' if same else 'differ'}", flush=True)
    if not same:
        failures.append(name)


def separates(name, counterfactual, want, atol, rtol, at_least):
    """The band must be able to fail: a named wrong implementation must land
    outside it on at least `at_least` of the elements."""
    c, w = np.asarray(counterfactual, np.float64), np.asarray(want, np.float64)
    outside = float(np.mean(np.abs(c - w) > atol + rtol * np.abs(w)))
    ok = outside >= at_least
    print(f"{'PASS' if ok else 'FAIL'} {name}: the band rejects it on {outside:.0%} of the "
          f"elements (needs {at_least:.0%})", flush=True)
    if not ok:
        failures.append(name)


def gemm_band(scale, a, w, wgmma):
    """R1/R1b's band for y = bf16(s * sum_k a*w), as (atol, rtol): one bf16 ulp
    (the f32 sum in another order can move the rounding), f32 accumulation in any
    order (K * 2^-24 * s * sum|a*w|), and on sm_90a's e4m3 wgmma its weaker
    accumulation, s * 2^-8 * sum|a*w| (tests/python/test_gpu_vs_interpreter.py,
    docs/BENCHMARKS.md). mma.sync and the GEMV sum in f32."""
    absum = scale * (np.abs(a) @ np.abs(w).T)
    return 1e-6 + (2.0 ** -8 if wgmma else a.shape[1] * F32_EPS) * absum, BF16_ULP


# ---- backends: the same recipe on the GPU (cupy, PTX from DIR) or the interpreter

class Cuda:
    def __init__(self, directory):
        import cupy
        self.cp, self.dir = cupy, Path(directory)
        # Every buffer its own cudaMalloc (no pool): memcheck then sees the end
        # of each allocation, not of a pool chunk.
        cupy.cuda.set_allocator(None)

    def put(self, array):
        return self.cp.asarray(np.ascontiguousarray(array))

    def get(self, buf):
        return self.cp.asnumpy(buf)

    def launch(self, name, grid, args):
        meta = json.loads((self.dir / f"{name}.json").read_text())
        fn = self.cp.RawModule(path=str(self.dir / f"{name}.ptx")).get_function(meta["entry"])
        if meta["shared_bytes"] > 48 * 1024:
            fn.max_dynamic_shared_size_bytes = meta["shared_bytes"]
        conv = {"ptr": lambda v: np.uint64(v.data.ptr), "i32": np.int32, "f32": np.float32}
        params = tuple(conv[p["kind"]](a) for p, a in zip(meta["params"], args, strict=True))
        grid = tuple(grid) + (1,) * (3 - len(grid))
        fn(grid, (meta["threads"], 1, 1), params, shared_mem=meta["shared_bytes"])
        self.cp.cuda.runtime.deviceSynchronize()


class Interpreter:
    def __init__(self, builds):
        import tilejit
        self.tj, self.builds = tilejit, builds

    def put(self, array):
        return np.array(array, copy=True)

    def get(self, buf):
        return np.array(buf, copy=True)

    def launch(self, name, grid, args):
        kernel, constants = self.builds[name]
        self.tj.kernels[kernel](*args, grid=tuple(grid), **constants)


def use(chosen):
    global backend
    backend = chosen


def launch(name, grid, *args):
    backend.launch(name, grid, args)


def put(array):
    return backend.put(array)


def get(buf):
    return backend.get(buf)


def poison(shape, dtype):
    """An output buffer full of NaN (bf16 0x7FC0, e4m3 0x7F)."""
    fill = {np.uint16: BF16_NAN, np.uint8: E4M3_NAN}.get(dtype, np.nan)
    return put(np.full(shape, fill, dtype))


def spans_of(cu, slots, init, q, span_chunks):
    """PrefillMetadata's spans: windows of span_chunks consecutive chunks. Per span
    its first chunk (and the end), its tail sequence's slot (-1: padding) and flags
    (2: the tail starts at a sequence start, 4: that sequence continues from its
    page, 8: it ends in the span), as int32 arrays."""
    seq_of = [s for s in range(len(cu) - 1)
              for _ in range((int(cu[s + 1] - cu[s]) + q - 1) // q)]
    first, sslot, flags = [0], [], []
    for c in range(0, len(seq_of), span_chunks):
        end = min(c + span_chunks, len(seq_of))
        s = seq_of[end - 1]
        f = end - 1
        while f > 0 and seq_of[f - 1] == s:
            f -= 1
        first.append(end)
        sslot.append(int(slots[s]) if slots[s] >= 0 else -1)
        ends = end == len(seq_of) or seq_of[end] != s
        flags.append((2 if f >= c else 0) | (4 if init[s] else 0) | (8 if ends else 0))
    return (np.array(first, np.int32), np.array(sslot, np.int32), np.array(flags, np.int32))
