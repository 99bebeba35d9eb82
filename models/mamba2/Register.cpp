// Registration of the model kernels with their constants (NemotronH defaults).
#include "tilejit/models/Kernels.h"

namespace tilejit::models {

llvm::Error registerModelKernels(KernelRegistry &registry) {
  if (auto err = registry.add(
          {"gated_rmsnorm",
           "R6 gated group RMSNorm: bf16(w * bf16(y*silu(z) * rsqrt(mean(v^2)+eps)))",
           {{"width", 4096, "channels per row (I = H*P)"},
            {"group_size", 512, "channels per norm group (I / G)"}},
           buildGatedRmsNorm}))
    return err;
  return registry.add({"conv_update",
                       "R3d causal conv1d update + SiLU, conv state shifted in place",
                       {{"channels", 6144, "conv channels (I + 2*G*N)"},
                        {"block", 256, "channels per program"}},
                       buildConvUpdate});
}

} // namespace tilejit::models
