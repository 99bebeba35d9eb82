// Chained dots on wgmma with A from registers (issue 31 part 1) on the GPU:
// wgmma_chain (WgmmaChainKernel.h), q staged and q in registers, v read
// transposed (K-major B) and as it is (MN-major B), against its f64 reference
// on sm_90a, with partial tiles in both loops' extents.
#include "GpuTestSupport.h"
#include "WgmmaChainKernel.h"

using namespace tilejit::gputest;

TEST_CASE("GPU: wgmma_chain (a dot whose A is another's accumulator, in registers) "
          "against f64 on sm_90a",
          "[gpu][hopper][wgmma]") {
  auto jit = wgmmaRuntimeOrSkip();
  if (!jit)
    return;
  constexpr int64_t m = 1000, t = 1000, d = 64; // partial tiles in m and t
  constexpr float scale = 0.125f;
  std::mt19937 rng(31);
  using tilejit::testing::randomBF16;
  std::vector<uint16_t> q = randomBF16(m * d, rng), k = randomBF16(t * d, rng),
                        vt = randomBF16(d * t, rng),
                        v = tilejit::testing::transposed(vt, d, t);
  const tilejit::testing::WgmmaChainReference ref =
      tilejit::testing::wgmmaChainReference(q, k, vt, m, t, scale);
  DeviceBuffer dq = allocateOrFail(*jit, q.size() * 2),
               dk = allocateOrFail(*jit, k.size() * 2),
               dv = allocateOrFail(*jit, vt.size() * 2),
               dvm = allocateOrFail(*jit, v.size() * 2),
               dout = allocateOrFail(*jit, m * d * 4);
  auto bytes = [](const auto &v) {
    return llvm::ArrayRef<uint8_t>(reinterpret_cast<const uint8_t *>(v.data()),
                                   v.size() * sizeof(v[0]));
  };
  requireOk(dq.upload(bytes(q)));
  requireOk(dk.upload(bytes(k)));
  requireOk(dv.upload(bytes(vt)));
  requireOk(dvm.upload(bytes(v)));
  for (const tilejit::testing::WgmmaChainCase &c : tilejit::testing::kWgmmaChainCases) {
    auto [qInLoop, producer, vMnMajor] = c;
    const tilejit::KernelDef &def = tilejit::testing::wgmmaChainDef();
    Kernel chain(*jit, tilejit::makeKernelSpec(def, llvm::cantFail(def.specialize(
                                                        {{"q_in_loop", qInLoop},
                                                         {"producer", producer},
                                                         {"t", t},
                                                         {"v_mn_major", vMnMajor}}))));
    requireOk(dout.upload(bytes(std::vector<float>(m * d, NAN))));
    auto stream = Stream::create(jit->device());
    REQUIRE(!!stream);
    requireOk(chain.launch(
        *stream, Dim3{uint32_t((m + 63) / 64), 1, 1},
        {KernelArg::pointer(dq.address()), KernelArg::pointer(dk.address()),
         KernelArg::pointer((vMnMajor ? dvm : dv).address()),
         KernelArg::pointer(dout.address()), KernelArg::i32(m), KernelArg::f32(scale)}));
    requireOk(stream->synchronize());
    std::vector<float> o = download<float>(dout, m * d);
    int64_t outside = 0;
    for (size_t i = 0; i < o.size(); ++i)
      outside += !(std::abs(double(o[i]) - ref.o[i]) <= ref.band[i]);
    llvm::outs() << "wgmma_chain q_in_loop=" << qInLoop << " producer=" << producer
                 << " v_mn_major=" << vMnMajor << ", " << m << "x" << t << "x" << d
                 << ": " << outside << " of " << o.size() << " outside the band\n";
    CHECK(outside == 0);
  }
}
