// tilejit-opt: mlir-opt for the tile dialect and tilejit's passes (drives the lit tests).
#include "tilejit/Pipeline/Pipeline.h"

#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Debug.h"

#include <string>
#include <vector>

namespace {

/// -debug and -debug-only, for the LLVM_DEBUG traces of tilejit's passes. An
/// LLVM built without assertions (Debian's) registers neither option, though
/// tilejit's own code keeps its traces (our build keeps assertions, so
/// LLVM_DEBUG is compiled in); these set llvm::DebugFlag and the debug types
/// as LLVM's own options do, and stand aside when LLVM has them.
void registerDebugOptions() {
  if (llvm::cl::getRegisteredOptions().count("debug-only"))
    return;
  static llvm::cl::opt<bool> debug(
      "debug", llvm::cl::desc("Print every LLVM_DEBUG trace"), llvm::cl::Hidden,
      llvm::cl::callback([](const bool &on) { llvm::DebugFlag |= on; }));
  static std::vector<std::string> types;
  static llvm::cl::list<std::string> debugOnly(
      "debug-only",
      llvm::cl::desc("Print the LLVM_DEBUG traces of these DEBUG_TYPEs (comma-separated, "
                     "e.g. tile-assign-layouts)"),
      llvm::cl::CommaSeparated, llvm::cl::value_desc("type"), llvm::cl::Hidden,
      llvm::cl::callback([](const std::string &type) {
        types.push_back(type);
        std::vector<const char *> names;
        for (const std::string &t : types)
          names.push_back(t.c_str());
        llvm::setCurrentDebugTypes(names.data(), names.size());
        llvm::DebugFlag = true;
      }));
}

} // namespace

int main(int argc, char **argv) {
  registerDebugOptions();
  mlir::DialectRegistry registry;
  tilejit::registerCompilerDialects(registry);
  tilejit::registerCompilerPasses();
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "tilejit optimizer driver\n", registry));
}
