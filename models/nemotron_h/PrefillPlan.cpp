// Plans the NemotronH prefill forward (PrefillPlan.h).
#include "tilejit/models/PrefillPlan.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MathExtras.h"

#include <cstring>

namespace tilejit::models {
namespace {

template <typename T> std::vector<uint8_t> bytesOf(const std::vector<T> &v) {
  std::vector<uint8_t> b(v.size() * sizeof(T));
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}

/// Tensor-core GEMM tiles of the projections (M = tokens): the e4m3 GEMM's
/// measured default (models/examples gemm_e4m3), half the K step for bf16.
std::vector<std::string> gemmTiles(bool fp8) {
  return {kv("block_m", 128), kv("block_n", 128), kv("block_k", fp8 ? 128 : 64),
          kv("warps", 8), kv("stages", 3)};
}

} // namespace

void PrefillPlan::writeInputs(HostBuffers &buffers) const {
  buffers["cu_seqlens"] = bytesOf(batch.cuSeqlens);
  buffers["slots"] = bytesOf(batch.slots);
  buffers["init"] = bytesOf(batch.init);
  buffers["chunk_seq"] = bytesOf(batch.chunkSequence);
  buffers["chunk_begin"] = bytesOf(batch.chunkBegin);
  buffers["chunk_end"] = bytesOf(batch.chunkEnd);
}

llvm::Expected<PrefillPlan> planPrefill(const KernelRegistry &registry,
                                        const NemotronHConfig &c,
                                        const std::vector<MambaLayerWeights> &layers,
                                        const ref::PrefillBatch &batch, int64_t tokens,
                                        int64_t numSlots, const KernelOverrides &overrides) {
  if (auto err = c.validate())
    return std::move(err);
  if (c.convKernel != 4)
    return llvm::createStringError(
        llvm::formatv("prefill plan: the conv kernels have 4 taps, the config has {0}",
                      c.convKernel));
  const int64_t hidden = c.hiddenSize, I = c.intermediate(), Cd = c.convChannels();
  const int64_t H = c.numHeads, P = c.headDim, N = c.stateSize, G = c.numGroups;
  const int64_t outCols = c.inProjRows();

  // The SSD's chunk (after overrides) chunks the batch; the conv uses it too,
  // so one set of metadata serves both.
  auto ssd = planKernel(registry, overrides, "ssd_prefill",
                        {kv("heads", H), kv("head_dim", P), kv("state", N), kv("groups", G),
                         kv("dt_stride", outCols), kv("dt_col", I + Cd)});
  if (!ssd)
    return ssd.takeError();
  const int64_t chunk = ssd->spec.get("chunk");
  auto meta = prefillMetadata(batch, tokens, numSlots, chunk);
  if (!meta)
    return meta.takeError();
  auto conv = planKernel(registry, overrides, "conv_prefill",
                         {kv("inner", I), kv("channels", Cd), kv("heads", H),
                          kv("block_t", chunk)});
  if (!conv)
    return conv.takeError();
  if (conv->spec.get("block_t") != chunk)
    return llvm::createStringError(llvm::formatv(
        "prefill plan: conv_prefill's block_t ({0}) must equal ssd_prefill's chunk ({1}): "
        "one set of chunk metadata serves both",
        conv->spec.get("block_t"), chunk));

  PrefillPlan result;
  result.batch = std::move(*meta);
  result.tokens = tokens;
  result.chunk = chunk;
  DecodePlan &plan = result.plan;
  plan.rows = result.batch.numSequences();
  plan.numSlots = numSlots;
  plan.numLayers = int64_t(layers.size());
  const int64_t sequences = plan.rows, chunks = result.batch.numChunks();
  auto buffer = [&](std::string name, PlanBuffer::Role role, size_t bytes) {
    plan.buffers[name] = {role, bytes};
    return PlanArg::of(std::move(name));
  };
  using Role = PlanBuffer::Role;
  PlanArg cu = buffer("cu_seqlens", Role::Input, (sequences + 1) * 4);
  PlanArg slots = buffer("slots", Role::Input, sequences * 4);
  PlanArg init = buffer("init", Role::Input, sequences * 4);
  PlanArg chunkSeq = buffer("chunk_seq", Role::Input, chunks * 4);
  PlanArg chunkBegin = buffer("chunk_begin", Role::Input, chunks * 4);
  PlanArg chunkEnd = buffer("chunk_end", Role::Input, chunks * 4);
  PlanArg zxbcdt = buffer("zxbcdt", Role::Activation, tokens * outCols * 2);
  PlanArg xBC = buffer("xbc", Role::Activation, tokens * Cd * 2);
  PlanArg y = buffer("y", Role::Activation, tokens * I * 2);
  PlanArg normed = buffer("normed", Role::Activation, tokens * I * 2);
  buffer(DecodePlan::activation(0), Role::Input, tokens * hidden * 2);
  const bool anyFP8 = llvm::any_of(layers, [](const MambaLayerWeights &w) {
    return w.inProj.isFP8;
  });
  PlanArg quantized =
      anyFP8 ? buffer("act_q", Role::Activation, tokens * hidden) : PlanArg::of("");
  const PlanArg rows = PlanArg::integer(tokens);

  for (size_t i = 0; i < layers.size(); ++i) {
    const MambaLayerWeights &w = layers[i];
    if (w.inProj.isFP8 != w.outProj.isFP8)
      return llvm::createStringError(llvm::formatv(
          "prefill plan: layer {0} mixes an FP8 and a bf16 projection", w.layer));
    const bool fp8 = w.inProj.isFP8;
    const size_t weightBytes = fp8 ? 1 : 2;
    auto param = [&](llvm::StringRef name, Role role, size_t bytes) {
      return buffer(DecodePlan::layerBuffer(w.layer, name), role, bytes);
    };
    PlanArg inW = param("in_proj.weight", Role::Weight, outCols * hidden * weightBytes);
    PlanArg convW = param("conv1d.weight", Role::Weight, Cd * 4 * 2);
    PlanArg convB = param("conv1d.bias", Role::Weight, Cd * 2);
    PlanArg aLog = param("A_log", Role::Weight, H * 4);
    PlanArg dtBias = param("dt_bias", Role::Weight, H * 4);
    PlanArg d = param("D", Role::Weight, H * 4);
    PlanArg normW = param("norm.weight", Role::Weight, I * 2);
    PlanArg outW = param("out_proj.weight", Role::Weight, hidden * I * weightBytes);
    PlanArg convPage = param("conv_page", Role::State, numSlots * Cd * 3 * 2);
    PlanArg ssmPage = param("ssm_page", Role::State, numSlots * H * P * N * 4);
    PlanArg in = PlanArg::of(DecodePlan::activation(i));
    PlanArg out = buffer(DecodePlan::activation(i + 1), Role::Activation, tokens * hidden * 2);

    // in_proj: R1 (static quant, then the e4m3 GEMM) or R1b, into zxbcdt
    // [T, z | xBC | dt]; the split (R2) is the column offsets the next
    // kernels read at. The GEMM is the out_proj kernel at these dimensions.
    std::vector<std::string> inGeometry = {kv("inner", hidden), kv("hidden", outCols),
                                           kv("fp8", fp8)};
    for (std::string &t : gemmTiles(fp8))
      inGeometry.push_back(t);
    auto inProj = planKernel(registry, overrides, "out_proj", inGeometry);
    auto quant = planKernel(registry, overrides, "quantize_e4m3", {kv("width", hidden)});
    auto norm = planKernel(registry, overrides, "gated_rmsnorm",
                           {kv("width", I), kv("group_size", c.normGroupSize()),
                            kv("fp8_out", fp8), kv("z_stride", outCols)});
    std::vector<std::string> outGeometry = {kv("inner", I), kv("hidden", hidden),
                                            kv("fp8", fp8)};
    for (std::string &t : gemmTiles(fp8))
      outGeometry.push_back(t);
    auto outProj = planKernel(registry, overrides, "out_proj", outGeometry);
    if (!inProj || !quant || !norm || !outProj)
      return llvm::joinErrors(llvm::joinErrors(inProj.takeError(), quant.takeError()),
                              llvm::joinErrors(norm.takeError(), outProj.takeError()));

    PlanArg gemmInput = in;
    std::vector<PlanArg> inExtra;
    if (fp8) {
      plan.launches.push_back(
          {"quantize_e4m3", quant->constants,
           {llvm::divideCeil(hidden, quant->spec.get("block")), tokens, 1},
           {in, quantized, rows, PlanArg::real(w.inProj.inputScale)}, w.layer});
      gemmInput = quantized;
      inExtra.push_back(PlanArg::real(float(w.inProj.inputScale) * w.inProj.weightScale));
    }
    std::vector<PlanArg> inArgs = {gemmInput, inW, zxbcdt, rows};
    inArgs.insert(inArgs.end(), inExtra.begin(), inExtra.end());
    plan.launches.push_back({"out_proj", inProj->constants,
                             {llvm::divideCeil(outCols, inProj->spec.get("block_n")),
                              llvm::divideCeil(tokens, inProj->spec.get("block_m")), 1},
                             inArgs, w.layer});

    plan.launches.push_back(
        {"conv_prefill", conv->constants,
         {llvm::divideCeil(Cd, conv->spec.get("block_c")), chunks, 1},
         {zxbcdt, convW, convB, cu, slots, init, chunkSeq, chunkBegin, chunkEnd, convPage, xBC,
          PlanArg::integer(numSlots)},
         w.layer});

    plan.launches.push_back(
        {"ssd_prefill", ssd->constants,
         {P / ssd->spec.get("block_p"), H, 1},
         {xBC, zxbcdt, aLog, dtBias, d, cu, slots, init, chunkSeq, chunkBegin, chunkEnd,
          ssmPage, y, PlanArg::integer(chunks), PlanArg::real(c.dtMin),
          PlanArg::real(c.dtMax)},
         w.layer});

    std::vector<PlanArg> normArgs = {y, zxbcdt, normW, normed, rows, PlanArg::real(c.eps)};
    if (fp8)
      normArgs.push_back(PlanArg::real(w.outProj.inputScale));
    plan.launches.push_back(
        {"gated_rmsnorm", norm->constants, {tokens, I / c.normGroupSize(), 1}, normArgs,
         w.layer});

    std::vector<PlanArg> outArgs = {normed, outW, out, rows};
    if (fp8)
      outArgs.push_back(PlanArg::real(float(w.outProj.inputScale) * w.outProj.weightScale));
    plan.launches.push_back({"out_proj", outProj->constants,
                             {llvm::divideCeil(hidden, outProj->spec.get("block_n")),
                              llvm::divideCeil(tokens, outProj->spec.get("block_m")), 1},
                             outArgs, w.layer});
  }
  return result;
}

} // namespace tilejit::models
