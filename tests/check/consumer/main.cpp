// Built against the installed tilejit package (tests/check/install.sh): opens
// a checkpoint directory and loads every Mamba layer of its config.
#include "tilejit/models/nemotron_h/NemotronH.h"

#include "llvm/Support/raw_ostream.h"

int main(int argc, char **argv) {
  if (argc != 2) {
    llvm::errs() << "usage: consumer CHECKPOINT_DIR\n";
    return 2;
  }
  auto checkpoint = tilejit::models::NemotronHCheckpoint::open(argv[1]);
  if (!checkpoint) {
    llvm::errs() << "consumer: " << llvm::toString(checkpoint.takeError()) << "\n";
    return 1;
  }
  llvm::outs() << "Mamba layers:";
  for (int64_t layer : checkpoint->config().mambaLayers()) {
    auto weights = checkpoint->loadMambaLayer(layer);
    if (!weights) {
      llvm::errs() << "consumer: " << llvm::toString(weights.takeError()) << "\n";
      return 1;
    }
    llvm::outs() << " " << layer;
  }
  llvm::outs() << "\n";
  return 0;
}
