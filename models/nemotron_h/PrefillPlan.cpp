// Plans the NemotronH prefill forward (PrefillPlan.h).
#include "tilejit/models/PrefillPlan.h"
#include "tilejit/models/PlanCheck.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MathExtras.h"

#include <cstring>

namespace tilejit::models {
namespace {

/// Tensor-core GEMM tiles of the projections (M = tokens): 64 x 128 x 128, 4
/// warps, 3 stages was the fastest e4m3 wgmma tile at both NemotronH shapes on
/// the H200 (docs/BENCHMARKS.md, prefill GEMM); half the K step for bf16.
std::vector<std::string> gemmTiles(bool fp8) {
  return {kv("block_m", 64), kv("block_n", 128), kv("block_k", fp8 ? 128 : 64),
          kv("warps", 4), kv("stages", 3)};
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
                                        int64_t numSlots, const KernelOverrides &overrides,
                                        const TunedConstants &tuned) {
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
                         kv("dt_stride", outCols), kv("dt_col", I + Cd)}, tuned);
  if (!ssd)
    return ssd.takeError();
  const int64_t chunk = ssd->spec.get("chunk");
  auto meta = prefillMetadata(batch, tokens, numSlots, chunk);
  if (!meta)
    return meta.takeError();
  auto conv = planKernel(registry, overrides, "conv_prefill",
                         {kv("inner", I), kv("channels", Cd), kv("heads", H),
                          kv("block_t", chunk)}, tuned);
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
  using Role = PlanBuffer::Role;
  using Type = ElementType;
  auto buffer = [&](std::string name, Role role, Type type, std::vector<int64_t> shape) {
    return plan.addBuffer(std::move(name), role, type, std::move(shape));
  };
  PlanArg cu = buffer("cu_seqlens", Role::Input, Type::I32, {sequences + 1});
  PlanArg slots = buffer("slots", Role::Input, Type::I32, {sequences});
  PlanArg init = buffer("init", Role::Input, Type::I32, {sequences});
  PlanArg chunkSeq = buffer("chunk_seq", Role::Input, Type::I32, {chunks});
  PlanArg chunkBegin = buffer("chunk_begin", Role::Input, Type::I32, {chunks});
  PlanArg chunkEnd = buffer("chunk_end", Role::Input, Type::I32, {chunks});
  PlanArg zxbcdt = buffer("zxbcdt", Role::Activation, Type::BF16, {tokens, outCols});
  PlanArg xBC = buffer("xbc", Role::Activation, Type::BF16, {tokens, Cd});
  PlanArg y = buffer("y", Role::Activation, Type::BF16, {tokens, I});
  // Sized for bf16; before an FP8 out_proj it holds e4m3 codes in its first
  // tokens * I bytes (layers of both kinds share it).
  PlanArg normed = buffer("normed", Role::Activation, Type::BF16, {tokens, I});
  buffer(DecodePlan::activation(0), Role::Input, Type::BF16, {tokens, hidden});
  const bool anyFP8 = llvm::any_of(layers, [](const MambaLayerWeights &w) {
    return w.inProj.isFP8;
  });
  PlanArg quantized = anyFP8 ? buffer("act_q", Role::Activation, Type::E4M3, {tokens, hidden})
                             : PlanArg::of("");
  const PlanArg rows = PlanArg::integer(tokens);

  for (size_t i = 0; i < layers.size(); ++i) {
    const MambaLayerWeights &w = layers[i];
    auto args = addLayerBuffers(plan, c, w);
    if (!args)
      return args.takeError();
    const bool fp8 = w.inProj.isFP8;
    auto [inW, convW, convB, aLog, dtBias, d, normW, outW, convPage, ssmPage] = *args;
    PlanArg in = PlanArg::of(DecodePlan::activation(i));
    PlanArg out =
        buffer(DecodePlan::activation(i + 1), Role::Activation, Type::BF16, {tokens, hidden});

    // in_proj: R1 (static quant, then the e4m3 GEMM) or R1b, into zxbcdt
    // [T, z | xBC | dt]; the split (R2) is the column offsets the next
    // kernels read at. The GEMM is the out_proj kernel at these dimensions.
    std::vector<std::string> inGeometry = {kv("inner", hidden), kv("hidden", outCols),
                                           kv("fp8", fp8)};
    for (std::string &t : gemmTiles(fp8))
      inGeometry.push_back(t);
    auto inProj = planKernel(registry, overrides, "out_proj", inGeometry, tuned);
    auto quant = planKernel(registry, overrides, "quantize_e4m3", {kv("width", hidden)}, tuned);
    auto norm = planKernel(registry, overrides, "gated_rmsnorm",
                           {kv("width", I), kv("group_size", c.normGroupSize()),
                            kv("fp8_out", fp8), kv("z_stride", outCols)}, tuned);
    std::vector<std::string> outGeometry = {kv("inner", I), kv("hidden", hidden),
                                            kv("fp8", fp8)};
    for (std::string &t : gemmTiles(fp8))
      outGeometry.push_back(t);
    auto outProj = planKernel(registry, overrides, "out_proj", outGeometry, tuned);
    if (!inProj || !quant || !norm || !outProj)
      return llvm::joinErrors(llvm::joinErrors(inProj.takeError(), quant.takeError()),
                              llvm::joinErrors(norm.takeError(), outProj.takeError()));

    PlanArg gemmInput = in;
    std::vector<PlanArg> inExtra;
    if (fp8) {
      plan.launches.push_back(
          {"quantize_e4m3", quant->constants,
           {llvm::divideCeilSigned(hidden, quant->spec.get("block")), tokens, 1},
           {in, quantized, rows, PlanArg::real(w.inProj.inputScale)}, w.layer});
      gemmInput = quantized;
      inExtra.push_back(PlanArg::real(float(w.inProj.inputScale) * w.inProj.weightScale));
    }
    std::vector<PlanArg> inArgs = {gemmInput, inW, zxbcdt, rows};
    inArgs.insert(inArgs.end(), inExtra.begin(), inExtra.end());
    plan.launches.push_back({"out_proj", inProj->constants,
                             {llvm::divideCeilSigned(outCols, inProj->spec.get("block_n")),
                              llvm::divideCeilSigned(tokens, inProj->spec.get("block_m")), 1},
                             inArgs, w.layer});

    plan.launches.push_back(
        {"conv_prefill", conv->constants,
         {llvm::divideCeilSigned(Cd, conv->spec.get("block_c")), chunks, 1},
         {zxbcdt, convW, convB, cu, slots, init, chunkSeq, chunkBegin, chunkEnd, convPage, xBC,
          PlanArg::integer(numSlots)},
         w.layer});

    plan.launches.push_back({"ssd_prefill",
                             ssd->constants,
                             {llvm::divideCeilSigned(P, ssd->spec.get("block_p")), H, 1},
                             {xBC, zxbcdt, aLog, dtBias, d, cu, slots, init, chunkSeq,
                              chunkBegin, chunkEnd, ssmPage, y, PlanArg::integer(chunks),
                              PlanArg::real(c.dtMin), PlanArg::real(c.dtMax)},
                             w.layer});

    addNormAndOutProj(plan, c, w, *norm, *outProj, *args, y, zxbcdt, normed, out, tokens);
  }
  if (auto err = validatePlan(plan, overrides))
    return std::move(err);
  return result;
}

} // namespace tilejit::models
