#!/usr/bin/env python3
"""What a plain CUDA copy of conv_prefill's bytes reaches on this GPU, and how it
depends on the rows each thread walks: xBC columns [4096, 10240) of a row-major
[8192, 10304] bf16 zxbcdt read, [8192, 6144] written, 16-byte accesses (and the
same copy from a contiguous [8192, 6144] source). A CTA covers `lanes` 16-byte
columns of `rows_per_cta` rows; its threads beyond `lanes` split those rows into
contiguous segments, so each thread walks rows_per_cta / (threads / lanes) rows.
20 distinct buffers per timed round (no L2 reuse), CUDA events around the 20
launches, median / min / max of 30 rounds. Every copy is checked.

Usage: python3 bench/prefill/strided_copy_gpu.py   (cupy on a CUDA GPU)"""
import statistics

import cupy as cp

T, STRIDE, COL, C = 8192, 10304, 4096, 6144
SOURCE = r'''
extern "C" __global__ void copy(const uint4* __restrict__ in, uint4* __restrict__ out,
    int rows, int in_stride16, int col16, int cols16, int rows_per_cta, int lanes) {
  int lane = threadIdx.x % lanes, part = threadIdx.x / lanes;
  int seg = rows_per_cta / (blockDim.x / lanes);
  int c = blockIdx.x * lanes + lane;
  int r0 = blockIdx.y * rows_per_cta + part * seg;
  #pragma unroll 8
  for (int i = 0; i < seg; ++i) {
    int r = r0 + i;
    if (r < rows && c < cols16) out[(long)r * cols16 + c] = in[(long)r * in_stride16 + col16 + c];
  }
}'''
# (threads, lanes, rows per CTA): each thread walks all the CTA's rows when
# lanes == threads.
CASES = [(128, 128, 1), (128, 128, 8), (128, 128, 16), (128, 128, 64),
         (128, 64, 64), (128, 32, 64), (128, 32, 32), (128, 32, 16), (256, 32, 64)]


def main():
    kernel = cp.RawKernel(SOURCE, "copy")
    n, cols16 = 20, C * 2 // 16
    strided = [cp.random.randint(0, 65535, size=(T, STRIDE), dtype=cp.uint16) for _ in range(n)]
    flat = [cp.random.randint(0, 65535, size=(T, C), dtype=cp.uint16) for _ in range(n)]
    outs = [cp.empty((T, C), dtype=cp.uint16) for _ in range(n)]

    def bench(launch):
        launch(0)
        cp.cuda.Device().synchronize()
        times = []
        for _ in range(30):
            a, b = cp.cuda.Event(), cp.cuda.Event()
            a.record()
            for i in range(n):
                launch(i)
            b.record()
            b.synchronize()
            times.append(cp.cuda.get_elapsed_time(a, b) * 1000 / n)
        return statistics.median(times), min(times), max(times)

    failed = 0
    for threads, lanes, rows_cta in CASES:
        grid = ((cols16 + lanes - 1) // lanes, (T + rows_cta - 1) // rows_cta)
        walk = rows_cta // (threads // lanes)
        for name, sources, stride, col in (("xBC view", strided, STRIDE, COL),
                                           ("contiguous", flat, C, 0)):
            def launch(i):
                kernel(grid, (threads,), (sources[i], outs[i], cp.int32(T),
                                          cp.int32(stride * 2 // 16), cp.int32(col * 2 // 16),
                                          cp.int32(cols16), cp.int32(rows_cta), cp.int32(lanes)))
            med, lo, hi = bench(launch)
            ok = bool((outs[0] == sources[0][:, col:col + C]).all())
            failed += not ok
            print(f"COPY {name:10s} {threads} threads, {lanes:3d} lanes per row, {rows_cta:2d} rows "
                  f"per CTA ({walk:2d} per thread), grid {grid}: median {med:6.2f} us (min {lo:.2f},"
                  f" max {hi:.2f}) -> {2 * T * C * 2 / med / 1e6:.2f} TB/s{'' if ok else ' WRONG'}")
    print(f"{len(CASES) * 2 - failed} copies correct, {failed} wrong")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
