// The tuning problems of the kernels the models register: how `tilejit tune`
// launches and checks each tunable kernel (tuning/TuneProblem.h).
#ifndef TILEJIT_MODELS_TUNEPROBLEMS_H
#define TILEJIT_MODELS_TUNEPROBLEMS_H

#include "tilejit/tuning/TuneProblem.h"

namespace tilejit::models {

/// The problems of the tunable Mamba2 kernels (in_proj_conv, ssd_prefill),
/// next to their registration in models/mamba2/.
llvm::Error registerModelTuneProblems(tuning::TuneProblemRegistry &registry);

/// The problems of the example kernels (vector_add, gemm_bf16, gemm_e4m3,
/// softmax, cumsum).
llvm::Error registerExampleTuneProblems(tuning::TuneProblemRegistry &registry);

} // namespace tilejit::models

#endif // TILEJIT_MODELS_TUNEPROBLEMS_H
