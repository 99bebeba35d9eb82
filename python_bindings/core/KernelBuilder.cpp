// KernelBuilder: tilejit's C++ builder driven call by call, values kept by index,
// each op located at the caller's (Python) source line instead of this file's;
// the kernel's life, its parameters, its values' queries and its control flow.
// The ops are in KernelBuilderOps.cpp.
#include "BuilderState.h"

namespace tilejit::python {

namespace {

thread_local KernelBuilder *currentBuilder = nullptr;

/// Counts a body being built for the length of a for_range or if_then call.
struct OpenBody {
  explicit OpenBody(int &count) : count(count) { ++count; }
  ~OpenBody() { --count; }
  int &count;
};
} // namespace

KernelBuilder::KernelBuilder(const std::string &name, const Location &loc)
    : state(std::make_unique<State>()) {
  if (currentBuilder)
    throw Error(ErrorKind::Build, "kernel '" + name + "' started while kernel '" +
                                      currentBuilder->name() +
                                      "' is still being built; finish() that one first");
  state->name = name;
  state->ctx = makeCompilerContext();
  CallScope call(state->values);
  state->kernel = std::make_unique<Kernel>(*state->ctx, name, call.loc(loc));
  currentBuilder = this;
}

KernelBuilder::~KernelBuilder() {
  state->kernel.reset();
  if (currentBuilder == this)
    currentBuilder = nullptr;
}

KernelBuilder *KernelBuilder::current() { return currentBuilder; }
const std::string &KernelBuilder::name() const { return state->name; }
bool KernelBuilder::finished() const { return !state->kernel; }

ValueId KernelBuilder::ptrParam(const std::string &name, DType pointee,
                                const Location &loc) {
  CallScope call(state->values);
  return state->add(state->active().ptrParam(name, pointee, call.loc(loc)));
}

ValueId KernelBuilder::scalarParam(const std::string &name, DType type,
                                   const Location &loc) {
  CallScope call(state->values);
  return state->add(state->active().scalarParam(name, type, call.loc(loc)));
}

void KernelBuilder::setConfig(const KernelConfig &c) {
  state->active().setConfig(Config{c.tile, c.warps, c.stages, c.vector, c.splitK});
}

void KernelBuilder::fail(const Location &loc, const std::string &message) {
  CallScope call(state->values);
  state->active().fail(call.loc(loc), message);
}

bool KernelBuilder::valid(ValueId v) const { return state->at(v).valid(); }
bool KernelBuilder::isTile(ValueId v) const { return valid(v) && state->at(v).isTile(); }
bool KernelBuilder::isPointer(ValueId v) const {
  return valid(v) && state->at(v).isPointer();
}
bool KernelBuilder::isView(ValueId v) const { return valid(v) && state->at(v).isView(); }
std::vector<int64_t> KernelBuilder::shape(ValueId v) const {
  return valid(v) ? state->at(v).shape() : std::vector<int64_t>{};
}

DType KernelBuilder::dtype(ValueId v) const {
  if (!valid(v))
    throw Error(ErrorKind::Build, "an invalid value (an earlier mistake) has no dtype");
  return state->at(v).dtype();
}

std::string KernelBuilder::describe(ValueId v) const {
  if (finished())
    return "<of finished kernel '" + state->name + "'>";
  if (!valid(v))
    return "<invalid>";
  return tile::describeType(state->at(v).raw().getType());
}

std::vector<ValueId> KernelBuilder::forRange(const Operand &lo, const Operand &hi,
                                             const Operand &step,
                                             const std::vector<ValueId> &init,
                                             const LoopBody &body) {
  state->active();
  CallScope call(state->values);
  std::vector<Value> inits;
  for (ValueId id : init)
    inits.push_back(call.value(id));
  OpenBody open(state->openBodies);
  auto wrapped = [&](Value iv, std::vector<Value> carried) {
    std::vector<ValueId> carriedIds;
    for (const Value &v : carried)
      carriedIds.push_back(state->add(v));
    // Nothing may throw through the builder's frames (built without
    // exceptions): an id that names no value becomes an invalid Value, which
    // the builder reports as a changed loop-carried type.
    std::vector<Value> next;
    for (ValueId id : body(state->add(iv), carriedIds))
      next.push_back(id >= 0 && size_t(id) < state->values.size() ? state->values[id]
                                                                  : Value());
    return next;
  };
  std::vector<ValueId> results;
  for (const Value &v : tilejit::forRange(call.operand(lo), call.operand(hi),
                                          call.operand(step), inits, wrapped))
    results.push_back(state->add(v));
  return results;
}

void KernelBuilder::ifThen(const Operand &cond, const std::function<void()> &body) {
  state->active();
  CallScope call(state->values);
  OpenBody open(state->openBodies);
  tilejit::ifThen(call.operand(cond), [&] { body(); });
}

void KernelBuilder::markInvariant(ValueId param, const Location &loc) {
  Kernel &kernel = state->active();
  CallScope call(state->values);
  kernel.markInvariant(call.value(param), call.loc(loc));
}

std::shared_ptr<KernelModule> KernelBuilder::finish() {
  Kernel &kernel = state->active();
  if (state->openBodies)
    throw Error(ErrorKind::Build,
                "kernel '" + state->name +
                    "': finish() called inside a for_range or if_then "
                    "body; finish the kernel after its loops and branches");
  auto module = kernel.finish();
  // The kernel stops being the thread's current one whatever the outcome.
  state->kernel.reset();
  currentBuilder = nullptr;
  if (!module)
    throwError(ErrorKind::Build, module.takeError());
  return makeKernelModule(std::move(state->ctx), std::move(*module));
}

} // namespace tilejit::python
