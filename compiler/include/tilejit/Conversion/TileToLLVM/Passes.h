// Conversion of tile kernels to the LLVM and NVVM dialects (see Passes.td).
#ifndef TILEJIT_CONVERSION_TILETOLLVM_PASSES_H
#define TILEJIT_CONVERSION_TILETOLLVM_PASSES_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Pass/Pass.h"

namespace tilejit {

#define GEN_PASS_DECL
#include "tilejit/Conversion/TileToLLVM/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "tilejit/Conversion/TileToLLVM/Passes.h.inc"

} // namespace tilejit

#endif // TILEJIT_CONVERSION_TILETOLLVM_PASSES_H
