// A session and its steps: models::ModelSession and models::ModelStep behind
// the API's handles, with errors as values of the API's kinds.
#include "EmbedInternal.h"
#include "tilejit/embed/Format.h"

#include "tilejit/models/plan/Validate.h"

namespace tilejit::embed {

namespace {

models::TensorRef toRef(const TensorView &t) {
  return {dtypeName(t.dtype), t.shape, {}, t.device, uint64_t(uintptr_t(t.data))};
}

/// The step's run, its errors the caller's (InvalidArgument), the device's
/// or, on the interpreter, the run's.
Status runStep(const Engine::State &engine, models::ModelStep &step,
               const TensorView &hidden, const std::vector<int32_t> &slots,
               const TensorView &out, Stream stream) {
  if (llvm::Error err =
          step.run(toRef(hidden), slots, toRef(out), runtime::StreamHandle{stream}))
    return toError(engine.kind == Backend::Interpreter ? ErrorKind::Run
                                                       : ErrorKind::Device,
                   std::move(err));
  return {};
}

/// The plan of a prefill of `batch`; its errors are the caller's.
Result<models::PrefillPlan> planPrefill(const models::ModelSession &session,
                                        const std::vector<PrefillSequence> &batch) {
  std::vector<models::PrefillSequence> sequences;
  for (const PrefillSequence &s : batch)
    sequences.push_back({s.tokens, s.slot, s.continued});
  auto b = models::makePrefillBatch(sequences);
  if (!b)
    return toError(ErrorKind::InvalidArgument, b.takeError());
  auto plan = session.planPrefill(*b);
  if (!plan)
    return toError(ErrorKind::InvalidArgument, plan.takeError());
  return std::move(*plan);
}

} // namespace

Result<Session> Session::create(Engine &engine, const Model &model,
                                const SessionOptions &options) {
  auto overrides = models::parseKernelSettings(
      engine.state->backend->registry(), options.settings,
      [](llvm::StringRef setting) { return fmt::format("setting '{}'", setting.str()); });
  if (!overrides)
    return toError(ErrorKind::InvalidArgument, overrides.takeError());
  auto stateType = models::SsmStateOptions::parseType(options.ssmStateDtype);
  if (!stateType)
    return toError(ErrorKind::InvalidArgument, stateType.takeError());
  models::SessionOptions sessionOptions;
  sessionOptions.slots = options.slots;
  sessionOptions.overrides = std::move(*overrides);
  sessionOptions.ssmState = {*stateType, options.stochasticRounding};
  if (auto err = sessionOptions.ssmState.validate())
    return toError(ErrorKind::InvalidArgument, std::move(err));
  auto session = models::ModelSession::create(engine.state->backend, model.state->model,
                                              std::move(sessionOptions));
  if (!session)
    return toError(ErrorKind::InvalidArgument, session.takeError());
  auto state = std::make_shared<State>();
  state->engine = engine.state;
  state->session = std::move(*session);
  return Session(std::move(state));
}

int64_t Session::slots() const { return state->session->slots(); }

Result<DecodeStep> Session::decode(int64_t rows) {
  auto plan = state->session->planDecode(rows);
  if (!plan)
    return toError(ErrorKind::InvalidArgument, plan.takeError());
  auto step = state->session->makeStep(std::move(*plan));
  if (!step)
    return toError(ErrorKind::Device, step.takeError());
  auto decode = std::make_shared<DecodeStep::State>();
  decode->step = std::move(*step);
  decode->engine = state->engine;
  return DecodeStep(std::move(decode));
}

Result<PrefillStep> Session::prefill(const std::vector<PrefillSequence> &batch) {
  auto plan = planPrefill(*state->session, batch);
  if (!plan)
    return plan.error();
  models::HostBuffers inputs;
  plan->writeInputs(inputs);
  auto step = state->session->makeStep(std::move(plan->plan), inputs);
  if (!step)
    return toError(ErrorKind::Device, step.takeError());
  auto prefill = std::make_shared<PrefillStep::State>();
  prefill->step = std::move(*step);
  prefill->engine = state->engine;
  prefill->tokens = plan->tokens;
  for (const PrefillSequence &sequence : batch)
    prefill->slots.push_back(sequence.slot);
  return PrefillStep(std::move(prefill));
}

Result<std::string> Session::describeDecode(int64_t rows) const {
  auto plan = state->session->planDecode(rows);
  if (!plan)
    return toError(ErrorKind::InvalidArgument, plan.takeError());
  return models::describePlan(*plan);
}

Result<std::string>
Session::describePrefill(const std::vector<PrefillSequence> &batch) const {
  auto plan = planPrefill(*state->session, batch);
  if (!plan)
    return plan.error();
  return models::describePlan(plan->plan);
}

int64_t DecodeStep::rows() const { return state->step->plan().rows; }

Status DecodeStep::run(const TensorView &hidden, const std::vector<int32_t> &slots,
                       const TensorView &out, Stream stream) {
  return runStep(*state->engine, *state->step, hidden, slots, out, stream);
}

int64_t PrefillStep::tokens() const { return state->tokens; }

Status PrefillStep::run(const TensorView &hidden, const TensorView &out, Stream stream) {
  return runStep(*state->engine, *state->step, hidden, state->slots, out, stream);
}

} // namespace tilejit::embed
