// The MLIR context of the IR-reading fuzz targets: one per process, replaced
// every so many inputs (a context keeps every type and attribute it ever
// uniqued, so a long run would only grow), its diagnostics silenced (bad
// input's diagnostics are the expected outcome; printing them slows the run).
#ifndef TILEJIT_TESTS_FUZZ_FUZZCONTEXT_H
#define TILEJIT_TESTS_FUZZ_FUZZCONTEXT_H

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"

#include <functional>
#include <memory>
#include <optional>

namespace tilejit::fuzz {

class FuzzContext {
public:
  FuzzContext(unsigned inputsPerContext,
              std::function<std::unique_ptr<mlir::MLIRContext>()> make)
      : inputsPerContext(inputsPerContext), make(std::move(make)) {}

  /// The context for the next input.
  mlir::MLIRContext &next() {
    if (!context || ++uses % inputsPerContext == 0) {
      quiet.reset();
      context = make();
      quiet.emplace(context.get(), [](mlir::Diagnostic &) { return mlir::success(); });
    }
    return *context;
  }

private:
  unsigned inputsPerContext, uses = 0;
  std::function<std::unique_ptr<mlir::MLIRContext>()> make;
  std::unique_ptr<mlir::MLIRContext> context;
  std::optional<mlir::ScopedDiagnosticHandler> quiet;
};

} // namespace tilejit::fuzz

#endif // TILEJIT_TESTS_FUZZ_FUZZCONTEXT_H
