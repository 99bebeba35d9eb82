// The interpreter's driver: classifies types, translates a kernel into an
// instruction list once, checks the launch arguments against the signature
// and runs the list for every program id of the grid.
#include "InterpreterImpl.h"

#include "tilejit/Dialect/Tile/IR/ElementTypes.h"

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/APFloat.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;

namespace tilejit::interp {
namespace detail {

/// The element type of a scalar type: a tile element type, or index (i64).
static std::optional<DType> classifyScalar(Type type) {
  return type.isIndex() ? DType::I64 : tile::dtypeOf(type);
}

Expected<ValueType> classifyType(Type type, Operation *op) {
  ValueType result;
  Type element = type;
  if (auto tensor = dyn_cast<RankedTensorType>(type)) {
    if (!tensor.hasStaticShape())
      return opError(op,
                     "needs statically shaped tiles, got " + tile::describeType(type));
    result.shape.assign(tensor.getShape().begin(), tensor.getShape().end());
    // Slots hold whole tiles: a tile past what any kernel builds is refused
    // before its storage is allocated.
    constexpr int64_t maxElements = int64_t(1) << 20;
    int64_t elements = 1;
    for (int64_t d : tensor.getShape())
      if (__builtin_mul_overflow(elements, d, &elements) || elements > maxElements)
        return opError(op, "uses " + tile::describeType(type) + ", more than the " +
                               std::to_string(maxElements) +
                               " elements the interpreter holds in one tile");
    result.numElements = elements;
    element = tensor.getElementType();
  }
  if (auto ptr = dyn_cast<tile::PointerType>(element)) {
    result.form = ValueForm::Ptr;
    element = ptr.getPointeeType();
  } else if (auto view = dyn_cast<tile::ViewType>(element)) {
    result.form = ValueForm::View;
    element = result.isTile() ? Type() : view.getElementType(); // no tile of views
  }
  std::optional<DType> scalar = element ? classifyScalar(element) : std::nullopt;
  if (!scalar)
    return opError(op, "uses type " + tile::describeType(type) +
                           ", which the interpreter does not support");
  result.element = *scalar;
  return result;
}

ValueType elementOf(const ValueType &type) {
  ValueType element;
  element.element = type.element;
  return element;
}

OpSite siteOf(Operation *op) {
  OpSite site;
  llvm::raw_string_ostream os(site.text);
  os << "'" << op->getName() << "' at ";
  op->getLoc().print(os);
  return site;
}

llvm::Error opError(Operation *op, const llvm::Twine &message) {
  return siteError(siteOf(op), message);
}

llvm::Error siteError(const OpSite &site, const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 site.text + ": " + message.str());
}

Expected<unsigned> Compiler::define(Value value, Operation *owner) {
  Expected<ValueType> type = classifyType(value.getType(), owner);
  if (!type)
    return type.takeError();
  unsigned slot = slotCount++;
  types[value] = std::move(*type);
  slots[value] = slot;
  return slot;
}

llvm::Error Compiler::alias(Value value, unsigned existing, Operation *owner) {
  Expected<ValueType> type = classifyType(value.getType(), owner);
  if (!type)
    return type.takeError();
  types[value] = std::move(*type);
  slots[value] = existing;
  return llvm::Error::success();
}

Expected<InstrList> Compiler::compileBody(Block &block) {
  InstrList list;
  for (Operation &op : block.without_terminator()) {
    const OpCompiler *translate = table.lookup(&op);
    if (!translate)
      return opError(&op, "is not supported by the interpreter");
    Expected<Instr> instr = (*translate)(&op, *this);
    if (!instr)
      return instr.takeError();
    if (*instr)
      list.push_back(std::move(*instr));
  }
  return list;
}

static OpTable buildOpTable() {
  OpTable table;
  registerArithFloatOps(table);
  registerArithIntOps(table);
  registerCastOps(table);
  registerControlFlowOps(table);
  registerMemoryOps(table);
  registerReduceOps(table);
  registerShapeOps(table);
  return table;
}

} // namespace detail

using namespace detail;

/// A kernel parameter as the argument checks need it, detached from the IR.
struct Param {
  ValueType type;
  std::string typeName;
  const llvm::fltSemantics *semantics = nullptr; // float parameters
};

class CompiledKernelImpl {
public:
  std::string name;
  std::vector<Param> params;
  std::vector<unsigned> paramSlots;
  unsigned numSlots = 0;
  InstrList body;

  llvm::Error bindArgument(unsigned index, const Arg &arg, Frame &frame,
                           Memory &memory) const;
};

static llvm::Error kernelError(const std::string &name, const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 "kernel @" + name + ": " + message.str());
}

llvm::Error CompiledKernelImpl::bindArgument(unsigned index, const Arg &arg, Frame &frame,
                                             Memory &memory) const {
  const ValueType &param = params[index].type;
  Slot &slot = frame.slots[paramSlots[index]];
  std::string what =
      "argument " + std::to_string(index) + " (" + params[index].typeName + ")";
  static const char *kindNames[] = {"a buffer", "an integer scalar", "a float scalar"};
  const char *given = kindNames[int(arg.getKind())];
  if (param.form == ValueForm::Ptr) {
    if (arg.getKind() != Arg::Kind::Buffer)
      return kernelError(name, what + " needs a buffer, got " + given);
    memory.addBuffer(arg, index);
    slot.i.assign(1, int64_t(reinterpret_cast<uintptr_t>(arg.getData())));
    return llvm::Error::success();
  }
  if (param.form == ValueForm::Elements && !param.isFloat()) {
    if (arg.getKind() != Arg::Kind::Int)
      return kernelError(name, what + " needs an integer scalar, got " + given);
    int64_t value = arg.getInt();
    unsigned width = param.bitWidth();
    // Integer parameters are signed, as the GPU launch path reads them: an i32
    // takes [-2^31, 2^31 - 1], so 2^32 - 1 is refused, never read as -1. An i1
    // takes 0 and 1.
    const int64_t lo = width == 1   ? 0
                       : width < 64 ? -(int64_t(1) << (width - 1))
                                    : INT64_MIN;
    const int64_t hi = width == 1   ? 1
                       : width < 64 ? (int64_t(1) << (width - 1)) - 1
                                    : INT64_MAX;
    if (value < lo || value > hi)
      return kernelError(name, what + " = " + std::to_string(value) + " is outside [" +
                                   std::to_string(lo) + ", " + std::to_string(hi) + "]");
    slot.i.assign(1, signExtend(uint64_t(value), width));
    return llvm::Error::success();
  }
  if (param.isFloat() && param.element != DType::F8E4M3) {
    if (arg.getKind() != Arg::Kind::Float)
      return kernelError(name, what + " needs a float scalar, got " + given);
    llvm::APFloat value(arg.getFloat());
    bool lost;
    value.convert(*params[index].semantics, llvm::APFloat::rmNearestTiesToEven, &lost);
    value.convert(llvm::APFloat::IEEEsingle(), llvm::APFloat::rmNearestTiesToEven, &lost);
    slot.f.assign(1, value.convertToFloat());
    return llvm::Error::success();
  }
  return kernelError(name, what + " cannot be passed to the interpreter");
}

/// The grids a GPU launch takes (CUDA's limits per axis), and at most
/// kMaxPrograms in all: the interpreter runs programs one after another, so a
/// grid the GPU takes in stride would run here for days.
static llvm::Error checkGrid(const std::string &name, const Grid &grid) {
  static constexpr int64_t kMaxExtent[3] = {INT32_MAX, 65535, 65535};
  auto shown = [&] {
    return "(" + std::to_string(grid[0]) + ", " + std::to_string(grid[1]) + ", " +
           std::to_string(grid[2]) + ")";
  };
  int64_t programs = 1;
  for (int axis = 0; axis < 3; ++axis) {
    if (grid[axis] < 0 || grid[axis] > kMaxExtent[axis])
      return kernelError(name, "grid " + shown() + ": axis " + "xyz"[axis] +
                                   " must be in [0, " + std::to_string(kMaxExtent[axis]) +
                                   "] (CUDA's limit)");
    programs = grid[axis] == 0                        ? 0
               : programs > kMaxPrograms / grid[axis] ? kMaxPrograms + 1
                                                      : programs * grid[axis];
  }
  if (programs > kMaxPrograms)
    return kernelError(name, "grid " + shown() + " has more than " +
                                 std::to_string(kMaxPrograms) +
                                 " programs, the most the interpreter runs (one after "
                                 "another) in one launch");
  return llvm::Error::success();
}

CompiledKernel::CompiledKernel(std::unique_ptr<CompiledKernelImpl> impl)
    : impl(std::move(impl)) {}
CompiledKernel::CompiledKernel(CompiledKernel &&) noexcept = default;
CompiledKernel &CompiledKernel::operator=(CompiledKernel &&) noexcept = default;
CompiledKernel::~CompiledKernel() = default;

/// Verifies `kernel`, returning its diagnostics as an error: the translation
/// relies on the verifiers' guarantees (operand shapes, attributes).
static llvm::Error verifyKernel(tile::KernelOp kernel) {
  std::string diagnostics;
  ScopedDiagnosticHandler handler(kernel->getContext(), [&](Diagnostic &diag) {
    llvm::raw_string_ostream os(diagnostics);
    os << "\n  " << diag.getLocation() << ": " << diag;
    return success();
  });
  if (succeeded(verify(kernel)))
    return llvm::Error::success();
  return kernelError(kernel.getSymName().str(), "does not verify:" + diagnostics);
}

Expected<CompiledKernel> CompiledKernel::compile(tile::KernelOp kernel) {
  static const OpTable table = buildOpTable();
  if (llvm::Error err = verifyKernel(kernel))
    return std::move(err);
  auto impl = std::make_unique<CompiledKernelImpl>();
  impl->name = kernel.getSymName().str();
  Block &entry = kernel.getBody().front();
  Compiler compiler(table);
  for (BlockArgument arg : entry.getArguments()) {
    Expected<unsigned> slot = compiler.define(arg, kernel);
    if (!slot)
      return slot.takeError();
    impl->paramSlots.push_back(*slot);
    Param param{compiler.typeOf(arg), tile::describeType(arg.getType())};
    if (auto floatType = dyn_cast<FloatType>(arg.getType()))
      param.semantics = &floatType.getFloatSemantics();
    impl->params.push_back(std::move(param));
  }
  Expected<InstrList> body = compiler.compileBody(entry);
  if (!body)
    return body.takeError();
  impl->body = std::move(*body);
  impl->numSlots = compiler.numSlots();
  return CompiledKernel(std::move(impl));
}

llvm::Error CompiledKernel::run(const Grid &grid, llvm::ArrayRef<Arg> args) const {
  const CompiledKernelImpl &k = *impl;
  if (args.size() != k.params.size())
    return kernelError(k.name, "takes " + std::to_string(k.params.size()) +
                                   " argument(s), got " + std::to_string(args.size()));
  if (llvm::Error err = checkGrid(k.name, grid))
    return err;
  Memory memory;
  Frame frame;
  frame.slots.resize(k.numSlots);
  frame.grid = grid;
  frame.memory = &memory;
  for (auto [index, arg] : llvm::enumerate(args))
    if (llvm::Error err = k.bindArgument(index, arg, frame, memory))
      return err;
  for (int64_t z = 0; z < grid[2]; ++z)
    for (int64_t y = 0; y < grid[1]; ++y)
      for (int64_t x = 0; x < grid[0]; ++x) {
        frame.programId = {x, y, z};
        if (llvm::Error err = runList(k.body, frame))
          return kernelError(k.name, "program (" + std::to_string(x) + ", " +
                                         std::to_string(y) + ", " + std::to_string(z) +
                                         "): " + llvm::toString(std::move(err)));
      }
  return llvm::Error::success();
}

llvm::Error run(tile::KernelOp kernel, const Grid &grid, llvm::ArrayRef<Arg> args) {
  Expected<CompiledKernel> compiled = CompiledKernel::compile(kernel);
  if (!compiled)
    return compiled.takeError();
  return compiled->run(grid, args);
}

} // namespace tilejit::interp
