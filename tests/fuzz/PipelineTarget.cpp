// The `pipeline` target: tile IR text through everything the JIT does with it
// (parse and verify with the compiler's dialects, compileToPTX: the layout and
// LLVM pipelines, LLVM IR, the NVPTX backend) for the arch the input's first
// byte picks. Each input must end in a diagnostic or in PTX that ptxas
// assembles for that arch. Unregistered ops parse, as tilejit-opt allows
// them, so that the lowering meets what it must refuse. Seeds: the `ir`
// target's (the lit tests, one per split), the archs taking turns.
#include "FuzzContext.h"
#include "FuzzTargets.h"
#include "Ptxas.h"

#include "tilejit/Pipeline/Pipeline.h"
#include "tilejit/support/IrText.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Parser/Parser.h"

namespace tilejit::fuzz {
namespace {

const char *const archs[] = {"sm_90", "sm_90a", "sm_110a", "sm_121a"};
constexpr unsigned numArchs = sizeof(archs) / sizeof(archs[0]);

constexpr unsigned inputsPerContext = 200;

std::unique_ptr<mlir::MLIRContext> makeContext() {
  mlir::DialectRegistry registry;
  registerCompilerDialects(registry);
  auto context = std::make_unique<mlir::MLIRContext>(
      registry, mlir::MLIRContext::Threading::DISABLED);
  context->allowUnregisteredDialects();
  context->loadAllAvailableDialects();
  return context;
}

} // namespace

void runPipeline(llvm::ArrayRef<uint8_t> input) {
  if (input.empty())
    return;
  static FuzzContext contexts(inputsPerContext, makeContext);
  mlir::MLIRContext *context = &contexts.next();
  auto arch = Arch::parse(archs[input[0] % numArchs]);
  check(bool(arch), "a listed arch does not parse");
  // NUL-terminated, as the parser needs (see the `ir` target).
  const std::string text(reinterpret_cast<const char *>(input.data()) + 1,
                         input.size() - 1);
  if (llvm::Error err = support::checkIrNesting(text)) {
    llvm::consumeError(std::move(err));
    return;
  }
  auto module =
      mlir::parseSourceString<mlir::ModuleOp>(text, mlir::ParserConfig(context));
  if (!module)
    return;
  auto compiled = compileToPTX(*module, *arch);
  if (!compiled) {
    llvm::consumeError(compiled.takeError());
    return;
  }
  check(!compiled->ptx.empty() && compiled->threads > 0,
        "a kernel compiled to no PTX or no threads");
  checkPtxAssembles(compiled->ptx, arch->name());
}

Seeds pipelineSeeds(llvm::StringRef sourceDir) {
  // The archs take turns: every seed compiles once, and each arch gets a
  // share of them (the fuzzer mutates the first byte too).
  Seeds seeds;
  unsigned turn = 0;
  for (const auto &[name, text] : irSeeds(sourceDir)) {
    unsigned a = turn++ % numArchs;
    seeds[std::string(archs[a]) + "-" + name] = std::string(1, char(a)) + text;
  }
  return seeds;
}

} // namespace tilejit::fuzz
