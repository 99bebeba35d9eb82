// Test passes that print what the analyses tile-assign-layouts,
// tile-pipeline-dots and tile-warp-specialize share decided, as remarks on
// each dot (tests/lit/Dialect/Tile/test-dot-paths.mlir and
// test-staged-operands.mlir check them with -verify-diagnostics). tilejit-opt
// registers them; no pipeline runs them.
#include "../Staging.h"
#include "tilejit/Dialect/Tile/IR/Layouts.h"
#include "tilejit/Dialect/Tile/Transforms/TestPasses.h"

#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassRegistry.h"

using namespace mlir;

namespace tilejit::tile {
namespace {

/// -test-tile-dot-paths: whyNotWgmma for every dot, as an arch with wgmma
/// would ask it (run on tile IR before tile-assign-layouts).
struct TestDotPaths : PassWrapper<TestDotPaths, OperationPass<KernelOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(TestDotPaths)
  StringRef getArgument() const final { return "test-tile-dot-paths"; }
  StringRef getDescription() const final {
    return "Remark, for every dot, whether wgmma could compute it and why not";
  }
  void runOnOperation() override {
    const int64_t numWarps = getNumWarps(getOperation());
    getOperation().walk([&](DotOp dot) {
      std::string why = whyNotWgmma(dot, numWarps);
      dot.emitRemark() << (!why.empty()        ? "mma.sync, since " + why
                           : wgmmaStagesA(dot) ? std::string("wgmma")
                                               : "wgmma, A from registers");
    });
  }
};

/// -test-tile-staged-operands: for every operand of every dot in a loop,
/// whether it can be staged through shared memory and why not (run after
/// tile-assign-layouts, whose conversions the staging matches).
struct TestStagedOperands : PassWrapper<TestStagedOperands, OperationPass<KernelOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(TestStagedOperands)
  StringRef getArgument() const final { return "test-tile-staged-operands"; }
  StringRef getDescription() const final {
    return "Remark, for every dot operand in a loop, whether it can be staged through "
           "shared memory and why not";
  }
  void runOnOperation() override {
    getOperation().walk([](scf::ForOp loop) {
      forEachDotOperand(loop, [](DotOp dot, unsigned opIdx,
                                 const std::optional<StagedOperand> &, StringRef why) {
        dot.emitRemark() << "operand " << (opIdx ? "B" : "A") << ": "
                         << (why.empty() ? "staged through shared memory"
                                         : "stays in registers, since " + why.str());
      });
    });
  }
};

} // namespace

void registerTileTestPasses() {
  PassRegistration<TestDotPaths>();
  PassRegistration<TestStagedOperands>();
}

} // namespace tilejit::tile
