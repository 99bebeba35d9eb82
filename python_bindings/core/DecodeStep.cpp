// DecodeStep: the NemotronH decode mixer step over a models::StepPlan, run by
// models::InterpreterRunner on host buffers or by models::GpuRunner (pages on
// the device, the step one CUDA graph). Only plumbing lives here: the plan, the
// kernels and the checks are the models' own.
#include "CoreInternal.h"

#include "tilejit/Builder/KernelRegistry.h"
#include "tilejit/models/nemotron_h/Planner.h"
#include "tilejit/runtime/Jit.h"

#include "llvm/Support/FormatVariadic.h"

#include <cstring>

namespace tilejit::python {

struct DecodeStep::State {
  MambaGeometry geometry;
  std::vector<models::MambaLayerWeights> layers;
  models::StepPlan plan; ///< borrows `layers`
  /// Interpreter: every non-weight buffer. GPU: the host side of "slots"
  /// (every upload carries it, since GpuRunner checks it first).
  models::HostBuffers host;
  std::unique_ptr<models::InterpreterRunner> interpreter;
  std::shared_ptr<Runtime::State> runtime; ///< keeps the device alive
  std::unique_ptr<models::GpuRunner> gpu;
};

namespace {

models::NemotronHConfig toConfig(const MambaGeometry &g) {
  models::NemotronHConfig c;
  c.hiddenSize = g.hiddenSize;
  c.numHeads = g.numHeads;
  c.headDim = g.headDim;
  c.numGroups = g.numGroups;
  c.stateSize = g.stateSize;
  c.convKernel = g.convKernel;
  c.eps = g.eps;
  c.dtMin = g.dtMin;
  c.dtMax = g.dtMax;
  c.layerPattern = g.layerPattern;
  return c;
}

/// The geometry, weights, plan and host buffers shared by both backends.
std::unique_ptr<DecodeStep::State> planStep(const DecodeStepOptions &options) {
  models::NemotronHConfig config = toConfig(options.geometry);
  if (llvm::Error err = config.validate())
    throwError(ErrorKind::Argument, std::move(err));
  int64_t available = int64_t(config.mambaLayers().size());
  if (options.layers < 1 || options.layers > available)
    throw Error(
        ErrorKind::Argument,
        llvm::formatv("decode step: layers must be in [1, {0}] (the Mamba layers of "
                      "'{1}'), got {2}",
                      available, config.layerPattern, options.layers)
            .str());
  auto state = std::make_unique<DecodeStep::State>();
  state->geometry = options.geometry;
  state->layers =
      unwrap(models::syntheticMambaLayers(config, options.layers, options.seed),
             ErrorKind::Argument);
  state->plan = unwrap(models::planDecodeStep(registry(), config, state->layers,
                                              options.rows, options.slots),
                       ErrorKind::Argument);
  state->host = models::allocateHostBuffers(state->plan);
  // Until the first step every row is padding: no slot is claimed.
  auto &slots = state->host.at("slots");
  std::memset(slots.data(), 0xff, slots.size());
  return state;
}

std::string outputName(const models::StepPlan &plan) {
  return models::StepPlan::activation(plan.numLayers);
}

} // namespace

DecodeStep::DecodeStep(std::unique_ptr<State> state) : state(std::move(state)) {}
DecodeStep::~DecodeStep() = default;

std::shared_ptr<DecodeStep> createDecodeStep(const DecodeStepOptions &options) {
  auto state = planStep(options);
  state->interpreter = std::make_unique<models::InterpreterRunner>(registry());
  return std::make_shared<DecodeStep>(std::move(state));
}

std::shared_ptr<DecodeStep> Runtime::decodeStep(const DecodeStepOptions &options) {
  if (!canLaunch())
    throw Error(ErrorKind::Device, "decode step: a compile-only runtime cannot launch");
  auto decode = planStep(options);
  std::string log;
  llvm::raw_string_ostream os(log);
  decode->gpu =
      unwrap(models::GpuRunner::create(*state->jit, registry(), decode->plan, os),
             ErrorKind::Device);
  decode->runtime = state;
  // The device pages start zeroed, as the interpreter's do.
  models::HostBuffers initial;
  for (const auto &[name, buffer] : decode->plan.buffers)
    if (buffer.role != models::PlanBuffer::Role::Weight)
      initial[name] = name == "slots" ? decode->host.at("slots")
                                      : std::vector<uint8_t>(buffer.bytes, 0);
  if (llvm::Error err = decode->gpu->upload(initial))
    throwError(ErrorKind::Device, std::move(err));
  return std::make_shared<DecodeStep>(std::move(decode));
}

bool DecodeStep::onDevice() const { return state->gpu != nullptr; }
int64_t DecodeStep::rows() const { return state->plan.rows; }
int64_t DecodeStep::numSlots() const { return state->plan.numSlots; }
const MambaGeometry &DecodeStep::geometry() const { return state->geometry; }

std::vector<DecodeLayerInfo> DecodeStep::layers() const {
  std::vector<DecodeLayerInfo> out;
  for (const models::MambaLayerWeights &w : state->layers)
    out.push_back({w.layer, w.inProj.isFP8, w.inProj.weightScale, w.inProj.inputScale,
                   w.outProj.weightScale, w.outProj.inputScale});
  return out;
}

std::vector<
    std::tuple<std::string, std::string, size_t, std::string, std::vector<int64_t>>>
DecodeStep::buffers() const {
  static const char *roles[] = {"weight", "state", "activation", "input"};
  std::vector<
      std::tuple<std::string, std::string, size_t, std::string, std::vector<int64_t>>>
      out;
  for (const auto &[name, buffer] : state->plan.buffers)
    out.emplace_back(name, roles[int(buffer.role)], buffer.bytes,
                     models::tensorTypeName(buffer.type).str(), buffer.shape);
  return out;
}

namespace {
const models::PlanBuffer &findBuffer(const models::StepPlan &plan,
                                     const std::string &name, bool weight) {
  auto it = plan.buffers.find(name);
  if (it == plan.buffers.end() ||
      (it->second.role == models::PlanBuffer::Role::Weight) != weight)
    throw Error(ErrorKind::Argument, "decode step: no " +
                                         std::string(weight ? "weight" : "non-weight") +
                                         " buffer '" + name + "'");
  return it->second;
}

models::TensorRef toRef(const TensorArg &t) {
  return {t.dtype, t.shape, t.strides, t.device, t.address};
}

/// Checks a caller's tensor against plan buffer `name` on `device` (-1: host).
void checkTensor(const models::StepPlan &plan, const std::string &name,
                 const std::string &what, const TensorArg &tensor, int device) {
  if (llvm::Error err = models::checkPlanTensor(plan, name, what, toRef(tensor), device))
    throwError(ErrorKind::Argument, std::move(err));
}

uint8_t *hostBytes(const TensorArg &t) {
  return reinterpret_cast<uint8_t *>(static_cast<uintptr_t>(t.address));
}
} // namespace

std::vector<uint8_t> DecodeStep::weight(const std::string &name) const {
  llvm::ArrayRef<uint8_t> bytes = findBuffer(state->plan, name, true).hostWeight;
  return {bytes.begin(), bytes.end()};
}

void DecodeStep::checkHost(const std::string &name, const TensorArg &t) const {
  findBuffer(state->plan, name, false);
  checkTensor(state->plan, name, name, t, -1);
}

void DecodeStep::read(const std::string &name, const TensorArg &dst) {
  const size_t bytes = findBuffer(state->plan, name, false).bytes;
  checkHost(name, dst);
  if (!state->gpu) {
    std::memcpy(hostBytes(dst), state->host.at(name).data(), bytes);
    return;
  }
  models::HostBuffers one{{name, {}}};
  if (llvm::Error err = state->gpu->download(one))
    throwError(ErrorKind::Device, std::move(err));
  std::memcpy(hostBytes(dst), one.at(name).data(), bytes);
}

void DecodeStep::write(const std::string &name, const TensorArg &src) {
  const size_t bytes = findBuffer(state->plan, name, false).bytes;
  checkHost(name, src);
  const uint8_t *begin = hostBytes(src);
  if (name == "slots") {
    const auto *first = reinterpret_cast<const int32_t *>(begin);
    if (llvm::Error err = models::checkSlots({first, size_t(rows())}, numSlots()))
      throwError(ErrorKind::Argument, std::move(err));
  }
  if (!state->gpu) {
    std::memcpy(state->host.at(name).data(), begin, bytes);
    return;
  }
  models::HostBuffers upload{{"slots", state->host.at("slots")},
                             {name, std::vector<uint8_t>(begin, begin + bytes)}};
  if (llvm::Error err = state->gpu->upload(upload))
    throwError(ErrorKind::Device, std::move(err));
  if (name == "slots")
    state->host.at("slots") = upload.at("slots");
}

void DecodeStep::step(const TensorArg &hidden, const std::vector<int32_t> &slots,
                      const TensorArg &out, uint64_t stream) {
  const models::StepPlan &plan = state->plan;
  const std::string input = models::StepPlan::activation(0), output = outputName(plan);
  // Checked before anything runs or changes (GpuRunner::step checks the
  // same), so a refused step is an ArgumentError and leaves all as it was.
  const int device = state->gpu ? state->runtime->ordinal : -1;
  checkTensor(plan, input, "hidden", hidden, device);
  checkTensor(plan, output, "out", out, device);
  if (slots.size() != size_t(plan.rows))
    throw Error(
        ErrorKind::Argument,
        llvm::formatv("decode: {0} slots for {1} rows", slots.size(), plan.rows).str());
  if (llvm::Error err = models::checkSlots(slots, plan.numSlots))
    throwError(ErrorKind::Argument, std::move(err));
  if (state->gpu) {
    if (llvm::Error err = state->gpu->step(toRef(hidden), slots, toRef(out),
                                           runtime::StreamHandle{reinterpret_cast<void *>(
                                               static_cast<uintptr_t>(stream))}))
      throwError(ErrorKind::Device, std::move(err));
    // The host copy of the slots is what the next page write uploads with.
    std::memcpy(state->host.at("slots").data(), slots.data(),
                slots.size() * sizeof(int32_t));
    return;
  }
  std::memcpy(state->host.at(input).data(), hostBytes(hidden),
              plan.buffers.at(input).bytes);
  std::memcpy(state->host.at("slots").data(), slots.data(),
              slots.size() * sizeof(int32_t));
  if (llvm::Error err = state->interpreter->run(plan, state->host))
    throwError(ErrorKind::Run, std::move(err));
  std::memcpy(hostBytes(out), state->host.at(output).data(),
              plan.buffers.at(output).bytes);
}

uint64_t DecodeStep::deviceAddress(const std::string &name) const {
  findBuffer(state->plan, name, false);
  if (!state->gpu)
    return 0;
  return unwrap(state->gpu->bufferAddress(name), ErrorKind::Argument);
}

MambaGeometry fullMambaGeometry() {
  models::NemotronHConfig c;
  return {c.hiddenSize, c.numHeads, c.headDim, c.numGroups, c.stateSize,
          c.convKernel, c.eps,      c.dtMin,   c.dtMax,     c.layerPattern};
}

} // namespace tilejit::python
