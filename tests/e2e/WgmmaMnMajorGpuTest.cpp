// wgmma with an MN-major B (issue 31 part 1) on the GPU: gemm_bf16 (B read
// [K, N]) at out_proj's shape with K reduced against an f64 host reference
// on sm_90a (WgmmaChainGpuTest.cpp has the chained dot whose B is MN-major).
#include "GpuTestSupport.h"
#include "WgmmaChainKernel.h"

using namespace tilejit::gputest;

TEST_CASE("GPU: gemm_bf16 with 64- and 128-column tiles (B MN-major on wgmma) "
          "against f64 on sm_90a",
          "[gpu][hopper][wgmma]") {
  auto jit = wgmmaRuntimeOrSkip();
  if (!jit)
    return;
  constexpr int64_t m = 200, n = 2688, k = 1024; // 200 rows: a partial M tile
  std::mt19937 rng(33);
  using tilejit::testing::randomBF16;
  std::vector<uint16_t> a = randomBF16(m * k, rng), b = randomBF16(k * n, rng);
  std::vector<double> want(m * n), band(m * n);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double s = 0, magnitude = 0;
      for (int64_t q = 0; q < k; ++q) {
        double term =
            double(tilejit::bf16ToF32(a[i * k + q])) * tilejit::bf16ToF32(b[q * n + j]);
        s += term;
        magnitude += std::abs(term);
      }
      // One bf16 rounding of an f32 sum: a bf16 ulp of the result, plus the
      // f32 sum's own error, which may move the rounding by one ulp.
      want[i * n + j] = s;
      band[i * n + j] = std::ldexp(std::abs(s), -7) + std::ldexp(magnitude, -18);
    }
  DeviceBuffer da = allocateOrFail(*jit, a.size() * 2),
               db = allocateOrFail(*jit, b.size() * 2),
               dc = allocateOrFail(*jit, m * n * 2);
  requireOk(da.upload(asBytes(a)));
  requireOk(db.upload(asBytes(b)));
  const tilejit::KernelDef *def = registry().find("gemm_bf16");
  REQUIRE(def);
  constexpr int64_t blockM = 128;
  for (int64_t blockN : {64, 128}) {
    requireOk(dc.upload(asBytes(std::vector<uint16_t>(m * n, 0x7FC0)))); // NaN
    Kernel gemm(*jit, tilejit::makeKernelSpec(
                          *def, llvm::cantFail(def->specialize({{"n", n},
                                                                {"k", k},
                                                                {"block_m", blockM},
                                                                {"block_n", blockN},
                                                                {"block_k", 64}}))));
    auto stream = Stream::create(jit->device());
    REQUIRE(!!stream);
    requireOk(
        gemm.launch(*stream, Dim3{uint32_t((m + blockM - 1) / blockM), n / blockN, 1},
                    {KernelArg::pointer(da.address()), KernelArg::pointer(db.address()),
                     KernelArg::pointer(dc.address()), KernelArg::i32(m)}));
    requireOk(stream->synchronize());
    std::vector<uint16_t> c = download<uint16_t>(dc, m * n);
    int64_t outside = 0;
    for (size_t i = 0; i < c.size(); ++i)
      outside += !(std::abs(double(tilejit::bf16ToF32(c[i])) - want[i]) <= band[i]);
    llvm::outs() << "gemm_bf16 block_n=" << blockN << " " << m << "x" << n << "x" << k
                 << ": " << outside << " of " << c.size() << " outside the band\n";
    CHECK(outside == 0);
  }
}
