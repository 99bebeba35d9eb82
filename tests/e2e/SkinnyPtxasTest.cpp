// The skinny decode projections (`skinny` = 1) of the sm_90a decode plans at
// 2 to 32 rows, FP8 and bf16 layers of the full geometry, assembled by CUDA's
// ptxas: no spills, within the device's shared memory, the FP8 in_proj reading
// its input as e4m3 (no quant in the kernel). Skipped, saying so, where ptxas
// is not installed.
#include "ModelPtxas.h"

#include <catch2/catch.hpp>

using namespace tilejit;
using namespace tilejit::models;
using namespace tilejit::models::testing;

TEST_CASE("the skinny projections of the sm_90a decode plans assemble without spills",
          "[e2e][plan][ptxas]") {
  auto assembled = assembleDecodeForm(
      {{"in_proj_conv", {{"skinny", 1}}}, {"out_proj", {{"skinny", 1}}}}, {2, 8, 16, 32},
      "skinny");
  if (!assembled)
    return;
  // Both projections, FP8 and bf16, at 8, 16 and 32 rows a program.
  CHECK(assembled->size() == 12);
  for (const AssembledPlanKernel &k : *assembled)
    if (k.name == "in_proj_conv" && k.constants.at("fp8")) {
      INFO(formatConstants(k.constants));
      CHECK(k.assembled.compiled.ptx.find("cvt.rn.satfinite.e4m3x2") ==
            std::string::npos);
    }
}
