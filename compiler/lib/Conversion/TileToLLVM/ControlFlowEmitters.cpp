// Control-flow family: scf.for and scf.if become LLVM blocks whose arguments
// carry every register of the loop-carried or yielded tiles. A loop ends as
// scf.for's exact count says, even where iv + step would wrap.
#include "Emitter.h"

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Matchers.h"
#include "llvm/Support/CheckedArithmetic.h"

using namespace mlir;

namespace tilejit::lowering {
namespace {

/// All registers of `values`, in order, and how many each value has.
Regs flatten(Emitter &e, ValueRange values, SmallVectorImpl<unsigned> *counts = nullptr) {
  Regs flat;
  for (Value v : values) {
    Regs &r = e.regs(v);
    flat.append(r.begin(), r.end());
    if (counts)
      counts->push_back(r.size());
  }
  return flat;
}

/// Maps `values` to consecutive slices of `flat`.
void unflatten(Emitter &e, ValueRange values, ArrayRef<unsigned> counts,
               ValueRange flat) {
  unsigned at = 0;
  for (auto [v, n] : llvm::zip(values, counts)) {
    e.map(v, Regs(flat.begin() + at, flat.begin() + at + n));
    at += n;
  }
}

Block *newBlockAfter(Emitter &e, Block *after, TypeRange args, Location loc) {
  SmallVector<Location> locs(args.size(), loc);
  return e.b.createBlock(after->getParent(), std::next(after->getIterator()), args, locs);
}

/// Whether `iv + step` can wrap for some iv < ub: unless the step is 1, or
/// both are constants with ub - 1 + step within the type.
bool stepMayWrap(scf::ForOp loop) {
  APInt step, ub;
  if (!matchPattern(loop.getStep(), m_ConstantInt(&step)))
    return true;
  if (step.isOne())
    return false;
  if (!matchPattern(loop.getUpperBound(), m_ConstantInt(&ub)))
    return true;
  std::optional<int64_t> last = llvm::checkedSub(ub.getSExtValue(), int64_t(1));
  if (last)
    last = llvm::checkedAdd(*last, step.getSExtValue());
  return !last || *last > APInt::getSignedMaxValue(ub.getBitWidth()).getSExtValue();
}

LogicalResult emitFor(Emitter &e, Operation *op) {
  auto loop = cast<scf::ForOp>(op);
  Location loc = op->getLoc();
  OpBuilder &b = e.b;
  Value lb = e.regs(loop.getLowerBound())[0], ub = e.regs(loop.getUpperBound())[0];
  Value step = e.regs(loop.getStep())[0];
  SmallVector<unsigned> counts;
  Regs init = flatten(e, loop.getInitArgs(), &counts);
  SmallVector<Type> types{lb.getType()};
  for (Value v : init)
    types.push_back(v.getType());

  Block *entry = b.getInsertionBlock();
  Block *header = newBlockAfter(e, entry, types, loc);
  Block *body = newBlockAfter(e, header, {}, loc);
  Block *exit = newBlockAfter(e, body, {}, loc);
  b.setInsertionPointToEnd(entry);
  Regs initArgs{lb};
  initArgs.append(init.begin(), init.end());
  LLVM::BrOp::create(b, loc, initArgs, header);

  b.setInsertionPointToEnd(header);
  Value iv = header->getArgument(0);
  Value more = LLVM::ICmpOp::create(b, loc, LLVM::ICmpPredicate::slt, iv, ub);
  LLVM::CondBrOp::create(b, loc, more, body, exit);

  b.setInsertionPointToEnd(body);
  e.map(loop.getInductionVar(), {iv});
  unflatten(e, loop.getRegionIterArgs(), counts, header->getArguments().drop_front());
  if (failed(e.emitBlock(*loop.getBody())))
    return failure();
  auto yield = cast<scf::YieldOp>(loop.getBody()->getTerminator());
  Value stepped = LLVM::AddOp::create(b, loc, iv, step);
  if (stepMayWrap(loop)) {
    // Past the type's maximum, iv + step wraps below ub and the loop would
    // never end (the interpreter counts exactly and stops): a wrapped step
    // ends it.
    Value wrapped = LLVM::ICmpOp::create(b, loc, LLVM::ICmpPredicate::slt, stepped, iv);
    stepped = LLVM::SelectOp::create(b, loc, wrapped, ub, stepped);
  }
  Regs next{stepped};
  Regs carried = flatten(e, yield.getOperands());
  next.append(carried.begin(), carried.end());
  LLVM::BrOp::create(b, loc, next, header);

  b.setInsertionPointToEnd(exit);
  unflatten(e, loop.getResults(), counts, header->getArguments().drop_front());
  return success();
}

LogicalResult emitIf(Emitter &e, Operation *op) {
  auto branch = cast<scf::IfOp>(op);
  Location loc = op->getLoc();
  OpBuilder &b = e.b;
  SmallVector<unsigned> counts;
  SmallVector<Type> types;
  // Result registers: the layout of each result decides how many.
  for (Value r : branch.getResults()) {
    unsigned n = 1;
    if (auto t = dyn_cast<RankedTensorType>(r.getType()))
      n = e.layout(t).numRegs();
    counts.push_back(n);
    types.append(n, e.elementType(r.getType()));
  }
  Block *entry = b.getInsertionBlock();
  Block *thenBlock = newBlockAfter(e, entry, {}, loc);
  Block *elseBlock = newBlockAfter(e, thenBlock, {}, loc);
  Block *merge = newBlockAfter(e, elseBlock, types, loc);
  b.setInsertionPointToEnd(entry);
  LLVM::CondBrOp::create(b, loc, e.regs(branch.getCondition())[0], thenBlock, elseBlock);

  auto emitArm = [&](Block *target, Block *arm) -> LogicalResult {
    b.setInsertionPointToEnd(target);
    if (arm) {
      if (failed(e.emitBlock(*arm)))
        return failure();
      LLVM::BrOp::create(b, loc, flatten(e, arm->getTerminator()->getOperands()), merge);
    } else {
      LLVM::BrOp::create(b, loc, ValueRange(), merge);
    }
    return success();
  };
  if (failed(emitArm(thenBlock, branch.thenBlock())) ||
      failed(emitArm(elseBlock, branch.elseBlock())))
    return failure();
  b.setInsertionPointToEnd(merge);
  unflatten(e, branch.getResults(), counts, merge->getArguments());
  return success();
}

} // namespace

void populateControlFlowEmitters(EmitterTable &table) {
  table.add<scf::ForOp>(emitFor);
  table.add<scf::IfOp>(emitIf);
}

} // namespace tilejit::lowering
