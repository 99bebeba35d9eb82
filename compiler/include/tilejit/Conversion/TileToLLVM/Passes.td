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

def MergeShuffles : Pass<"merge-shuffles", "::mlir::ModuleOp"> {
  let summary = "Merge identical warp shuffles of one block";
  let description = [{
    Runs after `convert-tile-to-llvm` and CSE. A layout change that spreads a
    vector over a tile (a broadcast or an expand_dims into an mma layout)
    emits one `shfl.sync` per destination register, and registers of one row
    read the same lane: after CSE their operands are the same values. CSE
    keeps them apart (a shuffle is convergent and not marked pure), so the
    PTX repeated them. Two `nvvm.shfl.sync` ops of one block with the same
    operands and attributes run on the same threads with the same inputs:
    the later one takes the earlier one's result.
  }];
  let dependentDialects = ["::mlir::NVVM::NVVMDialect"];
}

def TileVerifyLowerable : Pass<"tile-verify-lowerable", "::tilejit::tile::KernelOp"> {
  let summary = "Refuse a kernel holding an op or a type the GPU lowering lacks";
  let description = [{
    Runs first in `tile-layout-pipeline`. Every op of the kernel must be a
    registered op that `convert-tile-to-llvm` has an emitter for, and every
    operand, result and block argument a type it holds in registers: the
    dialect's scalars (f32, f16, bf16, f8E4M3FN, i1, i8, i32, i64),
    `!tile.ptr`, `!tile.view`, statically shaped tiles of scalars or
    pointers, and `tile.shared_alloc` buffers. Anything else is a diagnostic
    at the op, so no later pass or emitter meets what it cannot handle.
  }];
}

#endif // TILEJIT_CONVERSION_TILETOLLVM_PASSES_TD
