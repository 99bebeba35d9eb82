// The tuning problems of the kernels the models register: how `tilejit tune`
// launches and checks each tunable kernel (tuning/TuneProblem.h).
#ifndef TILEJIT_MODELS_TUNEPROBLEMS_H
#define TILEJIT_MODELS_TUNEPROBLEMS_H

#include "tilejit/tuning/TuneProblem.h"

namespace tilejit::models {

/// The problems of the tunable Mamba2 kernels (every kernel of the decode
/// step but gated_rmsnorm, which has no launch choice, and ssd_prefill), next
/// to their registration in models/mamba2/.
llvm::Error registerModelTuneProblems(tuning::TuneProblemRegistry &registry);

namespace detail {
/// A decode kernel's problem keyed by rows: tuned at 1 row unless --shape
/// says otherwise, checked at 3 in StepCheck's bf16 band (5e-2 / 1e-2).
tuning::TuneProblem decodeRowsProblem(llvm::StringRef kernel);
/// quantize_e4m3, split_k_sum, conv_update, ssm_update and out_proj's
/// problems (models/mamba2/DecodeTuneProblems.cpp).
std::vector<tuning::TuneProblem> decodeTuneProblems();
} // namespace detail

/// The problems of the example kernels (vector_add, gemm_bf16, gemm_e4m3,
/// softmax, cumsum).
llvm::Error registerExampleTuneProblems(tuning::TuneProblemRegistry &registry);

} // namespace tilejit::models

#endif // TILEJIT_MODELS_TUNEPROBLEMS_H
