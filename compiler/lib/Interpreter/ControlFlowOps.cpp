// Structured control flow: scf.for (with iter_args) and scf.if (with
// results). Loop results share the slots of the iteration arguments, so a
// loop only copies what scf.yield passes back each iteration.
#include "InterpreterImpl.h"

#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;

namespace tilejit::interp::detail {
namespace {

/// Copies `from[i]` into `to[i]`. When a source is also a destination of a
/// different index (a yield that permutes the iteration arguments), all
/// sources are read before any destination is written.
struct SlotCopies {
  std::vector<unsigned> from, to;
  bool staged = false;

  SlotCopies(std::vector<unsigned> fromSlots, std::vector<unsigned> toSlots)
      : from(std::move(fromSlots)), to(std::move(toSlots)) {
    for (size_t i = 0; i < from.size(); ++i)
      for (size_t j = 0; j < to.size(); ++j)
        staged |= i != j && from[i] == to[j];
  }

  void apply(Frame &frame) const {
    if (!staged) {
      for (size_t i = 0; i < from.size(); ++i)
        if (from[i] != to[i])
          frame.slots[to[i]] = frame.slots[from[i]];
      return;
    }
    std::vector<Slot> values;
    for (unsigned s : from)
      values.push_back(frame.slots[s]);
    for (size_t i = 0; i < to.size(); ++i)
      frame.slots[to[i]] = std::move(values[i]);
  }
};

std::vector<unsigned> slotsOf(const Compiler &c, ValueRange values) {
  std::vector<unsigned> slots;
  for (Value v : values)
    slots.push_back(c.slotOf(v));
  return slots;
}

Expected<Instr> compileFor(Operation *op, Compiler &c) {
  auto loop = cast<scf::ForOp>(op);
  unsigned lower = c.slotOf(loop.getLowerBound()), upper = c.slotOf(loop.getUpperBound()),
           step = c.slotOf(loop.getStep());
  Expected<unsigned> iv = c.define(loop.getInductionVar(), op);
  if (!iv)
    return iv.takeError();
  std::vector<unsigned> args;
  for (auto [arg, result] : llvm::zip(loop.getRegionIterArgs(), loop.getResults())) {
    Expected<unsigned> slot = c.define(arg, op);
    if (!slot)
      return slot.takeError();
    if (llvm::Error err = c.alias(result, *slot, op))
      return std::move(err);
    args.push_back(*slot);
  }
  Expected<InstrList> body = c.compileBody(*loop.getBody());
  if (!body)
    return body.takeError();
  auto yield = cast<scf::YieldOp>(loop.getBody()->getTerminator());
  SlotCopies init(slotsOf(c, loop.getInitArgs()), args);
  SlotCopies next(slotsOf(c, yield.getOperands()), args);
  unsigned width = c.typeOf(loop.getInductionVar()).bitWidth();
  bool unsignedCmp = loop.getUnsignedCmp();
  OpSite site = siteOf(op);
  unsigned ivSlot = *iv;
  return Instr([=, body = std::move(*body)](Frame &frame) -> llvm::Error {
    // Bounds as mathematical integers (signed or unsigned reading of the
    // type), so stepping never wraps.
    auto read = [&](unsigned slot) -> __int128 {
      int64_t v = frame.slots[slot].i[0];
      return unsignedCmp ? __int128(zeroExtend(v, width)) : __int128(v);
    };
    __int128 from = read(lower), to = read(upper), by = read(step);
    if (by <= 0)
      return siteError(site, "step must be positive, got " +
                                 std::to_string(frame.slots[step].i[0]));
    init.apply(frame);
    for (__int128 i = from; i < to; i += by) {
      frame.slots[ivSlot].i.assign(1, signExtend(uint64_t(i), width));
      if (llvm::Error err = runList(body, frame))
        return err;
      next.apply(frame);
    }
    return llvm::Error::success();
  });
}

Expected<Instr> compileIf(Operation *op, Compiler &c) {
  auto branch = cast<scf::IfOp>(op);
  unsigned cond = c.slotOf(branch.getCondition());
  std::vector<unsigned> results;
  for (Value result : branch.getResults()) {
    Expected<unsigned> slot = c.define(result, op);
    if (!slot)
      return slot.takeError();
    results.push_back(*slot);
  }
  auto compileArm = [&](Region &region) -> Expected<std::pair<InstrList, SlotCopies>> {
    if (region.empty())
      return std::make_pair(InstrList(), SlotCopies({}, {}));
    Expected<InstrList> list = c.compileBody(region.front());
    if (!list)
      return list.takeError();
    auto yield = cast<scf::YieldOp>(region.front().getTerminator());
    return std::make_pair(std::move(*list),
                          SlotCopies(slotsOf(c, yield.getOperands()), results));
  };
  auto thenCompiled = compileArm(branch.getThenRegion());
  if (!thenCompiled)
    return thenCompiled.takeError();
  auto elseCompiled = compileArm(branch.getElseRegion());
  if (!elseCompiled)
    return elseCompiled.takeError();
  return Instr([=, thenArm = std::move(*thenCompiled),
                elseArm = std::move(*elseCompiled)](Frame &frame) -> llvm::Error {
    const auto &arm = frame.slots[cond].i[0] ? thenArm : elseArm;
    if (llvm::Error err = runList(arm.first, frame))
      return err;
    arm.second.apply(frame);
    return llvm::Error::success();
  });
}

} // namespace

void registerControlFlowOps(OpTable &table) {
  table.add<mlir::scf::ForOp>(compileFor);
  table.add<mlir::scf::IfOp>(compileIf);
}

} // namespace tilejit::interp::detail
