// The NemotronH Mamba2 decode step and plan descriptions through the models'
// front door (models/session: the backend, the model, a session and its step),
// on the interpreter over host buffers or on the GPU (pages on the device, the
// step one CUDA graph). Only the translation of the core's plain types lives here.
#include "tilejit/python/Mamba2.h"
#include "CoreInternal.h"

#include "tilejit/models/session/Session.h"

#include "llvm/Support/FormatVariadic.h"

namespace tilejit::python {

struct DecodeStep::State {
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

MambaGeometry fromConfig(const models::NemotronHConfig &c) {
  return {c.hiddenSize, c.numHeads, c.headDim, c.numGroups, c.stateSize,
          c.convKernel, c.eps,      c.dtMin,   c.dtMax,     c.layerPattern};
}

/// The session of `options` on `runtime`'s backend, or on an interpreter
/// backend planning for options.planArch when there is no runtime.
std::unique_ptr<models::ModelSession>
openSession(const DecodeStepOptions &options, const std::shared_ptr<Runtime> &runtime) {
  std::shared_ptr<models::Backend> backend;
  if (runtime) {
    backend = runtime->internal()->backend;
  } else {
    models::BackendOptions backendOptions;
    backendOptions.kind = models::BackendKind::Interpreter;
    if (!options.planArch.empty())
      backendOptions.planArch =
          unwrap(Arch::parse(options.planArch), ErrorKind::Argument);
    backend = unwrap(models::Backend::open(std::move(backendOptions)), ErrorKind::Device);
  }
  if (options.layers < 1)
    throw Error(
        ErrorKind::Argument,
        llvm::formatv("decode step: layers must be at least 1, got {0}", options.layers)
            .str());
  models::ModelSource source;
  source.geometry = toConfig(options.geometry);
  source.seed = options.seed;
  source.layers = options.layers;
  auto model = unwrap(models::loadModel(source), ErrorKind::Argument);
  models::SessionOptions sessionOptions;
  sessionOptions.slots = options.slots;
  sessionOptions.ssmState = {
      unwrap(models::SsmStateOptions::parseType(options.ssmStateDtype),
             ErrorKind::Argument),
      options.stochasticRounding};
  if (auto err = sessionOptions.ssmState.validate())
    throw Error(ErrorKind::Argument, llvm::toString(std::move(err)));
  return unwrap(models::ModelSession::create(std::move(backend), std::move(model),
                                             std::move(sessionOptions)),
                ErrorKind::Argument);
}

} // namespace

DecodeStep::DecodeStep(std::unique_ptr<State> state) : state(std::move(state)) {}
DecodeStep::~DecodeStep() = default;

MambaGeometry fullMambaGeometry() { return fromConfig(models::NemotronHConfig()); }

std::shared_ptr<DecodeStep> createDecodeStep(const DecodeStepOptions &options,
                                             const std::shared_ptr<Runtime> &runtime) {
  if (runtime && !runtime->canLaunch())
    throw Error(ErrorKind::Device, "decode step: a compile-only runtime cannot launch");
  auto state = std::make_unique<DecodeStep::State>();
  state->session = openSession(options, runtime);
  auto plan = unwrap(state->session->planDecode(options.rows), ErrorKind::Argument);
  state->step = unwrap(state->session->makeStep(std::move(plan)), ErrorKind::Device);
  return std::make_shared<DecodeStep>(std::move(state));
}

std::string describePlan(const DecodeStepOptions &options,
                         const std::vector<PrefillSequence> &prefill,
                         const std::shared_ptr<Runtime> &runtime) {
  auto session = openSession(options, runtime);
  if (prefill.empty())
    return models::describePlan(
        unwrap(session->planDecode(options.rows), ErrorKind::Argument));
  std::vector<models::PrefillSequence> sequences;
  for (const PrefillSequence &s : prefill)
    sequences.push_back({s.tokens, s.slot, s.continued});
  auto batch = unwrap(models::makePrefillBatch(sequences), ErrorKind::Argument);
  return models::describePlan(
      unwrap(session->planPrefill(batch), ErrorKind::Argument).plan);
}

bool DecodeStep::onDevice() const { return state->step->gpu() != nullptr; }
int64_t DecodeStep::rows() const { return state->step->plan().rows; }
int64_t DecodeStep::numSlots() const { return state->step->plan().numSlots; }
MambaGeometry DecodeStep::geometry() const {
  return fromConfig(state->session->model().config);
}

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

/// The plan's buffer `name`: a weight when `weight` is set, else any other.
/// Errors (ErrorKind::Argument): no such buffer.
const models::PlanBuffer &planBuffer(const models::StepPlan &plan,
                                     const std::string &name, bool weight) {
  auto it = plan.buffers.find(name);
  if (it == plan.buffers.end() ||
      (it->second.role == models::PlanBuffer::Role::Weight) != weight)
    throw Error(ErrorKind::Argument, "decode step: no " +
                                         std::string(weight ? "" : "non-") +
                                         "weight buffer '" + name + "'");
  return it->second;
}
} // namespace

std::vector<uint8_t> DecodeStep::weight(const std::string &name) const {
  const models::PlanBuffer &buffer = planBuffer(state->step->plan(), name, true);
  return {buffer.hostWeight.begin(), buffer.hostWeight.end()};
}

void DecodeStep::checkHost(const std::string &name, const TensorArg &t) const {
  const models::StepPlan &plan = state->step->plan();
  planBuffer(plan, name, false);
  if (llvm::Error err = models::checkPlanTensor(plan, name, name, toRef(t), -1))
    throwError(ErrorKind::Argument, std::move(err));
}

void DecodeStep::read(const std::string &name, const TensorArg &dst) {
  checkHost(name, dst);
  const size_t bytes = planBuffer(state->step->plan(), name, false).bytes;
  if (llvm::Error err = state->step->read(name, {hostBytes(dst), bytes}))
    throwError(ErrorKind::Device, std::move(err));
}

void DecodeStep::write(const std::string &name, const TensorArg &src) {
  checkHost(name, src);
  const size_t bytes = planBuffer(state->step->plan(), name, false).bytes;
  if (llvm::Error err = state->step->write(name, {hostBytes(src), bytes}))
    throwError(ErrorKind::Device, std::move(err));
}

void DecodeStep::step(const TensorArg &hidden, const std::vector<int32_t> &slots,
                      const TensorArg &out, uint64_t stream) {
  if (llvm::Error err = state->step->run(toRef(hidden), slots, toRef(out),
                                         runtime::StreamHandle{reinterpret_cast<void *>(
                                             static_cast<uintptr_t>(stream))}))
    throwError(onDevice() ? ErrorKind::Device : ErrorKind::Run, std::move(err));
}

uint64_t DecodeStep::deviceAddress(const std::string &name) const {
  planBuffer(state->step->plan(), name, false);
  if (!state->step->gpu())
    return 0;
  return unwrap(state->step->gpu()->bufferAddress(name), ErrorKind::Argument);
}

} // namespace tilejit::python
