// The checks every plan passes when it is built, so that a plan that exists
// can run: no launch of an empty grid (work it would silently skip) or of a
// grid CUDA refuses, no argument naming an undeclared buffer, buffers whose
// bytes fit the host, and no --set override left unused; and the one reader of
// the settings that become a plan's overrides.
#ifndef TILEJIT_MODELS_PLAN_VALIDATE_H
#define TILEJIT_MODELS_PLAN_VALIDATE_H

#include "tilejit/models/plan/StepPlan.h"

namespace tilejit::models {

/// Checks `plan`: every launch's grid in [1, 2^31 - 1] x [1, 65535] x
/// [1, 65535], every buffer argument declared, every integer argument within
/// i32 (the type of the kernels' integer parameters), every buffer's bytes its
/// shape times its element size (overflow-checked), the buffers a run
/// allocates on the host (allocateHostBuffers), and `referenceCopies` times
/// their bytes more for a check's f64 reference, within `hostBytes`, and every
/// kernel named in `overrides` launched by the plan. Errors name the launch,
/// its kernel and layer, and the numbers that disagree.
llvm::Error validatePlan(const StepPlan &plan, const KernelOverrides &overrides,
                         uint64_t hostBytes, unsigned referenceCopies = 0);
/// The same, against what this process may still allocate
/// (support::allocatableMemoryBytes).
llvm::Error validatePlan(const StepPlan &plan, const KernelOverrides &overrides = {},
                         unsigned referenceCopies = 0);

/// Reads "KERNEL.CONSTANT=VALUE" settings (the CLI's `run --set`, the
/// embedding API's session settings) with parseConstantSetting into per-kernel
/// overrides before any plan is made: each names a registered kernel, one of
/// its constants and an integer (ranges and rules are checked when the plan
/// specializes the kernel at its geometry). An error names the setting as
/// `quote` writes it ("--set S", "setting 'S'") and what is wrong with it.
llvm::Expected<KernelOverrides>
parseKernelSettings(const KernelRegistry &registry, llvm::ArrayRef<std::string> settings,
                    llvm::function_ref<std::string(llvm::StringRef)> quote);

} // namespace tilejit::models

#endif // TILEJIT_MODELS_PLAN_VALIDATE_H
