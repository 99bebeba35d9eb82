// The NemotronH layer builder (LayerBuilder.h) and the tiles it picks for the
// projections: the decode GEMV, the direct tensor-core tiles, the prefill GEMM.
#include "LayerBuilder.h"

#include "llvm/Support/MathExtras.h"

namespace tilejit::models::detail {
namespace {

using Role = PlanBuffer::Role;
using Type = DType;

template <typename T> llvm::ArrayRef<uint8_t> asBytes(const Tensor<T> &t) {
  return {reinterpret_cast<const uint8_t *>(t.data.data()), t.data.size() * sizeof(T)};
}

llvm::ArrayRef<uint8_t> projectionBytes(const Projection &p) {
  return p.isFP8 ? asBytes(p.fp8Weight) : asBytes(p.bf16Weight);
}

} // namespace

/// Tensor-core GEMM tiles of the prefill projections (M = tokens), half the K
/// step for bf16, by the arch's pipeline and its device's shared memory:
/// - TMA and wgmma (sm_90a): persistent 128 x 256 tiles fed by a TMA producer
///   warpgroup, 3 stages, which leave the shared memory to store the
///   accumulator as whole rows, were the fastest at both NemotronH shapes on
///   the H200 (docs/BENCHMARKS.md, "The prefill GEMMs against the library");
/// - TMA and mma.sync (sm_90, sm_110a, sm_121a), bf16: 128 x 256 tiles of 8
///   warps (64 x 64 each) whose copies thread 0 issues (producer = 2: no
///   producer warp, so each thread keeps 255 registers; a ninth warp caps them
///   at 168, where these tiles spill), 3 stages where the device's shared
///   memory holds them (48 KiB each), else 2 (GB10: 96 of its 99 KiB);
///   e4m3: 128 x 128 tiles fed by a producer warp, 3 stages (96 KiB), as
///   fast as the wider ones there, which spill. On the H200 the portable
///   sm_90 build runs them slower than the vendor libraries, faster than the
///   cp.async tiles (docs/journal/2026-12-03.md, "The portable GEMMs");
/// - elsewhere, and where rows of `inner` elements do not start on 16 bytes
///   (which TMA needs; a checkpoint's reduced K need not), 64 x 128, 4 warps,
///   3 stages of cp.async (72 KiB: within GB10's 99 KiB per program).
bool producerTiles(bool fp8, const std::optional<Arch> &arch, int64_t inner) {
  return arch && arch->capabilities().tma && (inner * (fp8 ? 1 : 2)) % 16 == 0;
}

ConstantValues gemmTiles(bool fp8, const std::optional<Arch> &arch, int64_t inner) {
  const int64_t blockK = fp8 ? 128 : 64;
  if (producerTiles(fp8, arch, inner) && arch->capabilities().wgmma)
    return {{"block_m", 128}, {"block_n", 256}, {"block_k", blockK}, {"warps", 8},
            {"stages", 3},    {"producer", 1},  {"persistent", 8}};
  if (producerTiles(fp8, arch, inner) && fp8)
    return {{"block_m", 128}, {"block_n", 128}, {"block_k", blockK},
            {"warps", 8},     {"stages", 3},    {"producer", 1}};
  if (producerTiles(fp8, arch, inner)) {
    constexpr int64_t kStageBytes = (128 + 256) * 64 * 2, kBarrierBytes = 1024;
    const int64_t fit =
        (arch->profile().sharedBytesPerBlock - kBarrierBytes) / kStageBytes;
    return {{"block_m", 128},
            {"block_n", 256},
            {"block_k", blockK},
            {"warps", 8},
            {"stages", std::clamp<int64_t>(fit, 2, 3)},
            {"producer", 2}};
  }
  return {{"block_m", 64},
          {"block_n", 128},
          {"block_k", blockK},
          {"warps", 4},
          {"stages", 3}};
}

namespace {

/// Whether the decode projection `kernel` runs on tensor cores with its
/// operands loaded straight into fragments (`direct`): the caller's override
/// of the constant decides, else the measured default for `rows` (H200,
/// docs/journal/2026-12-01.md, "Issue 18: direct tensor-core projections in decode"):
/// the GEMV reads the weight once per row, so from a few rows on one direct
/// read wins; from 16 rows the FP8 in_proj stays direct, while out_proj's
/// 16-row tiles are as fast, and bf16's direct tiles are unmeasured.
bool directProjection(const KernelOverrides &overrides, llvm::StringRef kernel,
                      int64_t rows, bool fp8) {
  if (auto it = overrides.find(kernel.str()); it != overrides.end())
    if (auto direct = it->second.find("direct"); direct != it->second.end())
      return direct->second != 0;
  if (kernel == "in_proj_conv")
    return rows >= 3 && (fp8 || rows < 16);
  return rows >= 5 && rows < 16;
}

/// Whether the decode projection `kernel` runs as the chunked GEMV (block_m
/// rows against one read of its packed weight): only when the caller's
/// overrides (or the tuning database, which sets its tiles too) ask, until
/// the H200 has measured it against the GEMV and the direct tiles
/// (bench/decode/gemv_variants.sh).
bool chunkedProjection(const KernelOverrides &overrides, llvm::StringRef kernel) {
  if (auto it = overrides.find(kernel.str()); it != overrides.end())
    if (auto chunked = it->second.find("chunked"); chunked != it->second.end())
      return chunked->second != 0;
  return false;
}

/// The chunked GEMV's tiles for `rows` rows (up to 16 a program): 128 threads
/// each loading one 16-byte chunk a K step, so a step covers `block_n` rows of
/// 2048 / block_n bytes; the weight packed for the program's run.
ConstantValues chunkedTiles(int64_t rows, int64_t blockN, bool fp8) {
  int64_t bm = 1;
  while (bm < rows && bm < 16)
    bm *= 2;
  const int64_t stepBytes = 128 * 16 / blockN;
  return {{"chunked", 1},
          {"packed", 1},
          {"block_m", bm},
          {"block_n", blockN},
          {"block_k", stepBytes / (fp8 ? 1 : 2)},
          {"warps", 4}};
}

/// The direct projection's tile: 16 weight columns, batch rows in mma tiles of
/// 16 up to 64 per program (larger batches re-read the weight once per 64
/// rows), K steps of 256 split over 4 warp groups, 4 steps of loads in flight.
ConstantValues directTiles(int64_t rows) {
  int64_t bm = 16;
  while (bm < rows && bm < 64)
    bm *= 2;
  return {{"direct", 1},  {"block_m", bm}, {"block_n", 16},       {"block_k", 256},
          {"split_k", 4}, {"warps", 4},    {"loads_in_flight", 4}};
}

} // namespace

ConstantValues decodeOutTiles(const KernelOverrides &overrides, int64_t rows, bool fp8) {
  if (chunkedProjection(overrides, "out_proj"))
    return chunkedTiles(rows, 4, fp8);
  if (skinnyProjection(overrides, "out_proj", rows))
    return skinnyTiles("out_proj", rows, fp8);
  if (directProjection(overrides, "out_proj", rows, fp8))
    return directTiles(rows);
  // The first row of tiles prefetches the weight the others read again
  // (docs/BENCHMARKS.md, "programmatic dependent launch"); fewer rows gain
  // nothing from it.
  if (rows >= 16)
    return {{"block_m", 16}, {"block_n", 64}, {"block_k", 64}, {"prefetch", 1}};
  ConstantValues tiles = {{"block_n", 4}};
  // bf16 takes twice the bytes an element: rows of 256, half the FP8 K step,
  // move the same bytes a step, and measured fastest on the H200 when the
  // decode defaults were chosen (commit 3ece6f6; the journal keeps no figure
  // of it).
  if (!fp8)
    tiles["block_k"] = 256;
  return tiles;
}

namespace {

/// Whether the caller asks out_proj to fold the gated norm in
/// (`norm_prologue`, NormPrologue.h): off by default until the H200 has
/// measured it (bench/decode/variants.txt), since every program of a row
/// reads the row's y and z again from L2 (docs/decode-projections.md, "The folded norm").
bool foldsNorm(const KernelOverrides &overrides) {
  if (auto it = overrides.find("out_proj"); it != overrides.end())
    if (auto fold = it->second.find("norm_prologue"); fold != it->second.end())
      return fold->second != 0;
  return false;
}

/// Whether out_proj's `tiles` are a GEMV, which can take the norm prologue.
bool gemvTiles(const ConstantValues &tiles) {
  auto get = [&](const char *name) {
    auto it = tiles.find(name);
    return it == tiles.end() ? 0 : it->second;
  };
  return get("chunked") || (!get("direct") && get("block_m") <= 1);
}

/// `base` with `more` added (their names are distinct).
ConstantValues with(ConstantValues base, const ConstantValues &more) {
  base.insert(more.begin(), more.end());
  return base;
}

} // namespace

LayerIO LayerBuilder::layerIO(size_t i, int64_t rows, const PlanArg &slots) {
  LayerIO io;
  io.in = PlanArg::of(StepPlan::activation(i));
  io.out = plan.addBuffer(StepPlan::activation(i + 1), Role::Activation, Type::BF16,
                          {rows, c.hiddenSize});
  io.slots = slots;
  return io;
}

LayerArgs LayerBuilder::addLayerBuffers(const MambaLayerWeights &w) {
  const int64_t hidden = c.hiddenSize, I = c.intermediate(), Cd = c.convChannels();
  const int64_t H = c.numHeads, slots = plan.numSlots;
  auto param = [&](llvm::StringRef name, Role role, Type type, std::vector<int64_t> shape,
                   llvm::ArrayRef<uint8_t> host = {}) {
    PlanArg arg = plan.addBuffer(StepPlan::layerBuffer(w.layer, name), role, type,
                                 std::move(shape), w.layer);
    plan.buffers.at(arg.buffer).hostWeight = host;
    return arg;
  };
  auto projType = [](const Projection &p) { return p.isFP8 ? Type::F8E4M3 : Type::BF16; };
  return LayerArgs{
      param("in_proj.weight", Role::Weight, projType(w.inProj), {c.inProjRows(), hidden},
            projectionBytes(w.inProj)),
      param("conv1d.weight", Role::Weight, Type::BF16, {Cd, 4}, asBytes(w.convWeight)),
      param("conv1d.bias", Role::Weight, Type::BF16, {Cd}, asBytes(w.convBias)),
      param("A_log", Role::Weight, Type::F32, {H}, asBytes(w.aLog)),
      param("dt_bias", Role::Weight, Type::F32, {H}, asBytes(w.dtBias)),
      param("D", Role::Weight, Type::F32, {H}, asBytes(w.d)),
      param("norm.weight", Role::Weight, Type::BF16, {I}, asBytes(w.normWeight)),
      param("out_proj.weight", Role::Weight, projType(w.outProj), {hidden, I},
            projectionBytes(w.outProj)),
      param("conv_page", Role::State, Type::BF16, {slots, Cd, 3}),
      param("ssm_page", Role::State, options.ssmState.type,
            {slots, H, c.headDim, c.stateSize})};
}

PlanArg LayerBuilder::intermediate(int64_t layer, llvm::StringRef name, Type type,
                                   std::vector<int64_t> shape) {
  // Layers share an intermediate but may need it larger: an FP8 and a bf16
  // out_proj split K 6 and 11 ways at 64 rows on sm_90, and the partials
  // sized by the first overflowed on the second (an illegal address on the
  // H100). The buffer holds the largest use; each kernel indexes its own.
  return plan.addSharedBuffer(intermediateBuffer(options, layer, name), Role::Activation,
                              type, std::move(shape),
                              options.perLayerActivations ? layer : -1);
}

PlanArg LayerBuilder::normed(const MambaLayerWeights &w, std::vector<int64_t> shape) {
  Type type = options.perLayerActivations && w.outProj.isFP8 ? Type::F8E4M3 : Type::BF16;
  return intermediate(w.layer, "normed", type, std::move(shape));
}

llvm::Expected<Specialization> LayerBuilder::kernel(llvm::StringRef name,
                                                    ConstantValues geometry) {
  // out_proj also serves the prefill and large-batch GEMMs, which take
  // neither the norm prologue nor the skinny form: only the launch whose
  // geometry names one of them sees the caller's setting of it.
  if (name == "out_proj" && options.overrides.count("out_proj")) {
    KernelOverrides overrides = options.overrides;
    for (const char *own : {"norm_prologue", "skinny"})
      if (!geometry.count(own))
        overrides["out_proj"].erase(own);
    return planKernel(registry, overrides, name, std::move(geometry), options.tuned);
  }
  return planKernel(registry, options.overrides, name, std::move(geometry),
                    options.tuned);
}

PlanArg LayerBuilder::weightFor(const PlanArg &weight, llvm::StringRef kernel,
                                const Specialization &spec) const {
  PlanArg arg = weight;
  if (const KernelDef *def = registry.find(kernel)) {
    WeightLayouts layouts = def->layoutsFor(spec);
    if (auto it = layouts.find("weight"); it != layouts.end())
      arg.layout = it->second;
  }
  return arg;
}

void LayerBuilder::launch(const MambaLayerWeights &w, llvm::StringRef role,
                          llvm::StringRef kernelName, const Specialization &spec,
                          std::array<int64_t, 3> grid, std::vector<PlanArg> args,
                          int64_t bytesRead, int64_t bytesWritten,
                          bool specializedToWeights) {
  PlannedLaunch l{kernelName.str(), spec, grid, std::move(args), w.layer, role.str()};
  const bool fp8 =
      role.starts_with("out_proj") || role == "norm" ? w.outProj.isFP8 : w.inProj.isFP8;
  l.variant = fp8 ? "fp8 layer" : "bf16 layer";
  l.weightSlot = specializedToWeights ? w.layer : -1;
  l.bytesRead = bytesRead;
  l.bytesWritten = bytesWritten;
  plan.launches.push_back(std::move(l));
}

llvm::Error LayerBuilder::addInProjGemm(const MambaLayerWeights &w, const LayerArgs &args,
                                        const PlanArg &in, const PlanArg &zxbcdt,
                                        bool decode) {
  const bool fp8 = w.inProj.isFP8;
  const int64_t hidden = c.hiddenSize, outCols = c.inProjRows();
  auto inProj =
      kernel("out_proj", with({{"inner", hidden}, {"hidden", outCols}, {"fp8", fp8}},
                              linearTiles(fp8, outCols, hidden, decode)));
  if (!inProj)
    return inProj.takeError();
  PlanArg gemmInput = in;
  std::optional<PlanArg> scale;
  if (fp8) {
    auto quantized = quantizedInput(w, in, hidden);
    if (!quantized)
      return quantized.takeError();
    gemmInput = *quantized;
    scale = PlanArg::real(float(w.inProj.inputScale) * w.inProj.weightScale);
  }
  return addLinear(w, "in_proj", *inProj, gemmInput, args.inW, zxbcdt, scale, outCols,
                   rows * hidden * (fp8 ? 1 : 2) + bytes(args.inW));
}

/// One row streams the weight as a GEMV; a few rows on read it once with direct
/// tensor-core operands (directProjection); otherwise, from 16 rows on,
/// tensor-core tiles read it once per 16 rows. bf16 weights take twice the
/// bytes per element: half the GEMV rows per program keeps one 16-byte load
/// per thread and K step. The FP8 GEMV issues 7 K steps of loads at a time on
/// 2 warps: with the weight read from HBM the tuner measured it faster than
/// the kernel's defaults, 21 steps on 4 warps (docs/BENCHMARKS.md, "Decode on
/// the H100 with split K's 256-row choice"). Its conv epilogue spills at
/// 16 x 64 (ptxas -v): 16 x 32 tiles.
llvm::Error LayerBuilder::addInProjConv(const MambaLayerWeights &w, const LayerArgs &args,
                                        const LayerIO &io, const PlanArg &slots,
                                        const PlanArg &xBC, const PlanArg &dt) {
  const bool fp8 = w.inProj.isFP8;
  const int64_t hidden = c.hiddenSize, I = c.intermediate(), Cd = c.convChannels();
  ConstantValues tiles = {{"block_n", 8}};
  if (fp8)
    tiles = {{"block_n", 16}, {"loads_in_flight", 7}, {"warps", 2}};
  if (chunkedProjection(options.overrides, "in_proj_conv"))
    tiles = chunkedTiles(rows, fp8 ? 16 : 8, fp8);
  else if (skinnyProjection(options.overrides, "in_proj_conv", rows))
    tiles = skinnyTiles("in_proj_conv", rows, fp8);
  else if (directProjection(options.overrides, "in_proj_conv", rows, fp8))
    tiles = directTiles(rows);
  else if (rows >= 16)
    tiles = {{"block_m", 16}, {"block_n", 32}, {"block_k", 64}};
  auto inProj = kernel("in_proj_conv", with({{"hidden", hidden},
                                             {"inner", I},
                                             {"channels", Cd},
                                             {"heads", c.numHeads},
                                             {"fp8", fp8}},
                                            tiles));
  if (!inProj)
    return inProj.takeError();
  auto input = inProj->get("quantized_input") ? quantizedInput(w, io.in, hidden)
                                              : llvm::Expected<PlanArg>(io.in);
  if (!input)
    return input.takeError();
  std::vector<PlanArg> inArgs = {*input,     weightFor(args.inW, "in_proj_conv", *inProj),
                                 slots,      args.convPage,
                                 args.convW, args.convB,
                                 io.z,       xBC,
                                 dt,         PlanArg::integer(rows)};
  if (fp8) {
    inArgs.push_back(PlanArg::real(w.inProj.inputScale));
    inArgs.push_back(PlanArg::real(float(w.inProj.inputScale) * w.inProj.weightScale));
  }
  const int64_t convRows = rows * Cd * 3 * 2; // the rows' conv taps, bf16
  launch(w, "in_proj", "in_proj_conv", *inProj,
         {columnPrograms(*inProj, c.inProjRows()),
          llvm::divideCeilSigned(rows, inProj->get("block_m")), 1},
         inArgs,
         bytes(args.inW) + rows * hidden * (inProj->get("quantized_input") ? 1 : 2) +
             convRows + bytes(args.convW) + bytes(args.convB),
         rows * c.inProjRows() * 2 + convRows, /*specializedToWeights=*/true);
  return llvm::Error::success();
}

llvm::Error LayerBuilder::addNormAndOutProj(const MambaLayerWeights &w,
                                            const LayerArgs &args, const LayerIO &io,
                                            bool gemm, bool decode) {
  const bool fp8 = w.outProj.isFP8;
  const int64_t I = c.intermediate(), hidden = c.hiddenSize;
  ConstantValues tiles = gemm ? linearTiles(fp8, hidden, I, decode)
                              : decodeOutTiles(options.overrides, rows, fp8);
  // The skinny tiles are few (42 at NemotronH's out_proj): split K as the
  // GEMM's tiles are.
  if (tiles.count("skinny"))
    tiles["k_splits"] =
        decodeKSplits(options, tiles, rows, hidden, I, hidden * I * (fp8 ? 1 : 2));
  const bool fold = !gemm && foldsNorm(options.overrides) && gemvTiles(tiles);
  if (fold) {
    // A K step must lie in one norm group (a model's groups of 64 and more).
    const int64_t step =
        tiles.count("block_k") ? tiles["block_k"] : 512; // out_proj's default
    tiles["block_k"] = std::min(step, c.normGroupSize());
    tiles["norm_prologue"] = 1;
    tiles["group_size"] = c.normGroupSize();
    if (io.zStride)
      tiles["z_stride"] = io.zStride;
  }
  auto outProj =
      kernel("out_proj", with({{"inner", I}, {"hidden", hidden}, {"fp8", fp8}}, tiles));
  if (!outProj)
    return outProj.takeError();

  const int64_t actBytes = rows * I * 2, normedBytes = rows * I * (fp8 ? 1 : 2);
  std::vector<PlanArg> normArgs = {io.y, io.z, args.normW, PlanArg::real(c.eps)};
  if (fp8)
    normArgs.push_back(PlanArg::real(w.outProj.inputScale));
  const PlanArg weight = weightFor(args.outW, "out_proj", *outProj);
  std::optional<PlanArg> scale;
  if (fp8)
    scale = PlanArg::real(float(w.outProj.inputScale) * w.outProj.weightScale);
  // The prologue takes the norm's operands before out_proj's own.
  std::vector<PlanArg> foldArgs = normArgs;
  llvm::append_range(foldArgs,
                     std::vector<PlanArg>{weight, io.out, PlanArg::integer(rows)});
  if (scale)
    foldArgs.push_back(*scale);
  const int64_t inputBytes = fold ? 2 * actBytes + bytes(args.normW) : normedBytes;
  // A checked plan keeps the norm launch even when folded: its checks read
  // the activation (the normed buffer), which the prologue keeps in registers
  // and computes as gated_rmsnorm does.
  if (!fold || options.perLayerActivations) {
    normArgs.insert(normArgs.begin() + 3, {io.normed, PlanArg::integer(rows)});
    ConstantValues normGeometry = {
        {"width", I}, {"group_size", c.normGroupSize()}, {"fp8_out", fp8}};
    if (io.zStride)
      normGeometry["z_stride"] = io.zStride;
    // The e4m3 quotient as a reciprocal product and one FMA step (the same
    // codes, no division per element) and, for a prefill's many rows, two
    // rows a program: 0.92x of a copy's time on the H100 where one row and
    // the division took 0.70x (docs/BENCHMARKS.md, "The state pass and the
    // streaming kernels").
    if (fp8)
      normGeometry["quant_fma"] = 1;
    if (rows >= 1024)
      normGeometry["rows_per_program"] = 2;
    auto norm = kernel("gated_rmsnorm", normGeometry);
    if (!norm)
      return norm.takeError();
    launch(w, "norm", "gated_rmsnorm", *norm,
           {llvm::divideCeilSigned(rows, norm->get("rows_per_program")),
            I / c.normGroupSize(), 1},
           normArgs, 2 * actBytes + bytes(args.normW), normedBytes);
  }
  if (!fold)
    return addLinear(w, "out_proj", *outProj, io.normed, weight, io.out, scale, hidden,
                     inputBytes + bytes(args.outW));
  launch(w, "out_proj", "out_proj", *outProj,
         {columnPrograms(*outProj, hidden),
          llvm::divideCeilSigned(rows, outProj->get("block_m")), 1},
         std::move(foldArgs), inputBytes + bytes(args.outW), rows * hidden * 2,
         /*specializedToWeights=*/true);
  return llvm::Error::success();
}

} // namespace tilejit::models::detail
