// Running a session's step: the caller's tensors checked against the plan, then
// the captured graph on the caller's stream (GPU) or the interpreter over host
// buffers with the session's pages swapped in.
#include "SessionInternal.h"

#include "llvm/Support/FormatVariadic.h"

using namespace llvm;

namespace tilejit::models {

char ArgumentError::ID = 0;

ModelStep::ModelStep(std::unique_ptr<State> state) : state(std::move(state)) {}
ModelStep::~ModelStep() = default;

const StepPlan &ModelStep::plan() const { return state->plan; }
GpuRunner *ModelStep::gpu() const { return state->gpu.get(); }
InterpreterRunner *ModelStep::interpreter() const { return state->interpreter.get(); }
HostBuffers &ModelStep::host() { return state->host; }
int64_t ModelStep::seed() const { return state->seed; }
void ModelStep::setSeed(int64_t seed) { state->seed = seed; }

namespace {

Error argumentError(Error err) {
  return make_error<ArgumentError>(toString(std::move(err)));
}

/// Swaps a session's pages into an interpreter step's buffers and back.
class BorrowedPages {
public:
  BorrowedPages(HostBuffers &pages, HostBuffers &buffers)
      : pages(pages), buffers(buffers) {
    swap();
  }
  ~BorrowedPages() {
    swap();
    for (const auto &[name, bytes] : pages)
      buffers.erase(name);
  }

private:
  void swap() {
    for (auto &[name, bytes] : pages)
      std::swap(bytes, buffers[name]);
  }
  HostBuffers &pages, &buffers;
};

uint8_t *hostBytes(const TensorRef &t) {
  return reinterpret_cast<uint8_t *>(static_cast<uintptr_t>(t.address));
}

} // namespace

Error ModelStep::run(const TensorRef &hidden, ArrayRef<int32_t> slots,
                     const TensorRef &out, runtime::StreamHandle stream) {
  const StepPlan &plan = state->plan;
  ModelSession::State &session = *state->session;
  if (session.backend->kind() == BackendKind::CompileOnly)
    return createStringError("a compile-only backend plans and compiles steps but does "
                             "not run them");
  const std::string input = StepPlan::activation(0),
                    output = StepPlan::activation(plan.numLayers);
  const int device = state->gpu ? session.backend->jit()->device().info().ordinal : -1;
  // The runner checks the same; checked here, a refusal is the caller's
  // mistake and anything the runner reports is the device's.
  for (auto [name, what, tensor] :
       {std::tuple{input, "hidden", &hidden}, {output, "out", &out}})
    if (Error err = checkPlanTensor(plan, name, what, *tensor, device))
      return argumentError(std::move(err));
  if (slots.size() != size_t(plan.rows))
    return make_error<ArgumentError>(
        formatv("{0} slot(s) for a step of {1} row(s)", slots.size(), plan.rows));
  if (Error err = checkSlots(slots, plan.numSlots))
    return argumentError(std::move(err));
  state->slots.assign(slots.begin(), slots.end());
  HostBuffers seed;
  if (plan.buffers.count(kSsmSeedBuffer))
    seed[kSsmSeedBuffer] = bytesOf(std::vector<int64_t>{state->seed++});
  if (state->gpu)
    return state->gpu->step(hidden, slots, out, stream, seed);
  HostBuffers &host = state->host;
  for (auto &[name, bytes] : seed)
    host[name] = std::move(bytes);
  std::memcpy(host.at(input).data(), hostBytes(hidden), host.at(input).size());
  host.at("slots") = state->slotBytes();
  {
    BorrowedPages borrowed(session.pages, host);
    if (Error err = state->interpreter->run(plan, host))
      return err;
  }
  std::memcpy(hostBytes(out), host.at(output).data(), host.at(output).size());
  return Error::success();
}

namespace {
/// Checks that `name` is a non-weight buffer of `plan` of `bytes` bytes.
Error checkBuffer(const StepPlan &plan, StringRef name, size_t bytes) {
  auto it = plan.buffers.find(name.str());
  if (it == plan.buffers.end() || it->second.role == PlanBuffer::Role::Weight)
    return createStringError("step: no non-weight buffer '" + name + "'");
  if (bytes != it->second.bytes)
    return createStringError(formatv("step: buffer '{0}' has {1} bytes, not {2}", name,
                                     it->second.bytes, bytes));
  return Error::success();
}
} // namespace

Error ModelStep::read(StringRef name, MutableArrayRef<uint8_t> dst) {
  if (Error err = checkBuffer(state->plan, name, dst.size()))
    return err;
  std::vector<uint8_t> bytes;
  if (state->gpu) {
    HostBuffers one{{name.str(), {}}};
    if (Error err = state->gpu->download(one))
      return err;
    bytes = std::move(one.begin()->second);
  } else {
    HostBuffers &pages = state->session->pages;
    auto page = pages.find(name.str());
    bytes = page != pages.end() ? page->second : state->host.at(name.str());
  }
  std::memcpy(dst.data(), bytes.data(), dst.size());
  return Error::success();
}

Error ModelStep::write(StringRef name, ArrayRef<uint8_t> src) {
  if (Error err = checkBuffer(state->plan, name, src.size()))
    return err;
  std::vector<int32_t> slots = state->slots;
  if (name == "slots") {
    slots.assign(reinterpret_cast<const int32_t *>(src.data()),
                 reinterpret_cast<const int32_t *>(src.data()) + state->plan.rows);
    if (Error err = checkSlots(slots, state->plan.numSlots))
      return argumentError(std::move(err));
  }
  if (state->gpu) {
    HostBuffers upload{{"slots", {}}, {name.str(), src.vec()}};
    upload.at("slots").resize(slots.size() * sizeof(int32_t));
    std::memcpy(upload.at("slots").data(), slots.data(), upload.at("slots").size());
    if (Error err = state->gpu->upload(upload))
      return err;
  } else {
    HostBuffers &pages = state->session->pages;
    auto page = pages.find(name.str());
    (page != pages.end() ? page->second : state->host.at(name.str())) = src.vec();
  }
  state->slots = std::move(slots);
  return Error::success();
}

} // namespace tilejit::models
