// ptxas as the fuzz targets' judge of emitted PTX: every kernel the pipeline
// compiles must assemble for its arch with CUDA's own assembler.
#ifndef TILEJIT_TESTS_FUZZ_PTXAS_H
#define TILEJIT_TESTS_FUZZ_PTXAS_H

#include "llvm/ADT/StringRef.h"

namespace tilejit::fuzz {

/// Assembles `ptx` for `arch` with ptxas (PATH or /usr/local/cuda/bin) and
/// aborts with ptxas's message when it refuses: a finding. Without ptxas the
/// check is skipped, said once on stderr.
void checkPtxAssembles(llvm::StringRef ptx, llvm::StringRef arch);

} // namespace tilejit::fuzz

#endif // TILEJIT_TESTS_FUZZ_PTXAS_H
