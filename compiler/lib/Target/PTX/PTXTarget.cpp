// LLVM/NVVM dialect module -> llvm::Module -> O3 -> PTX through LLVM's NVPTX
// backend. Each call owns its LLVMContext and TargetMachine, so calls may run
// concurrently; only the one-time NVPTX target registration is shared.
#include "tilejit/Target/PTX/PTXTarget.h"
#include "tilejit/support/Timing.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/NVVM/NVVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/IR/DiagnosticInfo.h"
#include "llvm/IR/DiagnosticPrinter.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/Target/TargetOptions.h"
#include "llvm/TargetParser/Triple.h"

#include <memory>
#include <mutex>

using namespace llvm;

namespace tilejit {

void PTXTimings::print(raw_ostream &os) const {
  os << formatv("translate {0:F2} ms, optimize {1:F2} ms, codegen {2:F2} ms "
                "(total {3:F2} ms)",
                translateMs, optimizeMs, codegenMs, totalMs());
}

void registerPTXTargetTranslations(mlir::DialectRegistry &registry) {
  mlir::registerBuiltinDialectTranslation(registry);
  mlir::registerLLVMDialectTranslation(registry);
  mlir::registerNVVMDialectTranslation(registry);
}

namespace {

Error makeError(const Twine &message) {
  return createStringError(inconvertibleErrorCode(), message);
}

/// Only NVPTX is registered: the compiler never targets anything else, and
/// registering all targets would cost startup time in every process.
void initializeNVPTXTargetOnce() {
  static std::once_flag once;
  std::call_once(once, [] {
    LLVMInitializeNVPTXTargetInfo();
    LLVMInitializeNVPTXTarget();
    LLVMInitializeNVPTXTargetMC();
    LLVMInitializeNVPTXAsmPrinter();
  });
}

/// Error-severity LLVM diagnostics, collected so that they become an
/// llvm::Error: without a handler LLVMContext reports them and calls exit(1).
struct LLVMDiagnostics {
  std::string errors;

  static void handle(const DiagnosticInfo *info, void *self) {
    if (info->getSeverity() != DS_Error)
      return;
    std::string &errors = static_cast<LLVMDiagnostics *>(self)->errors;
    raw_string_ostream os(errors);
    if (!errors.empty())
      os << "; ";
    DiagnosticPrinterRawOStream printer(os);
    info->print(printer);
  }
};

/// Everything one compile owns. The context must outlive the module.
struct LLVMCompilation {
  LLVMContext context;
  LLVMDiagnostics diagnostics;
  std::unique_ptr<TargetMachine> targetMachine;
  std::unique_ptr<Module> module;
};

Expected<std::unique_ptr<TargetMachine>> createTargetMachine(const Arch &arch,
                                                             CodeGenOptLevel level) {
  initializeNVPTXTargetOnce();
  Triple triple("nvptx64-nvidia-cuda");
  std::string lookupError;
  const Target *target = TargetRegistry::lookupTarget(triple, lookupError);
  if (!target)
    return makeError("NVPTX target unavailable: " + lookupError);
  std::unique_ptr<TargetMachine> machine(target->createTargetMachine(
      triple, arch.llvmCPU(), arch.ptxFeature(), TargetOptions(),
      /*RM=*/std::nullopt, /*CM=*/std::nullopt, level));
  if (!machine)
    return makeError(formatv("cannot create an NVPTX target machine for {0} ({1})",
                             arch.name(), arch.ptxFeature()));
  return machine;
}

/// MLIR's translation reports through the context's diagnostics; capture
/// them so the reason travels in the returned error.
Expected<std::unique_ptr<Module>> translate(mlir::ModuleOp op, LLVMContext &context) {
  mlir::DialectRegistry registry;
  registerPTXTargetTranslations(registry);
  op->getContext()->appendDialectRegistry(registry);

  std::string reasons;
  // Errors are taken into the result; anything else goes on to the context's
  // other handlers.
  mlir::ScopedDiagnosticHandler capture(
      op->getContext(), [&](mlir::Diagnostic &diag) -> mlir::LogicalResult {
        if (diag.getSeverity() != mlir::DiagnosticSeverity::Error)
          return mlir::failure();
        raw_string_ostream os(reasons);
        if (!reasons.empty())
          os << "; ";
        os << diag.getLocation() << ": " << diag.str();
        return mlir::success();
      });
  std::unique_ptr<Module> module = mlir::translateModuleToLLVMIR(op, context);
  if (!module)
    return makeError("translation to LLVM IR failed: " +
                     (reasons.empty() ? std::string("no reason given") : reasons));
  return module;
}

void optimize(Module &module, TargetMachine &machine, unsigned optLevel) {
  LoopAnalysisManager loopAnalyses;
  FunctionAnalysisManager functionAnalyses;
  CGSCCAnalysisManager cgsccAnalyses;
  ModuleAnalysisManager moduleAnalyses;
  // Built with the target machine so NVPTX adds its own passes (NVVMReflect,
  // address-space inference) and the cost model is the GPU's.
  PassBuilder builder(&machine);
  builder.registerModuleAnalyses(moduleAnalyses);
  builder.registerCGSCCAnalyses(cgsccAnalyses);
  builder.registerFunctionAnalyses(functionAnalyses);
  builder.registerLoopAnalyses(loopAnalyses);
  builder.crossRegisterProxies(loopAnalyses, functionAnalyses, cgsccAnalyses,
                               moduleAnalyses);
  static const OptimizationLevel levels[] = {OptimizationLevel::O0, OptimizationLevel::O1,
                                             OptimizationLevel::O2,
                                             OptimizationLevel::O3};
  ModulePassManager passes =
      optLevel == 0 ? builder.buildO0DefaultPipeline(OptimizationLevel::O0)
                    : builder.buildPerModuleDefaultPipeline(levels[optLevel]);
  passes.run(module, moduleAnalyses);
}

/// Translation and optimization, shared by both entry points.
Expected<std::unique_ptr<LLVMCompilation>> buildOptimizedModule(mlir::ModuleOp op,
                                                                const Arch &arch,
                                                                const PTXOptions &opts,
                                                                PTXTimings *timings) {
  std::optional<CodeGenOptLevel> level = CodeGenOpt::getLevel(opts.optLevel);
  if (!level)
    return makeError(
        formatv("optimization level {0} is out of range 0..3", opts.optLevel));
  auto compilation = std::make_unique<LLVMCompilation>();
  compilation->context.setDiagnosticHandlerCallBack(&LLVMDiagnostics::handle,
                                                    &compilation->diagnostics);
  auto machine = createTargetMachine(arch, *level);
  if (!machine)
    return machine.takeError();
  compilation->targetMachine = std::move(*machine);

  auto start = std::chrono::steady_clock::now();
  auto module = translate(op, compilation->context);
  if (!module)
    return module.takeError();
  compilation->module = std::move(*module);
  Module &llvmModule = *compilation->module;
  // Whatever triple or layout the MLIR module carried, PTX needs NVPTX's.
  llvmModule.setTargetTriple(compilation->targetMachine->getTargetTriple());
  llvmModule.setDataLayout(compilation->targetMachine->createDataLayout());
  if (timings)
    timings->translateMs = support::msSince(start);

  start = std::chrono::steady_clock::now();
  optimize(llvmModule, *compilation->targetMachine, opts.optLevel);
  if (timings)
    timings->optimizeMs = support::msSince(start);
  if (!compilation->diagnostics.errors.empty())
    return makeError("LLVM optimization failed for " + arch.name() + ": " +
                     compilation->diagnostics.errors);
  return compilation;
}

} // namespace

Expected<std::string> translateToLLVMIR(mlir::ModuleOp llvmDialectModule,
                                        const Arch &arch, const PTXOptions &opts,
                                        PTXTimings *timings) {
  auto compilation = buildOptimizedModule(llvmDialectModule, arch, opts, timings);
  if (!compilation)
    return compilation.takeError();
  std::string text;
  raw_string_ostream os(text);
  (*compilation)->module->print(os, /*AAW=*/nullptr);
  return text;
}

Expected<std::string> emitPTX(mlir::ModuleOp llvmDialectModule, const Arch &arch,
                              const PTXOptions &opts, PTXTimings *timings) {
  auto compilation = buildOptimizedModule(llvmDialectModule, arch, opts, timings);
  if (!compilation)
    return compilation.takeError();
  LLVMCompilation &state = **compilation;

  auto start = std::chrono::steady_clock::now();
  SmallString<0> ptx;
  raw_svector_ostream os(ptx);
  legacy::PassManager codegen;
  if (state.targetMachine->addPassesToEmitFile(codegen, os, /*DwoOut=*/nullptr,
                                               CodeGenFileType::AssemblyFile))
    return makeError(formatv("NVPTX cannot emit assembly for {0}", arch.name()));
  codegen.run(*state.module);
  if (timings)
    timings->codegenMs = support::msSince(start);
  if (!state.diagnostics.errors.empty())
    return makeError("PTX code generation failed for " + arch.name() + ": " +
                     state.diagnostics.errors);
  return std::string(ptx.str());
}

} // namespace tilejit
