// The checks every plan passes when it is built, so that a plan that exists
// can run: no launch of an empty grid (work it would silently skip) or of a
// grid CUDA refuses, no argument naming an undeclared buffer, buffers whose
// bytes fit the host, and no --set override left unused.
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

/// Checks `--set KERNEL.CONSTANT=V` style overrides against `registry` before
/// any plan is made: the kernel is registered, the constant is one of its
/// own and the value an integer (ranges and rules are checked when the plan
/// specializes the kernel at its geometry).
llvm::Error checkOverrideNames(const KernelRegistry &registry,
                               const KernelOverrides &overrides);

} // namespace tilejit::models

#endif // TILEJIT_MODELS_PLAN_VALIDATE_H
