// Emitter core: kernel prologue (thread ids), value maps, layout indices and
// the per-op dispatch; SharedMemoryEmitter.cpp holds the shared memory.
#include "Emitter.h"
#include "SharedMemoryEmitter.h"

#include "llvm/Support/MathExtras.h"

#include <cassert>

using namespace mlir;

namespace tilejit::lowering {

Emitter::Emitter(tile::KernelOp kernel, LLVM::LLVMFuncOp func, const EmitterTable &table)
    : b(func.getContext()), ctx(func.getContext()), numWarps(tile::getNumWarps(kernel)),
      kernel_(kernel), func_(func), table_(table) {
  Location loc = kernel.getLoc();
  b.setInsertionPointToStart(func.addEntryBlock(b));
  Value tid = NVVM::ThreadIdXOp::create(b, loc, b.getI32Type());
  lane_ = LLVM::AndOp::create(b, loc, tid, i32(31, loc));
  warp_ = LLVM::LShrOp::create(b, loc, tid, i32(5, loc));
  shared_ = std::make_unique<SharedMemoryEmitter>(*this, kernel);
  // The entry block is the prologue: index math hoisted out of loops lands
  // before its branch into the body, which dominates everything.
  Block *entry = b.getInsertionBlock();
  Block *body = b.createBlock(entry->getParent(), entry->getParent()->end());
  b.setInsertionPointToEnd(entry);
  auto branch = LLVM::BrOp::create(b, loc, ValueRange(), body);
  b.setInsertionPoint(branch);
  prologue_ = b.saveInsertionPoint();
  b.setInsertionPointToStart(body);
}

Emitter::~Emitter() = default;

LogicalResult Emitter::run() {
  for (auto [arg, llvmArg] :
       llvm::zip(kernel_.getBody().front().getArguments(), func_.getArguments()))
    map(arg, {llvmArg});
  if (failed(emitBlock(kernel_.getBody().front())))
    return failure();
  LLVM::ReturnOp::create(b, kernel_.getLoc(), ValueRange());
  return success();
}

/// Ops that may be emitted before deferred work: they read no tile and touch
/// no memory that work reads. tile-pipeline-dots places only a K loop's
/// refill copies (into the slot the previous iteration read) after a dot.
static bool mayPrecedeDeferred(Operation &op) {
  if (isa<tile::AsyncCopyOp, tile::AsyncCommitOp>(op))
    return true;
  auto isTile = [](Type t) { return isa<RankedTensorType>(t); };
  return isa<arith::ArithDialect>(op.getDialect()) &&
         llvm::none_of(op.getOperandTypes(), isTile) &&
         llvm::none_of(op.getResultTypes(), isTile);
}

void Emitter::defer(std::function<void()> work) {
  assert(!deferred_ && "deferred work is run before the next op that could defer");
  deferred_ = std::move(work);
}

void Emitter::runDeferred() {
  if (auto work = std::exchange(deferred_, nullptr))
    work();
}

LogicalResult Emitter::emitBlock(Block &block) {
  for (Operation &op : block.without_terminator()) {
    if (!mayPrecedeDeferred(op))
      runDeferred();
    const EmitFn *emit = table_.lookup(&op);
    if (!emit)
      return op.emitOpError("has no GPU lowering");
    if (failed((*emit)(*this, &op)))
      return failure();
  }
  // The terminator reads the values it yields.
  runDeferred();
  return success();
}

Regs &Emitter::regs(Value v) {
  auto it = regs_.find(v);
  assert(it != regs_.end() && "value used before it was emitted");
  return it->second;
}

Type llvmElementType(MLIRContext *ctx, Type t) {
  Type element = getElementTypeOrSelf(t);
  if (isa<tile::PointerType>(element))
    return LLVM::LLVMPointerType::get(ctx, 1);
  if (isa<Float8E4M3FNType>(element))
    return IntegerType::get(ctx, 8);
  return element;
}

Type Emitter::elementType(Type t) { return llvmElementType(ctx, t); }

Value Emitter::i32(int64_t v, Location loc) {
  // Only layout constants and verified sizes (ViewType bounds them to i32)
  // come here; a wider value would be truncated to a wrong constant.
  assert(llvm::isInt<32>(v) && "i32 constant out of range");
  return LLVM::ConstantOp::create(b, loc, b.getI32Type(), b.getI32IntegerAttr(v));
}

Value Emitter::i64(int64_t v, Location loc) {
  return LLVM::ConstantOp::create(b, loc, b.getI64Type(), b.getI64IntegerAttr(v));
}

Value Emitter::zero(Type t, Location loc) {
  if (isa<LLVM::LLVMPointerType>(t))
    return LLVM::ZeroOp::create(b, loc, t);
  return LLVM::ConstantOp::create(b, loc, t, b.getZeroAttr(t));
}

const Distributed &Emitter::layout(RankedTensorType type) {
  std::unique_ptr<Distributed> &slot = layouts_[type];
  if (!slot) {
    auto d = tile::distribute(type, numWarps);
    assert(succeeded(d) && "tile-assign-layouts guarantees a distributable layout");
    slot = std::make_unique<Distributed>(std::move(*d));
  }
  return *slot;
}

const Distributed &Emitter::partialLayout(RankedTensorType type) {
  std::unique_ptr<Distributed> &slot = partialLayouts_[type];
  if (!slot) {
    auto d = tile::partialSums(type, numWarps);
    assert(succeeded(d) && "only split-K accumulators have partial sums");
    slot = std::make_unique<Distributed>(std::move(*d));
  }
  return *slot;
}

const Regs &Emitter::threadIndex(const Distributed &d) {
  auto it = threadIndex_.find(&d);
  if (it != threadIndex_.end())
    return it->second;
  OpBuilder::InsertionGuard guard(b);
  b.restoreInsertionPoint(prologue_);
  Location loc = kernel_.getLoc();
  Regs index;
  for (size_t dim = 0; dim < d.shape.size(); ++dim) {
    Value sum = i32(0, loc);
    auto addBits = [&](Value id, ArrayRef<Index> bases) {
      for (auto [bit, basis] : llvm::enumerate(bases)) {
        if (basis[dim] == 0)
          continue;
        Value set = LLVM::AndOp::create(
            b, loc, LLVM::LShrOp::create(b, loc, id, i32(bit, loc)), i32(1, loc));
        sum = LLVM::AddOp::create(b, loc, sum,
                                  LLVM::MulOp::create(b, loc, set, i32(basis[dim], loc)));
      }
    };
    addBits(lane_, d.lanes);
    addBits(warp_, d.warps);
    index.push_back(sum);
  }
  prologue_ = b.saveInsertionPoint();
  return threadIndex_.emplace(&d, std::move(index)).first->second;
}

Regs Emitter::elementIndex(const Distributed &d, unsigned r, Location loc) {
  const Regs &thread = threadIndex(d);
  Regs index;
  for (size_t dim = 0; dim < d.shape.size(); ++dim)
    index.push_back(
        d.regs[r][dim] == 0
            ? thread[dim]
            : Value(LLVM::AddOp::create(b, loc, thread[dim], i32(d.regs[r][dim], loc))));
  return index;
}

Value Emitter::isOwner(const Distributed &d, Location loc) {
  Value owner = LLVM::ConstantOp::create(b, loc, b.getI1Type(), b.getBoolAttr(true));
  auto clear = [&](Value id, unsigned mask) {
    if (!mask)
      return;
    Value bits = LLVM::AndOp::create(b, loc, id, i32(mask, loc));
    Value isZero =
        LLVM::ICmpOp::create(b, loc, LLVM::ICmpPredicate::eq, bits, i32(0, loc));
    owner = LLVM::AndOp::create(b, loc, owner, isZero);
  };
  clear(lane_, d.laneReplicationMask());
  clear(warp_, d.warpReplicationMask());
  return owner;
}

void Emitter::ifOwner(const Distributed &d, Location loc,
                      llvm::function_ref<void()> body) {
  Value owner = isOwner(d, loc);
  Block *current = b.getInsertionBlock();
  Block *write = b.createBlock(current->getParent(), std::next(current->getIterator()));
  Block *done = b.createBlock(current->getParent(), std::next(write->getIterator()));
  b.setInsertionPointToEnd(current);
  LLVM::CondBrOp::create(b, loc, owner, write, done);
  b.setInsertionPointToEnd(write);
  body();
  LLVM::BrOp::create(b, loc, done);
  b.setInsertionPointToEnd(done);
}

Value Emitter::linearize(ArrayRef<Value> index, ArrayRef<int64_t> shape, Location loc,
                         int64_t pad) {
  Value linear = i32(0, loc);
  int64_t stride = 1;
  for (int64_t dim = shape.size() - 1; dim >= 0; --dim) {
    Value term = stride == 1
                     ? index[dim]
                     : Value(LLVM::MulOp::create(b, loc, index[dim], i32(stride, loc)));
    linear = LLVM::AddOp::create(b, loc, linear, term);
    stride *= shape[dim] + (dim == int64_t(shape.size()) - 1 ? pad : 0);
  }
  return linear;
}

Value Emitter::shuffle(Value v, Value lane, NVVM::ShflKind kind, Location loc) {
  Type t = v.getType(), i32 = b.getI32Type();
  unsigned bits = t.getIntOrFloatBitWidth();
  auto shfl = [&](Value x) {
    // The clamp: the last lane for idx / bfly / down, the first for up.
    int32_t clamp = kind == NVVM::ShflKind::up ? 0 : 0x1f;
    return NVVM::ShflOp::create(b, loc, x.getType(), this->i32(-1, loc), x, lane,
                                this->i32(clamp, loc), kind, UnitAttr())
        .getResult();
  };
  if (t.isF32() || t.isInteger(32))
    return shfl(v);
  if (bits == 64) {
    Value word = LLVM::BitcastOp::create(b, loc, VectorType::get({2}, i32), v);
    Value lo = shfl(LLVM::ExtractElementOp::create(b, loc, word, this->i32(0, loc)));
    Value hi = shfl(LLVM::ExtractElementOp::create(b, loc, word, this->i32(1, loc)));
    Value vec = LLVM::UndefOp::create(b, loc, VectorType::get({2}, i32));
    vec = LLVM::InsertElementOp::create(b, loc, vec, lo, this->i32(0, loc));
    vec = LLVM::InsertElementOp::create(b, loc, vec, hi, this->i32(1, loc));
    return LLVM::BitcastOp::create(b, loc, t, vec);
  }
  Type narrow = b.getIntegerType(bits);
  Value asInt = isa<FloatType>(t) ? Value(LLVM::BitcastOp::create(b, loc, narrow, v)) : v;
  Value moved = shfl(LLVM::ZExtOp::create(b, loc, i32, asInt));
  Value back = LLVM::TruncOp::create(b, loc, narrow, moved);
  return isa<FloatType>(t) ? Value(LLVM::BitcastOp::create(b, loc, t, back)) : back;
}

Value Emitter::intrinsic(StringRef name, Type result, ValueRange args, Location loc) {
  return LLVM::CallIntrinsicOp::create(b, loc, result, b.getStringAttr(name), args)
      .getResult(0);
}

SmallVector<Value> Emitter::inlineAsm(StringRef text, StringRef constraints,
                                      TypeRange results, ValueRange args,
                                      bool sideEffects, Location loc) {
  Type resultType;
  if (results.size() == 1)
    resultType = results[0];
  else if (results.size() > 1)
    resultType = LLVM::LLVMStructType::getLiteral(ctx, SmallVector<Type>(results));
  auto op = LLVM::InlineAsmOp::create(
      b, loc, resultType, args, text, constraints, sideEffects, /*is_align_stack=*/false,
      LLVM::tailcallkind::TailCallKind::None,
      LLVM::AsmDialectAttr::get(ctx, LLVM::AsmDialect::AD_ATT), ArrayAttr());
  SmallVector<Value> out;
  if (results.size() == 1)
    out.push_back(op.getResult(0));
  else
    for (unsigned i = 0; i < results.size(); ++i)
      out.push_back(LLVM::ExtractValueOp::create(b, loc, op.getResult(0), i));
  return out;
}

Value gep(Emitter &e, Value ptr, Type elementType, Value offset, Location loc) {
  return LLVM::GEPOp::create(e.b, loc, ptr.getType(), elementType, ptr,
                             ValueRange{offset});
}

} // namespace tilejit::lowering
