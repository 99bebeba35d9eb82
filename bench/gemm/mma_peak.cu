// mma.sync throughput ceilings: 8 independent accumulators per warp, each
// with its own B operand (no two mma compute the same thing). peak_e4m3_varying
// changes every operand each iteration, so the e4m3 -> f16 unpacking that
// ptxas emits for e4m3 mma.sync on sm_90 stays in the loop, as in a GEMM.
// Built by build_variants.sh (nvcc, sm_90a), timed by bench.py.
#include <cstdint>
#define BF16 "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32"
#define E4M3 "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32"
#define KERNEL(NAME, INSTR, VARY)                                                        \
  extern "C" __global__ void NAME(const uint32_t *a, float *out, int iters) {            \
    uint32_t a0 = a[threadIdx.x & 7], a1 = a[(threadIdx.x + 1) & 7],                     \
             a2 = a[(threadIdx.x + 2) & 7], a3 = a[(threadIdx.x + 3) & 7];               \
    uint32_t b0 = a[(threadIdx.x + 4) & 7], b1 = a[(threadIdx.x + 5) & 7];               \
    float c[8][4];                                                                       \
    for (int j = 0; j < 8; j++)                                                          \
      for (int q = 0; q < 4; q++)                                                        \
        c[j][q] = 0;                                                                     \
    for (int i = 0; i < iters; i++) {                                                    \
      _Pragma("unroll") for (int j = 0; j < 8; j++) {                                    \
        uint32_t bj0 = b0 + j * 0x01010101u, bj1 = b1 ^ (j * 0x02020202u);               \
        asm volatile(INSTR " {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"      \
                     : "+f"(c[j][0]), "+f"(c[j][1]), "+f"(c[j][2]), "+f"(c[j][3])        \
                     : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(bj0), "r"(bj1));          \
      }                                                                                  \
      if (VARY) {                                                                        \
        a0 += 0x01010101u;                                                               \
        a1 ^= 0x00100010u;                                                               \
        a2 += 0x00010001u;                                                               \
        a3 ^= 0x01000100u;                                                               \
        b0 += 0x00000101u;                                                               \
        b1 ^= 0x01010000u;                                                               \
      }                                                                                  \
    }                                                                                    \
    float s = 0;                                                                         \
    for (int j = 0; j < 8; j++)                                                          \
      for (int q = 0; q < 4; q++)                                                        \
        s += c[j][q];                                                                    \
    out[blockIdx.x * blockDim.x + threadIdx.x] = s;                                      \
  }
KERNEL(peak_bf16, BF16, false)
KERNEL(peak_f16, "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32", false)
KERNEL(peak_e4m3_varying, E4M3, true)
