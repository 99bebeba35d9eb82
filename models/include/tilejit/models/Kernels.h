// Kernels the models register: the Mamba2 ops of reference-math.md.
#ifndef TILEJIT_MODELS_KERNELS_H
#define TILEJIT_MODELS_KERNELS_H

#include "tilejit/Builder/KernelRegistry.h"

namespace tilejit::models {

/// R6: gated group RMSNorm, one program per (row, group).
void buildGatedRmsNorm(Kernel &k, const Specialization &spec);
/// R3d: causal conv update (decode) with SiLU, shifting the conv state in place.
void buildConvUpdate(Kernel &k, const Specialization &spec);

/// Registers every model kernel in `registry`.
llvm::Error registerModelKernels(KernelRegistry &registry);

/// Registers the example kernels (vector_add, softmax, cumsum, gemm_bf16,
/// gemm_e4m3): lowering regression tests for each op family.
llvm::Error registerExampleKernels(KernelRegistry &registry);

} // namespace tilejit::models

#endif // TILEJIT_MODELS_KERNELS_H
