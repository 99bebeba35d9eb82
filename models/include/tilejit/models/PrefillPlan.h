// The NemotronH Mamba2 prefill forward (docs/numerics.md#r7-the-mixer: R3 + R5p over
// a packed varlen batch, R8 pages, R9 metadata) as a plan: per layer the static
// activation quant (FP8 layers), the in_proj GEMM, the causal conv, the chunked
// SSD, the gated norm and the out_proj GEMM over named buffers. It is a
// DecodePlan (the same launch list and buffer roles), so the interpreter and
// the GPU runners of DecodeRun.h execute it unchanged.
#ifndef TILEJIT_MODELS_PREFILLPLAN_H
#define TILEJIT_MODELS_PREFILLPLAN_H

#include "tilejit/models/DecodeRun.h"
#include "tilejit/models/PrefillMetadata.h"

namespace tilejit::models {

/// A planned prefill forward of one packed batch. The chunk count is a launch
/// argument, so a plan serves batches of one layout (cu_seqlens).
struct PrefillPlan {
  DecodePlan plan;       ///< plan.rows = sequences (one slot each)
  PrefillMetadata batch; ///< the R9 metadata, chunked as the kernels chunk
  int64_t tokens = 0;
  int64_t chunk = 0; ///< tokens per chunk of the conv and the SSD

  /// Writes the batch metadata into its input buffers ("cu_seqlens", "slots",
  /// "init", "chunk_seq", "chunk_begin", "chunk_end").
  void writeInputs(HostBuffers &buffers) const;
};

/// Plans the prefill of `batch` (`tokens` packed tokens of hidden states in
/// "act0") through `layers` over pages of `numSlots` slots. A bad batch (empty
/// or unordered sequences, duplicate or out-of-range slots) is an error naming
/// its numbers, before anything is planned.
llvm::Expected<PrefillPlan> planPrefill(const KernelRegistry &registry,
                                        const NemotronHConfig &config,
                                        const std::vector<MambaLayerWeights> &layers,
                                        const ref::PrefillBatch &batch, int64_t tokens,
                                        int64_t numSlots,
                                        const KernelOverrides &overrides = {},
                                        const TunedConstants &tuned = nullptr);

} // namespace tilejit::models

#endif // TILEJIT_MODELS_PREFILLPLAN_H
