// Plans the NemotronH decode step (reference-math.md R7 with R3d + R5d) as the
// launches of the four decode kernels per layer over named buffers.
#include "tilejit/models/DecodePlan.h"
#include "tilejit/models/PlanCheck.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MathExtras.h"

namespace tilejit::models {
namespace {


template <typename T> llvm::ArrayRef<uint8_t> asBytes(const Tensor<T> &t) {
  return {reinterpret_cast<const uint8_t *>(t.data.data()), t.data.size() * sizeof(T)};
}

llvm::ArrayRef<uint8_t> projectionBytes(const Projection &p) {
  return p.isFP8 ? asBytes(p.fp8Weight) : asBytes(p.bf16Weight);
}

} // namespace

std::string kv(llvm::StringRef name, int64_t value) {
  return llvm::formatv("{0}={1}", name, value).str();
}

llvm::Expected<PlannedKernel> planKernel(const KernelRegistry &registry,
                                         const KernelOverrides &overrides,
                                         llvm::StringRef kernel,
                                         std::vector<std::string> geometry,
                                         const TunedConstants &tuned) {
  if (tuned) {
    std::vector<std::string> extra = tuned(kernel, geometry);
    geometry.insert(geometry.end(), extra.begin(), extra.end());
  }
  auto it = overrides.find(kernel.str());
  if (it != overrides.end())
    geometry.insert(geometry.end(), it->second.begin(), it->second.end());
  auto specialized = specializeKernel(registry, kernel, geometry);
  if (!specialized)
    return specialized.takeError();
  return PlannedKernel{std::move(geometry), std::move(specialized->spec)};
}

llvm::StringRef elementTypeName(ElementType type) {
  switch (type) {
  case ElementType::BF16: return "bf16";
  case ElementType::E4M3: return "e4m3";
  case ElementType::F32: return "f32";
  case ElementType::I32: return "i32";
  }
  llvm_unreachable("unknown element type");
}

size_t elementBytes(ElementType type) {
  switch (type) {
  case ElementType::BF16: return 2;
  case ElementType::E4M3: return 1;
  case ElementType::F32:
  case ElementType::I32: return 4;
  }
  llvm_unreachable("unknown element type");
}

static std::string placeName(int device) {
  return device < 0 ? std::string("the host") : llvm::formatv("cuda:{0}", device).str();
}

llvm::Error checkDecodeTensor(const DecodePlan &plan, llvm::StringRef buffer,
                              llvm::StringRef what, const TensorRef &tensor, int device) {
  auto it = plan.buffers.find(buffer.str());
  if (it == plan.buffers.end())
    return llvm::createStringError("decode: the plan has no buffer '" + buffer + "'");
  const PlanBuffer &want = it->second;
  if (want.shape.empty())
    return llvm::createStringError("decode: the plan records no shape for buffer '" + buffer +
                                   "', so no tensor can stand in for it");
  const std::string named = what == buffer
                                ? llvm::formatv("'{0}'", what).str()
                                : llvm::formatv("'{0}' (plan buffer '{1}')", what, buffer).str();
  auto fail = [&](const llvm::Twine &problem) {
    return llvm::createStringError("decode: tensor " + named + " " + problem);
  };
  if (tensor.type != elementTypeName(want.type))
    return fail("must be " + elementTypeName(want.type) + ", got " + tensor.type);
  if (tensor.shape != want.shape)
    return fail("must have shape " + formatShape(want.shape) + ", got " +
                formatShape(tensor.shape));
  if (!tensor.strides.empty()) {
    if (tensor.strides.size() != tensor.shape.size())
      return fail(llvm::formatv("has {0} strides for {1} dimensions", tensor.strides.size(),
                                tensor.shape.size()));
    std::vector<int64_t> rowMajor(tensor.shape.size());
    int64_t step = 1;
    bool contiguous = true;
    for (size_t d = tensor.shape.size(); d-- > 0;) {
      rowMajor[d] = step;
      contiguous &= tensor.shape[d] == 1 || tensor.strides[d] == step;
      step *= tensor.shape[d];
    }
    if (!contiguous)
      return fail("must be contiguous (row-major): strides " + formatShape(tensor.strides) +
                  " (elements) for shape " + formatShape(tensor.shape) + ", expected " +
                  formatShape(rowMajor));
  }
  if (tensor.device != device)
    return fail("must be on " + placeName(device) + ", got " + placeName(tensor.device));
  if (tensor.address == 0)
    return fail("has a null address");
  return llvm::Error::success();
}

llvm::Expected<SpecializedKernel> specializeKernel(const KernelRegistry &registry,
                                                  llvm::StringRef kernel,
                                                  llvm::ArrayRef<std::string> constants) {
  const KernelDef *def = registry.find(kernel);
  if (!def)
    return llvm::createStringError("decode: kernel '" + kernel + "' is not registered");
  auto spec = def->specialize(constants);
  if (!spec)
    return spec.takeError();
  return SpecializedKernel{def, std::move(*spec)};
}

PlanArg DecodePlan::addBuffer(std::string name, PlanBuffer::Role role, ElementType type,
                              std::vector<int64_t> shape) {
  size_t bytes = size_t(numElements(shape)) * elementBytes(type);
  buffers[name] = {role, bytes, type, std::move(shape)};
  return PlanArg::of(std::move(name));
}

llvm::Expected<LayerArgs> addLayerBuffers(DecodePlan &plan, const NemotronHConfig &c,
                                          const MambaLayerWeights &w) {
  if (w.inProj.isFP8 != w.outProj.isFP8)
    return llvm::createStringError(
        llvm::formatv("plan: layer {0} mixes an FP8 and a bf16 projection", w.layer));
  using Role = PlanBuffer::Role;
  using Type = ElementType;
  const int64_t hidden = c.hiddenSize, I = c.intermediate(), Cd = c.convChannels();
  const int64_t H = c.numHeads, slots = plan.numSlots;
  const Type projType = w.inProj.isFP8 ? Type::E4M3 : Type::BF16;
  auto param = [&](llvm::StringRef name, Role role, Type type, std::vector<int64_t> shape) {
    return plan.addBuffer(DecodePlan::layerBuffer(w.layer, name), role, type, std::move(shape));
  };
  return LayerArgs{
      param("in_proj.weight", Role::Weight, projType, {c.inProjRows(), hidden}),
      param("conv1d.weight", Role::Weight, Type::BF16, {Cd, 4}),
      param("conv1d.bias", Role::Weight, Type::BF16, {Cd}),
      param("A_log", Role::Weight, Type::F32, {H}),
      param("dt_bias", Role::Weight, Type::F32, {H}),
      param("D", Role::Weight, Type::F32, {H}),
      param("norm.weight", Role::Weight, Type::BF16, {I}),
      param("out_proj.weight", Role::Weight, projType, {hidden, I}),
      param("conv_page", Role::State, Type::BF16, {slots, Cd, 3}),
      param("ssm_page", Role::State, Type::F32, {slots, H, c.headDim, c.stateSize})};
}

std::string DecodePlan::layerBuffer(int64_t layer, llvm::StringRef name) {
  return llvm::formatv("l{0}.{1}", layer, name).str();
}

llvm::ArrayRef<uint8_t> DecodePlan::weightBytes(const std::vector<MambaLayerWeights> &layers,
                                                llvm::StringRef name) {
  auto [prefix, part] = name.split('.');
  for (const MambaLayerWeights &w : layers) {
    if (prefix != llvm::formatv("l{0}", w.layer).str())
      continue;
    if (part == "in_proj.weight")
      return projectionBytes(w.inProj);
    if (part == "out_proj.weight")
      return projectionBytes(w.outProj);
    if (part == "conv1d.weight")
      return asBytes(w.convWeight);
    if (part == "conv1d.bias")
      return asBytes(w.convBias);
    if (part == "A_log")
      return asBytes(w.aLog);
    if (part == "dt_bias")
      return asBytes(w.dtBias);
    if (part == "D")
      return asBytes(w.d);
    if (part == "norm.weight")
      return asBytes(w.normWeight);
  }
  return {};
}

llvm::Expected<DecodePlan> planDecodeStep(const KernelRegistry &registry,
                                          const NemotronHConfig &c,
                                          const std::vector<MambaLayerWeights> &layers,
                                          int64_t rows, int64_t numSlots,
                                          const KernelOverrides &overrides,
                                          const TunedConstants &tuned) {
  if (auto err = c.validate())
    return std::move(err);
  if (rows < 1 || numSlots < 1)
    return llvm::createStringError(
        llvm::formatv("decode plan: rows ({0}) and slots ({1}) must be at least 1", rows,
                      numSlots));
  if (c.convKernel != 4)
    return llvm::createStringError(
        llvm::formatv("decode plan: the conv kernels have 4 taps, the config has {0}",
                      c.convKernel));
  const int64_t hidden = c.hiddenSize, I = c.intermediate(), Cd = c.convChannels();
  const int64_t H = c.numHeads, P = c.headDim, N = c.stateSize, G = c.numGroups;
  const int64_t outCols = c.inProjRows();

  DecodePlan plan;
  plan.rows = rows;
  plan.numSlots = numSlots;
  plan.numLayers = int64_t(layers.size());
  using Role = PlanBuffer::Role;
  using Type = ElementType;
  auto buffer = [&](std::string name, Role role, Type type, std::vector<int64_t> shape) {
    return plan.addBuffer(std::move(name), role, type, std::move(shape));
  };
  PlanArg slots = buffer("slots", Role::Input, Type::I32, {rows});
  PlanArg z = buffer("z", Role::Activation, Type::BF16, {rows, I});
  PlanArg xBC = buffer("xbc", Role::Activation, Type::BF16, {rows, Cd});
  PlanArg dt = buffer("dt", Role::Activation, Type::BF16, {rows, H});
  PlanArg y = buffer("y", Role::Activation, Type::BF16, {rows, I});
  // Sized for bf16; before an FP8 out_proj it holds e4m3 codes in its first
  // rows * I bytes (layers of both kinds share it).
  PlanArg normed = buffer("normed", Role::Activation, Type::BF16, {rows, I});
  buffer(DecodePlan::activation(0), Role::Input, Type::BF16, {rows, hidden});

  for (size_t i = 0; i < layers.size(); ++i) {
    const MambaLayerWeights &w = layers[i];
    auto args = addLayerBuffers(plan, c, w);
    if (!args)
      return args.takeError();
    const bool fp8 = w.inProj.isFP8;
    auto [inW, convW, convB, aLog, dtBias, d, normW, outW, convPage, ssmPage] = *args;
    PlanArg in = PlanArg::of(DecodePlan::activation(i));
    PlanArg out =
        buffer(DecodePlan::activation(i + 1), Role::Activation, Type::BF16, {rows, hidden});

    // Small batches stream the weight once per row (GEMV); from 16 rows on,
    // tensor-core tiles read it once per 16 rows. bf16 weights take twice the
    // bytes per element: half the GEMV rows per program keeps one 16-byte
    // load per thread and K step.
    const bool tiles = rows >= 16;
    auto projection = [&](int64_t gemvBlockN,
                          int64_t tileBlockN) -> std::vector<std::string> {
      if (tiles)
        return {kv("block_m", 16), kv("block_n", tileBlockN), kv("block_k", 64)};
      return {kv("block_n", gemvBlockN)};
    };
    std::vector<std::string> inGeometry = {kv("hidden", hidden), kv("inner", I),
                                           kv("channels", Cd), kv("heads", H), kv("fp8", fp8)};
    // in_proj's conv epilogue spills at 16 x 64 (ptxas -v): 16 x 32 tiles.
    for (std::string &choice : projection(fp8 ? 16 : 8, 32))
      inGeometry.push_back(choice);
    auto inProj = planKernel(registry, overrides, "in_proj_conv", inGeometry, tuned);
    auto ssm = planKernel(registry, overrides, "ssm_update",
                          {kv("heads", H), kv("head_dim", P), kv("state", N), kv("groups", G)}, tuned);
    auto norm = planKernel(registry, overrides, "gated_rmsnorm",
                           {kv("width", I), kv("group_size", c.normGroupSize()),
                            kv("fp8_out", fp8)}, tuned);
    std::vector<std::string> outGeometry = {kv("inner", I), kv("hidden", hidden),
                                            kv("fp8", fp8)};
    for (std::string &choice : projection(4, 64))
      outGeometry.push_back(choice);
    if (!fp8 && !tiles) // measured: bf16 rows of 256 (9.05 us on the H200)
      outGeometry.push_back(kv("block_k", 256));
    auto outProj = planKernel(registry, overrides, "out_proj", outGeometry, tuned);
    if (!inProj || !ssm || !norm || !outProj)
      return llvm::joinErrors(
          llvm::joinErrors(inProj.takeError(), ssm.takeError()),
          llvm::joinErrors(norm.takeError(), outProj.takeError()));

    std::vector<PlanArg> inArgs = {in, inW, slots, convPage, convW, convB, z, xBC, dt,
                                   PlanArg::integer(rows)};
    if (fp8) {
      inArgs.push_back(PlanArg::real(w.inProj.inputScale));
      inArgs.push_back(PlanArg::real(float(w.inProj.inputScale) * w.inProj.weightScale));
    }
    plan.launches.push_back({"in_proj_conv", inProj->constants,
                             {llvm::divideCeilSigned(outCols, inProj->spec.get("block_n")),
                              llvm::divideCeilSigned(rows, inProj->spec.get("block_m")), 1},
                             inArgs, w.layer});

    plan.launches.push_back(
        {"ssm_update", ssm->constants,
         {llvm::divideCeilSigned(P, ssm->spec.get("block_p")), H, rows},
         {xBC, dt, aLog, dtBias, d, slots, ssmPage, y, PlanArg::real(c.dtMin),
          PlanArg::real(c.dtMax)},
         w.layer});

    addNormAndOutProj(plan, c, w, *norm, *outProj, *args, y, z, normed, out, rows);
  }
  if (auto err = validatePlan(plan, overrides))
    return std::move(err);
  return plan;
}

void addNormAndOutProj(DecodePlan &plan, const NemotronHConfig &c, const MambaLayerWeights &w,
                       const PlannedKernel &norm, const PlannedKernel &outProj,
                       const LayerArgs &args, PlanArg y, PlanArg z, PlanArg normed, PlanArg out,
                       int64_t rows) {
  const bool fp8 = w.outProj.isFP8;
  std::vector<PlanArg> normArgs = {y, z, args.normW, normed, PlanArg::integer(rows),
                                   PlanArg::real(c.eps)};
  if (fp8)
    normArgs.push_back(PlanArg::real(w.outProj.inputScale));
  plan.launches.push_back({"gated_rmsnorm", norm.constants,
                           {rows, c.intermediate() / c.normGroupSize(), 1}, normArgs, w.layer});

  std::vector<PlanArg> outArgs = {normed, args.outW, out, PlanArg::integer(rows)};
  if (fp8)
    outArgs.push_back(PlanArg::real(float(w.outProj.inputScale) * w.outProj.weightScale));
  plan.launches.push_back({"out_proj", outProj.constants,
                           {llvm::divideCeilSigned(c.hiddenSize, outProj.spec.get("block_n")),
                            llvm::divideCeilSigned(rows, outProj.spec.get("block_m")), 1},
                           outArgs, w.layer});
}

} // namespace tilejit::models
