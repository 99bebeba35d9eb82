// merge-shuffles: identical nvvm.shfl.sync ops of one block become one.
#include "tilejit/Conversion/TileToLLVM/Passes.h"

#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/IR/OperationSupport.h"

namespace tilejit {
#define GEN_PASS_DEF_MERGESHUFFLES
#include "tilejit/Conversion/TileToLLVM/Passes.h.inc"
} // namespace tilejit

using namespace mlir;

namespace {

struct MergeShufflesPass : tilejit::impl::MergeShufflesBase<MergeShufflesPass> {
  void runOnOperation() override {
    getOperation()->walk([](Block *block) {
      // A block holds at most a few hundred shuffles: a linear search each.
      SmallVector<NVVM::ShflOp> kept;
      for (Operation &op : llvm::make_early_inc_range(*block)) {
        auto shfl = dyn_cast<NVVM::ShflOp>(op);
        if (!shfl)
          continue;
        auto same = llvm::find_if(kept, [&](NVVM::ShflOp k) {
          return OperationEquivalence::isEquivalentTo(
              k, shfl, OperationEquivalence::exactValueMatch, nullptr,
              OperationEquivalence::IgnoreLocations);
        });
        if (same == kept.end()) {
          kept.push_back(shfl);
          continue;
        }
        shfl.getResult().replaceAllUsesWith(same->getResult());
        shfl.erase();
      }
    });
  }
};

} // namespace
