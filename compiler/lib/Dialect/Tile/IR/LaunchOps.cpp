// Verifiers of programmatic dependent launch in the tile dialect
// (TileLaunchOps.td): where a kernel may wait for its predecessors, and what
// it may touch before it does.
#include "tilejit/Dialect/Tile/IR/TileOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Matchers.h"

using namespace mlir;
using namespace tilejit::tile;

/// The kernel parameter a pointer (or tile of pointers, or view) is formed
/// from, through views, pointer arithmetic and reshaping; null when it comes
/// from anything else (a loop-carried value, a loaded pointer).
static BlockArgument baseParameter(Value v, KernelOp kernel) {
  while (Operation *def = v.getDefiningOp()) {
    if (auto view = dyn_cast<MakeViewOp>(def))
      v = view.getBase();
    else if (auto add = dyn_cast<AddPtrOp>(def))
      v = add.getPtr();
    else if (isa<SplatOp, BroadcastOp, ExpandDimsOp, ReshapeOp, TransposeOp,
                 ConvertLayoutOp>(def))
      v = def->getOperand(0);
    else
      return {};
  }
  auto arg = dyn_cast<BlockArgument>(v);
  if (!arg || arg.getOwner() != &kernel.getBody().front())
    return {};
  return arg;
}

/// The global memory `op` reads (its view or pointers), or null when it reads
/// none; `writes` is set when it writes global memory.
static Value globalAccess(Operation *op, bool &writes) {
  writes = isa<StoreOp, PtrStoreOp>(op);
  if (auto load = dyn_cast<LoadOp>(op))
    return load.getView();
  if (auto load = dyn_cast<PtrLoadOp>(op))
    return load.getPtrs();
  if (auto copy = dyn_cast<AsyncCopyOp>(op))
    return copy.getView();
  return {};
}

LogicalResult GridDepWaitOp::verify() {
  auto kernel = dyn_cast<KernelOp>((*this)->getParentOp());
  if (!kernel)
    return emitOpError("must be in the kernel's body itself, not in a loop or a "
                       "branch (every program passes it)");
  for (Operation &op : kernel.getBody().front()) {
    if (&op == getOperation())
      break;
    WalkResult result = op.walk([&](Operation *inner) {
      if (isa<GridDepWaitOp>(inner)) {
        emitOpError("a kernel waits for its predecessors at most once");
        return WalkResult::interrupt();
      }
      if (isa<TmaCopyOp>(inner)) {
        inner->emitOpError("before tile.grid_dep_wait: a TMA copy may read what "
                           "the kernels before this one still write");
        return WalkResult::interrupt();
      }
      bool writes = false;
      Value read = globalAccess(inner, writes);
      if (writes) {
        inner->emitOpError("writes global memory before tile.grid_dep_wait, "
                           "where the kernels before this one may still read or "
                           "write it");
        return WalkResult::interrupt();
      }
      if (!read)
        return WalkResult::advance();
      BlockArgument param = baseParameter(read, kernel);
      if (param && kernel.isInvariantParam(param.getArgNumber()))
        return WalkResult::advance();
      auto diag = inner->emitOpError("reads global memory before tile.grid_dep_wait ");
      if (!param)
        diag << "through a pointer that is not formed from a kernel parameter";
      else if (StringAttr name = kernel.getParamName(param.getArgNumber()))
        diag << "through parameter '" << name.getValue()
             << "', which is not marked tile.invariant (a kernel before this one "
                "may still write it)";
      else
        diag << "through parameter " << param.getArgNumber()
             << ", which is not marked tile.invariant";
      return WalkResult::interrupt();
    });
    if (result.wasInterrupted())
      return failure();
  }
  return success();
}

LogicalResult PrefetchL2Op::verify() {
  APInt bytes;
  if (matchPattern(getBytes(), m_ConstantInt(&bytes))) {
    int64_t n = bytes.getSExtValue();
    if (n <= 0 || n % 16 != 0)
      return emitOpError("prefetches a positive multiple of 16 bytes, got ") << n;
  }
  return success();
}
