// The skinny decode projections (`skinny` = 1) of the sm_90a decode plans at
// 2 to 32 rows, FP8 and bf16 layers of the full geometry, assembled by CUDA's
// ptxas: no spills, within the device's shared memory, the FP8 in_proj reading
// its input as e4m3 (no quant in the kernel). Skipped, saying so, where ptxas
// is not installed.
#include "tilejit/jit/JitCompiler.h"
#include "tilejit/models/nemotron_h/Planner.h"

#include "ModelPtxas.h"

#include <catch2/catch.hpp>

#include <set>

using namespace tilejit;
using namespace tilejit::models;
using namespace tilejit::models::testing;

TEST_CASE("the skinny projections of the sm_90a decode plans assemble without spills",
          "[e2e][plan][ptxas]") {
  auto ptxas = tilejit::testing::findPtxas();
  if (!ptxas) {
    WARN("SKIP: ptxas not found (install the CUDA 13 toolkit)");
    return;
  }
  const NemotronHConfig c; // the full geometry
  std::vector<MambaLayerWeights> layers;
  for (int64_t index : {0, 4}) // the synthetic model's FP8 and bf16 layers
    layers.push_back(llvm::cantFail(syntheticMambaLayer(c, index)));
  const Arch arch = llvm::cantFail(Arch::parse("sm_90a"));
  PlanOptions options;
  options.arch = arch;
  options.overrides = {{"in_proj_conv", {{"skinny", 1}}}, {"out_proj", {{"skinny", 1}}}};
  std::set<std::pair<std::string, ConstantValues>> kernels;
  for (int64_t rows : {2, 8, 16, 32}) {
    auto plan = planDecodeStep(modelRegistry(), c, layers, rows, 64, options);
    INFO("decode " << rows << ": " << (plan ? "" : llvm::toString(plan.takeError())));
    REQUIRE(bool(plan));
    for (const PlannedLaunch &launch : plan->launches)
      if (launch.spec.values().count("skinny") && launch.spec.get("skinny"))
        kernels.insert({launch.kernel, launch.spec.values()});
  }
  // Both projections, FP8 and bf16, at 8, 16 and 32 rows a program.
  CHECK(kernels.size() == 12);
  JitCompiler compiler;
  for (const auto &[name, constants] : kernels) {
    INFO(name << " " << formatConstants(constants));
    AssembledKernel assembled =
        assembleModelKernel(compiler, *ptxas, name, constants, arch, "sm_90a");
    CHECK(assembled.compiled.launch.dynamicSharedBytes <=
          arch.profile().sharedBytesPerBlock);
    CHECK(tilejit::testing::spillBytes(assembled.ptxas.output) == 0);
    if (name == "in_proj_conv" && constants.at("fp8"))
      CHECK(assembled.compiled.ptx.find("cvt.rn.satfinite.e4m3x2") == std::string::npos);
  }
}
