// KernelBuilder: tilejit's C++ builder driven call by call, values kept by index,
// each op located at the caller's (Python) source line instead of this file's.
#include "CoreInternal.h"

#include <bit>
#include <deque>
#include <source_location>

namespace tilejit::python {

#ifndef __GLIBCXX__
#error "SourceLocations below mirrors libstdc++'s std::source_location"
#endif

namespace {

/// The builder takes every location as a std::source_location, which standard
/// C++ can only make for a C++ line. libstdc++ represents one as a pointer to
/// this record (<source_location>, `__impl`), so a record filled with the
/// Python caller's file and line stands in. Records live for one builder call,
/// which copies the file name into the MLIR context.
struct SourceLocationRecord {
  const char *fileName;
  const char *functionName;
  unsigned line;
  unsigned column;
};
static_assert(sizeof(std::source_location) == sizeof(const SourceLocationRecord *));

/// Turns core Operands and Locations into the builder's, for one call.
class CallScope {
public:
  explicit CallScope(std::vector<Value> &values) : values(values) {}

  SrcLoc loc(const Location &l) {
    files.push_back(l.file);
    records.push_back({files.back().c_str(), "", l.line, l.column});
    return std::bit_cast<SrcLoc>(&records.back());
  }
  Value value(ValueId id) {
    if (id < 0 || size_t(id) >= values.size())
      throw Error(ErrorKind::Argument,
                  "value #" + std::to_string(id) + " does not exist");
    return values[id];
  }
  tilejit::Operand operand(const Operand &x) {
    SrcLoc l = loc(x.loc);
    switch (x.kind) {
    case Operand::Kind::Value:
      return tilejit::Operand(value(x.value), l);
    case Operand::Kind::Int:
      return tilejit::Operand(long(x.integer), l);
    case Operand::Kind::Float:
      return tilejit::Operand(x.number, l);
    }
    return tilejit::Operand(0, l);
  }
  std::optional<tilejit::Operand> operand(const std::optional<Operand> &x) {
    if (!x)
      return std::nullopt;
    return operand(*x);
  }
  std::vector<tilejit::Operand> operands(const std::vector<Operand> &xs) {
    std::vector<tilejit::Operand> out;
    for (const Operand &x : xs)
      out.push_back(operand(x));
    return out;
  }
  Dim dim(const ViewDim &d) {
    if (d.fixed)
      return Dim(*d.fixed);
    return Dim(value(d.value));
  }

private:
  std::vector<Value> &values;
  std::deque<std::string> files;
  std::deque<SourceLocationRecord> records;
};

thread_local KernelBuilder *currentBuilder = nullptr;

} // namespace

struct KernelBuilder::State {
  std::string name;
  std::unique_ptr<mlir::MLIRContext> ctx;
  std::unique_ptr<Kernel> kernel;
  std::vector<Value> values;

  /// The builder calls act on the thread's current tilejit::Kernel: refuse a
  /// finished kernel or another thread.
  Kernel &active() {
    if (!kernel)
      throw Error(ErrorKind::Build,
                  "kernel '" + name +
                      "' is finished: its values cannot be used any more");
    if (Kernel::current() != kernel.get())
      throw Error(ErrorKind::Build,
                  "kernel '" + name + "' is being built on another thread");
    return *kernel;
  }
  /// for_range and if_then bodies being built: finish() inside one would
  /// destroy the kernel under the builder frames that are building it.
  int openBodies = 0;

  ValueId add(Value v) {
    values.push_back(v);
    return ValueId(values.size() - 1);
  }
  /// A value of this kernel. Its IR lives in the kernel's context, which a
  /// finished kernel has handed to its module (freed with it) or, after a
  /// failed finish(), holds erased: either way it is refused, never read.
  const Value &at(ValueId id) const {
    if (!kernel)
      throw Error(ErrorKind::Build,
                  "kernel '" + name +
                      "' is finished: its values cannot be used any more");
    if (id < 0 || size_t(id) >= values.size())
      throw Error(ErrorKind::Argument,
                  "value #" + std::to_string(id) + " does not exist");
    return values[id];
  }
};

namespace {
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

ValueId KernelBuilder::convert(ValueId v, DType type, const Location &loc) {
  state->active();
  CallScope call(state->values);
  return state->add(call.value(v).to(type, call.loc(loc)));
}

#define TILEJIT_FORWARD(expr)                                                            \
  state->active();                                                                       \
  CallScope call(state->values);                                                         \
  return state->add(expr)

ValueId KernelBuilder::programId(int axis, const Location &loc) {
  TILEJIT_FORWARD(tilejit::programId(axis, call.loc(loc)));
}
ValueId KernelBuilder::numPrograms(int axis, const Location &loc) {
  TILEJIT_FORWARD(tilejit::numPrograms(axis, call.loc(loc)));
}
ValueId KernelBuilder::arange(int start, int end, const Location &loc) {
  TILEJIT_FORWARD(tilejit::arange(start, end, call.loc(loc)));
}
ValueId KernelBuilder::constant(double value, DType type, const Location &loc) {
  TILEJIT_FORWARD(tilejit::constant(value, type, call.loc(loc)));
}
ValueId KernelBuilder::full(const std::vector<int64_t> &shape, const Operand &value,
                            DType type) {
  TILEJIT_FORWARD(tilejit::full(shape, call.operand(value), type));
}
ValueId KernelBuilder::zeros(const std::vector<int64_t> &shape, DType type,
                             const Location &loc) {
  TILEJIT_FORWARD(tilejit::zeros(shape, type, call.loc(loc)));
}
ValueId KernelBuilder::broadcastTo(const Operand &x, const std::vector<int64_t> &shape) {
  TILEJIT_FORWARD(tilejit::broadcastTo(call.operand(x), shape));
}
ValueId KernelBuilder::expandDims(const Operand &x, int axis) {
  TILEJIT_FORWARD(tilejit::expandDims(call.operand(x), axis));
}
ValueId KernelBuilder::reshape(const Operand &x, const std::vector<int64_t> &shape) {
  TILEJIT_FORWARD(tilejit::reshape(call.operand(x), shape));
}
ValueId KernelBuilder::transpose(const Operand &x, const std::vector<int32_t> &order) {
  TILEJIT_FORWARD(tilejit::transpose(call.operand(x), order));
}

ValueId KernelBuilder::unary(UnaryOp op, const Operand &x) {
  state->active();
  CallScope call(state->values);
  tilejit::Operand a = call.operand(x);
  switch (op) {
  case UnaryOp::Neg:
    return state->add(-a);
  case UnaryOp::Exp:
    return state->add(tilejit::exp(a));
  case UnaryOp::Log:
    return state->add(tilejit::log(a));
  case UnaryOp::Log1p:
    return state->add(tilejit::log1p(a));
  case UnaryOp::Sqrt:
    return state->add(tilejit::sqrt(a));
  case UnaryOp::Rsqrt:
    return state->add(tilejit::rsqrt(a));
  case UnaryOp::Abs:
    return state->add(tilejit::abs(a));
  case UnaryOp::Silu:
    return state->add(tilejit::silu(a));
  case UnaryOp::Softplus:
    return state->add(tilejit::softplus(a));
  }
  throw Error(ErrorKind::Argument, "unknown unary op");
}

ValueId KernelBuilder::binary(BinaryOp op, const Operand &x, const Operand &y) {
  state->active();
  CallScope call(state->values);
  tilejit::Operand a = call.operand(x), b = call.operand(y);
  switch (op) {
  case BinaryOp::Add:
    return state->add(a + b);
  case BinaryOp::Sub:
    return state->add(a - b);
  case BinaryOp::Mul:
    return state->add(a * b);
  case BinaryOp::Div:
    return state->add(a / b);
  case BinaryOp::Rem:
    return state->add(a % b);
  case BinaryOp::Lt:
    return state->add(a < b);
  case BinaryOp::Le:
    return state->add(a <= b);
  case BinaryOp::Gt:
    return state->add(a > b);
  case BinaryOp::Ge:
    return state->add(a >= b);
  case BinaryOp::Eq:
    return state->add(a == b);
  case BinaryOp::Ne:
    return state->add(a != b);
  case BinaryOp::And:
    return state->add(a & b);
  case BinaryOp::Or:
    return state->add(a | b);
  case BinaryOp::Maximum:
    return state->add(tilejit::maximum(a, b));
  case BinaryOp::Minimum:
    return state->add(tilejit::minimum(a, b));
  }
  throw Error(ErrorKind::Argument, "unknown binary op");
}

ValueId KernelBuilder::where(const Operand &cond, const Operand &a, const Operand &b) {
  TILEJIT_FORWARD(tilejit::where(call.operand(cond), call.operand(a), call.operand(b)));
}

ValueId KernelBuilder::fma(const Operand &a, const Operand &b, const Operand &c) {
  TILEJIT_FORWARD(tilejit::fma(call.operand(a), call.operand(b), call.operand(c)));
}

ValueId KernelBuilder::reduce(ReduceOp op, const Operand &x, int axis) {
  state->active();
  CallScope call(state->values);
  tilejit::Operand a = call.operand(x);
  switch (op) {
  case ReduceOp::Sum:
    return state->add(tilejit::sum(a, axis));
  case ReduceOp::Max:
    return state->add(tilejit::max(a, axis));
  case ReduceOp::Min:
    return state->add(tilejit::min(a, axis));
  case ReduceOp::Cumsum:
    return state->add(tilejit::cumsum(a, axis));
  }
  throw Error(ErrorKind::Argument, "unknown reduction");
}

ValueId KernelBuilder::dot(const Operand &a, const Operand &b, const Operand &acc) {
  TILEJIT_FORWARD(tilejit::dot(call.operand(a), call.operand(b), call.operand(acc)));
}

ValueId KernelBuilder::makeView(const Operand &ptr, const std::vector<ViewDim> &sizes,
                                const std::vector<ViewDim> &strides) {
  state->active();
  CallScope call(state->values);
  std::vector<Dim> s, t;
  for (const ViewDim &d : sizes)
    s.push_back(call.dim(d));
  for (const ViewDim &d : strides)
    t.push_back(call.dim(d));
  return state->add(tilejit::makeView(call.operand(ptr), s, t).value);
}

ValueId KernelBuilder::loadView(ValueId view, const std::vector<Operand> &offsets,
                                const std::vector<int64_t> &shape,
                                std::optional<double> padding, const Location &loc) {
  TILEJIT_FORWARD(tilejit::load(View(call.value(view)), call.operands(offsets), shape,
                                padding, call.loc(loc)));
}

void KernelBuilder::storeView(ValueId view, const std::vector<Operand> &offsets,
                              const Operand &value, const Location &loc) {
  state->active();
  CallScope call(state->values);
  tilejit::store(View(call.value(view)), call.operands(offsets), call.operand(value),
                 call.loc(loc));
}

ValueId KernelBuilder::load(const Operand &ptrs, const std::optional<Operand> &mask,
                            const std::optional<Operand> &other) {
  TILEJIT_FORWARD(
      tilejit::load(call.operand(ptrs), call.operand(mask), call.operand(other)));
}

void KernelBuilder::store(const Operand &ptrs, const Operand &value,
                          const std::optional<Operand> &mask) {
  state->active();
  CallScope call(state->values);
  tilejit::store(call.operand(ptrs), call.operand(value), call.operand(mask));
}

#undef TILEJIT_FORWARD

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

void KernelBuilder::waitForPredecessors(const Location &loc) {
  state->active();
  CallScope call(state->values);
  tilejit::waitForPredecessors(call.loc(loc));
}

void KernelBuilder::launchDependents(const Location &loc) {
  state->active();
  CallScope call(state->values);
  tilejit::launchDependents(call.loc(loc));
}

void KernelBuilder::prefetchL2(const Operand &ptr, const Operand &bytes) {
  state->active();
  CallScope call(state->values);
  tilejit::prefetchL2(call.operand(ptr), call.operand(bytes));
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
