// Decode out_proj (docs/numerics.md#r1-fp8-w8a8-linear, R1b): y = bf16(s * (a x W^T))
// with the activation already quantized to e4m3 by the gated norm (FP8 layers), or bf16
// activations and weights (the bf16 layers). One program: `block_n` outputs of
// one row (`block_m` 1, a weight-streaming GEMV), of up to 16 rows against one
// read of the weight (`chunked`), or of `block_m` rows (tensor cores).
// `out_f32` stores y in f32 instead, and `scale_ptr` reads s_x and s_w from two
// one-element f32 tensors (tilejit.ops' scaled_mm, torch._scaled_mm's form).
// `norm_prologue` folds the gated norm into the GEMVs (NormPrologue.h).
// `k_splits` S > 1 divides the tensor-core tiles' K over S programs, each
// storing its unscaled f32 partial for split_k_sum (SplitKSum.cpp) to reduce;
// `tail_splits` S > 1 does so only for the tiles of the last `tail` rows (the
// persistent walk's last, partial wave), the others whole (TailTile).
#include "NormPrologue.h"
#include "Parts.h"
#include "Registration.h"
#include "tilejit/models/mamba2/Kernels.h"

namespace tilejit::models {
namespace {

/// What a program of a tail-split out_proj (grid (items, 1)) computes: items
/// below fullTiles are the whole tiles of rows [0, rows - tail), in groups of
/// G columns as tile-persistent walks a 2-D grid; the rest are the tiles of
/// the last `tail` rows (a multiple of block_m but for the ragged last),
/// row-major, S items each, split s taking the s-th of S equal K spans.
/// Walked in item order, the split pieces fill the last wave.
struct TailTile {
  Value tail, inTail, m0, n0, kBegin, kEnd, split, tailRow;

  TailTile(Value rows, Value tailRows, int64_t hidden, int64_t inner, int64_t bm,
           int64_t bn, int64_t bk, int64_t splits, int64_t group) {
    const int64_t columns = llvm::divideCeil(hidden, bn);
    tail = tailRows;
    Value item = programId(0);
    Value fullRowTiles = (rows - tail) / bm;
    Value fullTiles = fullRowTiles * columns;
    inTail = item >= fullTiles;
    Value piece = maximum(item - fullTiles, 0) / splits;
    split = maximum(item - fullTiles, 0) % splits;
    // Guarded against empty groups: the tail's items compute them too.
    Value perGroup = maximum(fullRowTiles * group, 1);
    Value groupFirst = item / perGroup * group;
    Value groupColumns = maximum(minimum(columns - groupFirst, group), 1);
    Value within = item % perGroup;
    n0 = where(inTail, piece % columns, groupFirst + within % groupColumns) * bn;
    m0 = where(inTail, fullRowTiles + piece / columns, within / groupColumns) * bm;
    tailRow = where(inTail, m0 - (rows - tail), 0);
    const int64_t span = llvm::divideCeil(llvm::divideCeil(inner, bk), splits) * bk;
    kBegin = split * span; // split 0 outside the tail
    kEnd = where(inTail, minimum(kBegin + span, inner), inner);
  }
};

/// The K span [begin, end) a program sums: a split's (every split as many K
/// steps, a constant trip count; steps past K load zeros: masked, or TMA's
/// fill), a tail tile's, or all of K.
std::pair<Operand, Operand> kSpan(int64_t splits, const std::optional<TailTile> &tile,
                                  int64_t inner, int64_t bk) {
  if (tile)
    return {tile->kBegin, tile->kEnd};
  if (splits == 1)
    return {0, inner};
  const int64_t span = llvm::divideCeil(llvm::divideCeil(inner, bk), splits) * bk;
  Value k0 = programId(1) % splits * span;
  return {k0, k0 + span};
}

} // namespace

void buildOutProj(Kernel &k, const Specialization &spec) {
  const int64_t inner = spec.get("inner"), hidden = spec.get("hidden");
  const int64_t bn = spec.get("block_n"), bk = spec.get("block_k");
  const bool fp8 = spec.get("fp8") != 0;
  const DType type = fp8 ? DType::F8E4M3 : DType::BF16;

  std::optional<NormPrologue> norm;
  Value a;
  if (spec.get("norm_prologue"))
    norm.emplace(k, spec, inner, fp8);
  else
    a = k.ptrParam("a", type, {"rows", inner});               // [rows, inner]
  Value weight = k.ptrParam("weight", type, {hidden, inner}); // [hidden, inner]
  const DType outType = spec.get("out_f32") ? DType::F32 : DType::BF16;
  const int64_t splits = spec.get("k_splits"), tailSplits = spec.get("tail_splits");
  // [rows, hidden], or with splits the partials [splits, rows, hidden]
  Value out = splits > 1 ? k.ptrParam("partials", DType::F32, {splits, "rows", hidden})
                         : k.ptrParam("out", outType, {"rows", hidden});
  Value tailPartials;
  if (tailSplits > 1)
    tailPartials = k.ptrParam("partials", DType::F32, {tailSplits, "tail", hidden});
  Value rows = k.scalarParam("rows", DType::I32);
  std::optional<TailTile> tile;
  if (tailSplits > 1)
    tile.emplace(rows, k.scalarParam("tail", DType::I32), hidden, inner,
                 spec.get("block_m"), bn, bk, tailSplits,
                 std::max<int64_t>(spec.get("persistent"), 1));
  std::optional<Value> scaleA, scaleB, outputScale;
  const bool scaled = fp8 && splits == 1; // else split_k_sum scales the sum
  if (scaled && spec.get("scale_ptr")) {
    scaleA = k.ptrParam("scale_a", DType::F32, {1});
    scaleB = k.ptrParam("scale_b", DType::F32, {1});
  } else if (scaled) {
    outputScale = k.scalarParam("output_scale", DType::F32); // s_x * s_w
  }
  const int64_t bm = spec.get("block_m");
  View weightView = makeView(weight, {hidden, inner}, {inner, 1});
  // With splits grid axis 1 holds the row tiles times the splits (split
  // fastest); the default builds no split arithmetic.
  Value n0 = tile ? tile->n0 : programId(0) * bn;
  Value m0 = tile ? tile->m0 : (splits > 1 ? programId(1) / splits : programId(1)) * bm;
  // As in_proj_conv (with `prefetch`, the first row of programs prefetches
  // its weight rows). The TMA and persistent forms never wait: their passes
  // restructure the body.
  k.markInvariant(weight);
  const bool chunked = spec.get("chunked") != 0;
  const bool gemv = (bm == 1 || chunked) && !spec.get("direct");
  bool waitLater = false;
  if (!spec.get("producer") && !spec.get("persistent"))
    waitLater = dependentStart(spec, weightRows(weight, n0, bn, hidden, inner, type),
                               tile ? tile->m0 == 0 : programId(1) == 0, gemv);
  auto [kBegin, kEnd] = kSpan(splits, tile, inner, bk);
  Value acc; // [bm, bn] f32
  if (spec.get("skinny")) {
    k.setConfig({{bn, bm, bk}, spec.get("warps"), spec.get("stages")});
    acc = projectSkinny({weight, hidden, inner, a, rows, std::nullopt, kBegin, kEnd}, m0,
                        n0, bm, bn, bk);
  } else if (spec.get("direct")) {
    k.setConfig({{bm, bn, bk}, spec.get("warps"), 1, 8, spec.get("split_k"), true});
    acc = projectDirect(makeView(a, {rows, inner}, {inner, 1}),
                        makeView(weight, {inner, hidden}, {1, inner}), std::nullopt, m0,
                        n0, bm, bn, inner, bk, spec.get("loads_in_flight"));
  } else if (chunked) {
    const int64_t chunk = vectorWidth(type);
    k.setConfig({{bk / chunk, bn, chunk}, spec.get("warps"), 1, chunk});
    ChunkedProjection p{weight, hidden, inner, type,     spec.get("packed") != 0,
                        a,      rows,   {},    waitLater};
    if (norm)
      p.activation = norm->source();
    acc = projectChunked(p, m0, n0, bm, bn, bk, spec.get("loads_in_flight"));
  } else if (bm == 1) {
    k.setConfig({{bn, bk}, spec.get("warps"), 1, vectorWidth(type)});
    ProjectionOperands p{weightView, a, inner, std::nullopt, waitLater};
    if (norm)
      p.activation = norm->source();
    acc = expandDims(projectRow(p, m0, n0, bn, bk, spec.get("loads_in_flight")), 0);
  } else {
    // Large batches: tensor-core tiles, the weight staged through shared memory
    // (by TMA from a producer warpgroup with `producer`).
    Config config{{bm, bn, bk}, spec.get("warps"), spec.get("stages")};
    config.producer = spec.get("producer");
    config.persistent = spec.get("persistent");
    k.setConfig(config);
    View aView = makeView(a, {rows, inner}, {inner, 1});
    acc = forRange(kBegin, kEnd, bk, {zeros({bm, bn}, DType::F32)},
                   [&](Value kk, std::vector<Value> carried) -> std::vector<Value> {
                     Value w = transpose(load(weightView, {n0, kk}, {bn, bk}), {1, 0});
                     return {dot(load(aView, {m0, kk}, {bm, bk}), w, carried[0])};
                   })[0];
  }
  if (tile) {
    // Every program stores both ways, one of them wholly masked (a view of
    // no rows): the tail's unscaled partial, or the whole tile's output.
    store(makeView(tailPartials + tile->split * tile->tail * hidden,
                   {where(tile->inTail, tile->tail, 0), hidden}, {hidden, 1}),
          {tile->tailRow, n0}, acc);
    rows = where(tile->inTail, 0, rows);
  }
  // After the wait: the scales are the caller's tensors.
  if (scaleA)
    outputScale = load(*scaleA) * load(*scaleB);
  if (outputScale)
    acc = acc * *outputScale;
  if (splits > 1)
    store(makeView(out + programId(1) % splits * rows * hidden, {rows, hidden},
                   {hidden, 1}),
          {m0, n0}, acc);
  else
    store(makeView(out, {rows, hidden}, {hidden, 1}), {m0, n0}, acc.to(outType));
}

/// Tuned per batch size: its tuning database entries are bucketed by rows.
KernelDef outProjKernel() {
  using R = ConstantRange;
  KernelDef def{
      "out_proj",
      "decode out_proj: R1 with e4m3 activations, or R1b bf16",
      {{"inner", 4096, "K, I = H*P", {}, sizeRange()},
       {"hidden", 2688, "output columns", {}, sizeRange()},
       {"fp8", 1, "1: e4m3 weight and activation; 0: bf16", {}, R::flag()},
       projectionBlockM(),
       {"block_n", 4, "output columns per program", {8, 16}, R::powersOfTwo(1, 256)},
       {"block_k", 512, "K per step", {128, 256}, R::powersOfTwo(1, 1024)},
       {"loads_in_flight",
        8,
        "GEMV: K steps whose weight loads issue together",
        {4, 16},
        inFlightRange()},
       projectionStages(),
       {"warps", 4, "warps per program", {8}, warpsRange()},
       projectionDirect(),
       projectionSplitK(),
       {"out_f32", 0, "1: store y as f32 instead of bf16", {}, R::flag()},
       {"scale_ptr",
        0,
        "fp8: 1: s_x and s_w as one-element f32 tensors (scale_a, scale_b)",
        {},
        R::flag()},
       {"producer",
        0,
        "tensor cores, an arch with TMA: the K loop's operands come by TMA; 1: "
        "issued by a producer warp(group), 2: by one consumer thread",
        {1},
        R::between(0, 2)},
       {"persistent",
        0,
        "tensor cores: G >= 1: one program per multiprocessor walks the tiles, G "
        "columns of tiles at a time",
        {8},
        R::between(0, 64)},
       projectionChunked(),
       projectionPacked(),
       projectionSkinny(),
       {"tail_splits",
        1,
        "tensor-core tiles: S > 1 splits the K of the last `tail` rows' tiles S ways "
        "into f32 partials [S, tail, hidden] (grid (items, 1): TailTile), reduced "
        "by split_k_sum with tail_only",
        {},
        R::between(1, 64)},
       {"k_splits",
        1,
        "tensor-core tiles: S > 1 programs each sum 1/S of K into f32 partials "
        "[S, rows, hidden] (grid axis 1: row tiles x S), reduced by split_k_sum",
        {},
        R::between(1, 64)},
       dependent(2),
       prefetch()},
      buildOutProj,
      projectionRules("inner"),
      {"rows"},
      chunkedWeightLayouts};
  for (KernelConstant &c : NormPrologue::constants())
    def.constants.push_back(std::move(c));
  for (ConstantRule &r : NormPrologue::rules())
    def.rules.push_back(std::move(r));
  def.rules.push_back(
      {"k_splits > 1 takes the tensor-core tiles (block_m >= 16, or skinny; "
       "chunked, direct and norm_prologue 0) and at most the K steps, "
       "ceil(inner / block_k)",
       {"k_splits", "block_m", "skinny", "chunked", "direct", "norm_prologue", "inner",
        "block_k"},
       [](const Specialization &s) {
         return s.get("k_splits") == 1 ||
                ((s.get("block_m") >= 16 || s.get("skinny")) && !s.get("chunked") &&
                 !s.get("direct") && !s.get("norm_prologue") &&
                 s.get("k_splits") <= llvm::divideCeil(s.get("inner"), s.get("block_k")));
       }});
  def.rules.push_back(
      {"tail_splits > 1 takes the tensor-core tiles (block_m >= 16, chunked, "
       "direct and norm_prologue 0), k_splits 1 and at most the K steps, "
       "ceil(inner / block_k)",
       {"tail_splits", "k_splits", "block_m", "chunked", "direct", "norm_prologue",
        "inner", "block_k"},
       [](const Specialization &s) {
         return s.get("tail_splits") == 1 ||
                (s.get("block_m") >= 16 && s.get("k_splits") == 1 && !s.get("chunked") &&
                 !s.get("direct") && !s.get("norm_prologue") &&
                 s.get("tail_splits") <=
                     llvm::divideCeil(s.get("inner"), s.get("block_k")));
       }});
  return def;
}

} // namespace tilejit::models
