// tilejit-fuzz: one libFuzzer binary for every target (each MLIR link costs
// time and disk). Usage (docs/hardening.md):
//   tilejit-fuzz --target=NAME [libFuzzer flags] [CORPUS_DIR...]
//   tilejit-fuzz --target=NAME --make-seeds=DIR   writes the seed corpus, exits
//   tilejit-fuzz --list                           prints the target names
// libFuzzer ignores flags that start with "--" and hands them to its workers.
#include "FuzzTargets.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

using namespace tilejit::fuzz;

namespace {

constexpr FuzzTarget targets[] = {
    {"cache-entry", runCacheEntry, cacheEntrySeeds},
    {"checkpoint", runCheckpoint, checkpointSeeds},
    {"checkpoint-index", runCheckpointIndex, checkpointIndexSeeds},
    {"config", runConfig, configSeeds},
    {"ir", runIr, irSeeds},
    {"kernels", runKernels, kernelSeeds},
    {"pipeline", runPipeline, pipelineSeeds},
    {"safetensors", runSafetensors, safetensorsSeeds},
    {"tune-db", runTuneDb, tuneDbSeeds},
};

const FuzzTarget *selected = nullptr;

[[noreturn]] void usage(const char *problem) {
  std::fprintf(stderr,
               "tilejit-fuzz: %s\nusage: tilejit-fuzz --target=NAME "
               "[--make-seeds=DIR] [libFuzzer flags] [corpus...]\ntargets:",
               problem);
  for (const FuzzTarget &t : targets)
    std::fprintf(stderr, " %s", t.name);
  std::fprintf(stderr, "\n");
  std::exit(2);
}

int makeSeeds(const FuzzTarget &target, llvm::StringRef dir) {
  if (std::error_code ec = llvm::sys::fs::create_directories(dir))
    usage(("cannot create " + dir.str() + ": " + ec.message()).c_str());
  Seeds seeds = target.seeds(TILEJIT_SOURCE_DIR);
  for (const auto &[name, bytes] : seeds) {
    llvm::SmallString<256> path(dir);
    llvm::sys::path::append(path, name);
    writeFileOrDie(std::string(path), bytes);
  }
  llvm::outs() << "tilejit-fuzz: " << seeds.size() << " " << target.name << " seeds in "
               << dir << "\n";
  return seeds.empty() ? 1 : 0;
}

} // namespace

namespace tilejit::fuzz {

const std::string &scratchDir() {
  static const std::string dir = [] {
    llvm::SmallString<128> path;
    if (llvm::sys::fs::createUniqueDirectory("tilejit-fuzz", path))
      check(false, "cannot create a scratch directory");
    std::string result(path);
    static std::string toRemove = result;
    std::atexit([] { llvm::sys::fs::remove_directories(toRemove); });
    return result;
  }();
  return dir;
}

void writeFileOrDie(const std::string &path, llvm::StringRef bytes) {
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec);
  if (!ec) {
    os << bytes;
    os.close();
  }
  if (ec || os.has_error()) {
    std::fprintf(stderr, "tilejit-fuzz: cannot write %s\n", path.c_str());
    std::abort();
  }
}

void check(bool ok, const char *what) {
  if (ok)
    return;
  std::fprintf(stderr, "tilejit-fuzz: invariant broken: %s\n", what);
  std::abort();
}

} // namespace tilejit::fuzz

// Debian's MLIR archives are not instrumented: their inlined copies of
// BumpPtrAllocator::Allocate never unpoison what this binary's instrumented
// AllocateSlow poisoned, which ASan reports as a use-after-poison inside
// MLIR. The allocators' own poisoning is switched off; every access is still
// checked against real allocations.
extern "C" const char *__asan_default_options() { return "allow_user_poisoning=0"; }

extern "C" int LLVMFuzzerInitialize(int *argc, char ***argv) {
  const char *makeSeedsDir = nullptr;
  for (int i = 1; i < *argc; ++i) {
    llvm::StringRef arg = (*argv)[i];
    if (arg.consume_front("--target=")) {
      for (const FuzzTarget &t : targets)
        if (arg == t.name)
          selected = &t;
      if (!selected)
        usage(("unknown target '" + arg.str() + "'").c_str());
    } else if (arg == "--list") {
      for (const FuzzTarget &t : targets)
        std::printf("%s\n", t.name);
      std::exit(0);
    } else if (arg.starts_with("--make-seeds=")) {
      makeSeedsDir = (*argv)[i] + std::strlen("--make-seeds=");
    }
  }
  if (!selected)
    usage("no --target= given");
  if (makeSeedsDir)
    std::exit(makeSeeds(*selected, makeSeedsDir));
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  selected->run(llvm::ArrayRef<uint8_t>(data, size));
  return 0;
}
