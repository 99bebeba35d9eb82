// Plan checks (models/plan/Validate.h): a plan whose launch has an empty grid, a
// grid CUDA refuses, an integer argument past i32 or an undeclared buffer, or whose
// buffers would not fit the host, is refused when it is built; so is a --set naming a
// kernel that is not registered, not launched, or a constant it lacks, or one that
// is not KERNEL.CONSTANT=VALUE.
#include "tilejit/models/mamba2/Kernels.h"
#include "tilejit/models/plan/Validate.h"

#include <catch2/catch.hpp>

using namespace tilejit;
using namespace tilejit::models;

namespace {

/// One launch of `kernel` over `grid`, reading buffer "x" (1024 f32).
StepPlan onePlan(std::array<int64_t, 3> grid, std::string buffer = "x") {
  StepPlan plan;
  plan.addBuffer("x", PlanBuffer::Role::Activation, DType::F32, {1024});
  plan.launches.push_back({"ssd_prefill", {}, grid, {PlanArg::of(buffer)}, 3});
  return plan;
}

std::string refusal(const StepPlan &plan, const KernelOverrides &overrides = {},
                    uint64_t hostBytes = UINT64_MAX) {
  llvm::Error err = validatePlan(plan, overrides, hostBytes);
  REQUIRE(bool(err));
  return llvm::toString(std::move(err));
}

const KernelRegistry &kernels() {
  static const KernelRegistry *registry = [] {
    auto *r = new KernelRegistry();
    llvm::cantFail(registerModelKernels(*r));
    return r;
  }();
  return *registry;
}

} // namespace

TEST_CASE("a plan never launches an empty grid, or one CUDA refuses",
          "[plan][badinput]") {
  CHECK(!validatePlan(onePlan({1, 64, 1}), {}, UINT64_MAX));
  CHECK(refusal(onePlan({0, 64, 1})) ==
        "plan: launch 0 (ssd_prefill of layer 3) has an empty grid [0, 64, 1]: its work "
        "would never run");
  CHECK(
      refusal(onePlan({1, 100000, 1})) ==
      "plan: launch 0 (ssd_prefill of layer 3) needs 100000 programs along grid axis y, "
      "over CUDA's limit of 65535");
  CHECK(
      refusal(onePlan({1, 1, 1}, "y")) ==
      "plan: launch 0 (ssd_prefill of layer 3) reads buffer 'y', which the plan does not "
      "declare");
}

TEST_CASE("a plan never passes a kernel an integer its i32 parameter cannot hold",
          "[plan][badinput]") {
  // 2^31 tokens would reach the kernel's i32 `rows` as -2^31 (the runners pass i32).
  StepPlan plan = onePlan({1, 1, 1});
  plan.launches[0].args.push_back(PlanArg::integer(int64_t(1) << 31));
  CHECK(refusal(plan) == "plan: launch 0 (ssd_prefill of layer 3) passes 2147483648 as "
                         "argument 1, which does not fit the kernel's i32");
  plan.launches[0].args.back() = PlanArg::integer(INT32_MAX);
  CHECK(!validatePlan(plan, {}, UINT64_MAX));
}

TEST_CASE("a plan whose buffers would not fit the host says what it needs",
          "[plan][badinput]") {
  StepPlan plan = onePlan({1, 1, 1});
  plan.addBuffer("zxbcdt", PlanBuffer::Role::Activation, DType::BF16,
                 {int64_t(1) << 31, 10304});
  plan.addBuffer("w", PlanBuffer::Role::Weight, DType::F8E4M3, {1 << 30});
  CHECK(
      refusal(plan, {}, uint64_t(16) << 30) ==
      "plan: its buffers need 44.3 TB of host memory (the largest, 'zxbcdt' "
      "[2147483648, 10304], 44.3 TB), more than the 17.2 GB available: use fewer rows or "
      "tokens");
  plan.buffers["x"].bytes = 12;
  CHECK(refusal(plan) == "plan: buffer 'x' holds 12 bytes, its shape [1024] of f32 needs "
                         "4096");
}

TEST_CASE("a --set names a registered kernel the plan launches and a constant it has",
          "[plan][badinput]") {
  auto read = [](std::vector<std::string> settings) {
    return parseKernelSettings(kernels(), settings,
                               [](llvm::StringRef s) { return ("--set " + s).str(); });
  };
  auto refused = [&](std::vector<std::string> settings) {
    auto overrides = read(std::move(settings));
    REQUIRE(!overrides);
    return llvm::toString(overrides.takeError());
  };
  auto overrides = read({"ssd_prefill.block_p=16", "ssd_prefill.warps=8"});
  REQUIRE(bool(overrides));
  CHECK(*overrides == KernelOverrides{{"ssd_prefill", {{"block_p", 16}, {"warps", 8}}}});
  CHECK(refused({"bogus.block=4"}) ==
        "--set bogus.block=4: no kernel 'bogus' is registered (kernels: check_varlen, "
        "conv_prefill, "
        "conv_update, gated_rmsnorm, in_proj_conv, out_proj, quantize_e4m3, split_k_sum, "
        "ssd_chunk_scan, ssd_prefill, "
        "ssd_span_state, ssd_state_pass, ssm_update, varlen_pieces)");
  CHECK(
      refused({"ssm_update.blok_p=16"}) ==
      "--set ssm_update.blok_p=16: kernel 'ssm_update' has no constant 'blok_p' (it has: "
      "heads, head_dim, state, groups, block_p, warps, a_log, dt_softplus, dt_stride, "
      "dt_col, "
      "y_f32, dst_slots, slots_i64, checked, dependent, y_type, x_type, dt_type, b_type, "
      "c_type, z_type, d_type, dt_bias_type, a_type, state_type, split, x_stride, "
      "b_stride, c_stride, gate, z_stride, per_p, varlen, cu_seqlens_i64, spec, "
      "accepted_i64, slots_stride, dst_stride, stochastic, random_mixes, pad_id)");
  CHECK(refused({"ssm_update.block_p=x"}) ==
        "--set ssm_update.block_p=x: constant 'block_p' needs an integer, got 'x'");
  CHECK(refused({"block_p=16"}) == "--set block_p=16: expected KERNEL.CONSTANT=VALUE");
  // Ranges wait for the plan's geometry.
  CHECK(bool(read({"ssm_update.block_p=0"})));
  // Registered, but not a kernel of this plan: the setting would do nothing.
  CHECK(
      refusal(onePlan({1, 1, 1}), {{"conv_update", {{"block", 64}}}}) ==
      "plan: --set conv_update.block=64: the plan launches no 'conv_update' (it launches "
      "ssd_prefill)");
}
