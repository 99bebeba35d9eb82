// Building blocks the Mamba2 kernels share: the decode projection core (one
// activation row times a [BN, K] weight slab, docs/numerics.md#r1-fp8-w8a8-linear) and
// the conv update of a tile of channels (R3d).
#ifndef TILEJIT_MODELS_MAMBA2_PARTS_H
#define TILEJIT_MODELS_MAMBA2_PARTS_H

#include "tilejit/Builder/Builder.h"
#include "tilejit/Builder/KernelRegistry.h"
#include "tilejit/models/mamba2/OpChecks.h"

#include <functional>
#include <optional>

namespace tilejit::models {

/// Loads one K step of an activation row from the row starting at the given
/// pointer, in the step tile's own layout (as a projection reads its input).
using StepLoad = std::function<Value(Value rowStart)>;
/// A projection's activation computed in the kernel instead of read from
/// `input` (out_proj's gated-norm prologue, NormPrologue.h): the f32 values of
/// elements [k0, k0 + len) of tile row `m` (the row `row`), given the loader
/// of that step.
using ActivationSource =
    std::function<Value(int64_t m, Value row, int64_t k0, int64_t len, const StepLoad &)>;

/// The weight and activation of one projection as a kernel sees them.
struct ProjectionOperands {
  View weight;   ///< [N, K], e4m3 or bf16
  Value input;   ///< !tile.ptr to [rows, K] bf16, or e4m3 already quantized
  int64_t k = 0; ///< K (static)
  /// s_x: when set, the bf16 input is quantized in the kernel, a_q =
  /// e4m3(x * (1 / s_x)) (R1's static activation quant; the reciprocal may
  /// move a quotient on a rounding boundary by one e4m3 code, which R1 allows).
  std::optional<Value> quantScale;
  /// Wait for the kernels before (and signal the next) right after the first
  /// K group's weight loads are issued, before the first activation read
  /// (`dependent` = 2): the weights are on their way while the wait holds.
  bool waitAfterFirstWeights = false;
  /// When set, replaces reading `input` (and quantScale).
  ActivationSource activation;
};

/// The f32 dot products [bn] of input row `row` (a scalar i32) with weight rows
/// [n0, n0 + bn), before any output scale; `bk` is the K step. Weight bytes
/// dominate decode, so the K loop is unrolled at build time and the weight
/// loads of `group` steps at a time are issued together (more would not fit
/// the registers: each loaded element lives in its own register).
Value projectRow(const ProjectionOperands &p, Value row, Value n0, int64_t bn, int64_t bk,
                 int64_t group);

/// The f32 products [bm, bn] of input rows [m0, m0 + bm) (masked past the
/// input view's rows) with weight rows [n0, n0 + bn), before any output scale:
/// mma.sync with both operands loaded from memory straight into their
/// fragments (the kernel's config must set `direct`; its `split_k` warp groups
/// each sum a part of K). `input` is [rows, K] and `weightT` the weight as
/// [K, N] (K contiguous); with `inverseScale` the bf16 input is quantized to
/// e4m3 in its fragment (R1's static activation quant, once per element and
/// program). K steps of `bk`, the loads of `group` steps issued before their
/// products.
Value projectDirect(View input, View weightT, std::optional<Value> inverseScale, Value m0,
                    Value n0, int64_t bm, int64_t bn, int64_t k, int64_t bk,
                    int64_t group);

/// The operands of the chunked GEMV (projectChunked).
struct ChunkedProjection {
  Value weight;  ///< !tile.ptr [n, k] row-major, or packed (WeightLayout)
  int64_t n = 0; ///< weight rows (output columns)
  int64_t k = 0; ///< K; rows are whole 16-byte chunks
  DType type = DType::F8E4M3;
  bool packed = false; ///< in `block_n`-row groups of chunks (chunkedWeightLayouts)
  Value input;         ///< !tile.ptr to [rows, k] of `type`, or bf16 with quantScale
  Value rows;          ///< i32: the input's rows
  /// s_x: the bf16 input is quantized in the kernel (as ProjectionOperands).
  std::optional<Value> quantScale;
  bool waitAfterFirstWeights = false; ///< as ProjectionOperands
  ActivationSource activation;        ///< as ProjectionOperands
};

/// The f32 dot products [bm, bn] of input rows [m0, m0 + bm) with weight rows
/// [n0, n0 + bn), before any output scale, the weight read once for all bm
/// rows: K steps of `bk` elements, each thread loading one 16-byte chunk of a
/// weight row per step (the kernel's config: tile [bk / chunk, bn, chunk] with
/// that vector), the loads of `group` steps issued together. Rows past the
/// input's hold garbage the caller masks.
Value projectChunked(const ChunkedProjection &p, Value m0, Value n0, int64_t bm,
                     int64_t bn, int64_t bk, int64_t group);

/// A chunked projection's packed weight ("weight", `block_n`-row groups),
/// as KernelDef::weightLayouts; none unless `chunked` and `packed` are set.
WeightLayouts chunkedWeightLayouts(const Specialization &spec);
/// The constants that select the chunked GEMV and its packed weight.
KernelConstant projectionChunked();
KernelConstant projectionPacked();

/// The operands of the skinny projection (projectSkinny).
struct SkinnyProjection {
  Value weight;  ///< !tile.ptr [n, k] row-major, e4m3 or bf16
  int64_t n = 0; ///< weight rows (output columns)
  int64_t k = 0; ///< K
  Value input;   ///< !tile.ptr [rows, k]: bf16, or e4m3 already quantized
  Value rows;    ///< i32: the input's rows
  /// 1 / s_x: the bf16 input is quantized in the kernel (R1's static quant,
  /// once per element and program, as projectDirect).
  std::optional<Value> inverseScale;
  Operand kBegin = 0, kEnd = 0; ///< the K span the program sums
};

/// The f32 products [bm, bn] of input rows [m0, m0 + bm) (masked past the
/// input's rows) with weight rows [n0, n0 + bn) over K [kBegin, kEnd), before
/// any output scale: mma tiles of [bn, bm] with the weight as A (its rows the
/// M side), so 8 batch rows fill an m16n8 tile and every weight byte is read
/// once per program; the K loop's operands pass through `stages` shared-memory
/// buffers (the kernel's config: tile {bn, bm, bk}). K steps of `bk`.
Value projectSkinny(const SkinnyProjection &p, Value m0, Value n0, int64_t bm, int64_t bn,
                    int64_t bk);
/// The skinny projection's rows per program for a batch of `rows`: 8 up to 64.
int64_t skinnyRows(int64_t rows);
/// The constant that selects the skinny projection.
KernelConstant projectionSkinny();

/// A byte range of an invariant weight a program streams: prefetched into L2
/// before the program waits for the kernels before it.
struct WeightSlab {
  Value ptr;   ///< scalar !tile.ptr, 16-byte aligned
  Value bytes; ///< i32, a multiple of 16
};

/// Rows [row0, row0 + rows) of a row-major [totalRows, rowElements] weight of
/// `type` (clipped at its last row) as one slab; none when a row is not a
/// multiple of 16 bytes (the prefetch's granule).
std::optional<WeightSlab> weightRows(Value weight, Value row0, int64_t rows,
                                     int64_t totalRows, int64_t rowElements, DType type);

/// The start of a decode kernel (programmatic dependent launch,
/// docs/design.md#programmatic-dependent-launch). With `prefetch` = 1 the
/// programs whose `prefetcher` holds start `slab` on its way into L2. With
/// `dependent` = 1 (or 2 where the kernel cannot wait later: `waitsLater`
/// false) every program then waits for the kernels before it on the stream
/// and lets the next kernel's programs be scheduled. Call it before the
/// kernel's first read of anything but its invariant parameters. Returns
/// whether the kernel still has to wait (`dependent` = 2 and `waitsLater`).
bool dependentStart(const Specialization &spec, std::optional<WeightSlab> slab = {},
                    std::optional<Value> prefetcher = {}, bool waitsLater = false);
/// waitForPredecessors() then launchDependents().
void waitAndSignal();

/// The conv page and parameters of R3d.
struct ConvOperands {
  Value state;  ///< !tile.ptr<bf16> [slots, channels, 3], taps oldest first
  Value weight; ///< !tile.ptr<bf16> [channels, 4]
  Value bias;   ///< !tile.ptr<bf16> [channels]
  int64_t channels = 0;
  /// The page stores each slot as [3, channels] (vLLM's channel-last conv
  /// cache) instead of [channels, 3].
  bool channelLast = false;
};

/// Element strides of a conv page's (tap, channel) axes within one slot:
/// (1, 3) for [slots, channels, 3], (channels, 1) channel-last.
std::pair<int64_t, int64_t> convStateStrides(const ConvOperands &conv);

/// R3d for the channel tile `c` of one row with input `xt` (bf16) at conv
/// slot `slot`: returns bf16(silu(pre)), zero where `live` (the row's slot is
/// not padding) is false, and shifts the slot's taps in place where
/// `inRange & live`.
Value convUpdate(const ConvOperands &conv, Value slot, Value live, Value c, Value inRange,
                 Value xt);

/// The device-side checks of a kernel built with `checked` = 1 for tilejit.ops
/// (OpChecks.h): the parameters `errors` (!tile.ptr<i64>, the error word) and
/// `op` (i32, the launching op's number), declared last; inert when unchecked.
struct OpCheck {
  bool enabled = false;
  Value errors, op;

  /// Declares the two parameters when `enabled` (a kernel's `checked`).
  static OpCheck declare(Kernel &k, bool enabled);
  /// The error word of `error` at `index` (i32 or i64), an i64.
  Value word(OpError error, Value index) const;
  /// Stores the error word of `error` at `index` where `when` holds. Programs
  /// that find the same error store the same word.
  void record(Value when, OpError error, Value index) const;
  /// Stores `word` (an error word, or 0 for none) where it is not 0.
  void record(Value word) const;
};

/// The dtype of a kernel's slot tables: i64 with `slots_i64` (torch's default
/// index type, read as given: never truncated to 32 bits on the way in).
DType slotType(const Specialization &spec);

/// Elements per 16-byte access of `t`.
int64_t vectorWidth(DType t);

} // namespace tilejit::models

#endif // TILEJIT_MODELS_MAMBA2_PARTS_H
