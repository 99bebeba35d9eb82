// Conversion of tile kernels to the LLVM and NVVM dialects.
#ifndef TILEJIT_CONVERSION_TILETOLLVM_PASSES_TD
#define TILEJIT_CONVERSION_TILETOLLVM_PASSES_TD

include "mlir/Pass/PassBase.td"

def ConvertTileToLLVM : Pass<"convert-tile-to-llvm", "::mlir::ModuleOp"> {
  let summary = "Lower layout-annotated tile kernels to LLVM + NVVM";
  let description = [{
    Each `tile.kernel` (after `tile-assign-layouts`) becomes an `llvm.func`
    marked `nvvm.kernel` with a plain pointer ABI (`!llvm.ptr<1>` per pointer
    parameter, scalars by value), `reqntid` = 32 x warps, and the dynamic
    shared memory it needs in the `tile.shared_bytes` attribute. Every tile
    becomes the scalars its thread holds under its layout; elementwise `arith`
    ops stay `arith` on scalars (lowered by `convert-arith-to-llvm`), the rest
    is emitted per op family: memory, math and conversions, layouts and shape
    ops, reductions and scans, dot (mma.sync), control flow.
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect", "::mlir::NVVM::NVVMDialect",
                           "::mlir::arith::ArithDialect"];
}

#endif // TILEJIT_CONVERSION_TILETOLLVM_PASSES_TD
