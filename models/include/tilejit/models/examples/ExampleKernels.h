// The example kernels: lowering regression tests for each op family, and the
// streaming kernels that measure a launch's floor.
#ifndef TILEJIT_MODELS_EXAMPLES_EXAMPLEKERNELS_H
#define TILEJIT_MODELS_EXAMPLES_EXAMPLEKERNELS_H

#include "tilejit/Builder/KernelRegistry.h"

namespace tilejit::models {

/// Registers the example kernels (vector_add, softmax, cumsum, gemm_bf16,
/// gemm_e4m3, read_bytes, stream_bytes).
llvm::Error registerExampleKernels(KernelRegistry &registry);

} // namespace tilejit::models

#endif // TILEJIT_MODELS_EXAMPLES_EXAMPLEKERNELS_H
