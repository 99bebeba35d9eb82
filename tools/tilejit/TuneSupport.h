// Helpers shared by `tilejit tune` and `tilejit tunedb`: the runtime on device 0,
// "name=value" lists, the database path, the results table.
#ifndef TILEJIT_TOOLS_TILEJIT_TUNESUPPORT_H
#define TILEJIT_TOOLS_TILEJIT_TUNESUPPORT_H

#include "tilejit/tuning/Tuner.h"

namespace tilejit::cli {

/// A JIT runtime on CUDA device 0 with JitCompiler and the environment's options.
llvm::Expected<std::unique_ptr<runtime::JitRuntime>> openGpuRuntime();

/// "k=v" strings as values; an error names the bad one.
llvm::Expected<tuning::NamedValues> parseNamedValues(llvm::ArrayRef<std::string> items,
                                                     llvm::StringRef option);

/// The database path (runtime::tuneDbPathFromEnvironment).
llvm::Expected<std::string> tuneDbPath();

/// One line per result: status, configuration, times or reason.
void printResults(llvm::raw_ostream &os, const tuning::TuneReport &report);

} // namespace tilejit::cli

#endif // TILEJIT_TOOLS_TILEJIT_TUNESUPPORT_H
