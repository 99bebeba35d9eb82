// Registered kernels as runtime kernel specs: built in a context of their own and
// printed canonically (generic form, no locations).
#include "tilejit/Pipeline/Pipeline.h"
#include "tilejit/jit/JitCompiler.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OperationSupport.h"

namespace tilejit {

llvm::Expected<std::string> buildCanonicalIR(const KernelDef &def,
                                             const Specialization &spec) {
  mlir::DialectRegistry dialects;
  registerCompilerDialects(dialects);
  mlir::MLIRContext ctx(dialects, mlir::MLIRContext::Threading::DISABLED);
  auto module = def.build(ctx, spec);
  if (!module)
    return module.takeError();
  std::string text;
  llvm::raw_string_ostream os(text);
  (*module)->print(os, mlir::OpPrintingFlags().printGenericOpForm());
  return text;
}

runtime::KernelSpec makeKernelSpec(const KernelDef &def, Specialization spec,
                                   runtime::CompileOptions options) {
  runtime::KernelSpec kernelSpec;
  kernelSpec.name = def.name;
  kernelSpec.options = std::move(options);
  kernelSpec.options.weightLayouts = formatWeightLayouts(def.layoutsFor(spec));
  // The tile IR is arch-independent; the arch enters at compile().
  kernelSpec.buildIR = [&def, spec = std::move(spec)](const Arch &) {
    return buildCanonicalIR(def, spec);
  };
  return kernelSpec;
}

} // namespace tilejit
