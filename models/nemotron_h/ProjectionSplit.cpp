// Decode's GEMM projections: whether in_proj and out_proj take the GEMM, how
// many K splits a launch takes (docs/decode-projections.md#split-k), the
// launches of a linear, split or not, and tilejit.ops' projection tiles.
#include "LayerBuilder.h"

#include "llvm/Support/MathExtras.h"

namespace tilejit::models::detail {

int64_t kSplitsOverride(const KernelOverrides &overrides) {
  if (auto it = overrides.find("out_proj"); it != overrides.end())
    if (auto s = it->second.find("k_splits"); s != it->second.end())
      return s->second;
  return 0;
}

/// A decode GEMM streams its weight: its time is the bytes of the busiest
/// multiprocessor, ceil(tiles * S / SMs) programs of ceil(steps / S) weight
/// steps each, plus with S > 1 its share of the partials (S f32 per output,
/// written by the GEMM and read by split_k_sum): on the H100 the partials made
/// a split of in_proj's 82 tiles at 256 rows slower than none
/// (docs/BENCHMARKS.md, "Split K in decode"). Splits are tried only where the
/// tiles leave multiprocessors idle.
int64_t decodeKSplits(const PlanOptions &options, const ConstantValues &tiles,
                      int64_t rows, int64_t columns, int64_t inner, int64_t weightBytes) {
  constexpr int64_t kMaxSplits = 16;
  if (!options.arch)
    return 1;
  const int64_t sms = options.arch->profile().smCount;
  const int64_t outputTiles = llvm::divideCeil(columns, tiles.at("block_n")) *
                              llvm::divideCeil(rows, tiles.at("block_m"));
  const int64_t steps = llvm::divideCeil(inner, tiles.at("block_k"));
  if (outputTiles >= 2 * sms)
    return 1;
  const int64_t stepBytes =
      tiles.at("block_n") * tiles.at("block_k") * (weightBytes / (columns * inner));
  auto cost = [&](int64_t s) {
    const int64_t weight =
        llvm::divideCeil(outputTiles * s, sms) * llvm::divideCeil(steps, s) * stepBytes;
    return weight + (s > 1 ? llvm::divideCeil(2 * s * rows * columns * 4, sms) : 0);
  };
  int64_t best = 1;
  for (int64_t s = 2; s <= std::min(steps, kMaxSplits); ++s)
    if (s * rows * columns * 4 <= 2 * weightBytes && cost(s) < cost(best))
      best = s;
  return best;
}

int64_t columnPrograms(const Specialization &spec, int64_t columns) {
  return llvm::divideCeilSigned(columns, spec.get("block_n"));
}

int64_t tailRows(int64_t rows, int64_t blockM, int64_t columns, int64_t splits,
                 int64_t programs) {
  const int64_t rowTiles = llvm::divideCeil(rows, blockM);
  // In pieces of 1/splits tile: program p takes items p, p + programs, ...
  auto busiest = [&](int64_t tailTiles) {
    const int64_t whole = (rowTiles - tailTiles) * columns;
    const int64_t items = whole + tailTiles * columns * splits;
    auto taken = [&](int64_t count, int64_t p) {
      return std::max<int64_t>(0, llvm::divideCeilSigned(count - p, programs));
    };
    int64_t most = 0;
    for (int64_t p = 0; p < programs; ++p)
      most = std::max(most, taken(whole, p) * (splits - 1) + taken(items, p));
    return most;
  };
  int64_t best = 0, least = busiest(0);
  for (int64_t r = 1; r <= rowTiles; ++r)
    if (int64_t cost = busiest(r); cost < least)
      best = r, least = cost;
  return best ? rows - (rowTiles - best) * blockM : 0;
}

/// Decode's in_proj runs as prefill's GEMM from kDecodeGemmRows rows on, where
/// those are the TMA producer tiles (rows of `hidden` starting on 16 bytes;
/// wgmma's on sm_90a, mma.sync's on sm_90, GB10 and Thor), unless the caller
/// sets constants of in_proj_conv, which keeps the fused kernel. The fused
/// in_proj_conv took several times the GEMM's time at 64 and 256 rows on the
/// H200 (sm_90a); in the portable plan it streamed 0.20 TB/s on the H100, its
/// GEMM there not yet timed; out_proj (K = 4096, N = 2688: 11 column tiles of
/// 256) fills the multiprocessors only from kDecodeOutGemmRows rows on unless
/// split in K (docs/BENCHMARKS.md, "Decode per kernel from 64 rows" and "The
/// portable plan from 64 rows").
bool decodeGemm(const PlanOptions &options, int64_t rows, int64_t hidden, bool fp8) {
  constexpr int64_t kDecodeGemmRows = 64;
  if (options.overrides.count("in_proj_conv"))
    return false;
  // The caller's split (out_proj.k_splits > 1) takes the GEMM at any batch,
  // on any arch's gemmTiles.
  return (kSplitsOverride(options.overrides) > 1 &&
          !skinnyProjection(options.overrides, "out_proj", 0)) ||
         (rows >= kDecodeGemmRows && producerTiles(fp8, options.arch, hidden));
}

bool decodeOutGemm(const PlanOptions &options, int64_t rows, int64_t hidden,
                   int64_t inner, bool fp8) {
  if (!decodeGemm(options, rows, inner, fp8))
    return false;
  const int64_t forced = kSplitsOverride(options.overrides);
  if (rows >= kDecodeOutGemmRows || forced > 1)
    return true;
  const int64_t weightBytes = hidden * inner * (fp8 ? 1 : 2);
  return forced == 0 && decodeKSplits(options, gemmTiles(fp8, options.arch, inner), rows,
                                      hidden, inner, weightBytes) > 1;
}

ConstantValues LayerBuilder::linearTiles(bool fp8, int64_t columns, int64_t inner,
                                         bool decode) const {
  ConstantValues tiles = gemmTiles(fp8, options.arch, inner);
  if (decode)
    tiles["k_splits"] = decodeKSplits(options, tiles, rows, columns, inner,
                                      columns * inner * (fp8 ? 1 : 2));
  return tiles;
}

llvm::Error LayerBuilder::addLinear(const MambaLayerWeights &w, llvm::StringRef role,
                                    const Specialization &spec, const PlanArg &input,
                                    const PlanArg &weight, const PlanArg &out,
                                    std::optional<PlanArg> scale, int64_t columns,
                                    int64_t bytesRead) {
  if (spec.get("tail_splits") > 1)
    return addTailSplitLinear(w, role, spec, input, weight, out, scale, columns,
                              bytesRead);
  const int64_t splits = spec.get("k_splits");
  const std::array<int64_t, 3> grid = {
      columnPrograms(spec, columns),
      llvm::divideCeilSigned(rows, spec.get("block_m")) * splits, 1};
  const PlanArg count = PlanArg::integer(rows);
  if (splits == 1) {
    std::vector<PlanArg> args = {input, weight, out, count};
    if (scale)
      args.push_back(*scale);
    launch(w, role, "out_proj", spec, grid, std::move(args), bytesRead,
           rows * columns * 2, /*specializedToWeights=*/true);
    return llvm::Error::success();
  }
  const int64_t partialBytes = splits * rows * columns * 4;
  PlanArg partials = intermediate(w.layer, (role + "_partials").str(), DType::F32,
                                  {splits, rows, columns});
  launch(w, role, "out_proj", spec, grid, {input, weight, partials, count}, bytesRead,
         partialBytes, /*specializedToWeights=*/true);
  return addSplitSum(w, role, partials, out, scale, columns, splits, std::nullopt);
}

llvm::Error LayerBuilder::addSplitSum(const MambaLayerWeights &w, llvm::StringRef role,
                                      const PlanArg &partials, const PlanArg &out,
                                      std::optional<PlanArg> scale, int64_t columns,
                                      int64_t splits, std::optional<int64_t> tail) {
  ConstantValues constants = {
      {"width", columns}, {"splits", splits}, {"fp8", scale ? 1 : 0}};
  if (tail)
    constants["tail_only"] = 1;
  auto sum = kernel("split_k_sum", constants);
  if (!sum)
    return sum.takeError();
  const int64_t summed = tail.value_or(rows);
  std::vector<PlanArg> args = {partials, out, PlanArg::integer(rows)};
  if (tail)
    args.push_back(PlanArg::integer(*tail));
  if (scale)
    args.push_back(*scale);
  launch(w, (role + "_sum").str(), "split_k_sum", *sum,
         {llvm::divideCeilSigned(columns, sum->get("block")), summed, 1}, std::move(args),
         splits * summed * columns * 4, summed * columns * 2);
  return llvm::Error::success();
}

llvm::Error LayerBuilder::addTailSplitLinear(
    const MambaLayerWeights &w, llvm::StringRef role, const Specialization &spec,
    const PlanArg &input, const PlanArg &weight, const PlanArg &out,
    std::optional<PlanArg> scale, int64_t columns, int64_t bytesRead) {
  const int64_t splits = spec.get("tail_splits"), blockM = spec.get("block_m");
  const int64_t tileColumns = llvm::divideCeilSigned(columns, spec.get("block_n"));
  const int64_t tail = options.arch ? tailRows(rows, blockM, tileColumns, splits,
                                               options.arch->profile().smCount)
                                    : 0;
  const PlanArg count = PlanArg::integer(rows);
  if (tail == 0) { // no split helps: the unsplit kernel
    Specialization whole = spec;
    whole.set("tail_splits", 1);
    return addLinear(w, role, whole, input, weight, out, scale, columns, bytesRead);
  }
  const int64_t tailTiles = llvm::divideCeilSigned(tail, blockM);
  const int64_t items = (llvm::divideCeilSigned(rows, blockM) - tailTiles) * tileColumns +
                        tailTiles * tileColumns * splits;
  const int64_t partialBytes = splits * tail * columns * 4;
  PlanArg partials = intermediate(w.layer, (role + "_partials").str(), DType::F32,
                                  {splits, tail, columns});
  std::vector<PlanArg> args = {input,    weight, out,
                               partials, count,  PlanArg::integer(tail)};
  if (scale)
    args.push_back(*scale);
  launch(w, role, "out_proj", spec, {items, 1, 1}, args, bytesRead,
         (rows - tail) * columns * 2 + partialBytes, /*specializedToWeights=*/true);
  return addSplitSum(w, role, partials, out, scale, columns, splits, tail);
}

} // namespace tilejit::models::detail

namespace tilejit::models {

llvm::Expected<Specialization> planProjection(const KernelRegistry &registry,
                                              const PlanOptions &options, int64_t rows,
                                              ConstantValues geometry) {
  using namespace detail;
  const int64_t inner = geometry.at("inner"), outCols = geometry.at("hidden");
  const bool fp8 = geometry.at("fp8") != 0;
  // Decode takes the GEMM for in_proj from kDecodeGemmRows rows, for out_proj
  // (fewer columns than its inner dimension) from kDecodeOutGemmRows; with
  // the wgmma tiles from 17 rows on (the other TMA tiles from
  // kDecodeGemmRows) a split GEMM wherever decodeKSplits splits, or at the
  // caller's k_splits > 1 (or tail_splits > 1) in `geometry` on any arch.
  ConstantValues gemmTileSet = gemmTiles(fp8, options.arch, inner);
  const bool producer = producerTiles(fp8, options.arch, inner);
  const bool wgmma = producer && options.arch->capabilities().wgmma;
  int64_t splits = geometry.count("k_splits") ? geometry.at("k_splits") : 1;
  const bool tailSplit = geometry.count("tail_splits") && geometry.at("tail_splits") > 1;
  if (!geometry.count("k_splits") && producer && rows > (wgmma ? 16 : 63))
    splits = decodeKSplits(options, gemmTileSet, rows, outCols, inner,
                           outCols * inner * (fp8 ? 1 : 2));
  const bool gemm =
      decodeGemm(options, rows, inner, fp8)
          ? rows >= kDecodeOutGemmRows || outCols > inner || splits > 1 || tailSplit
          : rows >= 64 || splits > 1 || tailSplit;
  gemmTileSet["k_splits"] = splits;
  // A lone projection (tilejit.ops) has no split_k_sum after it: the skinny
  // form, split in K, is the decode plan's only, unless the caller asks.
  KernelOverrides overrides = options.overrides;
  overrides["out_proj"].try_emplace("skinny", 0);
  ConstantValues tiles = gemm ? gemmTileSet : decodeOutTiles(overrides, rows, fp8);
  geometry.insert(tiles.begin(), tiles.end());
  return planKernel(registry, options.overrides, "out_proj", std::move(geometry),
                    options.tuned);
}

} // namespace tilejit::models
