// The NemotronH Mamba2 mixer as step plans (plan/StepPlan.h), decode and
// prefill, both built layer by layer by one layer builder (LayerBuilder.h):
// - decode (docs/numerics.md R7 with R3d + R5d): per layer the fused
//   in_proj -> split -> conv update, the state update, the gated norm and
//   out_proj;
// - prefill (R7 with R3 + R5p over a packed varlen batch, R8 pages, R9
//   metadata): per layer the static activation quant (FP8 layers), the in_proj
//   GEMM, the causal conv, the chunked SSD, the gated norm and out_proj.
#ifndef TILEJIT_MODELS_NEMOTRON_H_PLANNER_H
#define TILEJIT_MODELS_NEMOTRON_H_PLANNER_H

#include "tilejit/models/mamba2/Kernels.h"
#include "tilejit/models/nemotron_h/NemotronH.h"
#include "tilejit/models/nemotron_h/PrefillMetadata.h"
#include "tilejit/models/plan/Runners.h"

namespace tilejit::models {

/// R8s: the SSM page's element type and how a step rounds into it.
struct SsmStateOptions {
  /// f32 (NemotronH's default), bf16 or f16.
  DType type = DType::F32;
  /// A 16-bit page rounded stochastically by the state update, its bits keyed
  /// by (seed, slot, element) with the decode plan's input "ssm_seed" (one
  /// i64, the session's step counter) as the seed; otherwise to nearest even.
  /// Prefill's final states round to nearest even either way.
  bool stochastic = false;

  /// Errors: another type; stochastic rounding of an f32 page.
  llvm::Error validate() const;
  /// "f32", "bf16", "f16 (stochastic rounding)".
  std::string describe() const;
  /// Parses "f32", "bf16" or "f16" (the names the front doors take).
  static llvm::Expected<DType> parseType(llvm::StringRef name);
};

/// How a plan is made beyond its geometry.
struct PlanOptions {
  /// Per-kernel constants; they win over everything.
  KernelOverrides overrides;
  /// Tuned constants (e.g. tunedFromDatabase), consulted before the overrides.
  TunedConstants tuned;
  /// Give each layer its own intermediate buffers ("l<layer>.z", ...) instead
  /// of one set shared by all layers, so a check can read every layer's
  /// intermediates after a step (checks plan small steps; real steps share).
  /// Such a plan is refused when its buffers and the check's f64 reference
  /// (about three times their bytes) exceed what the process can allocate.
  bool perLayerActivations = false;
  /// Tokens per span of the prefill SSD (rounded down to whole chunks, at
  /// least one): spans run in parallel, the state pass walks them in order.
  /// 512: at T = 8192, 16 spans give the SSD 16x the programs of one walk
  /// over the stream and the state pass 16 steps (faster on the H200:
  /// docs/journal/2026-12-01.md, "Probe 4: spans as windows", measured with
  /// bench/ssd/ssd_span_probe.py).
  int64_t ssdSpanTokens = 512;
  /// The prefill SSD's schedule; an override of ssd_chunk_scan (`tilejit run
  /// --set ssd_chunk_scan.chunk=128`) selects the chunk-parallel one too, so
  /// one run compares them.
  SsdSchedule ssdSchedule = SsdSchedule::Span;
  /// Whether an override of a kernel the plan does not launch is an error, as
  /// for `tilejit run --set` (a setting that changes nothing is a mistake).
  /// The embedding API's session settings serve its decode and prefill steps
  /// alike: each plan takes those of the kernels it launches.
  bool overridesMustApply = true;
  /// The arch the plan's kernels compile for, when known (a GPU runtime's
  /// target): its capability table picks the prefill GEMMs' pipeline. Without
  /// one, the tiles every arch runs.
  std::optional<Arch> arch;
  /// The SSM page's element type and rounding (every kernel that reads or
  /// writes the page follows it; the default builds f32 plans unchanged).
  SsmStateOptions ssmState;
};

/// The decode plan's input holding stochastic rounding's seed (one i64): the
/// session writes its step counter there before each step, so a replay of a
/// step with the same counter writes the same page bytes.
inline constexpr const char *kSsmSeedBuffer = "ssm_seed";

/// Plans one decode step through `layers` (in order, each reading the
/// previous one's output) for `rows` rows over pages of `numSlots` slots,
/// with the decode kernels of `registry` (registerModelKernels).
llvm::Expected<StepPlan> planDecodeStep(const KernelRegistry &registry,
                                        const NemotronHConfig &config,
                                        const std::vector<MambaLayerWeights> &layers,
                                        int64_t rows, int64_t numSlots,
                                        const PlanOptions &options = {});
/// A plan borrows its weights' bytes (PlanBuffer::hostWeight): the layers must
/// outlive it, so a temporary vector is refused at compile time.
llvm::Expected<StepPlan> planDecodeStep(const KernelRegistry &, const NemotronHConfig &,
                                        std::vector<MambaLayerWeights> &&, int64_t,
                                        int64_t, const PlanOptions & = {}) = delete;

/// A planned prefill forward of one packed batch. The chunk count is a launch
/// argument, so a plan serves batches of one layout (cu_seqlens).
struct PrefillPlan {
  StepPlan plan;         ///< plan.rows = sequences (one slot each)
  PrefillMetadata batch; ///< the R9 metadata, chunked as the kernels chunk
  int64_t tokens = 0;
  int64_t chunk = 0; ///< tokens per chunk of the conv and the SSD
  /// The SSD's R5p-m operands (its `precision`): the span schedule takes the
  /// exact ones unless overridden (docs/numerics.md, R5p-m); the plan's check
  /// holds a reduced mode to R5p-m's yardstick, the exact one to R5p.
  SsdPrecision ssdPrecision = SsdPrecision::Exact;

  /// Writes the batch metadata into its input buffers ("cu_seqlens", "slots",
  /// "init", "chunk_seq", "chunk_begin", "chunk_end", "span_chunk", "span_slot",
  /// "span_flags").
  void writeInputs(HostBuffers &buffers) const;
};

/// Plans the prefill of `batch` (`tokens` packed tokens of hidden states in
/// "act0") through `layers` over pages of `numSlots` slots. A bad batch (empty
/// or unordered sequences, duplicate or out-of-range slots) is an error naming
/// its numbers, before anything is planned.
llvm::Expected<PrefillPlan>
planPrefill(const KernelRegistry &registry, const NemotronHConfig &config,
            const std::vector<MambaLayerWeights> &layers, const ref::PrefillBatch &batch,
            int64_t tokens, int64_t numSlots, const PlanOptions &options = {});
llvm::Expected<PrefillPlan> planPrefill(const KernelRegistry &, const NemotronHConfig &,
                                        std::vector<MambaLayerWeights> &&,
                                        const ref::PrefillBatch &, int64_t, int64_t,
                                        const PlanOptions & = {}) = delete;

/// The out_proj kernel (the projection GEMM both plans launch) for a standalone
/// projection of `rows` rows, `geometry` holding at least inner, hidden and fp8,
/// tiled as the plans tile theirs: from kDecodeGemmRows rows the prefill GEMM
/// where decode takes it (sm_90a's producer tiles; a narrowing projection, as
/// out_proj, from kDecodeOutGemmRows), elsewhere from 64 rows the prefill
/// tiles of `options.arch`; fewer rows decode's GEMV, direct or 16-row tiles.
/// With the tuned constants and the overrides of `options` (planKernel).
llvm::Expected<Specialization> planProjection(const KernelRegistry &registry,
                                              const PlanOptions &options, int64_t rows,
                                              ConstantValues geometry);

/// The name of layer `layer`'s intermediate `name` ("z", "y", "normed", ...)
/// in a plan made with `options`: "l<layer>.<name>" with per-layer
/// activations, else the shared "<name>".
std::string intermediateBuffer(const PlanOptions &options, int64_t layer,
                               llvm::StringRef name);

} // namespace tilejit::models

#endif // TILEJIT_MODELS_NEMOTRON_H_PLANNER_H
