// Registration of dialects and passes, and the named pipelines.
#include "tilejit/Pipeline/Pipeline.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Transforms/Passes.h"
#include "tilejit/Dialect/Tile/IR/TileOps.h"

namespace tilejit {

void registerCompilerDialects(mlir::DialectRegistry &registry) {
  registry.insert<tile::TileDialect, mlir::arith::ArithDialect, mlir::math::MathDialect,
                  mlir::scf::SCFDialect>();
}

void registerCompilerPasses() {
  mlir::registerCanonicalizerPass();
  mlir::registerCSEPass();
}

} // namespace tilejit
