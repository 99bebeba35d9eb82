// tilejit-test-checkpoint: writes the reduced published-layout NemotronH
// checkpoint of tests/fixtures/PublishedCheckpoint.h into a directory, for the
// `tilejit run --model` tests. Usage: tilejit-test-checkpoint DIR [--block-types]
#include "../fixtures/PublishedCheckpoint.h"

#include "llvm/Support/FileSystem.h"

#include <cstring>

int main(int argc, char **argv) {
  if (argc < 2 || argc > 3 || (argc == 3 && std::strcmp(argv[2], "--block-types") != 0)) {
    llvm::errs() << "usage: tilejit-test-checkpoint DIR [--block-types]\n";
    return 2;
  }
  namespace fx = tilejit::models::fixtures;
  if (std::error_code ec = llvm::sys::fs::create_directories(argv[1])) {
    llvm::errs() << "tilejit-test-checkpoint: cannot create " << argv[1] << ": "
                 << ec.message() << "\n";
    return 1;
  }
  if (llvm::Error err = fx::writePublishedCheckpoint(
          argv[1], fx::smallPublishedConfig(/*blockTypes=*/argc == 3),
          fx::kSmallQuantConfig)) {
    llvm::errs() << "tilejit-test-checkpoint: " << llvm::toString(std::move(err)) << "\n";
    return 1;
  }
  llvm::outs() << "wrote " << argv[1] << "\n";
  return 0;
}
