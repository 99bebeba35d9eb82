// convert-tile-to-llvm: each tile.kernel becomes an nvvm.kernel llvm.func.
#include "Emitter.h"
#include "tilejit/Conversion/TileToLLVM/Passes.h"

#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "convert-tile-to-llvm"

namespace tilejit {
#define GEN_PASS_DEF_CONVERTTILETOLLVM
#include "tilejit/Conversion/TileToLLVM/Passes.h.inc"
} // namespace tilejit

using namespace mlir;
using namespace tilejit;
using namespace tilejit::lowering;

namespace {

struct ConvertTileToLLVMPass
    : tilejit::impl::ConvertTileToLLVMBase<ConvertTileToLLVMPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    const EmitterTable table = makeEmitterTable();

    MLIRContext *ctx = &getContext();
    for (auto kernel : llvm::make_early_inc_range(module.getOps<tile::KernelOp>())) {
      // Also when run alone (tilejit-opt), before the emitter meets anything.
      if (failed(verifyLowerable(kernel, table)))
        return signalPassFailure();
      SmallVector<Type> params;
      for (Type t : kernel.getArgumentTypes())
        params.push_back(llvmElementType(ctx, t));
      OpBuilder b(kernel);
      auto func = LLVM::LLVMFuncOp::create(
          b, kernel.getLoc(), kernel.getSymName(),
          LLVM::LLVMFunctionType::get(LLVM::LLVMVoidType::get(ctx), params));
      int64_t threads = 32 * tile::getNumWarps(kernel);
      func->setAttr(NVVM::NVVMDialect::getKernelFuncAttrName(), b.getUnitAttr());
      func->setAttr(NVVM::NVVMDialect::getReqntidAttrName(),
                    b.getDenseI32ArrayAttr({int32_t(threads), 1, 1}));
      Emitter emitter(kernel, func, table);
      if (failed(emitter.run()))
        return signalPassFailure();
      LLVM_DEBUG(llvm::dbgs() << DEBUG_TYPE ": kernel @" << kernel.getSymName() << ": "
                              << threads << " threads, " << emitter.sharedBytes
                              << " bytes of dynamic shared memory\n");
      // The runtime reads these to launch: dynamic shared bytes and threads.
      func->setAttr("tile.shared_bytes", b.getI64IntegerAttr(emitter.sharedBytes));
      func->setAttr("tile.threads", b.getI64IntegerAttr(threads));
      func->setAttr("tile.sums",
                    b.getStringAttr(emitter.reducedSums ? "reduced" : "exact"));
      kernel.erase();
    }
  }
};

} // namespace
