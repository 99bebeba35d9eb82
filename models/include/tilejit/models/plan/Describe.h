// A plan as text: what the front doors print for `tilejit run --dry-run`, the
// embedding API's Session::describeDecode and Python's describe_plan, and what
// the test that holds them to one plan compares.
#ifndef TILEJIT_MODELS_PLAN_DESCRIBE_H
#define TILEJIT_MODELS_PLAN_DESCRIBE_H

#include "tilejit/models/plan/StepPlan.h"

#include <string>

namespace tilejit::models {

/// Every launch of `plan` in order (kernel, role, layer, weight slot, grid,
/// constants, arguments, bytes read and written), then every buffer in name
/// order (role, element type, shape, layer): one line each, deterministic, so
/// equal plans give equal text.
std::string describePlan(const StepPlan &plan);

} // namespace tilejit::models

#endif // TILEJIT_MODELS_PLAN_DESCRIBE_H
