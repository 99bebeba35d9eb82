// Helpers shared by `tilejit tune` and `tilejit tunedb`: the runtime on device 0,
// the database path and lock, provenance, "name=value" lists.
#ifndef TILEJIT_TOOLS_TILEJIT_TUNESUPPORT_H
#define TILEJIT_TOOLS_TILEJIT_TUNESUPPORT_H

#include "tilejit/Tuning/Tuner.h"

#include <functional>

namespace tilejit::cli {

/// A JIT runtime on CUDA device 0 with JitCompiler and the environment's options.
llvm::Expected<std::unique_ptr<runtime::JitRuntime>> openGpuRuntime();

/// "k=v" strings as values; an error names the bad one.
llvm::Expected<tuning::NamedValues> parseNamedValues(llvm::ArrayRef<std::string> items,
                                                     llvm::StringRef option);

/// The database path (tuneDbPathFromEnvironment).
llvm::Expected<std::string> tuneDbPath();
/// Reads the database at `path`, lets `update` change it, writes it back,
/// all under an advisory lock on `path`.lock (several tuners may share it).
llvm::Error updateTuneDb(llvm::StringRef path,
                         const std::function<llvm::Error(runtime::TuneDb &)> &update);

/// Date (UTC), device, driver and clocks (nvidia-smi, when present) now.
runtime::TuneProvenance currentProvenance(const runtime::DeviceInfo &info);

/// The target of `kernel`: its def, problem, the default constants with
/// `constants` applied, and the problem's launch sizes with `shape` applied.
llvm::Expected<tuning::TuneTarget> makeTarget(const KernelRegistry &registry,
                                              llvm::StringRef kernel,
                                              const tuning::NamedValues &constants,
                                              const tuning::NamedValues &shape);

/// One line per result: status, configuration, times or reason.
void printResults(llvm::raw_ostream &os, const tuning::TuneReport &report);

} // namespace tilejit::cli

#endif // TILEJIT_TOOLS_TILEJIT_TUNESUPPORT_H
