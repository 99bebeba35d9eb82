// The tilejit subcommands, one file each; main.cpp dispatches.
#ifndef TILEJIT_TOOLS_TILEJIT_COMMANDS_H
#define TILEJIT_TOOLS_TILEJIT_COMMANDS_H

#include "tilejit/Builder/KernelRegistry.h"

#include "llvm/ADT/Twine.h"

namespace tilejit::cli {

/// Prints "tilejit: error: <message>" and returns the exit code 1.
int fail(const llvm::Twine &message);

/// `tilejit run`: true when it was the command given.
bool runRequested();
int runMain(const KernelRegistry &registry);

/// `tilejit tune` and `tilejit tunedb`: true when it was the command given.
bool tuneRequested();
int tuneMain(const KernelRegistry &registry);
bool tuneDbRequested();
int tuneDbMain(const KernelRegistry &registry);

} // namespace tilejit::cli

#endif // TILEJIT_TOOLS_TILEJIT_COMMANDS_H
