// `tilejit compile --meta`: the launch metadata of a compiled kernel as JSON,
// all the runtime records for it, so a launcher outside tilejit can run the PTX.
#ifndef TILEJIT_TOOLS_TILEJIT_LAUNCHMETADATA_H
#define TILEJIT_TOOLS_TILEJIT_LAUNCHMETADATA_H

#include "tilejit/Pipeline/Pipeline.h"

#include "llvm/Support/JSON.h"

namespace tilejit::cli {

/// The entry, arch, threads per program, dynamic shared bytes, programs per
/// multiprocessor, whether it waits for its predecessors, its sums (exact or
/// reduced) and its parameters with their kinds; a parameter the launcher
/// supplies says so (`grid_axis`, or a tensor map's source and box).
llvm::json::Value launchMetadata(const CompiledKernel &kernel, const Arch &arch);

} // namespace tilejit::cli

#endif // TILEJIT_TOOLS_TILEJIT_LAUNCHMETADATA_H
