// The layer builder both NemotronH planners share (Planner.cpp): a layer's
// buffers and launches, the head of the layer by mode (decode's fused in_proj +
// conv update, prefill's in_proj GEMM), the tail (gated norm, out_proj) shared.
// Every launch records its role, its weight slot and the bytes it must move.
#ifndef TILEJIT_MODELS_NEMOTRON_H_LAYERBUILDER_H
#define TILEJIT_MODELS_NEMOTRON_H_LAYERBUILDER_H

#include "tilejit/models/nemotron_h/Planner.h"

namespace tilejit::models::detail {

/// A layer's parameters and pages as plan arguments.
struct LayerArgs {
  PlanArg inW, convW, convB, aLog, dtBias, d, normW, outW, convPage, ssmPage;
};

/// What one layer's launches read and write besides its own parameters.
struct LayerIO {
  PlanArg in, out; ///< act<i>, act<i+1>
  PlanArg slots;   ///< one slot per row (decode) or sequence (prefill)
  PlanArg z, y, normed;
  int64_t zStride = 0; ///< row stride of z (prefill reads it inside zxbcdt)
};

/// Adds the layers of one plan, in order.
class LayerBuilder {
public:
  LayerBuilder(StepPlan &plan, const KernelRegistry &registry, const NemotronHConfig &c,
               const PlanOptions &options, int64_t rows)
      : plan(plan), registry(registry), c(c), options(options), rows(rows) {}

  /// Layer `i`'s input (act<i>), its new output act<i+1> of `rows` rows and
  /// the batch's slots: what both modes' layers start from.
  LayerIO layerIO(size_t i, int64_t rows, const PlanArg &slots);
  /// Declares `w`'s weights (borrowing their host bytes) and pages.
  LayerArgs addLayerBuffers(const MambaLayerWeights &w);
  /// An intermediate of layer `layer`: shared by all layers unless the
  /// options ask for one per layer.
  PlanArg intermediate(int64_t layer, llvm::StringRef name, DType type,
                       std::vector<int64_t> shape);
  /// The gated norm's output: e4m3 codes before an FP8 out_proj. Shared by
  /// layers of both kinds it is sized for bf16, the codes in its first bytes.
  PlanArg normed(const MambaLayerWeights &w, std::vector<int64_t> shape);

  /// Kernel `name` at `geometry`, with the tuned values and the caller's
  /// overrides (planKernel).
  llvm::Expected<Specialization> kernel(llvm::StringRef name, ConstantValues geometry);
  /// Appends a launch of `kernelName` built with `spec` for layer `w`.
  void launch(const MambaLayerWeights &w, llvm::StringRef role,
              llvm::StringRef kernelName, const Specialization &spec,
              std::array<int64_t, 3> grid, std::vector<PlanArg> args, int64_t bytesRead,
              int64_t bytesWritten, bool specializedToWeights = false);
  /// `weight` as kernel `kernel` built with `spec` reads its parameter
  /// "weight": in the layout the kernel declares (KernelDef::weightLayouts).
  PlanArg weightFor(const PlanArg &weight, llvm::StringRef kernel,
                    const Specialization &spec) const;
  int64_t bytes(const PlanArg &arg) const {
    return int64_t(plan.buffers.at(arg.buffer).bytes);
  }

  /// gemmTiles for a linear of `columns` x `inner`, with decodeKSplits in
  /// decode (`decode`; prefill's tiles are many).
  ConstantValues linearTiles(bool fp8, int64_t columns, int64_t inner, bool decode) const;
  /// The out_proj kernel built with `spec` as the linear `out` = `input` x
  /// `weight`^T of `columns` outputs (`scale`: s_x * s_w for e4m3, none for
  /// bf16), reading `bytesRead`: one launch, or with k_splits > 1 out_proj
  /// into f32 partials [k_splits, rows, columns] (a buffer per role) and
  /// split_k_sum into `out`; with tail_splits > 1 the same for the tailRows
  /// rows only (partials [tail_splits, tail, columns]), the rest of `out`
  /// written whole by the one out_proj launch.
  llvm::Error addLinear(const MambaLayerWeights &w, llvm::StringRef role,
                        const Specialization &spec, const PlanArg &input,
                        const PlanArg &weight, const PlanArg &out,
                        std::optional<PlanArg> scale, int64_t columns, int64_t bytesRead);
  llvm::Error addTailSplitLinear(const MambaLayerWeights &w, llvm::StringRef role,
                                 const Specialization &spec, const PlanArg &input,
                                 const PlanArg &weight, const PlanArg &out,
                                 std::optional<PlanArg> scale, int64_t columns,
                                 int64_t bytesRead);
  /// split_k_sum over `partials` [splits, summed, columns] into `out`'s last
  /// `summed` rows (all `rows` unless `tail`, the tail-split form's).
  llvm::Error addSplitSum(const MambaLayerWeights &w, llvm::StringRef role,
                          const PlanArg &partials, const PlanArg &out,
                          std::optional<PlanArg> scale, int64_t columns, int64_t splits,
                          std::optional<int64_t> tail);

  /// in_proj as prefill runs it, for `rows` rows: R1 (the static quant,
  /// then the e4m3 GEMM) or R1b, into `zxbcdt` [rows, z | xBC | dt]; the
  /// split (R2) is the column offsets the next kernels read at. The GEMM is
  /// the out_proj kernel at these dimensions, on the prefill GEMM tiles.
  llvm::Error addInProjGemm(const MambaLayerWeights &w, const LayerArgs &args,
                            const PlanArg &in, const PlanArg &zxbcdt, bool decode);
  /// Decode's fused in_proj_conv for `rows` rows: R1 or R1b, the split, and
  /// the conv update on the xBC columns, writing `io.z`, `xBC` and `dt`.
  llvm::Error addInProjConv(const MambaLayerWeights &w, const LayerArgs &args,
                            const LayerIO &io, const PlanArg &slots, const PlanArg &xBC,
                            const PlanArg &dt);
  /// R6's gated RMSNorm of `io.y` by `io.z` into `io.normed` (e4m3 at the
  /// out_proj input scale before an FP8 out_proj), then out_proj into
  /// `io.out`: the tail both modes share. `gemm`: prefill's tensor-core tiles.
  llvm::Error addNormAndOutProj(const MambaLayerWeights &w, const LayerArgs &args,
                                const LayerIO &io, bool gemm, bool decode);

  /// Launches quantize_e4m3 of the [rows, width] bf16 activation `in` with the
  /// in_proj's s_x into the layer's act_q buffer and returns that buffer.
  llvm::Expected<PlanArg> quantizedInput(const MambaLayerWeights &w, const PlanArg &in,
                                         int64_t width);

private:
  StepPlan &plan;
  const KernelRegistry &registry;
  const NemotronHConfig &c;
  const PlanOptions &options;
  int64_t rows; ///< decode rows, or prefill tokens
};

/// Whether decode's in_proj for `rows` rows of `hidden` runs as prefill's
/// GEMM (LayerBuilder::addInProjGemm) instead of the fused in_proj_conv.
bool decodeGemm(const PlanOptions &options, int64_t rows, int64_t hidden, bool fp8);
/// The code of an element-type constant (elementType in mamba2/Registration.h:
/// 0 bf16, 1 f16, 2 f32) for `type`.
int64_t elementTypeCode(DType type);
/// Sets the element-type constants `typeConstants` of a kernel touching the
/// SSM page to `state`'s type; nothing for an f32 page, so that f32 plans
/// build (and look up tuned constants for) exactly the kernels they did.
void addSsmStateConstants(const SsmStateOptions &state, ConstantValues &geometry,
                          std::initializer_list<const char *> typeConstants);

/// From this many rows on decode's out_proj runs as the prefill GEMM too.
constexpr int64_t kDecodeOutGemmRows = 256;

/// Whether the decode projection `kernel` of `rows` rows takes the skinny
/// form: as the caller says (`--set KERNEL.skinny=0|1`; naming `direct` or
/// `chunked` keeps that form), else from 2 to 63 rows. `rows` 0: only what the
/// caller says.
bool skinnyProjection(const KernelOverrides &overrides, llvm::StringRef kernel,
                      int64_t rows);
/// The skinny form's tiles of `kernel` for `rows` rows.
ConstantValues skinnyTiles(llvm::StringRef kernel, int64_t rows, bool fp8);

/// out_proj's decode tiles for `rows` rows: direct tensor-core operands for a
/// few rows, 16-row tiles from 16 rows, else the GEMV.
ConstantValues decodeOutTiles(const KernelOverrides &overrides, int64_t rows, bool fp8);
/// Whether gemmTiles gives the TMA producer tiles.
bool producerTiles(bool fp8, const std::optional<Arch> &arch, int64_t inner);
/// Tensor-core GEMM tiles of the prefill projections (LayerBuilder.cpp).
ConstantValues gemmTiles(bool fp8, const std::optional<Arch> &arch, int64_t inner);

/// The caller's out_proj.k_splits, or 0 when not set: 1 keeps every
/// projection unsplit (the plans before split-K), S > 1 runs decode's
/// projections as the split GEMM at every batch.
int64_t kSplitsOverride(const KernelOverrides &overrides);
/// The programs a projection launch runs per row tile over `columns` output
/// columns: one per column tile.
int64_t columnPrograms(const Specialization &spec, int64_t columns);
/// The K splits of a decode GEMM of `rows` x `columns` over K = `inner` on
/// `tiles` (gemmTiles) for `options.arch`'s device (1 without one, or with
/// tiles enough), its partials within twice the weight's bytes.
int64_t decodeKSplits(const PlanOptions &options, const ConstantValues &tiles,
                      int64_t rows, int64_t columns, int64_t inner, int64_t weightBytes);
/// The last rows whose tiles out_proj's tail_splits divides `splits` ways:
/// the fewest whole row tiles of `blockM` (the last one ragged) that minimize
/// the busiest of `programs` persistent programs walking the items in order;
/// 0 where no split helps (as tilejit.ops' tail_rows).
int64_t tailRows(int64_t rows, int64_t blockM, int64_t columns, int64_t splits,
                 int64_t programs);
/// Whether decode's out_proj (`hidden` x `inner`) runs as the GEMM: where
/// in_proj does (decodeGemm) from kDecodeOutGemmRows rows, or where split-K
/// fills the multiprocessors (decodeKSplits), unless the caller's
/// out_proj.k_splits says otherwise (kSplitsOverride).
bool decodeOutGemm(const PlanOptions &options, int64_t rows, int64_t hidden,
                   int64_t inner, bool fp8);

} // namespace tilejit::models::detail

#endif // TILEJIT_MODELS_NEMOTRON_H_LAYERBUILDER_H
