// The NemotronH decode and prefill plans (Planner.h), built layer by layer by
// the layer builder (LayerBuilder.h): decode's layers start with the fused
// in_proj + conv update and the state update, prefill's with the quant, the
// in_proj GEMM, the causal conv and the chunked SSD.
#include "LayerBuilder.h"

#include "tilejit/models/plan/Validate.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MathExtras.h"

namespace tilejit::models {
namespace {

using namespace detail;
using Role = PlanBuffer::Role;
using Type = DType;

/// A plan with per-layer activations is a check's: its steps are held to the
/// f64 reference, which keeps about three times the plan's buffer bytes beside
/// them in host memory, so the plan is refused before anything is allocated
/// when all of it would not fit.
unsigned referenceCopies(const PlanOptions &options) {
  return options.perLayerActivations ? 3 : 0;
}

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

/// The checks of a finished plan (validatePlan) with the options' overrides.
llvm::Error validate(const StepPlan &plan, const PlanOptions &options) {
  return validatePlan(plan,
                      options.overridesMustApply ? options.overrides : KernelOverrides(),
                      referenceCopies(options));
}

/// Adds decode layer `w` (the i-th of the plan) for `rows` rows.
llvm::Error addDecodeLayer(LayerBuilder &builder, const NemotronHConfig &c,
                           const PlanOptions &options, const MambaLayerWeights &w,
                           size_t i, int64_t rows, const PlanArg &slots) {
  const int64_t hidden = c.hiddenSize, I = c.intermediate(), Cd = c.convChannels();
  const int64_t H = c.numHeads, P = c.headDim, N = c.stateSize;
  const int64_t outCols = c.inProjRows();
  const LayerArgs args = builder.addLayerBuffers(w);
  LayerIO io = builder.layerIO(i, rows, slots);
  PlanArg xBC = builder.intermediate(w.layer, "xbc", Type::BF16, {rows, Cd});
  io.y = builder.intermediate(w.layer, "y", Type::BF16, {rows, I});
  io.normed = builder.normed(w, {rows, I});
  ConstantValues ssmGeometry = {
      {"heads", H}, {"head_dim", P}, {"state", N}, {"groups", c.numGroups}};
  PlanArg dt;
  const int64_t convRows = rows * Cd * 3 * 2; // the rows' conv taps, bf16
  if (decodeGemm(options, rows, hidden, w.inProj.isFP8)) {
    // Prefill's in_proj GEMM into zxbcdt [rows, z | xBC | dt]; the conv, the
    // state update and the gated norm read their columns in place.
    PlanArg zxbcdt = builder.intermediate(w.layer, "zxbcdt", Type::BF16, {rows, outCols});
    io.z = dt = zxbcdt;
    io.zStride = outCols;
    ssmGeometry["dt_stride"] = outCols;
    ssmGeometry["dt_col"] = I + Cd;
    if (auto err = builder.addInProjGemm(w, args, io.in, zxbcdt, /*decode=*/true))
      return err;
    auto conv = builder.kernel("conv_update",
                               {{"channels", Cd}, {"x_stride", outCols}, {"x_col", I}});
    if (!conv)
      return conv.takeError();
    builder.launch(w, "conv", "conv_update", *conv,
                   {rows, llvm::divideCeilSigned(Cd, conv->get("block")), 1},
                   {zxbcdt, args.convPage, slots, args.convW, args.convB, xBC},
                   rows * Cd * 2 + convRows + builder.bytes(args.convW) +
                       builder.bytes(args.convB),
                   rows * Cd * 2 + convRows);
  } else {
    io.z = builder.intermediate(w.layer, "z", Type::BF16, {rows, I});
    dt = builder.intermediate(w.layer, "dt", Type::BF16, {rows, H});
    if (auto err = builder.addInProjConv(w, args, io, slots, xBC, dt))
      return err;
  }

  // R8s: a 16-bit page is read widened and written rounded, stochastically
  // with the step's seed when asked.
  const SsmStateOptions &state = options.ssmState;
  addSsmStateConstants(state, ssmGeometry, {"state_type"});
  std::vector<PlanArg> ssmArgs = {xBC, dt, args.aLog, args.dtBias, args.d, slots};
  if (state.stochastic) {
    ssmGeometry["stochastic"] = 1;
    ssmArgs.push_back(PlanArg::of(kSsmSeedBuffer));
  }
  auto ssm = builder.kernel("ssm_update", ssmGeometry);
  if (!ssm)
    return ssm.takeError();
  llvm::append_range(ssmArgs,
                     std::vector<PlanArg>{args.ssmPage, io.y, PlanArg::real(c.dtMin),
                                          PlanArg::real(c.dtMax)});
  // the rows' SSM states in the page's type
  const int64_t stateRows = rows * H * P * N * int64_t(dtypeBytes(state.type));
  builder.launch(w, "ssm_update", "ssm_update", *ssm,
                 {llvm::divideCeilSigned(P, ssm->get("block_p")), H, rows},
                 std::move(ssmArgs), stateRows + rows * (Cd + H) * 2,
                 stateRows + rows * I * 2);

  const bool outGemm = decodeOutGemm(options, rows, hidden, I, w.outProj.isFP8);
  return builder.addNormAndOutProj(w, args, io, outGemm, /*decode=*/true);
}

/// The kernels every prefill layer launches the same way: the SSD's three
/// steps and the causal conv, all at the SSD's chunk. `ssd` is ssd_prefill
/// over spans, or ssd_chunk_scan when `chunked`.
struct PrefillKernels {
  Specialization ssd, spanState, statePass, conv;
  int64_t chunk = 0;
  bool chunked = false;
};

/// The SSD's chunk (after overrides) chunks the batch; the conv uses it too,
/// so one set of metadata serves both.
llvm::Expected<PrefillKernels> planPrefillKernels(const KernelRegistry &registry,
                                                  const NemotronHConfig &c,
                                                  const PlanOptions &options) {
  const int64_t I = c.intermediate(), Cd = c.convChannels();
  const int64_t H = c.numHeads, P = c.headDim, N = c.stateSize;
  auto plan = [&](llvm::StringRef kernel, ConstantValues geometry) {
    return planKernel(registry, options.overrides, kernel, std::move(geometry),
                      options.tuned);
  };
  const ConstantValues ssdGeometry = {{"heads", H},
                                      {"head_dim", P},
                                      {"state", N},
                                      {"groups", c.numGroups},
                                      {"dt_stride", c.inProjRows()},
                                      {"dt_col", I + Cd}};
  ConstantValues scanGeometry = ssdGeometry;
  scanGeometry["span_states"] = 1;
  // The exact operands: the split state is 9 % faster and within R5p-m at y,
  // but fails the plan's layer-output rule on the H100 (12 outputs outside
  // their band at T = 300, the yardstick layers 1; docs/BENCHMARKS.md);
  // `--set ssd_prefill.precision=2` takes it, held by the plan's check to
  // R5p-m at y and at the output.
  scanGeometry["precision"] = int64_t(SsdPrecision::Exact);
  addSsmStateConstants(options.ssmState, scanGeometry, {"init_type", "state_type"});
  // The pass walks the spans serially: blocks of 256 state elements run four
  // times the programs of 1024, and four spans' loads issue together; 3.8x
  // faster on the H100 at T = 8192 (docs/BENCHMARKS.md, "The state pass").
  ConstantValues passGeometry = {{"heads", H},
                                 {"head_dim", P},
                                 {"state", N},
                                 {"block", std::min<int64_t>(256, P * N)},
                                 {"unroll", 4}};
  PrefillKernels k;
  k.chunked = options.ssdSchedule == SsdSchedule::Chunked ||
              options.overrides.count("ssd_chunk_scan");
  if (k.chunked) {
    // No walk writes the pages: the pass does, at each sequence's last chunk.
    passGeometry["write_page"] = 1;
    addSsmStateConstants(options.ssmState, passGeometry, {"page_type", "state_type"});
  } else {
    addSsmStateConstants(options.ssmState, passGeometry, {"page_type"});
  }
  auto ssd =
      k.chunked ? plan("ssd_chunk_scan", ssdGeometry) : plan("ssd_prefill", scanGeometry);
  if (!ssd)
    return ssd.takeError();
  k.ssd = std::move(*ssd);
  k.chunk = k.ssd.get("chunk");
  ConstantValues stateGeometry = ssdGeometry;
  stateGeometry["chunk"] = k.chunk;
  stateGeometry["precision"] = k.ssd.get("precision");
  // The chunk-parallel schedule's chunks of 128 or more are too large an x
  // tile for 4 warps' registers (ptxas spills).
  if (k.chunked && k.chunk >= 128)
    stateGeometry["warps"] = 8;
  auto spanState = plan("ssd_span_state", stateGeometry);
  auto statePass = plan("ssd_state_pass", std::move(passGeometry));
  // Half the channels a program, 16 rows a step: the fastest of the forms
  // bench/prefill/stream_gpu.py measured (docs/BENCHMARKS.md, "The state pass
  // and the streaming kernels").
  auto conv = plan("conv_prefill", {{"inner", I},
                                    {"channels", Cd},
                                    {"heads", H},
                                    {"block_t", k.chunk},
                                    {"block_c", 512},
                                    {"rows_per_step", 16}});
  if (!spanState || !statePass || !conv)
    return llvm::joinErrors(
        llvm::joinErrors(spanState.takeError(), statePass.takeError()), conv.takeError());
  k.spanState = std::move(*spanState);
  k.statePass = std::move(*statePass);
  k.conv = std::move(*conv);
  if (k.conv.get("block_t") != k.chunk)
    return llvm::createStringError(llvm::formatv(
        "prefill plan: conv_prefill's block_t ({0}) must equal "
        "{2}'s chunk ({1}): "
        "one set of chunk metadata serves both",
        k.conv.get("block_t"), k.chunk, k.chunked ? "ssd_chunk_scan" : "ssd_prefill"));
  return k;
}

/// The prefill plan's metadata buffers, as its kernels take them.
struct PrefillInputs {
  PlanArg cu, slots, init, chunkSeq, chunkBegin, chunkEnd, spanChunk, spanSlot, spanFlags;
};

/// Adds prefill layer `w` (the i-th of the plan) over the batch of `result`.
llvm::Error addPrefillLayer(LayerBuilder &builder, const NemotronHConfig &c,
                            const PrefillKernels &k, const PrefillInputs &in,
                            const MambaLayerWeights &w, size_t i,
                            const PrefillPlan &result, DType pageType) {
  const int64_t I = c.intermediate(), Cd = c.convChannels(), H = c.numHeads;
  const int64_t P = c.headDim, N = c.stateSize, G = c.numGroups;
  const int64_t tokens = result.tokens, sequences = result.plan.rows;
  const int64_t chunks = result.batch.numChunks(), spans = result.batch.numSpans();
  // The bytes of the sequences' pages: their slots read (when continued) and written.
  const int64_t convPages = sequences * Cd * 3 * 2;
  const int64_t ssmPages = sequences * H * P * N * int64_t(dtypeBytes(pageType));
  const LayerArgs args = builder.addLayerBuffers(w);
  LayerIO io = builder.layerIO(i, tokens, in.slots);
  PlanArg zxbcdt =
      builder.intermediate(w.layer, "zxbcdt", Type::BF16, {tokens, c.inProjRows()});
  PlanArg xBC = builder.intermediate(w.layer, "xbc", Type::BF16, {tokens, Cd});
  io.y = builder.intermediate(w.layer, "y", Type::BF16, {tokens, I});
  io.z = zxbcdt; // the gated norm reads z in place
  io.zStride = c.inProjRows();
  io.normed = builder.normed(w, {tokens, I});
  if (auto err = builder.addInProjGemm(w, args, io.in, zxbcdt, /*decode=*/false))
    return err;

  builder.launch(
      w, "conv", "conv_prefill", k.conv,
      {llvm::divideCeilSigned(Cd, k.conv.get("block_c")), chunks, k.conv.get("splits")},
      {zxbcdt, args.convW, args.convB, in.cu, in.slots, in.init, in.chunkSeq,
       in.chunkBegin, in.chunkEnd, args.convPage, xBC,
       PlanArg::integer(result.plan.numSlots)},
      tokens * Cd * 2 + convPages + builder.bytes(args.convW) + builder.bytes(args.convB),
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
  builder.launch(w, "ssd_state", "ssd_span_state", k.spanState,
                 {llvm::divideCeilSigned(P, k.spanState.get("block_p")), H, spans},
                 {xBC, zxbcdt, args.aLog, args.dtBias, in.cu, in.chunkSeq, in.spanChunk,
                  in.chunkBegin, in.chunkEnd, spanStates, spanDecay,
                  PlanArg::real(c.dtMin), PlanArg::real(c.dtMax)},
                 tokens * (I + G * N + H) * 2, stateBytes + decayBytes);
  std::vector<PlanArg> passArgs = {
      in.spanSlot,  in.spanFlags,           spanDecay, spanStates, spanTail,
      args.ssmPage, PlanArg::integer(spans)};
  if (k.chunked)
    passArgs.push_back(args.ssmPage); // ssm_state_out: the page written in place
  builder.launch(w, "ssd_pass", "ssd_state_pass", k.statePass,
                 {llvm::divideCeilSigned(P * N, k.statePass.get("block")), H, 1},
                 std::move(passArgs), stateBytes + decayBytes + ssmPages,
                 2 * stateBytes + (k.chunked ? ssmPages : 0));
  if (k.chunked) {
    // One program per row block of a chunk: spans are single chunks here.
    const int64_t blocks = (k.chunk / k.ssd.get("block_m")) *
                           llvm::divideCeilSigned(P, k.ssd.get("block_p"));
    builder.launch(w, "ssd", "ssd_chunk_scan", k.ssd, {blocks, spans, H},
                   {xBC, zxbcdt, args.aLog, args.dtBias, args.d, in.cu, in.slots,
                    in.chunkSeq, in.chunkBegin, in.chunkEnd, spanStates, spanTail, io.y,
                    PlanArg::real(c.dtMin), PlanArg::real(c.dtMax)},
                   tokens * (Cd + H) * 2 + stateBytes, tokens * I * 2);
    return builder.addNormAndOutProj(w, args, io, /*gemm=*/true, /*decode=*/false);
  }
  builder.launch(w, "ssd", "ssd_prefill", k.ssd,
                 {llvm::divideCeilSigned(P, k.ssd.get("block_p")), H, spans},
                 {xBC, zxbcdt, args.aLog, args.dtBias, args.d, in.cu, in.slots, in.init,
                  in.chunkSeq, in.chunkBegin, in.chunkEnd, args.ssmPage, io.y,
                  PlanArg::integer(chunks), PlanArg::real(c.dtMin),
                  PlanArg::real(c.dtMax), in.spanChunk, spanStates, spanTail},
                 tokens * (Cd + H) * 2 + 2 * stateBytes + ssmPages,
                 tokens * I * 2 + ssmPages);
  return builder.addNormAndOutProj(w, args, io, /*gemm=*/true, /*decode=*/false);
}

} // namespace

std::string intermediateBuffer(const PlanOptions &options, int64_t layer,
                               llvm::StringRef name) {
  return options.perLayerActivations ? StepPlan::layerBuffer(layer, name) : name.str();
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
  if (auto err = options.ssmState.validate())
    return std::move(err);
  StepPlan plan;
  plan.rows = rows;
  plan.numSlots = numSlots;
  plan.numLayers = int64_t(layers.size());
  LayerBuilder builder(plan, registry, c, options, rows);
  PlanArg slots = plan.addBuffer("slots", Role::Input, Type::I32, {rows});
  plan.addBuffer(StepPlan::activation(0), Role::Input, Type::BF16, {rows, c.hiddenSize});
  if (options.ssmState.stochastic)
    plan.addBuffer(kSsmSeedBuffer, Role::Input, Type::I64, {1});
  for (size_t i = 0; i < layers.size(); ++i)
    if (auto err = addDecodeLayer(builder, c, options, layers[i], i, rows, slots))
      return std::move(err);
  if (auto err = validate(plan, options))
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
  if (auto err = options.ssmState.validate())
    return std::move(err);
  auto kernels = planPrefillKernels(registry, c, options);
  if (!kernels)
    return kernels.takeError();
  // The SSD walks spans of whole chunks in parallel (PlanOptions::ssdSpanTokens),
  // or computes every chunk in parallel from one-chunk spans.
  const int64_t spanChunks =
      kernels->chunked ? 1 : std::max<int64_t>(1, options.ssdSpanTokens / kernels->chunk);
  auto meta = prefillMetadata(batch, tokens, numSlots, kernels->chunk,
                              /*chunkCapacity=*/0, spanChunks);
  if (!meta)
    return meta.takeError();

  PrefillPlan result;
  result.batch = std::move(*meta);
  result.tokens = tokens;
  result.chunk = kernels->chunk;
  result.ssdPrecision = SsdPrecision(kernels->ssd.get("precision"));
  StepPlan &plan = result.plan;
  plan.rows = result.batch.numSequences();
  plan.numSlots = numSlots;
  plan.numLayers = int64_t(layers.size());
  const int64_t sequences = plan.rows, chunks = result.batch.numChunks();
  const int64_t spans = result.batch.numSpans();
  auto input = [&](std::string name, int64_t n) {
    return plan.addBuffer(std::move(name), Role::Input, Type::I32, {n});
  };
  const PrefillInputs in{input("cu_seqlens", sequences + 1), input("slots", sequences),
                         input("init", sequences),           input("chunk_seq", chunks),
                         input("chunk_begin", chunks),       input("chunk_end", chunks),
                         input("span_chunk", spans + 1),     input("span_slot", spans),
                         input("span_flags", spans)};
  plan.addBuffer(StepPlan::activation(0), Role::Input, Type::BF16,
                 {tokens, c.hiddenSize});
  LayerBuilder builder(plan, registry, c, options, tokens);
  for (size_t i = 0; i < layers.size(); ++i)
    if (auto err = addPrefillLayer(builder, c, *kernels, in, layers[i], i, result,
                                   options.ssmState.type))
      return std::move(err);
  if (auto err = validate(plan, options))
    return std::move(err);
  return result;
}

} // namespace tilejit::models
