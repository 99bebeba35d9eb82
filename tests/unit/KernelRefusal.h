// The registered kernels (the Mamba2 models' and the examples') and the error
// a specialization of one is refused with, for the constants tests.
#ifndef TILEJIT_TESTS_UNIT_KERNELREFUSAL_H
#define TILEJIT_TESTS_UNIT_KERNELREFUSAL_H

#include "tilejit/Builder/KernelRegistry.h"
#include "tilejit/models/examples/ExampleKernels.h"
#include "tilejit/models/mamba2/Kernels.h"

#include <catch2/catch.hpp>

#include <string>

namespace tilejit::testing {

inline const KernelRegistry &registeredKernels() {
  static const KernelRegistry *registry = [] {
    auto *r = new KernelRegistry();
    llvm::cantFail(models::registerModelKernels(*r));
    llvm::cantFail(models::registerExampleKernels(*r));
    return r;
  }();
  return *registry;
}

/// The error `kernel` specialized with `overrides` is refused with (the
/// specialization must fail).
inline std::string refusal(llvm::StringRef kernel, const ConstantValues &overrides) {
  const KernelDef *def = registeredKernels().find(kernel);
  REQUIRE(def);
  auto spec = def->specialize(overrides);
  REQUIRE(!spec);
  return llvm::toString(spec.takeError());
}

} // namespace tilejit::testing

#endif // TILEJIT_TESTS_UNIT_KERNELREFUSAL_H
