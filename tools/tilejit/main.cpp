// tilejit: the command-line driver (list, dump; more commands as the compiler grows).
#include "tilejit/Builder/KernelRegistry.h"
#include "tilejit/Pipeline/Pipeline.h"
#include "tilejit/models/Kernels.h"

#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/raw_ostream.h"

using namespace llvm;

namespace {

cl::SubCommand listCmd("list", "List the registered kernels and their constants");
cl::SubCommand dumpCmd("dump", "Print a kernel's IR at each compilation stage");

cl::opt<std::string> dumpKernel(cl::Positional, cl::desc("<kernel>"), cl::Required,
                                cl::sub(dumpCmd));
cl::opt<std::string> dumpStage("stage", cl::desc("tile (more stages arrive with lowering)"),
                               cl::init("tile"), cl::sub(dumpCmd));
cl::list<std::string> dumpSet("set", cl::desc("Override a kernel constant: name=value"),
                              cl::sub(dumpCmd));
cl::opt<std::string> dumpOut("out", cl::desc("Write each stage to a file in this folder"),
                             cl::sub(dumpCmd));

int fail(const Twine &message) {
  errs() << "tilejit: error: " << message << "\n";
  return 1;
}

int runList(const tilejit::KernelRegistry &registry) {
  for (const tilejit::KernelDef *def : registry.all()) {
    outs() << def->name << "\n    " << def->summary << "\n";
    for (const tilejit::KernelConstant &c : def->constants)
      outs() << "    " << c.name << " = " << c.defaultValue << "  (" << c.help << ")\n";
  }
  return 0;
}

int runDump(const tilejit::KernelRegistry &registry) {
  const tilejit::KernelDef *def = registry.find(dumpKernel);
  if (!def)
    return fail("unknown kernel '" + dumpKernel + "' (see 'tilejit list')");
  if (dumpStage != "tile")
    return fail("stage '" + dumpStage + "' is not available: this build lowers no further "
                "than the tile IR");
  auto spec = def->specialize(dumpSet);
  if (!spec)
    return fail(toString(spec.takeError()));
  mlir::DialectRegistry dialects;
  tilejit::registerCompilerDialects(dialects);
  mlir::MLIRContext ctx(dialects);
  auto module = def->build(ctx, *spec);
  if (!module)
    return fail(toString(module.takeError()));
  if (dumpOut.empty()) {
    (*module)->print(outs());
    return 0;
  }
  if (std::error_code ec = sys::fs::create_directories(dumpOut))
    return fail("cannot create '" + dumpOut + "': " + ec.message());
  std::string path = dumpOut + "/" + def->name + ".0-tile.mlir";
  std::error_code ec;
  raw_fd_ostream file(path, ec);
  if (ec)
    return fail("cannot write '" + path + "': " + ec.message());
  (*module)->print(file);
  outs() << "wrote " << path << "\n";
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  InitLLVM init(argc, argv);
  cl::ParseCommandLineOptions(argc, argv,
                              "tilejit: a JIT tile-kernel compiler for NVIDIA GPUs\n");
  tilejit::KernelRegistry &registry = tilejit::KernelRegistry::global();
  if (Error err = tilejit::models::registerModelKernels(registry))
    return fail(toString(std::move(err)));
  if (listCmd)
    return runList(registry);
  if (dumpCmd)
    return runDump(registry);
  cl::PrintHelpMessage();
  return 1;
}
