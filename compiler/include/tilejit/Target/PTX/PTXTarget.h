// The last lowering stage: an MLIR module in the LLVM and NVVM dialects to LLVM
// IR, through LLVM's optimizer, to PTX text for one exact arch.
#ifndef TILEJIT_TARGET_PTX_PTXTARGET_H
#define TILEJIT_TARGET_PTX_PTXTARGET_H

#include "tilejit/support/Arch.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <string>

namespace mlir {
class DialectRegistry;
} // namespace mlir

namespace tilejit {

/// Options of the LLVM IR -> PTX stage; part of the disk cache key.
struct PTXOptions {
  /// LLVM optimization level, 0 to 3, for both the IR pipeline and codegen.
  unsigned optLevel = 3;
};

/// Wall time of each stage of one compile, in milliseconds, for
/// `tilejit compile --time` and the load statistics.
struct PTXTimings {
  /// MLIR LLVM/NVVM dialects to an llvm::Module.
  double translateMs = 0;
  /// LLVM's module pipeline at PTXOptions::optLevel.
  double optimizeMs = 0;
  /// NVPTX instruction selection and PTX printing.
  double codegenMs = 0;

  double totalMs() const { return translateMs + optimizeMs + codegenMs; }
  /// Prints "translate 1.20 ms, optimize 3.40 ms, codegen 2.10 ms (total 6.70 ms)".
  void print(llvm::raw_ostream &os) const;
};

/// Adds the LLVM IR translations of the builtin, LLVM and NVVM dialects to
/// `registry`. Register them when creating a context that compiles on several
/// threads; the functions below also add them to the module's context, which
/// is a no-op when they are already there.
void registerPTXTargetTranslations(mlir::DialectRegistry &registry);

/// Translates `llvmDialectModule` (LLVM + NVVM dialects; kernels are llvm.func
/// with the `nvvm.kernel` attribute) to LLVM IR for `arch` and runs LLVM's
/// module pipeline at `opts.optLevel`. Returns the IR text that codegen would
/// see (the `llvm` stage of `tilejit dump`). Fills `timings` when given
/// (codegenMs stays 0).
llvm::Expected<std::string> translateToLLVMIR(mlir::ModuleOp llvmDialectModule,
                                              const Arch &arch,
                                              const PTXOptions &opts = {},
                                              PTXTimings *timings = nullptr);

/// Compiles `llvmDialectModule` to PTX for `arch`: translation to LLVM IR
/// (triple nvptx64-nvidia-cuda, NVPTX data layout), LLVM's module pipeline at
/// `opts.optLevel`, NVPTX codegen for the arch's CPU and PTX feature. The text
/// carries `.version <arch PTX version>` and `.target <exact arch name>`.
/// Failures (a translation error, an LLVM diagnostic, a missing target) are
/// returned with their reason. Safe to call from several threads at once when
/// each thread compiles a module of its own context. Fills `timings` when given.
llvm::Expected<std::string> emitPTX(mlir::ModuleOp llvmDialectModule, const Arch &arch,
                                    const PTXOptions &opts = {},
                                    PTXTimings *timings = nullptr);

} // namespace tilejit

#endif // TILEJIT_TARGET_PTX_PTXTARGET_H
