// The chunked decode GEMV (Parts.h, projectChunked): M <= 16 activation rows
// against a weight read once for all of them, one 16-byte chunk per thread and
// load, from a row-major weight or one the weight slot packed into the
// program's chunk order (WeightLayout), which makes each program's weight one
// contiguous run.
#include "Parts.h"
#include "Registration.h"

#include <algorithm>

namespace tilejit::models {

namespace {

/// Elements of one 16-byte chunk of `type`.
int64_t chunkElements(DType type) { return WeightLayout::kChunkBytes / dtypeBytes(type); }

/// Weight rows [n0, n0 + bn) as a [K / chunk, bn, chunk] view: chunk c of row
/// r at [c, r, :]. Packed, a program's group is one run in this very order.
View weightChunks(const ChunkedProjection &p, Value n0, int64_t bn) {
  const int64_t ce = chunkElements(p.type), chunks = p.k / ce;
  Value base = p.weight + n0.to(DType::I64) * p.k;
  if (p.packed)
    return makeView(base, {chunks, bn, ce}, {bn * ce, ce, 1});
  return makeView(base, {chunks, minimum(p.n - n0, bn), ce}, {ce, p.k, 1});
}

/// The input row starting at `rowStart` as the same view, every weight row
/// seeing the row: read from L1 in the weight chunks' own layout, so nothing
/// is exchanged. `rowStart`'s elements may be other than the weight's
/// (a fused prologue's bf16 operands): the chunk is the weight's.
View inputChunks(const ChunkedProjection &p, Value rowStart, int64_t bn) {
  const int64_t ce = chunkElements(p.type);
  return makeView(rowStart, {p.k / ce, bn, ce}, {ce, 0, 1});
}

} // namespace

Value projectChunked(const ChunkedProjection &p, Value m0, Value n0, int64_t bm,
                     int64_t bn, int64_t bk, int64_t group) {
  const int64_t ce = chunkElements(p.type), bkc = bk / ce, chunks = p.k / ce;
  std::optional<Value> inverse;
  if (p.quantScale)
    inverse = 1.0f / *p.quantScale;
  // Rows past the batch read its last row (in bounds); the caller masks them.
  std::vector<Value> rowIndex;
  std::vector<View> inputs;
  for (int64_t m = 0; m < bm; ++m) {
    rowIndex.push_back(minimum(m0 + m, p.rows - 1));
    if (!p.activation)
      inputs.push_back(inputChunks(p, p.input + rowIndex[m].to(DType::I64) * p.k, bn));
  }
  View weight = weightChunks(p, n0, bn);
  // One partial sum per row and chunk slot, so a row costs one register: a
  // chunk's products are summed by the thread that loaded it (a whole chunk a
  // thread: no shuffle in the K loop; half a chunk, as in_proj_conv's: one
  // shuffle per step and row).
  std::vector<Value> acc(bm, zeros({bkc, bn}, DType::F32));
  for (int64_t g0 = 0; g0 < chunks; g0 += group * bkc) {
    std::vector<std::pair<int64_t, Value>> weights;
    for (int64_t c0 = g0; c0 < std::min(chunks, g0 + group * bkc); c0 += bkc)
      weights.emplace_back(c0, load(weight, {c0, 0, 0}, {bkc, bn, ce}));
    if (g0 == 0 && p.waitAfterFirstWeights)
      waitAndSignal();
    for (auto &[c0, w8] : weights)
      for (int64_t m = 0; m < bm; ++m) {
        // Widened at its use: a step's 16 bytes stay 4 registers in flight.
        Value w = w8.to(DType::F32);
        auto loadStep = [&](Value start) {
          return load(inputChunks(p, start, bn), {c0, 0, 0}, {bkc, bn, ce});
        };
        Value a = p.activation
                      ? p.activation(m, rowIndex[m], c0 * ce, bkc * ce, loadStep)
                      : load(inputs[m], {c0, 0, 0}, {bkc, bn, ce}).to(DType::F32);
        if (inverse)
          a = (a * *inverse).to(DType::F8E4M3).to(DType::F32);
        acc[m] = acc[m] + sum(w * a, 2);
      }
  }
  // Row m's [bn] sums placed in row m of the [bm, bn] result.
  Value rowIds = expandDims(arange(0, bm), 1);
  Value out = zeros({bm, bn}, DType::F32);
  for (int64_t m = 0; m < bm; ++m)
    out = where(rowIds == m, broadcastTo(expandDims(sum(acc[m], 0), 0), {bm, bn}), out);
  return out;
}

WeightLayouts chunkedWeightLayouts(const Specialization &spec) {
  if (!spec.get("chunked") || !spec.get("packed"))
    return {};
  return {{"weight", WeightLayout{spec.get("block_n")}}};
}

KernelConstant projectionChunked() {
  return {"chunked",
          0,
          "1: the chunked GEMV, block_m rows (<= 16) against one read of the weight, "
          "one 16-byte chunk per thread and load",
          {},
          ConstantRange::flag()};
}

KernelConstant projectionPacked() {
  return {"packed",
          0,
          "chunked: 1: the weight packed at upload in block_n-row groups of 16-byte "
          "chunks (a contiguous run per program); 0: read row-major",
          {},
          ConstantRange::flag()};
}

} // namespace tilejit::models
