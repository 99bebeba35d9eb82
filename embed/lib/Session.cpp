// A session's steps: each is a plan (models/nemotron_h/Planner.h) on a GpuRunner
// whose weights and pages the session shares, or on the interpreter over host
// buffers whose pages the session holds. The caller's tensors are checked
// against the plan before anything runs.
#include "EmbedInternal.h"
#include "tilejit/embed/Format.h"

#include "tilejit/models/plan/Validate.h"

#include "llvm/Support/raw_ostream.h"

#include <cassert>
#include <cstring>
#include <set>

namespace tilejit::embed {

namespace {

models::TensorRef toRef(const TensorView &t) {
  return {dtypeName(t.dtype), t.shape, {}, t.device, uint64_t(uintptr_t(t.data))};
}

/// Swaps the session's pages into an interpreter step's buffers and back.
class BorrowedPages {
public:
  BorrowedPages(models::HostBuffers &pages, models::HostBuffers &buffers)
      : pages(pages), buffers(buffers) {
    swap();
  }
  ~BorrowedPages() { swap(); }

private:
  void swap() {
    for (auto &[name, bytes] : pages)
      std::swap(bytes, buffers[name]);
  }
  models::HostBuffers &pages, &buffers;
};

} // namespace

Status StepState::run(const TensorView &hidden, const std::vector<int32_t> &slots,
                      const TensorView &out, Stream stream) {
  const std::string input = models::StepPlan::activation(0),
                    output = models::StepPlan::activation(plan.numLayers);
  Session::State &s = *session;
  // The runners check the same; checked here, a refusal is the caller's
  // mistake and anything the runner reports is the device's.
  for (auto [name, what, tensor] :
       {std::tuple{input, "hidden", &hidden}, {output, "out", &out}})
    if (llvm::Error err =
            models::checkPlanTensor(plan, name, what, toRef(*tensor), s.engine->device))
      return toError(ErrorKind::InvalidArgument, std::move(err));
  if (slots.size() != size_t(plan.rows))
    return Error(
        ErrorKind::InvalidArgument,
        fmt::format("{} slot(s) for a step of {} row(s)", slots.size(), plan.rows));
  if (llvm::Error err = models::checkSlots(slots, s.slots))
    return toError(ErrorKind::InvalidArgument, std::move(err));
  if (gpu) {
    if (llvm::Error err =
            gpu->step(toRef(hidden), slots, toRef(out), runtime::StreamHandle{stream}))
      return toError(ErrorKind::Device, std::move(err));
    return {};
  }
  std::memcpy(host.at(input).data(), hidden.data, host.at(input).size());
  std::memcpy(host.at("slots").data(), slots.data(), slots.size() * sizeof(int32_t));
  {
    BorrowedPages borrowed(s.pages, host);
    if (llvm::Error err = interpreter->run(plan, host))
      return toError(ErrorKind::Run, std::move(err));
  }
  std::memcpy(out.data, host.at(output).data(), host.at(output).size());
  return {};
}

Result<std::unique_ptr<StepState>> makeStep(std::shared_ptr<Session::State> session,
                                            models::StepPlan plan,
                                            const models::HostBuffers &inputs) {
  auto registry = modelRegistry();
  if (!registry)
    return registry.error();
  auto step = std::make_unique<StepState>();
  Session::State &s = *session;
  step->session = std::move(session);
  step->plan = std::move(plan);
  const models::StepPlan &p = step->plan;
  if (!s.engine->jit) {
    step->interpreter = std::make_unique<models::InterpreterRunner>(**registry);
    step->host = models::allocateHostBuffers(p);
    for (const auto &[name, bytes] : inputs)
      step->host[name] = bytes;
    for (const auto &[name, buffer] : p.buffers) {
      if (buffer.role != models::PlanBuffer::Role::State)
        continue;
      // Every step of a session is planned at its model's geometry and slot
      // count, so its pages are the session's.
      auto [page, added] = s.pages.try_emplace(name, buffer.bytes, 0);
      assert(page->second.size() == buffer.bytes &&
             "a step's page disagrees with the session's");
      (void)added;
      step->host.erase(name);
    }
    return step;
  }
  runtime::JitRuntime &jit = *s.engine->jit;
  std::set<std::string> before;
  for (const auto &[name, page] : s.gpu->pages)
    before.insert(name);
  std::string log;
  llvm::raw_string_ostream os(log);
  auto runner = models::GpuRunner::create(jit, **registry, p, os, s.gpu);
  s.engine->say(log);
  if (!runner)
    return toError(ErrorKind::Device, runner.takeError());
  step->gpu = std::move(*runner);
  // A new session's state is zero, as the interpreter's is.
  for (const auto &[name, page] : s.gpu->pages)
    if (!before.count(name))
      if (llvm::Error err = jit.device().fill(page.address(), 0, page.size(), {}))
        return toError(ErrorKind::Device, std::move(err));
  if (!inputs.empty())
    if (llvm::Error err = step->gpu->upload(inputs))
      return toError(ErrorKind::Device, std::move(err));
  if (llvm::Error err = jit.device().synchronize({}))
    return toError(ErrorKind::Device, std::move(err));
  return step;
}

Result<Session> Session::create(Engine &engine, const Model &model,
                                const SessionOptions &options) {
  if (options.slots < 1)
    return Error(
        ErrorKind::InvalidArgument,
        fmt::format("a session of {} slot(s): it needs at least one", options.slots));
  auto registry = modelRegistry();
  if (!registry)
    return registry.error();
  auto state = std::make_shared<State>();
  auto overrides = models::parseKernelSettings(
      **registry, options.settings,
      [](llvm::StringRef setting) { return fmt::format("setting '{}'", setting.str()); });
  if (!overrides)
    return toError(ErrorKind::InvalidArgument, overrides.takeError());
  state->overrides = std::move(*overrides);
  state->engine = engine.state;
  state->model = model.state;
  state->slots = options.slots;
  if (state->engine->jit)
    state->gpu = std::make_shared<models::GpuSharedState>();
  return Session(std::move(state));
}

int64_t Session::slots() const { return state->slots; }

namespace {
/// The plan's options: the session's settings over the tuning database's
/// choices for `rows` decode rows or `tokens` prefill tokens (GPU only).
models::PlanOptions planOptions(const Session::State &s, const KernelRegistry &registry,
                                int64_t rows, int64_t tokens, llvm::raw_ostream &log) {
  models::PlanOptions options;
  options.overrides = s.overrides;
  options.overridesMustApply = false;
  if (s.engine->jit) {
    options.tuned = models::tunedFromDatabase(*s.engine->jit, registry,
                                              {{"rows", rows}, {"tokens", tokens}}, log);
    options.arch = s.engine->jit->targetArch();
  }
  return options;
}
} // namespace

Result<DecodeStep> Session::decode(int64_t rows) {
  if (rows < 1)
    return Error(ErrorKind::InvalidArgument,
                 fmt::format("a decode step of {} row(s): it needs at least one", rows));
  auto registry = modelRegistry();
  if (!registry)
    return registry.error();
  const Model::State &m = *state->model;
  std::string log;
  llvm::raw_string_ostream os(log);
  auto plan = models::planDecodeStep(**registry, m.config, m.weights, rows, state->slots,
                                     planOptions(*state, **registry, rows, 0, os));
  state->engine->say(log);
  if (!plan)
    return toError(ErrorKind::InvalidArgument, plan.takeError());
  auto step = makeStep(state, std::move(*plan), {});
  if (!step)
    return step.error();
  auto decode = std::make_shared<DecodeStep::State>();
  decode->step = std::move(*step);
  return DecodeStep(std::move(decode));
}

Result<PrefillStep> Session::prefill(const std::vector<PrefillSequence> &batch) {
  if (batch.empty())
    return Error(ErrorKind::InvalidArgument, "a prefill batch without sequences");
  models::ref::PrefillBatch b{{0}, {}, {}};
  for (size_t i = 0; i < batch.size(); ++i) {
    if (batch[i].tokens < 1)
      return Error(
          ErrorKind::InvalidArgument,
          fmt::format("prefill sequence {} has {} tokens: each needs at least one", i,
                      batch[i].tokens));
    b.cuSeqlens.push_back(b.cuSeqlens.back() + batch[i].tokens);
    b.slots.push_back(batch[i].slot);
    b.continueFromSlot.push_back(batch[i].continued);
  }
  auto registry = modelRegistry();
  if (!registry)
    return registry.error();
  const Model::State &m = *state->model;
  const int64_t tokens = b.cuSeqlens.back();
  std::string log;
  llvm::raw_string_ostream os(log);
  auto plan =
      models::planPrefill(**registry, m.config, m.weights, b, tokens, state->slots,
                          planOptions(*state, **registry, 0, tokens, os));
  state->engine->say(log);
  if (!plan)
    return toError(ErrorKind::InvalidArgument, plan.takeError());
  models::HostBuffers inputs;
  plan->writeInputs(inputs);
  auto prefill = std::make_shared<PrefillStep::State>();
  prefill->tokens = tokens;
  for (const PrefillSequence &sequence : batch)
    prefill->slots.push_back(sequence.slot);
  auto step = makeStep(state, std::move(plan->plan), inputs);
  if (!step)
    return step.error();
  prefill->step = std::move(*step);
  return PrefillStep(std::move(prefill));
}

int64_t DecodeStep::rows() const { return state->step->plan.rows; }

Status DecodeStep::run(const TensorView &hidden, const std::vector<int32_t> &slots,
                       const TensorView &out, Stream stream) {
  return state->step->run(hidden, slots, out, stream);
}

int64_t PrefillStep::tokens() const { return state->tokens; }

Status PrefillStep::run(const TensorView &hidden, const TensorView &out, Stream stream) {
  return state->step->run(hidden, state->slots, out, stream);
}

} // namespace tilejit::embed
