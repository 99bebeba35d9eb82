// KernelBuilder's ops: each forwards to tilejit's builder (Builder.h) with the
// caller's operands and location, and keeps the value it makes.
#include "BuilderState.h"

namespace tilejit::python {

ValueId KernelBuilder::convert(ValueId v, DType type, const Location &loc) {
  state->active();
  CallScope call(state->values);
  return state->add(call.value(v).to(type, call.loc(loc)));
}

#define TILEJIT_FORWARD(expr)                                                            \
  state->active();                                                                       \
  CallScope call(state->values);                                                         \
  return state->add(expr)

ValueId KernelBuilder::bitcast(const Operand &x, DType type) {
  TILEJIT_FORWARD(tilejit::bitcast(call.operand(x), type));
}
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
  case BinaryOp::Xor:
    return state->add(a ^ b);
  case BinaryOp::Shl:
    return state->add(tilejit::shl(a, b));
  case BinaryOp::Shr:
    return state->add(tilejit::shr(a, b));
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

} // namespace tilejit::python
