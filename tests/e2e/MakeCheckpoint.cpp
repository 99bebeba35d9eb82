// tilejit-test-checkpoint: writes the reduced published-layout NemotronH
// checkpoint of tests/fixtures/PublishedCheckpoint.h into a directory, for the
// `tilejit run --model` tests and the GPU session's model part.
// Usage: tilejit-test-checkpoint DIR [--block-types] [--prefix PREFIX]
#include "../fixtures/PublishedCheckpoint.h"

#include "llvm/Support/FileSystem.h"

#include <cstring>

int main(int argc, char **argv) {
  bool blockTypes = false, usage = argc < 2;
  std::string prefix;
  for (int i = 2; i < argc && !usage; ++i) {
    if (std::strcmp(argv[i], "--block-types") == 0)
      blockTypes = true;
    else if (std::strcmp(argv[i], "--prefix") == 0 && i + 1 < argc)
      prefix = argv[++i];
    else
      usage = true;
  }
  if (usage) {
    llvm::errs()
        << "usage: tilejit-test-checkpoint DIR [--block-types] [--prefix PREFIX]\n";
    return 2;
  }
  namespace fx = tilejit::models::fixtures;
  if (std::error_code ec = llvm::sys::fs::create_directories(argv[1])) {
    llvm::errs() << "tilejit-test-checkpoint: cannot create " << argv[1] << ": "
                 << ec.message() << "\n";
    return 1;
  }
  if (llvm::Error err = fx::writePublishedCheckpoint(
          argv[1], fx::smallPublishedConfig(blockTypes), fx::kSmallQuantConfig, prefix)) {
    llvm::errs() << "tilejit-test-checkpoint: " << llvm::toString(std::move(err)) << "\n";
    return 1;
  }
  llvm::outs() << "wrote " << argv[1] << "\n";
  return 0;
}
