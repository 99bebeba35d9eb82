// The model-independent parts of a step plan (plan/StepPlan.h): buffers,
// tensor checks, kernel specialization with tuned constants and overrides.
#include "tilejit/models/plan/StepPlan.h"
#include "tilejit/models/reference/HostTensor.h"

#include "llvm/Support/FormatVariadic.h"

namespace tilejit::models {

llvm::Expected<Specialization> planKernel(const KernelRegistry &registry,
                                          const KernelOverrides &overrides,
                                          llvm::StringRef kernel, ConstantValues geometry,
                                          const TunedConstants &tuned) {
  ConstantValues constants = geometry;
  if (tuned)
    for (const auto &[name, value] : tuned(kernel, geometry))
      constants[name] = value;
  if (auto it = overrides.find(kernel.str()); it != overrides.end())
    for (const auto &[name, value] : it->second)
      constants[name] = value;
  auto specialized = specializeKernel(registry, kernel, constants);
  if (!specialized)
    return specialized.takeError();
  return std::move(specialized->spec);
}

llvm::StringRef tensorTypeName(DType type) {
  return type == DType::F8E4M3 ? "e4m3" : dtypeName(type);
}

static std::string placeName(int device) {
  return device < 0 ? std::string("the host") : llvm::formatv("cuda:{0}", device).str();
}

llvm::Error checkPlanTensor(const StepPlan &plan, llvm::StringRef buffer,
                            llvm::StringRef what, const TensorRef &tensor, int device) {
  auto it = plan.buffers.find(buffer.str());
  if (it == plan.buffers.end())
    return llvm::createStringError("plan: no buffer '" + buffer + "'");
  const PlanBuffer &want = it->second;
  if (want.shape.empty())
    return llvm::createStringError("plan: no shape is recorded for buffer '" + buffer +
                                   "', so no tensor can stand in for it");
  const std::string named =
      what == buffer ? llvm::formatv("'{0}'", what).str()
                     : llvm::formatv("'{0}' (plan buffer '{1}')", what, buffer).str();
  auto fail = [&](const llvm::Twine &problem) {
    return llvm::createStringError("tensor " + named + " " + problem);
  };
  if (tensor.type != tensorTypeName(want.type))
    return fail("must be " + tensorTypeName(want.type) + ", got " + tensor.type);
  if (tensor.shape != want.shape)
    return fail("must have shape " + formatShape(want.shape) + ", got " +
                formatShape(tensor.shape));
  if (!tensor.strides.empty()) {
    if (tensor.strides.size() != tensor.shape.size())
      return fail(llvm::formatv("has {0} strides for {1} dimensions",
                                tensor.strides.size(), tensor.shape.size()));
    std::vector<int64_t> rowMajor(tensor.shape.size());
    int64_t step = 1;
    bool contiguous = true;
    for (size_t d = tensor.shape.size(); d-- > 0;) {
      rowMajor[d] = step;
      contiguous &= tensor.shape[d] == 1 || tensor.strides[d] == step;
      step *= tensor.shape[d];
    }
    if (!contiguous)
      return fail("must be contiguous (row-major): strides " +
                  formatShape(tensor.strides) + " (elements) for shape " +
                  formatShape(tensor.shape) + ", expected " + formatShape(rowMajor));
  }
  if (tensor.device != device)
    return fail("must be on " + placeName(device) + ", got " + placeName(tensor.device));
  if (tensor.address == 0)
    return fail("has a null address");
  return llvm::Error::success();
}

llvm::Expected<const KernelDef *> findPlanKernel(const KernelRegistry &registry,
                                                 llvm::StringRef kernel) {
  if (const KernelDef *def = registry.find(kernel))
    return def;
  return llvm::createStringError("plan: kernel '" + kernel + "' is not registered");
}

llvm::Expected<SpecializedKernel> specializeKernel(const KernelRegistry &registry,
                                                   llvm::StringRef kernel,
                                                   const ConstantValues &constants) {
  auto def = findPlanKernel(registry, kernel);
  if (!def)
    return def.takeError();
  auto spec = (*def)->specialize(constants);
  if (!spec)
    return spec.takeError();
  return SpecializedKernel{*def, std::move(*spec)};
}

namespace {
size_t bufferBytes(DType type, const std::vector<int64_t> &shape) {
  return size_t(numElements(shape)) * dtypeBytes(type);
}
} // namespace

PlanArg StepPlan::addBuffer(std::string name, PlanBuffer::Role role, DType type,
                            std::vector<int64_t> shape, int64_t layer) {
  size_t bytes = bufferBytes(type, shape);
  buffers[name] = {role, bytes, type, std::move(shape), layer, {}};
  return PlanArg::of(std::move(name));
}

PlanArg StepPlan::addSharedBuffer(std::string name, PlanBuffer::Role role, DType type,
                                  std::vector<int64_t> shape, int64_t layer) {
  auto it = buffers.find(name);
  if (it == buffers.end())
    return addBuffer(std::move(name), role, type, std::move(shape), layer);
  PlanBuffer &b = it->second;
  size_t bytes = bufferBytes(type, shape);
  if (b.type == type && bytes > b.bytes) {
    b.shape = std::move(shape);
    b.bytes = bytes;
  }
  return PlanArg::of(std::move(name));
}

std::string StepPlan::layerBuffer(int64_t layer, llvm::StringRef name) {
  return llvm::formatv("l{0}.{1}", layer, name).str();
}

int64_t StepPlan::bytesMoved() const {
  int64_t total = 0;
  for (const PlannedLaunch &launch : launches)
    total += launch.bytesRead + launch.bytesWritten;
  return total;
}

std::pair<int64_t, int64_t> weightMatrix(const PlanBuffer &buffer) {
  const int64_t rowBytes = buffer.shape.empty()
                               ? int64_t(buffer.bytes)
                               : buffer.shape.back() * dtypeBytes(buffer.type);
  return {rowBytes ? int64_t(buffer.bytes) / rowBytes : 0, rowBytes};
}

llvm::Expected<std::vector<uint8_t>> packPlanWeight(const PlanBuffer &buffer,
                                                    const WeightLayout &layout) {
  auto [rows, rowBytes] = weightMatrix(buffer);
  return packWeight(layout, buffer.hostWeight, rows, rowBytes);
}

} // namespace tilejit::models
