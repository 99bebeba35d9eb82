// DecodeStep: the NemotronH decode mixer step through the models' front door
// (models/session: the backend, the model, a session and its step), on the
// interpreter over host buffers or on the GPU (pages on the device, the step
// one CUDA graph). Only the translation of the core's plain types lives here.
#include "CoreInternal.h"

#include "tilejit/models/session/Session.h"

#include "llvm/Support/FormatVariadic.h"

#include <cstring>

namespace tilejit::python {

struct DecodeStep::State {
  MambaGeometry geometry;
  std::shared_ptr<Runtime::State> runtime; ///< keeps the device alive; null: interpreter
  std::unique_ptr<models::ModelSession> session;
  std::unique_ptr<models::ModelStep> step;
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

/// The session of `options` on `runtime`'s backend, or on an interpreter
/// backend planning for options.planArch when there is no runtime.
std::unique_ptr<models::ModelSession> openSession(const DecodeStepOptions &options,
                                                  Runtime::State *runtime) {
  std::shared_ptr<models::Backend> backend;
  if (runtime) {
    backend = runtime->backend;
  } else {
    models::BackendOptions backendOptions;
    backendOptions.kind = models::BackendKind::Interpreter;
    if (!options.planArch.empty())
      backendOptions.planArch = unwrap(Arch::parse(options.planArch), ErrorKind::Argument);
    backend = unwrap(models::Backend::open(std::move(backendOptions)), ErrorKind::Device);
  }
  models::ModelSource source;
  source.geometry = toConfig(options.geometry);
  source.seed = options.seed;
  source.layers = options.layers;
  if (options.layers < 1)
    throw Error(ErrorKind::Argument,
                llvm::formatv("decode step: layers must be at least 1, got {0}",
                              options.layers)
                    .str());
  auto model = unwrap(models::loadModel(source), ErrorKind::Argument);
  models::SessionOptions sessionOptions;
  sessionOptions.slots = options.slots;
  return unwrap(models::ModelSession::create(std::move(backend), std::move(model),
                                             std::move(sessionOptions)),
                ErrorKind::Argument);
}

std::shared_ptr<DecodeStep> makeDecodeStep(const DecodeStepOptions &options,
                                           std::shared_ptr<Runtime::State> runtime) {
  auto state = std::make_unique<DecodeStep::State>();
  state->geometry = options.geometry;
  state->session = openSession(options, runtime.get());
  auto plan = unwrap(state->session->planDecode(options.rows), ErrorKind::Argument);
  state->step = unwrap(state->session->makeStep(std::move(plan)), ErrorKind::Device);
  state->runtime = std::move(runtime);
  return std::make_shared<DecodeStep>(std::move(state));
}

} // namespace

DecodeStep::DecodeStep(std::unique_ptr<State> state) : state(std::move(state)) {}
DecodeStep::~DecodeStep() = default;

std::shared_ptr<DecodeStep> createDecodeStep(const DecodeStepOptions &options) {
  return makeDecodeStep(options, nullptr);
}

std::shared_ptr<DecodeStep> Runtime::decodeStep(const DecodeStepOptions &options) {
  if (!canLaunch())
    throw Error(ErrorKind::Device, "decode step: a compile-only runtime cannot launch");
  return makeDecodeStep(options, state);
}

std::string describePlan(const DecodeStepOptions &options,
                         const std::vector<PrefillSequence> &prefill,
                         const std::shared_ptr<Runtime> &runtime) {
  auto session = openSession(options, runtime ? runtime->state.get() : nullptr);
  if (prefill.empty())
    return models::describePlan(
        unwrap(session->planDecode(options.rows), ErrorKind::Argument));
  std::vector<int64_t> tokens, slots;
  std::vector<bool> continued;
  for (const PrefillSequence &s : prefill) {
    tokens.push_back(s.tokens);
    slots.push_back(s.slot);
    continued.push_back(s.continued);
  }
  auto batch =
      unwrap(models::makePrefillBatch(tokens, slots, continued), ErrorKind::Argument);
  return models::describePlan(
      unwrap(session->planPrefill(batch), ErrorKind::Argument).plan);
}

bool DecodeStep::onDevice() const { return state->step->gpu() != nullptr; }
int64_t DecodeStep::rows() const { return state->step->plan().rows; }
int64_t DecodeStep::numSlots() const { return state->step->plan().numSlots; }
const MambaGeometry &DecodeStep::geometry() const { return state->geometry; }

std::vector<DecodeLayerInfo> DecodeStep::layers() const {
  std::vector<DecodeLayerInfo> out;
  for (const models::MambaLayerWeights &w : state->session->model().weights)
    out.push_back({w.layer, w.inProj.isFP8, w.inProj.weightScale, w.inProj.inputScale,
                   w.outProj.weightScale, w.outProj.inputScale});
  return out;
}

std::vector<DecodeStep::BufferInfo> DecodeStep::buffers() const {
  static const char *roles[] = {"weight", "state", "activation", "input"};
  std::vector<BufferInfo> out;
  for (const auto &[name, buffer] : state->step->plan().buffers)
    out.emplace_back(name, roles[int(buffer.role)], buffer.bytes,
                     models::tensorTypeName(buffer.type).str(), buffer.shape);
  return out;
}

namespace {
models::TensorRef toRef(const TensorArg &t) {
  return {t.dtype, t.shape, t.strides, t.device, t.address};
}

uint8_t *hostBytes(const TensorArg &t) {
  return reinterpret_cast<uint8_t *>(static_cast<uintptr_t>(t.address));
}
} // namespace

std::vector<uint8_t> DecodeStep::weight(const std::string &name) const {
  const models::StepPlan &plan = state->step->plan();
  auto it = plan.buffers.find(name);
  if (it == plan.buffers.end() || it->second.role != models::PlanBuffer::Role::Weight)
    throw Error(ErrorKind::Argument, "decode step: no weight buffer '" + name + "'");
  return {it->second.hostWeight.begin(), it->second.hostWeight.end()};
}

void DecodeStep::checkHost(const std::string &name, const TensorArg &t) const {
  const models::StepPlan &plan = state->step->plan();
  auto it = plan.buffers.find(name);
  if (it == plan.buffers.end() || it->second.role == models::PlanBuffer::Role::Weight)
    throw Error(ErrorKind::Argument, "decode step: no non-weight buffer '" + name + "'");
  if (llvm::Error err = models::checkPlanTensor(plan, name, name, toRef(t), -1))
    throwError(ErrorKind::Argument, std::move(err));
}

void DecodeStep::read(const std::string &name, const TensorArg &dst) {
  checkHost(name, dst);
  const size_t bytes = state->step->plan().buffers.at(name).bytes;
  if (llvm::Error err = state->step->read(name, {hostBytes(dst), bytes}))
    throwError(ErrorKind::Device, std::move(err));
}

void DecodeStep::write(const std::string &name, const TensorArg &src) {
  checkHost(name, src);
  const size_t bytes = state->step->plan().buffers.at(name).bytes;
  if (llvm::Error err = state->step->write(name, {hostBytes(src), bytes}))
    throwError(ErrorKind::Device, std::move(err));
}

void DecodeStep::step(const TensorArg &hidden, const std::vector<int32_t> &slots,
                      const TensorArg &out, uint64_t stream) {
  if (llvm::Error err = state->step->run(
          toRef(hidden), slots, toRef(out),
          runtime::StreamHandle{reinterpret_cast<void *>(static_cast<uintptr_t>(stream))}))
    throwError(onDevice() ? ErrorKind::Device : ErrorKind::Run, std::move(err));
}

uint64_t DecodeStep::deviceAddress(const std::string &name) const {
  const models::StepPlan &plan = state->step->plan();
  auto it = plan.buffers.find(name);
  if (it == plan.buffers.end() || it->second.role == models::PlanBuffer::Role::Weight)
    throw Error(ErrorKind::Argument, "decode step: no non-weight buffer '" + name + "'");
  if (!state->step->gpu())
    return 0;
  return unwrap(state->step->gpu()->bufferAddress(name), ErrorKind::Argument);
}

MambaGeometry fullMambaGeometry() {
  models::NemotronHConfig c;
  return {c.hiddenSize, c.numHeads, c.headDim, c.numGroups, c.stateSize,
          c.convKernel, c.eps,      c.dtMin,   c.dtMax,     c.layerPattern};
}

} // namespace tilejit::python
