// Kernels the models register: the Mamba2 ops of docs/numerics.md.
#ifndef TILEJIT_MODELS_MAMBA2_KERNELS_H
#define TILEJIT_MODELS_MAMBA2_KERNELS_H

#include "tilejit/Builder/KernelRegistry.h"
#include "tilejit/models/examples/ExampleKernels.h"

namespace tilejit::models {

/// R6: gated group RMSNorm, one program per (row, group).
void buildGatedRmsNorm(Kernel &k, const Specialization &spec);
/// R3d: causal conv update (decode) with SiLU, shifting the conv state in place.
void buildConvUpdate(Kernel &k, const Specialization &spec);
/// R3 over a packed varlen batch (R9) with paged conv state (R8): prefill.
void buildConvPrefill(Kernel &k, const Specialization &spec);
/// Decode in_proj (R1/R1b) fused with the split (R2) and the conv update (R3d).
void buildInProjConv(Kernel &k, const Specialization &spec);
/// R5d: the selective state update on the SSM page, in place.
void buildSsmUpdate(Kernel &k, const Specialization &spec);
/// R1's static activation quant of a bf16 [rows, width] tensor to e4m3.
void buildQuantizeE4m3(Kernel &k, const Specialization &spec);
/// R5p-m: the operands of ssd_prefill's tensor-core products (its `precision`
/// constant).
enum class SsdPrecision : int64_t {
  /// f32 operands (the carried state, the decayed CB mix, dt x) as hi + lo
  /// bf16 pairs: R5p's band against the f64 R5.
  Exact = 0,
  /// Single bf16 operands, the upstream (mamba_ssm) scheme: held to the error
  /// of the same chunked algorithm computed in torch with bf16 operands.
  UpstreamBF16 = 1,
  /// The carried state as hi + lo pairs, the mix and dt x single bf16: five
  /// products a chunk instead of seven, held to R5p-m like UpstreamBF16.
  SplitState = 2,
};
/// The prefill SSD's schedule: spans of chunks walked by ssd_prefill, or
/// chunk-parallel (one-chunk spans, ssd_chunk_scan; docs/models.md).
enum class SsdSchedule { Span, Chunked };
/// R5p: the chunked SSD of prefill over a varlen stream, state pages in place
/// (span_states = 0), or over one span of chunks from its entering state.
void buildSsdPrefill(Kernel &k, const Specialization &spec);
/// R5p steps 1-3 per span of chunks: the state of the span's tail (its chunks
/// from its last sequence start, or all) summed from zero, and its decay.
void buildSsdSpanState(Kernel &k, const Specialization &spec);
/// R5p's state passing over spans: each span's entering state, the previous
/// span's exit (its tail from the tail's starting state).
void buildSsdStatePass(Kernel &k, const Specialization &spec);
/// ssd_state_pass's per-span flags: the span's tail starts at a sequence
/// start (else it continues the span's entering state), that sequence
/// continues from its page slot (else from zeros), and it ends in the span.
enum SsdSpanFlags : int32_t {
  kSpanTailStarts = 2,
  kSpanTailFromPage = 4,
  kSpanTailEnds = 8
};
/// R5p's outputs of one chunk's row block from the chunk's entering state
/// (chunk-parallel: no walk).
void buildSsdChunkScan(Kernel &k, const Specialization &spec);
/// tilejit.ops' device-side check of a varlen batch's metadata (R9, OpChecks.h):
/// its verdict for conv_prefill and ssd_prefill built with `checked`.
void buildCheckVarlen(Kernel &k, const Specialization &spec);
/// Decode out_proj (R1 on e4m3 activations, or R1b).
void buildOutProj(Kernel &k, const Specialization &spec);
/// The sum of out_proj's split-K partials in split order, scaled.
void buildSplitKSum(Kernel &k, const Specialization &spec);

/// Registers every model kernel in `registry`.
llvm::Error registerModelKernels(KernelRegistry &registry);

} // namespace tilejit::models

#endif // TILEJIT_MODELS_MAMBA2_KERNELS_H
