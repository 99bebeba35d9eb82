// A registered model kernel compiled for an arch and assembled by CUDA's
// ptxas -v: what the ptxas gates over the plans' kernels share
// (PlanPtxasTest.cpp, SsmStatePageTest.cpp), and the kernels of a form the
// decode plans take (SkinnyPtxasTest.cpp).
#ifndef TILEJIT_TESTS_E2E_MODELPTXAS_H
#define TILEJIT_TESTS_E2E_MODELPTXAS_H

#include "tilejit/jit/JitCompiler.h"
#include "tilejit/models/nemotron_h/Planner.h"

#include "../support/Ptxas.h"
#include "ModelTestSupport.h"

#include <catch2/catch.hpp>

#include <optional>
#include <set>

namespace tilejit::models::testing {

struct AssembledKernel {
  runtime::CompiledKernel compiled;
  tilejit::testing::PtxasResult ptxas;
};

/// Model kernel `name` specialized by `constants`, compiled for `arch` and
/// assembled by `ptxas -v`; every step is REQUIREd, with the kernel, its
/// constants and ptxas' report as the failure's context.
inline AssembledKernel assembleModelKernel(JitCompiler &compiler,
                                           const std::string &ptxas,
                                           const std::string &name,
                                           const ConstantValues &constants,
                                           const Arch &arch, llvm::StringRef archName) {
  INFO(archName.str() << " " << name << " " << formatConstants(constants));
  const KernelDef *def = modelRegistry().find(name);
  REQUIRE(def);
  auto spec = def->specialize(constants);
  REQUIRE(bool(spec));
  auto ir = buildCanonicalIR(*def, *spec);
  REQUIRE(bool(ir));
  auto compiled = compiler.compile({name, *ir, arch, {}});
  INFO((compiled ? "" : llvm::toString(compiled.takeError())));
  REQUIRE(bool(compiled));
  tilejit::testing::PtxasResult assembled =
      tilejit::testing::runPtxas(ptxas, compiled->ptx, archName, /*verbose=*/true);
  INFO(assembled.output);
  REQUIRE(assembled.ok());
  return {std::move(*compiled), std::move(assembled)};
}

/// A kernel of a plan, assembled.
struct AssembledPlanKernel {
  std::string name;
  ConstantValues constants;
  AssembledKernel assembled;
};

/// The distinct kernels whose constant `form` is set in the sm_90a decode
/// plans of the full geometry's FP8 and bf16 Mamba layers (the synthetic
/// model's 0 and 4) at each of `batches` rows, with `overrides`, assembled by
/// ptxas and CHECKed to spill nothing and fit the device's shared memory; none
/// (and a WARN saying SKIP) where ptxas is not installed.
inline std::optional<std::vector<AssembledPlanKernel>>
assembleDecodeForm(const KernelOverrides &overrides, std::vector<int64_t> batches,
                   llvm::StringRef form) {
  auto ptxas = tilejit::testing::findPtxas();
  if (!ptxas) {
    WARN("SKIP: ptxas not found (install the CUDA 13 toolkit)");
    return std::nullopt;
  }
  const NemotronHConfig c; // the full geometry
  std::vector<MambaLayerWeights> layers;
  for (int64_t index : {0, 4})
    layers.push_back(llvm::cantFail(syntheticMambaLayer(c, index)));
  const Arch arch = llvm::cantFail(Arch::parse("sm_90a"));
  PlanOptions options;
  options.arch = arch;
  options.overrides = overrides;
  std::set<std::pair<std::string, ConstantValues>> kernels;
  for (int64_t rows : batches) {
    auto plan = planDecodeStep(modelRegistry(), c, layers, rows, 64, options);
    INFO("decode " << rows << ": " << (plan ? "" : llvm::toString(plan.takeError())));
    REQUIRE(bool(plan));
    for (const PlannedLaunch &launch : plan->launches)
      if (launch.spec.values().count(form.str()) && launch.spec.get(form))
        kernels.insert({launch.kernel, launch.spec.values()});
  }
  JitCompiler compiler;
  std::vector<AssembledPlanKernel> assembled;
  for (const auto &[name, constants] : kernels) {
    INFO(name << " " << formatConstants(constants));
    assembled.push_back(
        {name, constants,
         assembleModelKernel(compiler, *ptxas, name, constants, arch, "sm_90a")});
    const runtime::CompiledKernel &compiled = assembled.back().assembled.compiled;
    CHECK(compiled.launch.dynamicSharedBytes <= arch.profile().sharedBytesPerBlock);
    CHECK(tilejit::testing::spillBytes(assembled.back().assembled.ptxas.output) == 0);
  }
  return assembled;
}

} // namespace tilejit::models::testing

#endif // TILEJIT_TESTS_E2E_MODELPTXAS_H
