// ptxas as the gate for the arches no GPU here runs (issue 35): every kernel
// of the NemotronH plans for sm_110a (Thor) and sm_121a (GB10) — decode at 1
// and 64 rows, prefill of 8192 tokens, over an FP8 and a bf16 layer of the
// full geometry — compiled for that arch within its device's shared memory
// and assembled by CUDA's ptxas, with no spills beyond those docs/design.md
// records ("The ptxas gate"). Skipped, saying so, where ptxas is not installed.
#include "tilejit/jit/JitCompiler.h"
#include "tilejit/models/nemotron_h/Planner.h"

#include "ModelPtxas.h"

#include <catch2/catch.hpp>

#include <map>
#include <set>

using namespace tilejit;
using namespace tilejit::models;
using namespace tilejit::models::testing;

namespace {

/// Spill bytes (stores + loads) docs/design.md records, by kernel: the SSD's
/// chunk kernel over spans runs at 255 registers and spills 40-44 bytes each
/// way on every arch, sm_90a's included.
const std::map<std::string, int64_t> kRecordedSpills = {{"ssd_prefill", 88}};

/// The kernel specializations `plan` launches: name and constants.
void collect(const StepPlan &plan,
             std::set<std::pair<std::string, ConstantValues>> &into) {
  for (const PlannedLaunch &launch : plan.launches)
    into.insert({launch.kernel, launch.spec.values()});
}

} // namespace

TEST_CASE("every kernel of the decode and prefill plans for sm_110a and sm_121a "
          "assembles with ptxas for that arch, without spills",
          "[e2e][plan][ptxas]") {
  auto ptxas = tilejit::testing::findPtxas();
  if (!ptxas) {
    WARN("SKIP: ptxas not found (install the CUDA 13 toolkit to assemble PTX for "
         "sm_110a and sm_121a)");
    return;
  }
  const NemotronHConfig c; // the full geometry
  std::vector<MambaLayerWeights> layers;
  for (int64_t index : {0, 4}) // the synthetic model's FP8 and bf16 layers
    layers.push_back(llvm::cantFail(syntheticMambaLayer(c, index)));
  REQUIRE(layers[0].inProj.isFP8);
  REQUIRE_FALSE(layers[1].inProj.isFP8);
  const ref::PrefillBatch batch{{0, 8192}, {0}, {false}};
  JitCompiler compiler;
  for (const char *archName : {"sm_110a", "sm_121a"}) {
    Arch arch = llvm::cantFail(Arch::parse(archName));
    PlanOptions options;
    options.arch = arch;
    std::set<std::pair<std::string, ConstantValues>> kernels;
    for (int64_t rows : {1, 64}) {
      auto decode = planDecodeStep(modelRegistry(), c, layers, rows, 256, options);
      INFO(archName << " decode " << rows << ": "
                    << (decode ? "" : llvm::toString(decode.takeError())));
      REQUIRE(bool(decode));
      collect(*decode, kernels);
    }
    auto prefill = planPrefill(modelRegistry(), c, layers, batch, 8192, 1, options);
    INFO(archName << " prefill: "
                  << (prefill ? "" : llvm::toString(prefill.takeError())));
    REQUIRE(bool(prefill));
    collect(prefill->plan, kernels);
    // Decode at 64 rows and prefill run the TMA GEMMs (bf16's with the
    // consumer-issued copies), so the gate covers the new pipeline.
    bool tmaGemm = false;
    for (const auto &[name, constants] : kernels) {
      INFO(archName << " " << name << " " << formatConstants(constants));
      auto producer = constants.find("producer");
      tmaGemm |= producer != constants.end() && producer->second == 2;
      AssembledKernel assembled =
          assembleModelKernel(compiler, *ptxas, name, constants, arch, archName);
      CHECK(assembled.compiled.launch.dynamicSharedBytes <=
            arch.profile().sharedBytesPerBlock);
      auto recorded = kRecordedSpills.find(name);
      CHECK(tilejit::testing::spillBytes(assembled.ptxas.output) <=
            (recorded == kRecordedSpills.end() ? 0 : recorded->second));
    }
    CHECK(tmaGemm);
    llvm::outs() << archName << ": " << kernels.size()
                 << " kernel specializations of the plans assembled\n";
  }
}
