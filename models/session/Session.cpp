// A session: its backend and model, its settings, and the pages its steps
// share (on the device in GpuSharedState, on the interpreter as host buffers).
#include "SessionInternal.h"

#include "tilejit/models/plan/Validate.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include <set>

using namespace llvm;

namespace tilejit::models {

ModelSession::ModelSession(std::shared_ptr<State> state) : state(std::move(state)) {}
ModelSession::~ModelSession() = default;

Expected<std::unique_ptr<ModelSession>>
ModelSession::create(std::shared_ptr<Backend> backend,
                     std::shared_ptr<const LoadedModel> model, SessionOptions options) {
  if (options.slots < 1)
    return make_error<ArgumentError>(
        formatv("a session of {0} slot(s): it needs at least one", options.slots));
  // The doors parse their settings with parseKernelSettings; typed overrides
  // from C++ callers get the same name checks.
  for (const auto &[kernel, values] : options.overrides) {
    const KernelDef *def = backend->registry().find(kernel);
    if (!def)
      return make_error<ArgumentError>("override of '" + kernel +
                                       "': no such registered kernel");
    if (Error err = def->checkNames(values))
      return make_error<ArgumentError>(toString(std::move(err)));
  }
  auto state = std::make_shared<State>();
  state->backend = std::move(backend);
  state->model = std::move(model);
  state->options = std::move(options);
  if (state->backend->jit())
    state->gpu = std::make_shared<GpuSharedState>();
  return std::unique_ptr<ModelSession>(new ModelSession(std::move(state)));
}

Backend &ModelSession::backend() const { return *state->backend; }
const LoadedModel &ModelSession::model() const { return *state->model; }
int64_t ModelSession::slots() const { return state->options.slots; }

PlanOptions ModelSession::State::planOptions(int64_t rows, int64_t tokens) const {
  PlanOptions plan = backend->planOptions(options.overrides, options.overridesMustApply,
                                          rows, tokens, options.perLayerActivations);
  plan.ssmState = options.ssmState;
  return plan;
}

Expected<StepPlan> ModelSession::planDecode(int64_t rows) const {
  if (rows < 1)
    return make_error<ArgumentError>(
        formatv("a decode step of {0} row(s): it needs at least one", rows));
  return planDecodeStep(state->backend->registry(), state->model->config,
                        state->model->weights, rows, state->options.slots,
                        state->planOptions(rows, 0));
}

Expected<PrefillPlan> ModelSession::planPrefill(const ref::PrefillBatch &batch) const {
  if (batch.cuSeqlens.size() < 2)
    return make_error<ArgumentError>("a prefill batch without sequences");
  const int64_t tokens = batch.cuSeqlens.back();
  return models::planPrefill(state->backend->registry(), state->model->config,
                             state->model->weights, batch, tokens, state->options.slots,
                             state->planOptions(0, tokens));
}

Expected<std::unique_ptr<ModelStep>> ModelSession::decode(int64_t rows) {
  auto plan = planDecode(rows);
  if (!plan)
    return plan.takeError();
  return makeStep(std::move(*plan));
}

Expected<std::unique_ptr<ModelStep>>
ModelSession::prefill(const ref::PrefillBatch &batch) {
  auto plan = planPrefill(batch);
  if (!plan)
    return plan.takeError();
  HostBuffers inputs;
  plan->writeInputs(inputs);
  return makeStep(std::move(plan->plan), inputs);
}

Expected<std::unique_ptr<ModelStep>> ModelSession::makeStep(StepPlan plan,
                                                            const HostBuffers &inputs) {
  auto step = std::make_unique<ModelStep::State>();
  step->session = state;
  step->plan = std::move(plan);
  const StepPlan &p = step->plan;
  // Until a step runs every row is padding: no slot is claimed.
  step->slots.assign(size_t(p.rows), -1);
  if (auto it = inputs.find("slots"); it != inputs.end())
    std::memcpy(step->slots.data(), it->second.data(),
                std::min(it->second.size(), step->slots.size() * sizeof(int32_t)));
  Backend &backend = *state->backend;
  runtime::JitRuntime *jit = backend.jit();
  if (!jit) {
    step->interpreter = std::make_unique<InterpreterRunner>(backend.registry());
    step->host = allocateHostBuffers(p);
    for (const auto &[name, bytes] : inputs)
      step->host[name] = bytes;
    for (const auto &[name, buffer] : p.buffers) {
      if (buffer.role != PlanBuffer::Role::State)
        continue;
      // Every step of a session is planned at its model's geometry and slot
      // count, so its pages are the session's.
      auto [page, added] = state->pages.try_emplace(name, buffer.bytes, 0);
      if (page->second.size() != buffer.bytes)
        return createStringError(formatv("page '{0}' of {1} bytes: the session's has {2}",
                                         name, buffer.bytes, page->second.size()));
      step->host.erase(name);
    }
    return std::make_unique<ModelStep>(std::move(step));
  }
  std::set<std::string> before;
  for (const auto &[name, page] : state->gpu->pages)
    before.insert(name);
  std::string log;
  raw_string_ostream os(log);
  auto runner = GpuRunner::create(*jit, backend.registry(), p, os, state->gpu);
  backend.say(log);
  if (!runner)
    return runner.takeError();
  step->gpu = std::move(*runner);
  // A new session's state is zero, as the interpreter's is.
  for (const auto &[name, page] : state->gpu->pages)
    if (!before.count(name))
      if (Error err = jit->device().fill(page.address(), 0, page.size(), {}))
        return std::move(err);
  HostBuffers upload = inputs;
  upload["slots"] = step->slotBytes();
  if (Error err = step->gpu->upload(upload))
    return std::move(err);
  if (Error err = jit->device().synchronize({}))
    return std::move(err);
  return std::make_unique<ModelStep>(std::move(step));
}

} // namespace tilejit::models
