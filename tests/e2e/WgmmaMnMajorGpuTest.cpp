// wgmma with an MN-major B (issue 31 part 1) on the GPU: gemm_bf16 (B read
// [K, N]) at out_proj's shape with K reduced, and wgmma_chain with v read
// [t, 64], against f64 host references on sm_90a.
#include "GpuTestSupport.h"
#include "WgmmaChainKernel.h"

using namespace tilejit::gputest;

namespace {

template <typename T> llvm::ArrayRef<uint8_t> bytesOf(const std::vector<T> &v) {
  return llvm::ArrayRef<uint8_t>(reinterpret_cast<const uint8_t *>(v.data()),
                                 v.size() * sizeof(T));
}

} // namespace

TEST_CASE("GPU: gemm_bf16 with 64- and 128-column tiles (B MN-major on wgmma) "
          "against f64 on sm_90a",
          "[gpu][hopper][wgmma]") {
  auto device = openGpuOrSkip();
  if (!device)
    return;
  auto jit = makeRuntime(std::move(device), freshCacheDirectory());
  if (jit->targetArch().name() != "sm_90a") {
    WARN("skipped: wgmma is sm_90a's, the GPU is " << jit->targetArch().name().str());
    return;
  }
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
  requireOk(da.upload(bytesOf(a)));
  requireOk(db.upload(bytesOf(b)));
  const tilejit::KernelDef *def = registry().find("gemm_bf16");
  REQUIRE(def);
  constexpr int64_t blockM = 128;
  for (int64_t blockN : {64, 128}) {
    requireOk(dc.upload(bytesOf(std::vector<uint16_t>(m * n, 0x7FC0)))); // NaN
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

TEST_CASE("GPU: wgmma_chain with v MN-major (the second dot's B [t, 64]) against f64 "
          "on sm_90a",
          "[gpu][hopper][wgmma]") {
  auto device = openGpuOrSkip();
  if (!device)
    return;
  auto jit = makeRuntime(std::move(device), freshCacheDirectory());
  if (jit->targetArch().name() != "sm_90a") {
    WARN("skipped: wgmma is sm_90a's, the GPU is " << jit->targetArch().name().str());
    return;
  }
  constexpr int64_t m = 1000, t = 1000, d = 64; // partial tiles in m and t
  constexpr float scale = 0.125f;
  std::mt19937 rng(34);
  using tilejit::testing::randomBF16;
  std::vector<uint16_t> q = randomBF16(m * d, rng), k = randomBF16(t * d, rng),
                        v = randomBF16(t * d, rng);
  const tilejit::testing::WgmmaChainReference ref = tilejit::testing::wgmmaChainReference(
      q, k, tilejit::testing::transposed(v, t, d), m, t, scale);
  DeviceBuffer dq = allocateOrFail(*jit, q.size() * 2),
               dk = allocateOrFail(*jit, k.size() * 2),
               dv = allocateOrFail(*jit, v.size() * 2),
               dout = allocateOrFail(*jit, m * d * 4);
  requireOk(dq.upload(bytesOf(q)));
  requireOk(dk.upload(bytesOf(k)));
  requireOk(dv.upload(bytesOf(v)));
  for (auto [qInLoop, producer] : {std::pair{0, 0}, {1, 0}, {1, 1}}) {
    const tilejit::KernelDef &def = tilejit::testing::wgmmaChainDef();
    Kernel chain(*jit, tilejit::makeKernelSpec(
                           def, llvm::cantFail(def.specialize({{"q_in_loop", qInLoop},
                                                               {"producer", producer},
                                                               {"t", t},
                                                               {"v_mn_major", 1}}))));
    requireOk(dout.upload(bytesOf(std::vector<float>(m * d, NAN))));
    auto stream = Stream::create(jit->device());
    REQUIRE(!!stream);
    requireOk(chain.launch(
        *stream, Dim3{uint32_t((m + 63) / 64), 1, 1},
        {KernelArg::pointer(dq.address()), KernelArg::pointer(dk.address()),
         KernelArg::pointer(dv.address()), KernelArg::pointer(dout.address()),
         KernelArg::i32(m), KernelArg::f32(scale)}));
    requireOk(stream->synchronize());
    std::vector<float> o = download<float>(dout, m * d);
    int64_t outside = 0;
    for (size_t i = 0; i < o.size(); ++i)
      outside += !(std::abs(double(o[i]) - ref.o[i]) <= ref.band[i]);
    llvm::outs() << "wgmma_chain v_mn_major=1 q_in_loop=" << qInLoop
                 << " producer=" << producer << ": " << outside << " of " << o.size()
                 << " outside the band\n";
    CHECK(outside == 0);
  }
}
