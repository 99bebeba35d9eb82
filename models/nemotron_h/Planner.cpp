// The NemotronH decode and prefill plans (Planner.h). One layer builder adds a
// layer's buffers and launches for either mode: the mode decides the head of
// the layer (decode: the fused in_proj + conv update and the state update;
// prefill: the quant, the in_proj GEMM, the causal conv and the chunked SSD),
// the tail (gated norm, out_proj) is shared. Every launch records its role,
// its weight slot and the bytes it must move.
#include "tilejit/models/nemotron_h/Planner.h"
#include "tilejit/models/plan/Validate.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MathExtras.h"

namespace tilejit::models {
namespace {

using Role = PlanBuffer::Role;
using Type = ElementType;

template <typename T> llvm::ArrayRef<uint8_t> asBytes(const Tensor<T> &t) {
  return {reinterpret_cast<const uint8_t *>(t.data.data()), t.data.size() * sizeof(T)};
}

llvm::ArrayRef<uint8_t> projectionBytes(const Projection &p) {
  return p.isFP8 ? asBytes(p.fp8Weight) : asBytes(p.bf16Weight);
}

/// A plan with per-layer activations is a check's: its steps are held to the
/// f64 reference, which keeps about three times the plan's buffer bytes beside
/// them in host memory (`tilejit run --mode prefill --backend interp` peaked
/// 0.2 MB higher per token, against 62 KB of buffers per token), so the plan
/// is refused before anything is allocated when all of it would not fit.
unsigned referenceCopies(const PlanOptions &options) {
  return options.perLayerActivations ? 3 : 0;
}

/// Tensor-core GEMM tiles of the prefill projections (M = tokens), half the K
/// step for bf16, by the arch's pipeline and its device's shared memory:
/// - TMA and wgmma (sm_90a): persistent 128 x 256 tiles fed by a TMA producer
///   warpgroup, 3 stages, which leave the shared memory to store the
///   accumulator as whole rows, were the fastest at both NemotronH shapes on
///   the H200 (docs/BENCHMARKS.md, issue 20);
/// - TMA and mma.sync (sm_90, sm_110a, sm_121a), bf16: 128 x 256 tiles of 8
///   warps (64 x 64 each) whose copies thread 0 issues (producer = 2: no
///   producer warp, so each thread keeps 255 registers; a ninth warp caps them
///   at 168, where these tiles spill), 3 stages where the device's shared
///   memory holds them (48 KiB each), else 2 (GB10: 96 of its 99 KiB);
///   e4m3: 128 x 128 tiles fed by a producer warp, 3 stages (96 KiB), as
///   fast as the wider ones there, which spill. On the H200 as the portable
///   sm_90 build: bf16 0.58-0.63x torch.matmul, e4m3 0.29-0.34x
///   torch._scaled_mm, against the cp.async tiles' 0.40-0.50x (bf16;
///   docs/BENCHMARKS.md, issue 35);
/// - elsewhere, and where rows of `inner` elements do not start on 16 bytes
///   (which TMA needs; a checkpoint's reduced K need not), 64 x 128, 4 warps,
///   3 stages of cp.async (72 KiB: within GB10's 99 KiB per program).
/// Whether gemmTiles gives the TMA producer tiles.
bool producerTiles(bool fp8, const std::optional<Arch> &arch, int64_t inner) {
  return arch && arch->capabilities().tma && (inner * (fp8 ? 1 : 2)) % 16 == 0;
}

std::vector<std::string> gemmTiles(bool fp8, const std::optional<Arch> &arch,
                                   int64_t inner) {
  const int64_t blockK = fp8 ? 128 : 64;
  if (producerTiles(fp8, arch, inner) && arch->capabilities().wgmma)
    return {kv("block_m", 128), kv("block_n", 256), kv("block_k", blockK), kv("warps", 8),
            kv("stages", 3),    kv("producer", 1),  kv("persistent", 8)};
  if (producerTiles(fp8, arch, inner) && fp8)
    return {kv("block_m", 128), kv("block_n", 128), kv("block_k", blockK),
            kv("warps", 8),     kv("stages", 3),    kv("producer", 1)};
  if (producerTiles(fp8, arch, inner)) {
    constexpr int64_t kStageBytes = (128 + 256) * 64 * 2, kBarrierBytes = 1024;
    const int64_t fit =
        (arch->profile().sharedBytesPerBlock - kBarrierBytes) / kStageBytes;
    return {kv("block_m", 128),
            kv("block_n", 256),
            kv("block_k", blockK),
            kv("warps", 8),
            kv("stages", std::clamp<int64_t>(fit, 2, 3)),
            kv("producer", 2)};
  }
  return {kv("block_m", 64), kv("block_n", 128), kv("block_k", blockK), kv("warps", 4),
          kv("stages", 3)};
}

/// Whether the decode projection `kernel` runs on tensor cores with its
/// operands loaded straight into fragments (`direct`): the caller's override
/// of the constant decides, else the measured default for `rows` (H200,
/// docs/journal/2026-12-01.md, "Issue 18: direct tensor-core projections in decode"):
/// the GEMV reads the weight once per row, so from a few rows on one direct
/// read wins (FP8 in_proj: 16.0 us
/// GEMV against 25.4 direct at B=1, 75.6 against 29.0 at B=8; out_proj 20.9
/// against 13.3 at B=8); from 16 rows the FP8 in_proj stays direct (246 against
/// 159 us at B=64, 886 against 518 at B=256), while out_proj's 16-row tiles are
/// as fast (22.5 against 24.5 us at B=64) and bf16's direct tiles are unmeasured.
bool directProjection(const KernelOverrides &overrides, llvm::StringRef kernel,
                      int64_t rows, bool fp8) {
  auto it = overrides.find(kernel.str());
  if (it != overrides.end())
    for (llvm::StringRef kv : it->second) {
      auto [name, value] = kv.split('=');
      if (name == "direct")
        return value != "0";
    }
  if (kernel == "in_proj_conv")
    return rows >= 3 && (fp8 || rows < 16);
  return rows >= 5 && rows < 16;
}

/// The direct projection's tile: 16 weight columns, batch rows in mma tiles of
/// 16 up to 64 per program (larger batches re-read the weight once per 64
/// rows), K steps of 256 split over 4 warp groups, 4 steps of loads in flight.
std::vector<std::string> directTiles(int64_t rows) {
  int64_t bm = 16;
  while (bm < rows && bm < 64)
    bm *= 2;
  return {kv("direct", 1),         kv("block_m", bm), kv("block_n", 16),
          kv("block_k", 256),      kv("split_k", 4),  kv("warps", 4),
          kv("loads_in_flight", 4)};
}

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

  /// Declares `w`'s weights (borrowing their host bytes) and pages.
  /// Layer `i`'s input (act<i>), its new output act<i+1> of `rows` rows and
  /// the batch's slots: what both modes' layers start from.
  LayerIO layerIO(size_t i, int64_t rows, const PlanArg &slots) {
    LayerIO io;
    io.in = PlanArg::of(StepPlan::activation(i));
    io.out = plan.addBuffer(StepPlan::activation(i + 1), PlanBuffer::Role::Activation,
                            ElementType::BF16, {rows, c.hiddenSize});
    io.slots = slots;
    return io;
  }

  LayerArgs addLayerBuffers(const MambaLayerWeights &w) {
    const int64_t hidden = c.hiddenSize, I = c.intermediate(), Cd = c.convChannels();
    const int64_t H = c.numHeads, slots = plan.numSlots;
    auto param = [&](llvm::StringRef name, Role role, Type type,
                     std::vector<int64_t> shape, llvm::ArrayRef<uint8_t> host = {}) {
      PlanArg arg = plan.addBuffer(StepPlan::layerBuffer(w.layer, name), role, type,
                                   std::move(shape), w.layer);
      plan.buffers.at(arg.buffer).hostWeight = host;
      return arg;
    };
    auto projType = [](const Projection &p) { return p.isFP8 ? Type::E4M3 : Type::BF16; };
    return LayerArgs{
        param("in_proj.weight", Role::Weight, projType(w.inProj),
              {c.inProjRows(), hidden}, projectionBytes(w.inProj)),
        param("conv1d.weight", Role::Weight, Type::BF16, {Cd, 4}, asBytes(w.convWeight)),
        param("conv1d.bias", Role::Weight, Type::BF16, {Cd}, asBytes(w.convBias)),
        param("A_log", Role::Weight, Type::F32, {H}, asBytes(w.aLog)),
        param("dt_bias", Role::Weight, Type::F32, {H}, asBytes(w.dtBias)),
        param("D", Role::Weight, Type::F32, {H}, asBytes(w.d)),
        param("norm.weight", Role::Weight, Type::BF16, {I}, asBytes(w.normWeight)),
        param("out_proj.weight", Role::Weight, projType(w.outProj), {hidden, I},
              projectionBytes(w.outProj)),
        param("conv_page", Role::State, Type::BF16, {slots, Cd, 3}),
        param("ssm_page", Role::State, Type::F32, {slots, H, c.headDim, c.stateSize})};
  }

  /// An intermediate of layer `layer`: shared by all layers unless the
  /// options ask for one per layer.
  PlanArg intermediate(int64_t layer, llvm::StringRef name, Type type,
                       std::vector<int64_t> shape) {
    std::string buffer = intermediateBuffer(options, layer, name);
    if (plan.buffers.count(buffer))
      return PlanArg::of(buffer);
    return plan.addBuffer(buffer, Role::Activation, type, std::move(shape),
                          options.perLayerActivations ? layer : -1);
  }

  /// The gated norm's output: e4m3 codes before an FP8 out_proj. Shared by
  /// layers of both kinds it is sized for bf16, the codes in its first bytes.
  PlanArg normed(const MambaLayerWeights &w, std::vector<int64_t> shape) {
    Type type = options.perLayerActivations && w.outProj.isFP8 ? Type::E4M3 : Type::BF16;
    return intermediate(w.layer, "normed", type, std::move(shape));
  }

  llvm::Expected<PlannedKernel> kernel(llvm::StringRef name,
                                       std::vector<std::string> geometry) {
    return planKernel(registry, options.overrides, name, std::move(geometry),
                      options.tuned);
  }

  void launch(const MambaLayerWeights &w, llvm::StringRef role,
              llvm::StringRef kernelName, const PlannedKernel &k,
              std::array<int64_t, 3> grid, std::vector<PlanArg> args, int64_t bytesRead,
              int64_t bytesWritten, bool specializedToWeights = false) {
    PlannedLaunch l{kernelName.str(), k.constants, grid,
                    std::move(args),  w.layer,     role.str()};
    const bool fp8 =
        role == "out_proj" || role == "norm" ? w.outProj.isFP8 : w.inProj.isFP8;
    l.variant = fp8 ? "fp8 layer" : "bf16 layer";
    l.weightSlot = specializedToWeights ? w.layer : -1;
    l.bytesRead = bytesRead;
    l.bytesWritten = bytesWritten;
    plan.launches.push_back(std::move(l));
  }

  int64_t bytes(const PlanArg &arg) const {
    return int64_t(plan.buffers.at(arg.buffer).bytes);
  }

  /// in_proj as prefill runs it, for `rows` rows: R1 (the static quant,
  /// then the e4m3 GEMM) or R1b, into `zxbcdt` [rows, z | xBC | dt]; the
  /// split (R2) is the column offsets the next kernels read at. The GEMM is
  /// the out_proj kernel at these dimensions, on gemmTiles.
  llvm::Error addInProjGemm(const MambaLayerWeights &w, const LayerArgs &args,
                            const PlanArg &in, const PlanArg &zxbcdt) {
    const bool fp8 = w.inProj.isFP8;
    const int64_t hidden = c.hiddenSize, outCols = c.inProjRows();
    std::vector<std::string> inGeometry = {kv("inner", hidden), kv("hidden", outCols),
                                           kv("fp8", fp8)};
    for (std::string &t : gemmTiles(fp8, options.arch, hidden))
      inGeometry.push_back(t);
    auto inProj = kernel("out_proj", inGeometry);
    if (!inProj)
      return inProj.takeError();
    const PlanArg count = PlanArg::integer(rows);
    PlanArg gemmInput = in;
    std::vector<PlanArg> inExtra;
    if (fp8) {
      auto quant = kernel("quantize_e4m3", {kv("width", hidden)});
      if (!quant)
        return quant.takeError();
      PlanArg quantized = intermediate(w.layer, "act_q", Type::E4M3, {rows, hidden});
      launch(w, "quant", "quantize_e4m3", *quant,
             {llvm::divideCeilSigned(hidden, quant->spec.get("block")), rows, 1},
             {in, quantized, count, PlanArg::real(w.inProj.inputScale)},
             rows * hidden * 2, rows * hidden);
      gemmInput = quantized;
      inExtra.push_back(PlanArg::real(float(w.inProj.inputScale) * w.inProj.weightScale));
    }
    std::vector<PlanArg> inArgs = {gemmInput, args.inW, zxbcdt, count};
    inArgs.insert(inArgs.end(), inExtra.begin(), inExtra.end());
    launch(w, "in_proj", "out_proj", *inProj,
           {llvm::divideCeilSigned(outCols, inProj->spec.get("block_n")),
            llvm::divideCeilSigned(rows, inProj->spec.get("block_m")), 1},
           inArgs, rows * hidden * (fp8 ? 1 : 2) + bytes(args.inW), rows * outCols * 2,
           /*specializedToWeights=*/true);
    return llvm::Error::success();
  }

  /// Decode's fused in_proj_conv for `rows` rows: R1 or R1b, the split, and
  /// the conv update on the xBC columns, writing `io.z`, `xBC` and `dt`. One
  /// row streams the weight as a GEMV; a few rows on read it once with direct
  /// tensor-core operands (directProjection); otherwise, from 16 rows on,
  /// tensor-core tiles read it once per 16 rows. bf16 weights take twice the
  /// bytes per element: half the GEMV rows per program keeps one 16-byte load
  /// per thread and K step. Its conv epilogue spills at 16 x 64 (ptxas -v):
  /// 16 x 32 tiles.
  llvm::Error addInProjConv(const MambaLayerWeights &w, const LayerArgs &args,
                            const LayerIO &io, const PlanArg &slots, const PlanArg &xBC,
                            const PlanArg &dt) {
    const bool fp8 = w.inProj.isFP8;
    const int64_t hidden = c.hiddenSize, I = c.intermediate(), Cd = c.convChannels();
    std::vector<std::string> inGeometry = {kv("hidden", hidden), kv("inner", I),
                                           kv("channels", Cd), kv("heads", c.numHeads),
                                           kv("fp8", fp8)};
    if (directProjection(options.overrides, "in_proj_conv", rows, fp8))
      for (std::string &t : directTiles(rows))
        inGeometry.push_back(t);
    else if (rows >= 16)
      inGeometry.insert(inGeometry.end(),
                        {kv("block_m", 16), kv("block_n", 32), kv("block_k", 64)});
    else
      inGeometry.push_back(kv("block_n", fp8 ? 16 : 8));
    auto inProj = kernel("in_proj_conv", inGeometry);
    if (!inProj)
      return inProj.takeError();
    std::vector<PlanArg> inArgs = {
        io.in, args.inW, slots, args.convPage,         args.convW, args.convB,
        io.z,  xBC,      dt,    PlanArg::integer(rows)};
    if (fp8) {
      inArgs.push_back(PlanArg::real(w.inProj.inputScale));
      inArgs.push_back(PlanArg::real(float(w.inProj.inputScale) * w.inProj.weightScale));
    }
    const int64_t convRows = rows * Cd * 3 * 2; // the rows' conv taps, bf16
    launch(w, "in_proj", "in_proj_conv", *inProj,
           {llvm::divideCeilSigned(c.inProjRows(), inProj->spec.get("block_n")),
            llvm::divideCeilSigned(rows, inProj->spec.get("block_m")), 1},
           inArgs,
           bytes(args.inW) + rows * hidden * 2 + convRows + bytes(args.convW) +
               bytes(args.convB),
           rows * c.inProjRows() * 2 + convRows, /*specializedToWeights=*/true);
    return llvm::Error::success();
  }

  /// R6's gated RMSNorm of `io.y` by `io.z` into `io.normed` (e4m3 at the
  /// out_proj input scale before an FP8 out_proj), then out_proj into
  /// `io.out`: the tail both modes share. `gemm`: prefill's tensor-core tiles.
  llvm::Error addNormAndOutProj(const MambaLayerWeights &w, const LayerArgs &args,
                                const LayerIO &io, bool gemm) {
    const bool fp8 = w.outProj.isFP8;
    const int64_t I = c.intermediate(), hidden = c.hiddenSize;
    std::vector<std::string> normGeometry = {
        kv("width", I), kv("group_size", c.normGroupSize()), kv("fp8_out", fp8)};
    if (io.zStride)
      normGeometry.push_back(kv("z_stride", io.zStride));
    auto norm = kernel("gated_rmsnorm", normGeometry);
    std::vector<std::string> outGeometry = {kv("inner", I), kv("hidden", hidden),
                                            kv("fp8", fp8)};
    if (gemm) {
      for (std::string &t : gemmTiles(fp8, options.arch, I))
        outGeometry.push_back(t);
    } else if (directProjection(options.overrides, "out_proj", rows, fp8)) {
      for (std::string &t : directTiles(rows))
        outGeometry.push_back(t);
    } else if (rows >= 16) {
      // The first row of tiles prefetches the weight the others read again:
      // 125.67 -> 122.66 us per layer at B = 64 on the H200 (docs/BENCHMARKS.md,
      // "programmatic dependent launch"); it cost the GEMV 1 us at B = 8.
      outGeometry.insert(outGeometry.end(), {kv("block_m", 16), kv("block_n", 64),
                                             kv("block_k", 64), kv("prefetch", 1)});
    } else {
      outGeometry.push_back(kv("block_n", 4));
      if (!fp8) // measured: bf16 rows of 256 (9.05 us on the H200)
        outGeometry.push_back(kv("block_k", 256));
    }
    auto outProj = kernel("out_proj", outGeometry);
    if (!norm || !outProj)
      return llvm::joinErrors(norm.takeError(), outProj.takeError());

    const int64_t actBytes = rows * I * 2, normedBytes = rows * I * (fp8 ? 1 : 2);
    std::vector<PlanArg> normArgs = {
        io.y, io.z, args.normW, io.normed, PlanArg::integer(rows), PlanArg::real(c.eps)};
    if (fp8)
      normArgs.push_back(PlanArg::real(w.outProj.inputScale));
    launch(w, "norm", "gated_rmsnorm", *norm, {rows, I / c.normGroupSize(), 1}, normArgs,
           2 * actBytes + bytes(args.normW), normedBytes);

    std::vector<PlanArg> outArgs = {io.normed, args.outW, io.out, PlanArg::integer(rows)};
    if (fp8)
      outArgs.push_back(
          PlanArg::real(float(w.outProj.inputScale) * w.outProj.weightScale));
    launch(w, "out_proj", "out_proj", *outProj,
           {llvm::divideCeilSigned(hidden, outProj->spec.get("block_n")),
            llvm::divideCeilSigned(rows, outProj->spec.get("block_m")), 1},
           outArgs, normedBytes + bytes(args.outW), rows * hidden * 2,
           /*specializedToWeights=*/true);
    return llvm::Error::success();
  }

private:
  StepPlan &plan;
  const KernelRegistry &registry;
  const NemotronHConfig &c;
  const PlanOptions &options;
  int64_t rows; ///< decode rows, or prefill tokens
};

/// Checks what both planners need of the config.
llvm::Error checkPlannable(const NemotronHConfig &c, llvm::StringRef what) {
  if (auto err = c.validate())
    return err;
  if (c.convKernel != 4)
    return llvm::createStringError(
        llvm::formatv("{0} plan: the conv kernels have 4 taps, the config has {1}", what,
                      c.convKernel));
  return llvm::Error::success();
}

/// Rows, slots and tokens reach the kernels as i32 and size the plan's
/// metadata on the host: each in [1, 2^31 - 1], checked before anything is
/// sized by it.
llvm::Error
checkPlanSizes(llvm::StringRef what,
               std::initializer_list<std::pair<const char *, int64_t>> sizes) {
  for (auto [name, value] : sizes)
    if (value < 1 || value > INT32_MAX)
      return llvm::createStringError(llvm::formatv(
          "{0} plan: {1} = {2}; it must be in [1, 2147483647] (the kernels take it as "
          "i32)",
          what, name, value));
  return llvm::Error::success();
}

} // namespace

std::string intermediateBuffer(const PlanOptions &options, int64_t layer,
                               llvm::StringRef name) {
  return options.perLayerActivations ? StepPlan::layerBuffer(layer, name) : name.str();
}

/// Whether decode's in_proj runs as prefill's GEMM (addInProjGemm,
/// gemmTiles) for `rows` rows: from kDecodeGemmRows rows on, where those are
/// the wgmma producer tiles (sm_90a, rows of `hidden` starting on 16 bytes:
/// the only ones measured against in_proj_conv at these rows),
/// unless the caller sets constants of in_proj_conv, which keeps the fused
/// kernel. On the H200 the fused in_proj_conv took 171 / 542 us (FP8) at 64 /
/// 256 rows, 14 / 35 x its floor, the GEMM 17.9 / 18.8 us. out_proj (K =
/// 4096, N = 2688: 11 column tiles of 256) fills the multiprocessors only
/// from kDecodeOutGemmRows rows on: at 64 its GEMM took 23.8 (FP8) and 42.7 us
/// (bf16) against 22.5 and 23.3 on the decode tiles; at 256, 24.2 and 43.1
/// against 41.3 and 43.4 (docs/journal/2026-12-02.md, issue 20, session 3).
constexpr int64_t kDecodeGemmRows = 64, kDecodeOutGemmRows = 256;
bool decodeGemm(const PlanOptions &options, int64_t rows, int64_t hidden, bool fp8) {
  return rows >= kDecodeGemmRows && !options.overrides.count("in_proj_conv") &&
         producerTiles(fp8, options.arch, hidden) && options.arch->capabilities().wgmma;
}

llvm::Expected<StepPlan> planDecodeStep(const KernelRegistry &registry,
                                        const NemotronHConfig &c,
                                        const std::vector<MambaLayerWeights> &layers,
                                        int64_t rows, int64_t numSlots,
                                        const PlanOptions &options) {
  if (auto err = checkPlannable(c, "decode"))
    return std::move(err);
  if (auto err = checkPlanSizes("decode", {{"rows", rows}, {"slots", numSlots}}))
    return std::move(err);
  const int64_t hidden = c.hiddenSize, I = c.intermediate(), Cd = c.convChannels();
  const int64_t H = c.numHeads, P = c.headDim, N = c.stateSize, G = c.numGroups;
  const int64_t outCols = c.inProjRows();

  StepPlan plan;
  plan.rows = rows;
  plan.numSlots = numSlots;
  plan.numLayers = int64_t(layers.size());
  LayerBuilder builder(plan, registry, c, options, rows);
  PlanArg slots = plan.addBuffer("slots", Role::Input, Type::I32, {rows});
  plan.addBuffer(StepPlan::activation(0), Role::Input, Type::BF16, {rows, hidden});

  for (size_t i = 0; i < layers.size(); ++i) {
    const MambaLayerWeights &w = layers[i];
    const LayerArgs args = builder.addLayerBuffers(w);
    const bool fp8 = w.inProj.isFP8;
    LayerIO io = builder.layerIO(i, rows, slots);
    PlanArg xBC = builder.intermediate(w.layer, "xbc", Type::BF16, {rows, Cd});
    io.y = builder.intermediate(w.layer, "y", Type::BF16, {rows, I});
    io.normed = builder.normed(w, {rows, I});
    std::vector<std::string> ssmGeometry = {kv("heads", H), kv("head_dim", P),
                                            kv("state", N), kv("groups", G)};
    PlanArg dt;
    const int64_t convRows = rows * Cd * 3 * 2; // the rows' conv taps, bf16
    const bool gemm = decodeGemm(options, rows, hidden, fp8);
    if (gemm) {
      // Prefill's in_proj GEMM into zxbcdt [rows, z | xBC | dt]; the conv,
      // the state update and the gated norm read their columns in place.
      PlanArg zxbcdt =
          builder.intermediate(w.layer, "zxbcdt", Type::BF16, {rows, outCols});
      io.z = dt = zxbcdt;
      io.zStride = outCols;
      ssmGeometry.insert(ssmGeometry.end(),
                         {kv("dt_stride", outCols), kv("dt_col", I + Cd)});
      if (auto err = builder.addInProjGemm(w, args, io.in, zxbcdt))
        return std::move(err);
      auto conv = builder.kernel(
          "conv_update", {kv("channels", Cd), kv("x_stride", outCols), kv("x_col", I)});
      if (!conv)
        return conv.takeError();
      builder.launch(w, "conv", "conv_update", *conv,
                     {rows, llvm::divideCeilSigned(Cd, conv->spec.get("block")), 1},
                     {zxbcdt, args.convPage, slots, args.convW, args.convB, xBC},
                     rows * Cd * 2 + convRows + builder.bytes(args.convW) +
                         builder.bytes(args.convB),
                     rows * Cd * 2 + convRows);
    } else {
      io.z = builder.intermediate(w.layer, "z", Type::BF16, {rows, I});
      dt = builder.intermediate(w.layer, "dt", Type::BF16, {rows, H});
      if (auto err = builder.addInProjConv(w, args, io, slots, xBC, dt))
        return std::move(err);
    }

    auto ssm = builder.kernel("ssm_update", ssmGeometry);
    if (!ssm)
      return ssm.takeError();
    const int64_t stateRows = rows * H * P * N * 4; // the rows' SSM states, f32
    builder.launch(w, "ssm_update", "ssm_update", *ssm,
                   {llvm::divideCeilSigned(P, ssm->spec.get("block_p")), H, rows},
                   {xBC, dt, args.aLog, args.dtBias, args.d, slots, args.ssmPage, io.y,
                    PlanArg::real(c.dtMin), PlanArg::real(c.dtMax)},
                   stateRows + rows * (Cd + H) * 2, stateRows + rows * I * 2);

    const bool outGemm =
        rows >= kDecodeOutGemmRows && decodeGemm(options, rows, I, w.outProj.isFP8);
    if (auto err = builder.addNormAndOutProj(w, args, io, outGemm))
      return std::move(err);
  }
  if (auto err = validatePlan(
          plan, options.overridesMustApply ? options.overrides : KernelOverrides(),
          referenceCopies(options)))
    return std::move(err);
  return plan;
}

void PrefillPlan::writeInputs(HostBuffers &buffers) const {
  buffers["cu_seqlens"] = bytesOf(batch.cuSeqlens);
  buffers["slots"] = bytesOf(batch.slots);
  buffers["init"] = bytesOf(batch.init);
  buffers["chunk_seq"] = bytesOf(batch.chunkSequence);
  buffers["chunk_begin"] = bytesOf(batch.chunkBegin);
  buffers["chunk_end"] = bytesOf(batch.chunkEnd);
  buffers["span_chunk"] = bytesOf(batch.spanChunk);
  buffers["span_slot"] = bytesOf(batch.spanSlot);
  buffers["span_flags"] = bytesOf(batch.spanFlags);
}

llvm::Expected<PrefillPlan> planPrefill(const KernelRegistry &registry,
                                        const NemotronHConfig &c,
                                        const std::vector<MambaLayerWeights> &layers,
                                        const ref::PrefillBatch &batch, int64_t tokens,
                                        int64_t numSlots, const PlanOptions &options) {
  if (auto err = checkPlannable(c, "prefill"))
    return std::move(err);
  if (auto err =
          checkPlanSizes("prefill", {{"tokens", tokens},
                                     {"slots", numSlots},
                                     {"sequences", int64_t(batch.cuSeqlens.size())}}))
    return std::move(err);
  const int64_t hidden = c.hiddenSize, I = c.intermediate(), Cd = c.convChannels();
  const int64_t H = c.numHeads, P = c.headDim, N = c.stateSize, G = c.numGroups;
  const int64_t outCols = c.inProjRows();

  // The SSD's chunk (after overrides) chunks the batch; the conv uses it too,
  // so one set of metadata serves both.
  const std::vector<std::string> ssdGeometry = {
      kv("heads", H),  kv("head_dim", P),        kv("state", N),
      kv("groups", G), kv("dt_stride", outCols), kv("dt_col", I + Cd)};
  std::vector<std::string> scanGeometry = ssdGeometry;
  scanGeometry.push_back(kv("span_states", 1));
  auto ssd =
      planKernel(registry, options.overrides, "ssd_prefill", scanGeometry, options.tuned);
  if (!ssd)
    return ssd.takeError();
  const int64_t chunk = ssd->spec.get("chunk");
  // The SSD walks spans of whole chunks in parallel (PlanOptions::ssdSpanTokens).
  auto meta = prefillMetadata(batch, tokens, numSlots, chunk, /*chunkCapacity=*/0,
                              std::max<int64_t>(1, options.ssdSpanTokens / chunk));
  if (!meta)
    return meta.takeError();
  std::vector<std::string> stateGeometry = ssdGeometry;
  stateGeometry.push_back(kv("chunk", chunk));
  stateGeometry.push_back(kv("precision", ssd->spec.get("precision")));
  auto spanState = planKernel(registry, options.overrides, "ssd_span_state",
                              stateGeometry, options.tuned);
  if (!spanState)
    return spanState.takeError();
  auto statePass = planKernel(registry, options.overrides, "ssd_state_pass",
                              {kv("heads", H), kv("head_dim", P), kv("state", N),
                               kv("block", std::min<int64_t>(1024, P * N))},
                              options.tuned);
  if (!statePass)
    return statePass.takeError();
  auto conv = planKernel(
      registry, options.overrides, "conv_prefill",
      {kv("inner", I), kv("channels", Cd), kv("heads", H), kv("block_t", chunk)},
      options.tuned);
  if (!conv)
    return conv.takeError();
  if (conv->spec.get("block_t") != chunk)
    return llvm::createStringError(
        llvm::formatv("prefill plan: conv_prefill's block_t ({0}) must equal "
                      "ssd_prefill's chunk ({1}): "
                      "one set of chunk metadata serves both",
                      conv->spec.get("block_t"), chunk));

  PrefillPlan result;
  result.batch = std::move(*meta);
  result.tokens = tokens;
  result.chunk = chunk;
  result.ssdPrecision = SsdPrecision(ssd->spec.get("precision"));
  StepPlan &plan = result.plan;
  plan.rows = result.batch.numSequences();
  plan.numSlots = numSlots;
  plan.numLayers = int64_t(layers.size());
  const int64_t sequences = plan.rows, chunks = result.batch.numChunks();
  LayerBuilder builder(plan, registry, c, options, tokens);
  auto input = [&](std::string name, int64_t n) {
    return plan.addBuffer(std::move(name), Role::Input, Type::I32, {n});
  };
  PlanArg cu = input("cu_seqlens", sequences + 1), slots = input("slots", sequences);
  PlanArg init = input("init", sequences), chunkSeq = input("chunk_seq", chunks);
  PlanArg chunkBegin = input("chunk_begin", chunks),
          chunkEnd = input("chunk_end", chunks);
  const int64_t spans = result.batch.numSpans();
  PlanArg spanChunk = input("span_chunk", spans + 1),
          spanSlot = input("span_slot", spans), spanFlags = input("span_flags", spans);
  plan.addBuffer(StepPlan::activation(0), Role::Input, Type::BF16, {tokens, hidden});
  // The bytes of the sequences' pages: their slots read (when continued) and written.
  const int64_t convPages = sequences * Cd * 3 * 2, ssmPages = sequences * H * P * N * 4;

  for (size_t i = 0; i < layers.size(); ++i) {
    const MambaLayerWeights &w = layers[i];
    const LayerArgs args = builder.addLayerBuffers(w);
    LayerIO io = builder.layerIO(i, tokens, slots);
    PlanArg zxbcdt =
        builder.intermediate(w.layer, "zxbcdt", Type::BF16, {tokens, outCols});
    PlanArg xBC = builder.intermediate(w.layer, "xbc", Type::BF16, {tokens, Cd});
    io.y = builder.intermediate(w.layer, "y", Type::BF16, {tokens, I});
    io.z = zxbcdt; // the gated norm reads z in place
    io.zStride = outCols;
    io.normed = builder.normed(w, {tokens, I});

    if (auto err = builder.addInProjGemm(w, args, io.in, zxbcdt))
      return std::move(err);

    builder.launch(w, "conv", "conv_prefill", *conv,
                   {llvm::divideCeilSigned(Cd, conv->spec.get("block_c")), chunks, 1},
                   {zxbcdt, args.convW, args.convB, cu, slots, init, chunkSeq, chunkBegin,
                    chunkEnd, args.convPage, xBC, PlanArg::integer(numSlots)},
                   tokens * Cd * 2 + convPages + builder.bytes(args.convW) +
                       builder.bytes(args.convB),
                   tokens * Cd * 2 + convPages);

    // R5p over spans: each span's tail state, the states passed from span to
    // span, then every span's output (pages read and written there).
    PlanArg spanStates =
        builder.intermediate(w.layer, "ssd_span_states", Type::F32, {spans, H, P, N});
    PlanArg spanDecay =
        builder.intermediate(w.layer, "ssd_span_decay", Type::F32, {spans * H});
    PlanArg spanTail =
        builder.intermediate(w.layer, "ssd_span_tail", Type::F32, {spans, H, P, N});
    const int64_t stateBytes = spans * H * P * N * 4, decayBytes = spans * H * 4;
    builder.launch(w, "ssd_state", "ssd_span_state", *spanState,
                   {llvm::divideCeilSigned(P, spanState->spec.get("block_p")), H, spans},
                   {xBC, zxbcdt, args.aLog, args.dtBias, cu, chunkSeq, spanChunk,
                    chunkBegin, chunkEnd, spanStates, spanDecay, PlanArg::real(c.dtMin),
                    PlanArg::real(c.dtMax)},
                   tokens * (I + G * N + H) * 2, stateBytes + decayBytes);
    builder.launch(w, "ssd_pass", "ssd_state_pass", *statePass,
                   {llvm::divideCeilSigned(P * N, statePass->spec.get("block")), H, 1},
                   {spanSlot, spanFlags, spanDecay, spanStates, spanTail, args.ssmPage,
                    PlanArg::integer(spans)},
                   stateBytes + decayBytes + ssmPages, 2 * stateBytes);
    builder.launch(
        w, "ssd", "ssd_prefill", *ssd,
        {llvm::divideCeilSigned(P, ssd->spec.get("block_p")), H, spans},
        {xBC, zxbcdt, args.aLog, args.dtBias, args.d, cu, slots, init, chunkSeq,
         chunkBegin, chunkEnd, args.ssmPage, io.y, PlanArg::integer(chunks),
         PlanArg::real(c.dtMin), PlanArg::real(c.dtMax), spanChunk, spanStates, spanTail},
        tokens * (Cd + H) * 2 + 2 * stateBytes + ssmPages, tokens * I * 2 + ssmPages);

    if (auto err = builder.addNormAndOutProj(w, args, io, /*gemm=*/true))
      return std::move(err);
  }
  if (auto err = validatePlan(
          result.plan, options.overridesMustApply ? options.overrides : KernelOverrides(),
          referenceCopies(options)))
    return std::move(err);
  return result;
}

} // namespace tilejit::models
