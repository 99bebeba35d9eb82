// The fuzz targets of tilejit-fuzz (docs/hardening.md): each reads one kind of
// untrusted input the way the product does, and must end every input with an
// error value, never a crash, a sanitizer report or a broken invariant.
#ifndef TILEJIT_TESTS_FUZZ_FUZZTARGETS_H
#define TILEJIT_TESTS_FUZZ_FUZZTARGETS_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <map>
#include <string>

namespace tilejit::fuzz {

/// Seed inputs by file name.
using Seeds = std::map<std::string, std::string>;

struct FuzzTarget {
  /// What --target= selects.
  const char *name;
  /// Runs one input.
  void (*run)(llvm::ArrayRef<uint8_t> input);
  /// The seed corpus, built by the product's own writers or from the tests'
  /// inputs (`sourceDir` is the repository root).
  Seeds (*seeds)(llvm::StringRef sourceDir);
};

void runIr(llvm::ArrayRef<uint8_t> input);
Seeds irSeeds(llvm::StringRef sourceDir);
void runPipeline(llvm::ArrayRef<uint8_t> input);
Seeds pipelineSeeds(llvm::StringRef sourceDir);
void runKernels(llvm::ArrayRef<uint8_t> input);
Seeds kernelSeeds(llvm::StringRef sourceDir);

void runConfig(llvm::ArrayRef<uint8_t> input);
Seeds configSeeds(llvm::StringRef sourceDir);
void runSafetensors(llvm::ArrayRef<uint8_t> input);
Seeds safetensorsSeeds(llvm::StringRef sourceDir);
void runCheckpoint(llvm::ArrayRef<uint8_t> input);
Seeds checkpointSeeds(llvm::StringRef sourceDir);
void runCheckpointIndex(llvm::ArrayRef<uint8_t> input);
Seeds checkpointIndexSeeds(llvm::StringRef sourceDir);

void runCacheEntry(llvm::ArrayRef<uint8_t> input);
Seeds cacheEntrySeeds(llvm::StringRef sourceDir);

void runTuneDb(llvm::ArrayRef<uint8_t> input);
Seeds tuneDbSeeds(llvm::StringRef sourceDir);

/// The geometry of tests/unit/CheckpointTest.cpp (layer 0 bf16, layer 2 FP8),
/// the config of the checkpoint targets' seeds.
extern const char *const smallConfig;

/// A directory private to this process, created on first use and removed at
/// exit; fuzz inputs that the product reads from files are written here.
const std::string &scratchDir();
/// Writes `bytes` to `path`, replacing it; aborts when it cannot (the harness,
/// not the product, failed).
void writeFileOrDie(const std::string &path, llvm::StringRef bytes);
/// Aborts with `what` when `ok` is false: a broken invariant is a finding.
void check(bool ok, const char *what);

} // namespace tilejit::fuzz

#endif // TILEJIT_TESTS_FUZZ_FUZZTARGETS_H
