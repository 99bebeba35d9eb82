// The SSD's products on wgmma (issue 31 part 3), without a GPU: which of
// ssd_chunk_scan's dots an sm_90a compile puts on wgmma, in every precision
// mode, and that ptxas assembles those builds. With 64-row blocks on 4 warps
// (one warpgroup) C B^T takes wgmma, C in registers and B through a
// descriptor (two 128-byte column blocks of the state); the plan's 32-row
// blocks keep every dot on mma.sync.
#include "tilejit/jit/JitCompiler.h"

#include "ModelPtxas.h"

#include <catch2/catch.hpp>

using namespace tilejit;
using namespace tilejit::models;
using namespace tilejit::models::testing;

TEST_CASE("ssd_chunk_scan for sm_90a: C B^T on wgmma with 64-row blocks on 4 warps, "
          "mma.sync with the plan's 32-row blocks; ptxas assembles both",
          "[e2e][ssd][wgmma][ptxas]") {
  auto ptxas = tilejit::testing::findPtxas();
  if (!ptxas) {
    WARN("SKIP: ptxas not found (install the CUDA 13 toolkit)");
    return;
  }
  JitCompiler compiler;
  Arch arch = llvm::cantFail(Arch::parse("sm_90a"));
  const ConstantValues geometry = {
      {"heads", 128},       {"head_dim", 64},  {"state", 128}, {"groups", 8},
      {"dt_stride", 18560}, {"dt_col", 18432}, {"chunk", 128}};
  for (int64_t precision : {0, 1, 2})
    for (int64_t blockM : {32, 64}) {
      ConstantValues constants = geometry;
      constants["precision"] = precision;
      constants["block_m"] = blockM;
      AssembledKernel k = assembleModelKernel(compiler, *ptxas, "ssd_chunk_scan",
                                              constants, arch, "sm_90a");
      llvm::StringRef ptx = k.compiled.ptx;
      // C B^T in the finite pass's loop and in the NaN pass's: K = 128
      // (8 steps of 16), one 64-row block each.
      CHECK(ptx.count("wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16") ==
            (blockM == 64 ? 16u : 0u));
      CHECK(ptx.count("mma.sync.aligned") > 0);
      llvm::outs() << "ssd_chunk_scan precision=" << precision << " block_m=" << blockM
                   << " sm_90a ptxas:\n"
                   << k.ptxas.output << "\n";
    }
}
