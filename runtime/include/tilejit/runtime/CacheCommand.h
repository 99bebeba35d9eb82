// `tilejit cache ls|verify|clear` as library functions: the CLI parses its
// arguments and calls runCacheCommand; the printing helpers serve other callers.
#ifndef TILEJIT_RUNTIME_CACHECOMMAND_H
#define TILEJIT_RUNTIME_CACHECOMMAND_H

#include "tilejit/runtime/DiskCache.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

namespace tilejit::runtime {

/// The subcommands, for --help: "ls", "verify", "clear".
llvm::ArrayRef<llvm::StringLiteral> cacheSubcommands();

/// Runs `subcommand` on the disk cache of `directory` (empty: the directory
/// the environment selects, see cacheDirectoryFromEnvironment), printing to `os`:
///  - ls: one line per entry (key prefix, kernel, arch, size, last use, state)
///    and a total against the cap;
///  - verify: checks every entry, removes the corrupt ones and lists them; an
///    error when any was found, so scripts see a non-zero exit;
///  - clear: removes every entry and says how many.
/// An unknown subcommand is an error naming the known ones.
llvm::Error runCacheCommand(llvm::StringRef subcommand, llvm::raw_ostream &os,
                            llvm::StringRef directory = "");

/// The `ls` table for `entries` of the cache at `directory`.
void printCacheListing(llvm::raw_ostream &os, llvm::StringRef directory,
                       uint64_t maxBytes, llvm::ArrayRef<CacheEntryInfo> entries);

/// The `verify` summary.
void printVerifyReport(llvm::raw_ostream &os, const VerifyReport &report);

} // namespace tilejit::runtime

#endif // TILEJIT_RUNTIME_CACHECOMMAND_H
