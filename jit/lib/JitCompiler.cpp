// runtime::KernelCompiler on compileToPTX: the request's canonical tile IR is parsed
// into a fresh MLIRContext per compile, so several threads compile at once.
#include "tilejit/jit/JitCompiler.h"
#include "tilejit/Pipeline/Pipeline.h"
#include "tilejit/support/OutputFile.h"
#include "tilejit/support/Timing.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>

#ifndef TILEJIT_BUILD_ID
#error "TILEJIT_BUILD_ID is set by jit/CMakeLists.txt"
#endif

namespace tilejit {
namespace {

/// `name` with every character outside [A-Za-z0-9_.-] replaced by '_'.
std::string fileNameSafe(llvm::StringRef name) {
  std::string safe = name.str();
  for (char &c : safe)
    if (!llvm::isAlnum(c) && c != '_' && c != '.' && c != '-')
      c = '_';
  return safe;
}

/// The compiler's parameters as the launcher sees them: sizes from their
/// kinds, the ones the launcher supplies marked.
std::vector<runtime::KernelParam> launchParams(const CompiledKernel &compiled) {
  std::vector<runtime::KernelParam> params;
  for (const CompiledParam &param : compiled.params)
    params.push_back({param.name, param.kind, paramKindSize(param.kind)});
  for (const TensorMapSpec &map : compiled.tensorMaps)
    params[map.param].tensorMap = map;
  if (compiled.gridParams)
    for (uint8_t axis : {0, 1})
      params[*compiled.gridParams + axis].gridAxis = axis;
  return params;
}

} // namespace

JitCompiler::JitCompiler(std::string dumpDirectory)
    : dumpDirectory(std::move(dumpDirectory)) {}

std::shared_ptr<JitCompiler> JitCompiler::fromEnvironment() {
  return std::make_shared<JitCompiler>(
      llvm::sys::Process::GetEnv("TILEJIT_DUMP_DIR").value_or(""));
}

runtime::CompilerIdentity JitCompiler::identity() const {
  return {TILEJIT_BUILD_ID, LLVM_VERSION_STRING};
}

llvm::Expected<runtime::CompiledKernel>
JitCompiler::compile(const runtime::KernelRequest &request) {
  if (request.options.sharedBytesLimit < 0)
    return llvm::createStringError(
        "kernel '%s': shared memory limit %lld bytes (expected a positive byte count, "
        "or 0 for the arch's own)",
        request.kernelName.c_str(), (long long)request.options.sharedBytesLimit);
  if (request.options.optLevel > 3)
    return llvm::createStringError("kernel '%s': optimization level %u (expected 0 to 3)",
                                   request.kernelName.c_str(), request.options.optLevel);

  auto parseStart = std::chrono::steady_clock::now();
  mlir::DialectRegistry dialects;
  registerCompilerDialects(dialects);
  // The runtime compiles kernels on its own workers: one MLIR thread pool per
  // context would only oversubscribe the cores.
  mlir::MLIRContext ctx(dialects, mlir::MLIRContext::Threading::DISABLED);
  std::string diagnostics;
  llvm::raw_string_ostream diagStream(diagnostics);
  mlir::ScopedDiagnosticHandler handler(&ctx, [&](mlir::Diagnostic &diag) {
    diagStream << diag.getLocation() << ": " << diag << "\n";
    for (const mlir::Diagnostic &note : diag.getNotes())
      diagStream << note.getLocation() << ": note: " << note << "\n";
  });
  auto module = mlir::parseSourceString<mlir::ModuleOp>(request.canonicalIR, &ctx);
  if (!module)
    return llvm::createStringError("kernel '%s': the tile IR does not parse:\n%s",
                                   request.kernelName.c_str(), diagnostics.c_str());
  double parseMs = support::msSince(parseStart);

  CompileOptions opts;
  opts.ptx.optLevel = request.options.optLevel;
  opts.sharedBytesLimit = request.options.sharedBytesLimit;
  // A dump is a debugging aid: one it cannot write is a warning (the first
  // failure of each compile), and the kernel still compiles.
  std::vector<std::string> warnings;
  if (!dumpDirectory.empty()) {
    if (std::error_code ec = llvm::sys::fs::create_directories(dumpDirectory)) {
      warnings.push_back(
          llvm::formatv("TILEJIT_DUMP_DIR: cannot create '{0}': {1}; kernel "
                        "'{2}' is compiled without its dump",
                        dumpDirectory, ec.message(), request.kernelName));
    } else {
      std::string prefix = llvm::formatv("{0}/{1}-{2}.{3:d3}", dumpDirectory,
                                         fileNameSafe(request.kernelName),
                                         request.arch.name(), compileCounter++);
      opts.dumpLLVM = true;
      opts.dump = [prefix, stageNumber = 0u, &warnings](llvm::StringRef stage,
                                                        llvm::StringRef text) mutable {
        llvm::StringRef family = stage.split('.').first;
        std::string path =
            llvm::formatv("{0}.{1:d2}-{2}.{3}", prefix, stageNumber++, stage,
                          family == "ptx"    ? "ptx"
                          : family == "llvm" ? "ll"
                                             : "mlir");
        if (!warnings.empty())
          return;
        if (llvm::Error err =
                support::writeOutputFile(path, text, "TILEJIT_DUMP_DIR stage"))
          warnings.push_back(llvm::toString(std::move(err)) +
                             "; the rest of this dump is "
                             "skipped");
      };
    }
  }
  auto compiled = compileToPTX(*module, request.arch, opts);
  if (!compiled)
    return llvm::createStringError(
        "kernel '%s' for %s: %s\n%s", request.kernelName.c_str(),
        request.arch.name().str().c_str(), llvm::toString(compiled.takeError()).c_str(),
        diagnostics.c_str());

  runtime::CompiledKernel result;
  result.params = launchParams(*compiled);
  result.ptx = std::move(compiled->ptx);
  result.entryName = compiled->name;
  result.launch.threadsPerBlock = static_cast<uint32_t>(compiled->threads);
  result.launch.dynamicSharedBytes = static_cast<uint32_t>(compiled->sharedBytes);
  result.launch.programsPerSM = static_cast<uint32_t>(compiled->programsPerSM);
  result.launch.waitsForPredecessors = compiled->waitsForPredecessors;
  result.warnings = std::move(warnings);
  result.sums = compiled->reducedSums ? runtime::SumPrecision::Reduced
                                      : runtime::SumPrecision::Exact;
  result.timings = {{"parse", parseMs},
                    {"lower", compiled->lowerMs},
                    {"translate", compiled->ptxTimings.translateMs},
                    {"optimize", compiled->ptxTimings.optimizeMs},
                    {"codegen", compiled->ptxTimings.codegenMs}};
  return result;
}

} // namespace tilejit
