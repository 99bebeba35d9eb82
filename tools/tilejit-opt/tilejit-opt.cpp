// tilejit-opt: mlir-opt for the tile dialect and tilejit's passes (drives the lit tests).
#include "tilejit/Pipeline/Pipeline.h"

#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  tilejit::registerCompilerDialects(registry);
  tilejit::registerCompilerPasses();
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "tilejit optimizer driver\n", registry));
}
