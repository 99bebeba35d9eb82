// Building blocks the Mamba2 kernels share (see Parts.h).
#include "Parts.h"

#include <algorithm>

namespace tilejit::models {

int64_t vectorWidth(DType t) {
  switch (t) {
  case DType::F8E4M3:
  case DType::I8:
    return 16;
  case DType::BF16:
  case DType::F16:
    return 8;
  default:
    return 4;
  }
}

Value projectRow(const ProjectionOperands &p, Value row, Value n0, int64_t bn, int64_t bk,
                 int64_t group) {
  // The activation row is read as a [bn, K] view with row stride 0: every
  // weight row sees it in the weight tile's own layout, straight from L1, so
  // no layout conversion (and no barrier) sits between the weight loads.
  auto rowView = [&](Value start) { return makeView(start, {bn, p.k}, {0, 1}); };
  std::optional<View> input;
  if (!p.activation)
    input = rowView(p.input + row.to(DType::I64) * p.k);
  std::optional<Value> inverse;
  if (p.quantScale)
    inverse = 1.0f / *p.quantScale;
  // Products accumulate elementwise in a [bn, bk] tile and are reduced once
  // at the end: no cross-lane traffic inside the K loop.
  Value acc = zeros({bn, bk}, DType::F32);
  for (int64_t g0 = 0; g0 < p.k; g0 += group * bk) {
    std::vector<std::pair<int64_t, Value>> weights;
    for (int64_t k0 = g0; k0 < std::min(p.k, g0 + group * bk); k0 += bk)
      weights.emplace_back(k0, load(p.weight, {n0, k0}, {bn, bk}));
    if (g0 == 0 && p.waitAfterFirstWeights)
      waitAndSignal();
    for (auto &[k0, w] : weights) {
      // The copies in registers cost less than a round trip through shared
      // memory: quantizing once per program and broadcasting it measured
      // slower on the H200
      // (docs/journal/2026-11-30-runtime-tuning-decode.md, "Decode, run 2").
      Value a = p.activation
                    ? p.activation(0, row, k0, bk,
                                   [&](Value start) {
                                     return load(rowView(start), {0, k0}, {bn, bk});
                                   })
                    : load(*input, {0, k0}, {bn, bk}).to(DType::F32);
      if (inverse)
        a = (a * *inverse).to(DType::F8E4M3).to(DType::F32);
      acc = acc + w.to(DType::F32) * a;
    }
  }
  return sum(acc, 1);
}

Value projectDirect(View input, View weightT, std::optional<Value> inverseScale, Value m0,
                    Value n0, int64_t bm, int64_t bn, int64_t k, int64_t bk,
                    int64_t group) {
  Value acc = zeros({bm, bn}, DType::F32);
  for (int64_t g0 = 0; g0 < k; g0 += group * bk) {
    std::vector<std::pair<Value, Value>> steps;
    for (int64_t k0 = g0; k0 < std::min(k, g0 + group * bk); k0 += bk)
      steps.emplace_back(load(input, {m0, k0}, {bm, bk}),
                         load(weightT, {k0, n0}, {bk, bn}));
    for (auto &[a, w] : steps) {
      if (inverseScale)
        a = (a.to(DType::F32) * *inverseScale).to(DType::F8E4M3);
      acc = dot(a, w, acc);
    }
  }
  return acc;
}

OpCheck OpCheck::declare(Kernel &k, bool enabled) {
  OpCheck check;
  check.enabled = enabled;
  if (check.enabled) {
    check.errors = k.ptrParam("errors", DType::I64, {1});
    check.op = k.scalarParam("op", DType::I32);
  }
  return check;
}

Value OpCheck::word(OpError error, Value index) const {
  return op.to(DType::I64) * (int64_t(1) << 40) + (int64_t(error) << 32) +
         (index.to(DType::I64) & int64_t(0xffffffff));
}

void OpCheck::record(Value when, OpError error, Value index) const {
  if (enabled)
    ifThen(when, [&] { store(errors, word(error, index)); });
}

void OpCheck::record(Value word) const {
  if (enabled)
    ifThen(word != int64_t(0), [&] { store(errors, word); });
}

DType slotType(const Specialization &spec) {
  return spec.get("slots_i64") ? DType::I64 : DType::I32;
}

std::pair<int64_t, int64_t> convStateStrides(const ConvOperands &conv) {
  return conv.channelLast ? std::pair<int64_t, int64_t>{conv.channels, 1}
                          : std::pair<int64_t, int64_t>{1, 3};
}

Value convUpdate(const ConvOperands &conv, Value slot, Value live, Value c, Value inRange,
                 Value xt) {
  Value update = inRange & live;
  auto [tapStride, channelStride] = convStateStrides(conv);
  Value taps = conv.state + slot.to(DType::I64) * (3 * conv.channels) + c * channelStride;
  Value s0 = load(taps, update, 0.0), s1 = load(taps + tapStride, update, 0.0),
        s2 = load(taps + 2 * tapStride, update, 0.0);
  // Per-channel parameters, broadcast over the tile's rows (a batch tile).
  Value w = broadcastTo(conv.weight + c * 4, inRange.shape());
  auto tap = [&](int j) { return load(w + j, inRange, 0.0).to(DType::F32); };
  // w[c, 3] multiplies the current token.
  Value bias = broadcastTo(conv.bias + c, inRange.shape());
  Value pre = load(bias, inRange, 0.0).to(DType::F32) + tap(0) * s0.to(DType::F32) +
              tap(1) * s1.to(DType::F32) + tap(2) * s2.to(DType::F32) +
              tap(3) * xt.to(DType::F32);
  store(taps, s1, update);
  store(taps + tapStride, s2, update);
  store(taps + 2 * tapStride, xt, update);
  return where(live, silu(pre), 0.0).to(DType::BF16);
}

bool dependentStart(const Specialization &spec, std::optional<WeightSlab> slab,
                    std::optional<Value> prefetcher, bool waitsLater) {
  const int64_t dependent = spec.get("dependent");
  if (!dependent)
    return false;
  if (slab && spec.get("prefetch")) {
    if (prefetcher)
      ifThen(*prefetcher, [&] { prefetchL2(slab->ptr, slab->bytes); });
    else
      prefetchL2(slab->ptr, slab->bytes);
  }
  if (dependent == 2 && waitsLater)
    return true;
  waitAndSignal();
  return false;
}

std::optional<WeightSlab> weightRows(Value weight, Value row0, int64_t rows,
                                     int64_t totalRows, int64_t rowElements, DType type) {
  const int64_t rowBytes =
      rowElements * (type == DType::BF16 || type == DType::F16 ? 2 : 1);
  if (rowBytes % 16)
    return std::nullopt;
  return WeightSlab{weight + row0 * rowElements,
                    minimum(rows, totalRows - row0) * rowBytes};
}

void waitAndSignal() {
  waitForPredecessors();
  // Every program of this kernel has been scheduled once all have passed
  // here, so the next kernel's programs only take what this one leaves.
  launchDependents();
}

} // namespace tilejit::models
