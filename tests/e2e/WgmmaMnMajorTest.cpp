// wgmma with an MN-major B (issue 31 part 1), without a GPU: sm_90a compiles
// of gemm_bf16 (B [K, N]) whose PTX issues every product as wgmma with the
// transpose immediate tnspB = 1, assembled by ptxas without spills
// (WgmmaChainTest.cpp has the chained dot whose B is MN-major).
#include "tilejit/Builder/KernelRegistry.h"
#include "tilejit/Pipeline/Pipeline.h"
#include "tilejit/jit/JitCompiler.h"
#include "tilejit/models/examples/ExampleKernels.h"

#include "../support/Ptxas.h"

#include "llvm/Support/Regex.h"

#include <catch2/catch.hpp>

using namespace tilejit;

namespace {

/// The wgmma instructions of `ptx` whose B is MN-major (the last immediate
/// 1) and all of them.
std::pair<int64_t, int64_t> countWgmma(llvm::StringRef ptx) {
  llvm::Regex mnMajor("wgmma.mma_async.sync.aligned.m64n[0-9]+k16.f32.bf16.bf16.*, 1;");
  llvm::SmallVector<llvm::StringRef> lines;
  ptx.split(lines, '\n');
  int64_t mn = 0, all = 0;
  for (llvm::StringRef line : lines) {
    all += line.contains("wgmma.mma_async");
    mn += mnMajor.match(line);
  }
  return {mn, all};
}

/// Assembles `ptx` for sm_90a: no spills, no serialized wgmma.
void checkAssembles(const std::string &ptx, llvm::StringRef what) {
  auto ptxas = testing::findPtxas();
  if (!ptxas) {
    WARN("SKIP: ptxas not found (install the CUDA 13 toolkit)");
    return;
  }
  testing::PtxasResult assembled = testing::runPtxas(*ptxas, ptx, "sm_90a", true);
  INFO(assembled.output);
  REQUIRE(assembled.ok());
  llvm::outs() << what << " sm_90a ptxas:\n" << assembled.output << "\n";
  CHECK(testing::spillBytes(assembled.output) == 0);
  CHECK(assembled.output.find("serialized") == std::string::npos);
  CHECK(assembled.output.find("C7519") == std::string::npos);
}

} // namespace

TEST_CASE("gemm_bf16 (b read [K, N]) compiles for sm_90a to MN-major wgmma and "
          "assembles without spills",
          "[e2e][wgmma][ptxas]") {
  JitCompiler compiler;
  Arch arch = llvm::cantFail(Arch::parse("sm_90a"));
  // gemm_bf16's B is [K, N]: every product is an MN-major wgmma, with
  // 64-column tiles (128-byte rows, one atom) and with 128 (two column
  // blocks of atoms).
  KernelRegistry examples;
  llvm::cantFail(models::registerExampleKernels(examples));
  const KernelDef *gemm = examples.find("gemm_bf16");
  REQUIRE(gemm);
  for (int64_t blockN : {64, 128}) {
    INFO("block_n = " << blockN);
    auto ir = buildCanonicalIR(
        *gemm, llvm::cantFail(gemm->specialize(
                   {{"n", 2688}, {"k", 1024}, {"block_n", blockN}, {"block_k", 64}})));
    REQUIRE(bool(ir));
    auto compiled = compiler.compile({"gemm_bf16", *ir, arch, {}});
    REQUIRE(bool(compiled));
    auto [mn, all] = countWgmma(compiled->ptx);
    // Two 64-row blocks of four K steps.
    CHECK(mn == all);
    CHECK(all == 8);
    checkAssembles(compiled->ptx,
                   "gemm_bf16 block_n=" + std::to_string(blockN) + " block_k=64");
  }
}
