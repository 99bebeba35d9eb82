// tile-verify-lowerable: before any pass rewrites a kernel, every op must be one
// the emitter has a lowering for and every value of a type it can hold in
// registers, so that the passes and the emitter only ever see what they handle
// (an unregistered op has no dialect to ask, an index or dynamic tile no
// register form). Also the emitter table (tile::OpTable, by op class), shared
// with convert-tile-to-llvm.
#include "Emitter.h"
#include "tilejit/Conversion/TileToLLVM/Passes.h"

#include "mlir/Dialect/SCF/IR/SCF.h"

namespace tilejit {
#define GEN_PASS_DEF_TILEVERIFYLOWERABLE
#include "tilejit/Conversion/TileToLLVM/Passes.h.inc"
} // namespace tilejit

using namespace mlir;

namespace tilejit::lowering {

EmitterTable makeEmitterTable() {
  EmitterTable table;
  populateElementwiseEmitters(table);
  populateMemoryEmitters(table);
  populateLayoutEmitters(table);
  populateReduceEmitters(table);
  populateDotEmitters(table);
  populateControlFlowEmitters(table);
  populateSharedEmitters(table);
  populateAsyncEmitters(table);
  return table;
}

namespace {

/// Scalars the emitter moves in registers (the dialect's element types).
bool isRegisterScalar(Type t) {
  return isa<Float32Type, Float16Type, BFloat16Type, Float8E4M3FNType>(t) ||
         t.isSignlessInteger(1) || t.isSignlessInteger(8) || t.isSignlessInteger(32) ||
         t.isSignlessInteger(64);
}

bool isLowerableType(Type t) {
  if (isa<tile::PointerType, tile::ViewType, tile::BarriersType, tile::TensorMapType>(t))
    return true;
  if (auto memref = dyn_cast<MemRefType>(t)) // a tile.shared_alloc buffer
    return memref.hasStaticShape() &&
           isa_and_nonnull<tile::SharedLayoutAttr>(memref.getMemorySpace());
  if (auto tensor = dyn_cast<RankedTensorType>(t))
    return tensor.hasStaticShape() && (isa<tile::PointerType>(tensor.getElementType()) ||
                                       isRegisterScalar(tensor.getElementType()));
  return isRegisterScalar(t);
}

/// Terminators the emitter handles through their parent op.
bool isHandledTerminator(Operation *op) { return isa<tile::ReturnOp, scf::YieldOp>(op); }

} // namespace

LogicalResult verifyLowerable(tile::KernelOp kernel, const EmitterTable &table) {
  auto checkType = [](Operation *op, Type t, StringRef what) -> LogicalResult {
    if (isLowerableType(t))
      return success();
    return op->emitOpError("has ")
           << what << " of type " << t << ", which the GPU lowering cannot hold";
  };
  WalkResult result = kernel.getBody().walk([&](Operation *op) {
    if (!op->isRegistered()) {
      op->emitOpError("is not an operation of a loaded dialect: it has no GPU lowering");
      return WalkResult::interrupt();
    }
    if (!isHandledTerminator(op) && !table.lookup(op)) {
      op->emitOpError("has no GPU lowering");
      return WalkResult::interrupt();
    }
    for (Type t : op->getOperandTypes())
      if (failed(checkType(op, t, "an operand")))
        return WalkResult::interrupt();
    for (Type t : op->getResultTypes())
      if (failed(checkType(op, t, "a result")))
        return WalkResult::interrupt();
    for (Region &region : op->getRegions())
      for (Block &block : region)
        for (Type t : block.getArgumentTypes())
          if (failed(checkType(op, t, "a block argument")))
            return WalkResult::interrupt();
    return WalkResult::advance();
  });
  return failure(result.wasInterrupted());
}

} // namespace tilejit::lowering

namespace {

struct TileVerifyLowerablePass
    : tilejit::impl::TileVerifyLowerableBase<TileVerifyLowerablePass> {
  void runOnOperation() override {
    if (failed(tilejit::lowering::verifyLowerable(getOperation(),
                                                  tilejit::lowering::makeEmitterTable())))
      signalPassFailure();
  }
};

} // namespace
