// The decode GEMV's pieces and its persistent walk over column tiles
// (GemvWave.h).
#include "GemvWave.h"

#include <algorithm>

namespace tilejit::models {

namespace {

/// The column tiles a program of the persistent GEMV may walk: each is
/// unrolled.
constexpr int64_t kMaxWalks = 32;

} // namespace

RowSteps::RowSteps(const ProjectionOperands &p, Value row, int64_t bn, int64_t bk)
    : p(p), row(row), bn(bn), bk(bk) {
  // The activation row is read as a [bn, K] view with row stride 0: every
  // weight row sees it in the weight tile's own layout, straight from L1, so
  // no layout conversion (and no barrier) sits between the weight loads.
  if (!p.activation)
    input = makeView(p.input + row.to(DType::I64) * p.k, {bn, p.k}, {0, 1});
  if (p.quantScale)
    inverse = 1.0f / *p.quantScale;
}

WeightGroup RowSteps::loadWeights(Value n0, int64_t g0, int64_t group) const {
  WeightGroup weights;
  for (int64_t k0 = g0; k0 < std::min(p.k, g0 + group * bk); k0 += bk)
    weights.emplace_back(k0, load(p.weight, {n0, k0}, {bn, bk}));
  return weights;
}

Value RowSteps::accumulate(const WeightGroup &weights, Value acc) const {
  for (auto &[k0, w] : weights) {
    // The copies in registers cost less than a round trip through shared
    // memory: quantizing once per program and broadcasting it measured
    // slower on the H200
    // (docs/journal/2026-11-30-runtime-tuning-decode.md, "Decode, run 2").
    const int64_t step = k0;
    Value a = p.activation
                  ? p.activation(0, row, step, bk,
                                 [&](Value start) {
                                   return load(makeView(start, {bn, p.k}, {0, 1}),
                                               {0, step}, {bn, bk});
                                 })
                  : load(*input, {0, step}, {bn, bk}).to(DType::F32);
    if (inverse)
      a = (a * *inverse).to(DType::F8E4M3).to(DType::F32);
    acc = acc + w.to(DType::F32) * a;
  }
  return acc;
}

void projectRowTiles(const ProjectionOperands &p, Value row, int64_t n, int64_t bn,
                     int64_t bk, int64_t group, int64_t programs,
                     const TileEpilogue &finish) {
  RowSteps steps(p, row, bn, bk);
  const int64_t span = group * bk, tiles = llvm::divideCeil(n, bn);
  const int64_t walks = llvm::divideCeil(tiles, programs);
  // Unrolled at build time: the loads in flight across a tile boundary stay
  // packed in registers (a loop would carry the e4m3 tile an element a
  // register).
  Value t = programId(0), stride = numPrograms(0);
  WeightGroup head = steps.loadWeights(t * bn, 0, group);
  if (p.waitAfterFirstWeights)
    waitAndSignal();
  for (int64_t walk = 0; walk < walks; ++walk) {
    const bool last = walk + 1 == walks;
    auto tile = [&] {
      Value n0 = t * bn;
      Value acc = zeros({bn, bk}, DType::F32);
      WeightGroup weights = head, next;
      for (int64_t g0 = 0; g0 < p.k; g0 += span) {
        if (g0 > 0)
          weights = steps.loadWeights(n0, g0, group);
        // The last group: the next tile's first loads go out before these
        // products.
        if (g0 + span >= p.k && !last)
          next = steps.loadWeights((t + stride) * bn, 0, group);
        acc = steps.accumulate(weights, acc);
      }
      finish(n0, sum(acc, 1));
      head = std::move(next);
    };
    // With P programs only the last walk can pass the last tile.
    if (last)
      ifThen(t < tiles, tile);
    else
      tile();
    t = t + stride;
  }
}

KernelConstant gemvPrograms() {
  return {"gemv_programs",
          0,
          "GEMV (block_m 1): P > 0 launches P programs per row, each walking the "
          "column tiles programId, + P, ... (at most 32, unrolled) with the next "
          "tile's first weight loads issued before this tile's last products; 0: "
          "one tile a program",
          {},
          ConstantRange::between(0, 1 << 20)};
}

ConstantRule gemvProgramsRule(std::vector<std::string> otherForms,
                              std::vector<std::string> columns) {
  std::vector<std::string> names = {"gemv_programs", "block_m", "chunked", "direct",
                                    "skinny"};
  llvm::append_range(names, otherForms);
  const size_t forms = names.size();
  llvm::append_range(names, columns);
  names.push_back("block_n");
  std::string text = "gemv_programs > 0 takes the GEMV: block_m 1 and";
  for (size_t i = 2; i < forms; ++i)
    text += (i > 2 ? ", " : " ") + names[i];
  text += " 0, and at most " + std::to_string(kMaxWalks) +
          " column tiles a program (they are unrolled)";
  return {text, names, [names, forms](const Specialization &s) {
            const int64_t programs = s.get("gemv_programs");
            if (!programs)
              return true;
            int64_t n = 0;
            for (size_t i = forms; i + 1 < names.size(); ++i)
              n += s.get(names[i]);
            const int64_t tiles = llvm::divideCeil(n, s.get("block_n"));
            return s.get("block_m") == 1 &&
                   llvm::divideCeil(tiles, programs) <= kMaxWalks &&
                   std::all_of(names.begin() + 2, names.begin() + forms,
                               [&](const std::string &form) { return !s.get(form); });
          }};
}

} // namespace tilejit::models
