// conv_prefill's register layouts (ConvPrefill.cpp): every tile has the one
// layout, so the threads that load a channel's old conv state are the ones that
// store its new state, with no layout conversion between them.
#include "tilejit/Dialect/Tile/IR/TileOps.h"
#include "tilejit/Pipeline/Pipeline.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"

#include "ModelTestSupport.h"

#include <catch2/catch.hpp>

using namespace tilejit;
using namespace tilejit::models;
using namespace tilejit::models::testing;

TEST_CASE("conv_prefill: one register layout for every tile, so the threads that load a "
          "channel's old conv state are the ones that store its new state",
          "[e2e][prefill]") {
  const KernelDef *def = modelRegistry().find("conv_prefill");
  REQUIRE(def);
  mlir::DialectRegistry dialects;
  registerCompilerDialects(dialects);
  mlir::MLIRContext ctx(dialects);
  auto module = def->build(ctx, llvm::cantFail(def->specialize({})));
  REQUIRE(bool(module));
  mlir::PassManager pm(&ctx);
  buildTileLayoutPipeline(pm, llvm::cantFail(Arch::parse("sm_90a")));
  REQUIRE(mlir::succeeded(pm.run(**module)));
  int64_t conversions = 0, loads = 0, stores = 0;
  llvm::SmallPtrSet<mlir::Attribute, 2> layouts;
  (*module)->walk([&](mlir::Operation *op) {
    conversions += mlir::isa<tile::ConvertLayoutOp>(op);
    if (auto load = mlir::dyn_cast<tile::LoadOp>(op)) {
      ++loads;
      layouts.insert(load.getResult().getType().getEncoding());
    }
    if (auto store = mlir::dyn_cast<tile::StoreOp>(op)) {
      ++stores;
      layouts.insert(
          mlir::cast<mlir::RankedTensorType>(store.getValue().getType()).getEncoding());
    }
  });
  CHECK(conversions == 0);
  // 4 weight taps, bias, 3 old-state taps, 3 halo rows, 3 final-state rows
  // and rows_per_step (8) token rows; 3 new-state taps, 8 output rows and 8
  // zero rows of a padding sequence.
  CHECK(loads == 4 + 1 + 3 + 3 + 3 + 8);
  CHECK(stores == 3 + 8 + 8);
  CHECK(layouts.size() == 1);
}
