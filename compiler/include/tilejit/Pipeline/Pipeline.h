// Named pipelines and registration shared by tilejit-opt, the CLI and the JIT.
#ifndef TILEJIT_PIPELINE_PIPELINE_H
#define TILEJIT_PIPELINE_PIPELINE_H

#include "mlir/IR/DialectRegistry.h"

namespace tilejit {

/// Registers every dialect a tile kernel may contain at any stage.
void registerCompilerDialects(mlir::DialectRegistry &registry);

/// Registers tilejit's passes and the upstream ones its pipelines use, so
/// tilejit-opt can run each of them by name.
void registerCompilerPasses();

} // namespace tilejit

#endif // TILEJIT_PIPELINE_PIPELINE_H
