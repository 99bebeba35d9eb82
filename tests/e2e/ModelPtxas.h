// A registered model kernel compiled for an arch and assembled by CUDA's
// ptxas -v: what the ptxas gates over the plans' kernels share
// (PlanPtxasTest.cpp, SsmStatePageTest.cpp).
#ifndef TILEJIT_TESTS_E2E_MODELPTXAS_H
#define TILEJIT_TESTS_E2E_MODELPTXAS_H

#include "tilejit/jit/JitCompiler.h"

#include "../support/Ptxas.h"
#include "ModelTestSupport.h"

#include <catch2/catch.hpp>

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

} // namespace tilejit::models::testing

#endif // TILEJIT_TESTS_E2E_MODELPTXAS_H
