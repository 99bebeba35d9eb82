// The independent sequential f64 reference of docs/numerics.md (R1-R9): every op
// computes in double and applies exactly the rounding points the spec names. No
// chunking and no fusion: this is the oracle kernels are held against.
#ifndef TILEJIT_MODELS_REFERENCE_H
#define TILEJIT_MODELS_REFERENCE_H

#include "tilejit/models/nemotron_h/NemotronH.h"
#include "tilejit/support/FloatFormats.h"

namespace tilejit::models::ref {

// Rounding points. A double is narrowed through f32 with round-to-odd, so the
// result is the single correctly rounded f64 -> bf16 / e4m3 conversion (RNE,
// e4m3 saturating to +-448), not a double rounding.

/// bf16(v), round to nearest even.
uint16_t bf16Bits(double v);
/// e4m3(v), round to nearest even, saturating to +-448.
uint8_t e4m3Code(double v);
double bf16Value(uint16_t bits);
double e4m3Value(uint8_t code);
/// Every element rounded to bf16: the store of an op's f64 result.
Tensor<uint16_t> toBF16(const Tensor<double> &t);
/// The exact values of bf16 bits.
Tensor<double> fromBF16(const Tensor<uint16_t> &t);

double silu(double v);
/// v if v > 20, else log1p(e^v).
double softplus(double v);

/// R1: FP8 W8A8 linear before its final bf16 store: x [M, K] bf16, weight
/// [N, K] e4m3; a_q = e4m3(x / inputScale), y = (inputScale * weightScale) *
/// sum_k a_q * w, accumulated exactly. Returns y [M, N].
llvm::Expected<Tensor<double>> linearFP8(const Tensor<uint16_t> &x,
                                         const Tensor<uint8_t> &weight, float weightScale,
                                         float inputScale);
/// R1b: bf16 linear before its bf16 store: y [M, N] = x [M, K] * weight [N, K]^T.
llvm::Expected<Tensor<double>> linearBF16(const Tensor<uint16_t> &x,
                                          const Tensor<uint16_t> &weight);
/// R1 or R1b, as `projection` is FP8 or bf16.
llvm::Expected<Tensor<double>> linear(const Tensor<uint16_t> &x,
                                      const Projection &projection);

/// The result of R3 on one sequence.
struct ConvPrefillResult {
  Tensor<double> out;     ///< [L, C] silu(pre), before the bf16 store
  Tensor<uint16_t> state; ///< [C, K-1] the last K-1 raw inputs, oldest first
};
/// R3: causal depthwise conv + SiLU over one sequence. xBC [L, C] bf16,
/// weight [C, K] bf16 (tap K-1 multiplies the current token), bias [C] bf16,
/// initialState [C, K-1] bf16 or null for a fresh sequence.
llvm::Expected<ConvPrefillResult> convPrefill(const Tensor<uint16_t> &xBC,
                                              const Tensor<uint16_t> &weight,
                                              const Tensor<uint16_t> &bias,
                                              const Tensor<uint16_t> *initialState);
/// R3d: one token per row. xt [B, C] bf16; state [B, C, K-1] bf16 is shifted in
/// place. Returns silu(pre) [B, C] before the bf16 store.
llvm::Expected<Tensor<double>> convUpdate(const Tensor<uint16_t> &xt,
                                          const Tensor<uint16_t> &weight,
                                          const Tensor<uint16_t> &bias,
                                          Tensor<uint16_t> &state);

/// Per-head SSM parameters (R4/R5), each [H], and the dt' clamp.
struct SsmParams {
  Tensor<float> aLog;
  Tensor<float> dtBias;
  Tensor<float> d;
  double dtMin = 0.0;
  double dtMax = std::numeric_limits<double>::infinity();

  /// The parameters of `weights` with `config`'s clamp.
  static SsmParams of(const NemotronHConfig &config, const MambaLayerWeights &weights);
};
/// R4: A = -exp(A_log).
double decayRate(float aLog);
/// R4: dt' = clamp(softplus(dt + dtBias), dtMin, dtMax).
double timeStep(double dt, double dtBias, double dtMin, double dtMax);

/// The result of R5 on one sequence.
struct SsmScanResult {
  Tensor<double> y;     ///< [T, H, P] before the bf16 store
  Tensor<double> state; ///< [H, P, N] final state before the f32 store
};
/// R5: the sequential recurrence over one sequence (never chunked). x [T, H, P],
/// dt [T, H], B and C [T, G, N], all bf16; head h uses group h / (H / G).
/// initialState [H, P, N] f32, or null for zeros.
llvm::Expected<SsmScanResult> ssmScan(const Tensor<uint16_t> &x,
                                      const Tensor<uint16_t> &dt,
                                      const Tensor<uint16_t> &B,
                                      const Tensor<uint16_t> &C, const SsmParams &params,
                                      const Tensor<float> *initialState);
/// R5p-m's yardstick: R5p's chunked algorithm over one sequence (chunks of
/// `chunk` tokens from its first) with the upstream scheme's three bf16
/// roundings -- the decayed CB mix, the decayed dt' x of the chunk's state
/// contribution, and the carried state where it enters C S_in -- and f64
/// arithmetic otherwise. Operands as ssmScan's. `stateRounding` TowardZero
/// also keeps the carried state itself in bf16 by truncation (a kernel storing
/// its state as bf16 with cvt.rz): the counterfactual the 1.25x margin
/// separates. The returned state is the f64 state after the last chunk.
llvm::Expected<SsmScanResult>
ssdYardstick(const Tensor<uint16_t> &x, const Tensor<uint16_t> &dt,
             const Tensor<uint16_t> &B, const Tensor<uint16_t> &C,
             const SsmParams &params, const Tensor<float> *initialState, int64_t chunk,
             Rounding stateRounding = Rounding::NearestEven);
/// R5d: one step per row. x [R, H, P], dt [R, H], B and C [R, G, N] bf16; state
/// [R, H, P, N] f32 is updated in place (stored f32). y [R, H, P] uses the
/// unrounded new state and is returned before its bf16 store.
llvm::Expected<Tensor<double>> ssmUpdate(const Tensor<uint16_t> &x,
                                         const Tensor<uint16_t> &dt,
                                         const Tensor<uint16_t> &B,
                                         const Tensor<uint16_t> &C,
                                         const SsmParams &params, Tensor<float> &state);

/// R6: gated group RMSNorm (norm_before_gate = False). y, z [T, I] bf16,
/// weight [I] bf16: v = y * silu(z); per group of `groupSize` channels
/// r = 1 / sqrt(mean(v^2) + eps); returns w * bf16(v * r) before the final bf16.
llvm::Expected<Tensor<double>> gatedRmsNorm(const Tensor<uint16_t> &y,
                                            const Tensor<uint16_t> &z,
                                            const Tensor<uint16_t> &weight,
                                            int64_t groupSize, double eps);

/// R8: the paged recurrent state of one layer, one page per slot.
struct PagedState {
  Tensor<uint16_t> conv; ///< [slots, Cd, K-1] bf16, taps oldest -> newest
  Tensor<float> ssm;     ///< [slots, H, P, N] f32

  int64_t numSlots() const { return conv.rank() ? conv.dim(0) : 0; }
  /// Zeroed pages for `slots` slots at `config`'s geometry.
  static PagedState zeros(const NemotronHConfig &config, int64_t slots);
};
/// R8: checks a batch's slot indices: negative = padding, others must be
/// below `numSlots` and pairwise distinct. `entry` names a batch entry in the
/// message ("row" for decode, "sequence" for prefill).
llvm::Error checkSlots(llvm::ArrayRef<int64_t> slots, int64_t numSlots,
                       llvm::StringRef entry = "row");
/// R3d on paged state: row r uses slot slots[r]; padding rows output zero and
/// touch nothing. convPage [slots, C, K-1].
llvm::Expected<Tensor<double>> convUpdatePaged(const Tensor<uint16_t> &xt,
                                               const Tensor<uint16_t> &weight,
                                               const Tensor<uint16_t> &bias,
                                               llvm::ArrayRef<int64_t> slots,
                                               Tensor<uint16_t> &convPage);
/// R5d on paged state: ssmPage [slots, H, P, N]; padding rows as above.
llvm::Expected<Tensor<double>>
ssmUpdatePaged(const Tensor<uint16_t> &x, const Tensor<uint16_t> &dt,
               const Tensor<uint16_t> &B, const Tensor<uint16_t> &C,
               const SsmParams &params, llvm::ArrayRef<int64_t> slots,
               Tensor<float> &ssmPage);

/// R9: the chunks of a packed varlen batch. Chunk k covers tokens
/// [chunkBegin[k], chunkEnd[k]) of sequence chunkSequence[k]; chunks tile each
/// sequence from its start and hold 1..Q tokens.
struct VarlenChunks {
  std::vector<int64_t> chunkSequence;
  std::vector<int64_t> chunkBegin;
  std::vector<int64_t> chunkEnd;

  int64_t numChunks() const { return int64_t(chunkSequence.size()); }
};
/// R9: validates cu_seqlens [S + 1] (starts at 0, strictly increasing: empty
/// sequences are refused, ends at numTokens) and tiles it with chunks of Q.
llvm::Expected<VarlenChunks> varlenChunks(llvm::ArrayRef<int64_t> cuSeqlens,
                                          int64_t numTokens, int64_t chunkSize);

/// R7 decode: one token per row. hidden [B, hiddenSize] bf16; row r continues
/// from slot slots[r] of `state` (negative: padding, output zero). Returns the
/// bf16 mixer output [B, hiddenSize].
llvm::Expected<Tensor<uint16_t>> mixerDecode(const NemotronHConfig &config,
                                             const MambaLayerWeights &weights,
                                             const Tensor<uint16_t> &hidden,
                                             llvm::ArrayRef<int64_t> slots,
                                             PagedState &state);

/// A packed prefill batch of S sequences.
struct PrefillBatch {
  std::vector<int64_t> cuSeqlens;     ///< [S + 1]
  std::vector<int64_t> slots;         ///< [S]; negative: padding sequence
  std::vector<bool> continueFromSlot; ///< [S]; false: start from zeros
};
/// R7 prefill: hidden [T, hiddenSize] bf16 packed per `batch`. Each sequence
/// starts fresh or continues from its slot and writes its final state back.
/// `yardstickChunk` > 0 runs the SSD as R5p-m's yardstick (ssdYardstick at that
/// chunk) instead of the sequential R5: the layer output a reduced-precision
/// SSD is held to.
llvm::Expected<Tensor<uint16_t>>
mixerPrefill(const NemotronHConfig &config, const MambaLayerWeights &weights,
             const Tensor<uint16_t> &hidden, const PrefillBatch &batch, PagedState &state,
             int64_t yardstickChunk = 0);

} // namespace tilejit::models::ref

#endif // TILEJIT_MODELS_REFERENCE_H
