// R5p's chunk step (docs/numerics.md#r5p-chunked-ssd-prefill), shared by the SSD
// kernels (SsdPrefill.cpp): the constants they share, their per-token operands in
// any of the element types tilejit.ops' callers pass, and one chunk's products.
#ifndef TILEJIT_MODELS_MAMBA2_SSDCHUNK_H
#define TILEJIT_MODELS_MAMBA2_SSDCHUNK_H

#include "tilejit/Builder/Builder.h"
#include "tilejit/Builder/KernelRegistry.h"
#include "tilejit/models/mamba2/Kernels.h"

#include <functional>
#include <utility>
#include <vector>

namespace tilejit::models {

/// The constants the SSD kernels share.
struct SsdShape {
  int64_t heads, headDim, stateSize, groups, q, bp, dtStride, dtCol, inner, channels;
  /// The state's tile width: state rounded up to a power of two (register
  /// layouts need one), at least 16 (the K of an mma); the views mask the
  /// columns past `state`.
  int64_t stateTile;
  /// x, B and C as three tensors of their own row strides (split_xbc) rather
  /// than column ranges of one xBC row `channels` wide.
  bool splitXBC;
  int64_t xStride, bStride, cStride;
  DType xType, bcType, dtType, aType, dtBiasType;
  bool aIsLog, softplusDt;
  /// R5p-m (SsdPrecision): whether the carried state and f16 or f32 x, B or
  /// C enter the products as hi + lo pairs (`exact`), and whether the decayed
  /// CB mix and dt x do (`exactMix`).
  bool exact, exactMix;
  explicit SsdShape(const Specialization &spec);
};

/// The per-token inputs every chunk reads and the head's scalars.
struct SsdInputs {
  Value x, b, c, dtRaw, aParam, dtBias, dtMin, dtMax;
  Value a, bias; ///< head h's A and dt bias, loaded once by loadHead

  void loadHead(const SsdShape &g, Value h);
  /// Declares the parameters in the kernels' order (xbc, or x, b and c; dt,
  /// a_log or a, dt_bias).
  static SsdInputs declare(Kernel &k, const SsdShape &g);
};

/// One chunk's tiles for the `bp` state rows from p0 of head h; rows past len
/// read zeros. x, b and cm keep their element types.
struct Chunk {
  Value len, rowBase, x, b, cm, dt, lam, lamEnd;
};

/// A dot operand as hi + lo bf16 halves; lo is null for an exact bf16 value.
using Halves = std::pair<Value, Value>;
/// v as hi + lo bf16 halves (`exact`), or v rounded once to bf16 (lo null).
Halves splitBF16(Value v, bool exact);
/// A loaded operand as a dot takes it: bf16 as it is, f16 or f32 split.
Halves halves(Value v, bool exact);
Halves transposeBoth(Halves h);
/// acc + a b over the halves, lo x lo left out (below the pair's precision).
Value dotHalves(Halves a, Halves b, Value acc);

/// R4's dt' of `rows` tokens from rowBase for head h, 0 past `len`.
Value chunkDt(const SsdShape &g, const SsdInputs &in, Value h, Value rowBase, Value len,
              int64_t rows);
/// i >= j over a [rows, rows] tile: the causal mask of a chunk's mix.
Value causalMask(int64_t rows);
/// R5p step 4's mix CB_ij exp(L_i - L_j) dt_j of rows i against columns j,
/// the upper triangle selected away (never multiplied by zero) where `causal`
/// is given.
Value decayedMix(Value cb, Value lamI, Value lamJ, Value dtJ, Value causal);
/// x with its non-finite elements as 0, and a NaN marker where they were (0
/// elsewhere): the products take x finite and each marker reaches y from its
/// own token on, so that NaN never flows backwards in time.
struct GuardedX {
  Value finite, markers;
  /// x (the tile guardNonFinite read) with its non-finite elements as 0.
  Value x(Value raw) const;
};
GuardedX guardNonFinite(Value x);

/// The tiles loadChunk reads for one chunk of `len` tokens from rowBase (dt
/// as read).
struct ChunkTiles {
  Value x, b, cm, dt;
};
ChunkTiles loadChunkTiles(const SsdShape &g, const SsdInputs &in, Value h, Value p0,
                          Value rowBase, Value len, bool withC);
/// The chunk of those tiles: R5p step 1 (dt' and its decay cumsum).
Chunk chunkOf(const SsdShape &g, const SsdInputs &in, Value rowBase, Value len,
              const ChunkTiles &tiles);
Chunk loadChunk(const SsdShape &g, const SsdInputs &in, Value h, Value p0, Value t0,
                Value t1, bool withC);

using ChunkStep = std::function<std::vector<Value>(
    Value c, const std::vector<Value> &loaded, std::vector<Value> carried)>;

/// A walk over the chunks [lo, hi) of a kernel whose chunk metadata is two
/// loads deep: `direct` scalars indexed by the chunk (its tokens among them),
/// and `indirect` ones indexed by what those read (its sequence's).
struct ChunkWalk {
  const SsdShape &g;
  const SsdInputs &in;
  Value h, p0;
  bool withC;
  std::function<std::vector<Value>(Value c)> direct;
  std::function<std::vector<Value>(const std::vector<Value> &direct)> indirect;
  /// The chunk's first token (i32) and its token count from its direct ones.
  std::function<std::pair<Value, Value>(const std::vector<Value> &direct)> rows;

  /// for c in [lo, hi): carried = step(c, loaded, carried), loaded the
  /// chunk's direct then indirect scalars.
  std::vector<Value> walk(Value lo, Value hi, std::vector<Value> init,
                          const ChunkStep &step) const;
  /// The chunk's tiles, loaded at the rows its scalars `loaded` give.
  ChunkTiles tilesFor(const std::vector<Value> &loaded) const;
};
/// Steps 2-3: the state after the chunk from the state s before it.
Value stateAfter(const SsdShape &g, const Chunk &c, Value s);
/// Steps 4-5: the chunk's y [q, bp] (f32) from the state s before it; `finiteX`
/// false takes the path that keeps a non-finite x from flowing backwards.
Value chunkOutput(const SsdShape &g, const Chunk &c, Value s, Value dCoef, bool finiteX);
/// Whether some x of the chunk is not finite (a scalar).
Value anyNonFinite(const Chunk &c);
/// Columns [first, first + width) of rows `stride` apart from `row`, as a view
/// and where in it a column of the slice lies. A slice that starts on whole
/// 16-byte vectors of `type` (width a multiple of them: the plans' kernels)
/// gets a view at its start; any other (e.g. head_dim 5) a view of its rows
/// up to the slice's end with `first` as an offset, so that no vector access
/// assumes a misaligned base (the lowering narrows its vectors to the offset).
struct RowSlice {
  View view;
  Value start; ///< the slice's first element when the view starts there
  Value row, first;
  Dim rows;
  int64_t width, stride;
  DType type;
  Operand at(const Operand &col) const {
    return start.valid() ? col : Operand(first + col);
  }
  /// The slice `columns` further along the rows.
  RowSlice shifted(int64_t columns) const;
};
RowSlice rowSlice(Value row, Value first, Dim rows, int64_t width, int64_t stride,
                  DType type);

/// The options of y for tilejit.ops' callers (ssdOutputConstants) and the
/// parameters they add to an output kernel: D ([heads], or [heads, head_dim]
/// with d_per_p) and the gate z ([T, z_stride] with `gate`).
struct OutputParams {
  Value d, z;
  DType yType, dType, zType;
  bool dPerP, gated;
  int64_t zStride;
  OutputParams(const Specialization &spec, const SsdShape &g);
  void declareD(Kernel &k, const SsdShape &g);
  void declareZ(Kernel &k);
  /// D of head h for the state rows from p0: a scalar, or one [1, bp] row.
  Value skip(const SsdShape &g, Value h, Value p0) const;
  /// R5p's gate (vLLM's z), silu(z) of `rows` tokens from rowBase ([rows,
  /// bp], rows past len masked), or null without it.
  Value gate(const SsdShape &g, Value rowBase, Value len, Value h, Value p0,
             int64_t rows) const;
};

/// The [rows, state] view of a [.., heads, head_dim, state] tensor's entry
/// `index` (a page slot, a span or a chunk), head h.
View stateView(Value base, Value index, Value h, const SsdShape &g, Dim rows);

/// The SSD kernels' shared constants (shapes, chunk, tuning, conventions and
/// the operands' element types) and the rules between them.
std::vector<KernelConstant> ssdConstants();
std::vector<ConstantRule> ssdRules();
/// The options of y the output kernels share for tilejit.ops' callers (its
/// element type, the gate z, D per (head, p)).
std::vector<KernelConstant> ssdOutputConstants();
/// "`stride` is 0 or at least a * b": the rows of an operand read in place.
ConstantRule ssdStrideRule(const char *stride, const char *a, const char *b);
/// An element-type constant whose default is f32 (the plans' f32 parameters).
KernelConstant elementTypeF32(llvm::StringRef name, llvm::StringRef operand);

} // namespace tilejit::models

#endif // TILEJIT_MODELS_MAMBA2_SSDCHUNK_H
