// sumKernelTimes (models/plan/Timing.h): the step's launches summed at their
// kinds' times, which `tilejit run` prints beside the measured step.
#include "tilejit/models/plan/Timing.h"

#include <catch2/catch.hpp>

using namespace tilejit::models;

namespace {

PlannedLaunch launchOf(std::string kernel, std::string role, std::string variant) {
  PlannedLaunch launch{std::move(kernel), {}, {1, 1, 1}, {}, 0};
  launch.role = std::move(role);
  launch.variant = std::move(variant);
  return launch;
}

KernelTime timeOf(std::string kernel, std::string role, std::string variant, double us,
                  double floorUs) {
  KernelTime t;
  t.kernel = std::move(kernel);
  t.role = std::move(role);
  t.variant = std::move(variant);
  t.us = us;
  t.floorUs = floorUs;
  return t;
}

} // namespace

TEST_CASE("a step's kernel sum counts every launch at its own kind's time", "[plan]") {
  StepPlan plan;
  // Three FP8 layers and one bf16 layer of the same two kernels: one timed
  // launch per (kernel, role, variant) stands for all launches of its kind.
  for (int layer = 0; layer < 3; ++layer) {
    plan.launches.push_back(launchOf("out_proj", "in_proj", "fp8 layer"));
    plan.launches.push_back(launchOf("ssm_update", "ssm_update", "fp8 layer"));
  }
  plan.launches.push_back(launchOf("out_proj", "in_proj", "bf16 layer"));
  plan.launches.push_back(launchOf("ssm_update", "ssm_update", "bf16 layer"));
  // The same kernel in another role is another kind (prefill's in_proj GEMM
  // is the out_proj kernel): it must not take the in_proj role's time.
  plan.launches.push_back(launchOf("out_proj", "out_proj", "fp8 layer"));
  std::vector<KernelTime> times = {
      timeOf("out_proj", "in_proj", "fp8 layer", 10, 8),
      timeOf("ssm_update", "ssm_update", "fp8 layer", 2, 1.5),
      timeOf("out_proj", "in_proj", "bf16 layer", 20, 16),
      timeOf("ssm_update", "ssm_update", "bf16 layer", 2.5, 1.5),
  };
  KernelSum sum = sumKernelTimes(plan, times);
  CHECK(sum.us == 3 * (10 + 2) + 20 + 2.5);
  CHECK(sum.floorUs == 3 * (8 + 1.5) + 16 + 1.5);
  CHECK(sum.untimed == 1);

  times.push_back(timeOf("out_proj", "out_proj", "fp8 layer", 4, 3));
  sum = sumKernelTimes(plan, times);
  CHECK(sum.us == 3 * (10 + 2) + 20 + 2.5 + 4);
  CHECK(sum.untimed == 0);
}
