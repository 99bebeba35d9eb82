// convert-tile-to-llvm: each tile.kernel becomes an nvvm.kernel llvm.func.
#include "Emitter.h"
#include "SharedMemoryEmitter.h"
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
    auto *tileDialect = ctx->getLoadedDialect<tile::TileDialect>();
    for (auto kernel : llvm::make_early_inc_range(module.getOps<tile::KernelOp>())) {
      // Also when run alone (tilejit-opt), before the emitter meets anything.
      if (failed(verifyLowerable(kernel, table)))
        return signalPassFailure();
      SmallVector<Type> params;
      for (Type t : kernel.getArgumentTypes())
        params.push_back(isa<tile::TensorMapType>(t) ? LLVM::LLVMPointerType::get(ctx)
                                                     : llvmElementType(ctx, t));
      OpBuilder b(kernel);
      auto func = LLVM::LLVMFuncOp::create(
          b, kernel.getLoc(), kernel.getSymName(),
          LLVM::LLVMFunctionType::get(LLVM::LLVMVoidType::get(ctx), params));
      SmallVector<Attribute> tensorMaps;
      SmallVector<int64_t> gridDims;
      for (auto [i, t] : llvm::enumerate(kernel.getArgumentTypes())) {
        if (kernel.getGridDim(i))
          gridDims.push_back(i);
        auto map = dyn_cast<tile::TensorMapType>(t);
        if (!map)
          continue;
        // TMA reads the descriptor from the parameter itself: 128 bytes by
        // value, 64-byte aligned, never copied to local memory.
        func.setArgAttr(i, LLVM::LLVMDialect::getByValAttrName(),
                        TypeAttr::get(LLVM::LLVMArrayType::get(b.getI8Type(), 128)));
        func.setArgAttr(i, LLVM::LLVMDialect::getAlignAttrName(),
                        b.getI64IntegerAttr(64));
        func.setArgAttr(i, NVVM::NVVMDialect::getGridConstantAttrName(), b.getUnitAttr());
        int64_t bytes =
            std::max<int64_t>(1, map.getElementType().getIntOrFloatBitWidth() / 8);
        // What the runtime builds the descriptor from (CompiledKernel::tensorMaps):
        // the parameter's source with what its type said.
        tensorMaps.push_back(
            kernel.getTensorMapSource(i).withLaunchFields(i, map.getBox(), bytes));
      }
      // A producer warpgroup or warp (tile-warp-specialize) runs beside the
      // config's warps. setmaxnreg moves registers within the share the entry
      // cap gives a program: as many programs per multiprocessor as the
      // split's registers allow fit in the register file.
      tile::WarpSpecializeOp ws;
      kernel.walk([&](tile::WarpSpecializeOp op) { ws = op; });
      int64_t warps = tile::getNumWarps(kernel);
      int64_t threads = 32 * (warps + (ws ? ws.getNumProducerWarps() : 0));
      func->setAttr(NVVM::NVVMDialect::getKernelFuncAttrName(), b.getUnitAttr());
      func->setAttr(NVVM::NVVMDialect::getReqntidAttrName(),
                    b.getDenseI32ArrayAttr({int32_t(threads), 1, 1}));
      int64_t programsPerSM = 1;
      if (ws && ws.getProducerRegs()) {
        int64_t split = 128 * int64_t(*ws.getProducerRegs()) +
                        32 * warps * int64_t(*ws.getConsumerRegs());
        programsPerSM = 65536 / split;
        func->setAttr(NVVM::NVVMDialect::getMinctasmAttrName(),
                      b.getI32IntegerAttr(int32_t(programsPerSM)));
      }
      // A persistent grid launches this many programs per multiprocessor.
      tileDialect->getProgramsPerSmAttrHelper().setAttr(
          func, b.getI64IntegerAttr(programsPerSM));
      if (!tensorMaps.empty())
        tileDialect->getTensormapsAttrHelper().setAttr(func, b.getArrayAttr(tensorMaps));
      // tile-persistent's logical grid parameters (axis 0, then 1).
      if (!gridDims.empty())
        tileDialect->getGridDimsAttrHelper().setAttr(func,
                                                     b.getDenseI64ArrayAttr(gridDims));
      Emitter emitter(kernel, func, table);
      if (failed(emitter.run()))
        return signalPassFailure();
      LLVM_DEBUG(llvm::dbgs() << DEBUG_TYPE ": kernel @" << kernel.getSymName() << ": "
                              << threads << " threads, " << emitter.shared().bytes()
                              << " bytes of dynamic shared memory\n");
      // The runtime reads these to launch: dynamic shared bytes and threads.
      tileDialect->getSharedBytesAttrHelper().setAttr(
          func, b.getI64IntegerAttr(emitter.shared().bytes()));
      tileDialect->getThreadsAttrHelper().setAttr(func, b.getI64IntegerAttr(threads));
      tileDialect->getSumsAttrHelper().setAttr(
          func, b.getStringAttr(emitter.reducedSums ? "reduced" : "exact"));
      kernel.erase();
    }
  }
};

} // namespace
