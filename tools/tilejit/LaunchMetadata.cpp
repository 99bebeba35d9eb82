// The launch metadata JSON of `tilejit compile --meta` (see LaunchMetadata.h).
#include "LaunchMetadata.h"

using namespace llvm;

namespace tilejit::cli {

/// A tensor map parameter: what the launcher builds its descriptor from.
static json::Object tensorMapParam(StringRef name, const TensorMapSpec &map) {
  return json::Object{{"name", name},
                      {"kind", paramKindName(ParamKind::TensorMap)},
                      {"base", map.base},
                      {"sizes", json::Array{map.sizes[0], map.sizes[1]}},
                      {"size_args", json::Array{map.sizeArgs[0], map.sizeArgs[1]}},
                      {"row_stride", map.rowStride},
                      {"box", json::Array{map.box[0], map.box[1]}},
                      {"element_bytes", map.elementBytes}};
}

json::Value launchMetadata(const CompiledKernel &kernel, const Arch &arch) {
  json::Array params;
  for (const CompiledParam &param : kernel.params)
    params.push_back(
        json::Object{{"name", param.name}, {"kind", paramKindName(param.kind)}});
  // A launcher fills a persistent kernel's logical grid, and builds each
  // tensor map from its source's parameters.
  if (kernel.gridParams)
    for (unsigned axis : {0u, 1u})
      (*params[*kernel.gridParams + axis].getAsObject())["grid_axis"] = axis;
  for (const TensorMapSpec &map : kernel.tensorMaps)
    params[map.param] = tensorMapParam(kernel.params[map.param].name, map);
  return json::Object{{"entry", kernel.name},
                      {"arch", arch.name()},
                      {"threads", kernel.threads},
                      {"shared_bytes", kernel.sharedBytes},
                      {"programs_per_sm", kernel.programsPerSM},
                      {"waits_for_predecessors", kernel.waitsForPredecessors},
                      {"sums", kernel.reducedSums ? "reduced" : "exact"},
                      {"params", std::move(params)}};
}

} // namespace tilejit::cli
