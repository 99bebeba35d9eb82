// Split-K projections (out_proj's k_splits, split_k_sum) in decode plans on
// the interpreter: carried steps against the sequential f64 reference with the
// R1 bands, the same bits on every run, and a dropped partial caught; the
// GPU-against-interpreter comparison of a split plan on the fake device.
#include "tilejit/jit/JitCompiler.h"
#include "tilejit/models/nemotron_h/Check.h"
#include "tilejit/runtime/FakeDevice.h"
#include "tilejit/runtime/Jit.h"

#include "ModelTestSupport.h"

#include <catch2/catch.hpp>

using namespace tilejit;
using namespace tilejit::models;
using namespace tilejit::models::testing;

namespace {

/// out_proj.k_splits = `splits` puts both projections on the split GEMM at
/// any batch; K steps of 32 give smallConfig's K (200, 128) 7 and 4 steps,
/// so that three splits leave the last one partly or wholly past K.
KernelOverrides splitOverrides(int64_t splits) {
  return {{"out_proj", {{"k_splits", splits}, {"block_k", 32}}}};
}

llvm::Expected<StepPlan> splitPlan(const NemotronHConfig &c,
                                   const std::vector<MambaLayerWeights> &layers,
                                   int64_t rows, int64_t splits) {
  return planDecodeStep(modelRegistry(), c, layers, rows, rows + 3,
                        PlanOptions{splitOverrides(splits), nullptr, true});
}

} // namespace

TEST_CASE("split-K decode projections on the interpreter: carried steps against f64",
          "[e2e][interp][decode]") {
  NemotronHConfig c = smallConfig();
  // Layer 0 an FP8 in_proj and a bf16 out_proj, layer 1 the reverse.
  const std::vector<MambaLayerWeights> layers = mixedProjectionLayers(c);
  const int64_t rows = GENERATE(3, 17), splits = GENERATE(2, 3);
  INFO("rows " << rows << ", k_splits " << splits);
  auto plan = splitPlan(c, layers, rows, splits);
  REQUIRE(bool(plan));
  int64_t split = 0, sums = 0;
  for (const PlannedLaunch &l : plan->launches) {
    if (l.kernel == "out_proj") {
      CHECK(l.spec.get("k_splits") == splits);
      CHECK(l.grid[1] == llvm::divideCeil(rows, l.spec.get("block_m")) * splits);
      ++split;
    }
    sums += l.kernel == "split_k_sum";
  }
  CHECK(split == 4);
  CHECK(sums == 4);
  InterpreterRunner runner(modelRegistry());
  auto check =
      checkDecodeSteps(c, layers, *plan, {}, randomDecodeSlots(rows, rows + 3, 9), 2, 31,
                       [&](HostBuffers &b) { return runner.run(*plan, b); });
  INFO((check ? "" : llvm::toString(check.takeError())));
  REQUIRE(bool(check));
  REQUIRE(check->projections.size() == 4);
  requireDecodeCheck(*check, 2, rows, c.hiddenSize);
}

TEST_CASE("split-K projections give the same bits on every run; a dropped partial shows",
          "[e2e][interp][decode]") {
  NemotronHConfig c = smallConfig();
  const std::vector<MambaLayerWeights> layers = mixedProjectionLayers(c);
  const int64_t rows = 5;
  const std::vector<int32_t> slots = randomDecodeSlots(rows, rows + 3, 4);
  auto plan = splitPlan(c, layers, rows, 3);
  REQUIRE(bool(plan));
  auto run = [&](const StepPlan &p) {
    HostBuffers buffers = randomStepBuffers(p, slots, 12, true);
    InterpreterRunner runner(modelRegistry());
    REQUIRE(!llvm::errorToBool(runner.run(p, buffers)));
    return buffers;
  };
  const HostBuffers first = run(*plan), second = run(*plan);
  for (const auto &[name, bytes] : first) {
    INFO(name);
    CHECK(second.at(name) == bytes);
  }
  // The counterfactual: each sum leaves out its last partial.
  StepPlan dropped = *plan;
  for (PlannedLaunch &l : dropped.launches)
    if (l.kernel == "split_k_sum")
      l.spec.set("splits", 2);
  const HostBuffers without = run(dropped);
  const std::string out = StepPlan::activation(plan->numLayers);
  CHECK(without.at(out) != first.at(out));
  InterpreterRunner runner(modelRegistry());
  auto check = checkDecodeSteps(c, layers, dropped, {}, slots, 1, 31,
                                [&](HostBuffers &b) { return runner.run(dropped, b); });
  REQUIRE(bool(check));
  CHECK_FALSE(check->ok());
}

TEST_CASE("the GPU-against-interpreter comparison holds a split e4m3 wgmma GEMM at its "
          "split_k_sum, on the fake device",
          "[e2e][decode][jit]") {
  // Rows of 208 e4m3 bytes start on 16 bytes: on sm_90a the FP8 projections are
  // wgmma producer GEMMs with reduced sums, whose partials no band covers. The
  // fake device runs no kernel, so the comparison must get through the plan,
  // band the sums' outputs and say FAIL.
  NemotronHConfig c = smallConfig();
  c.hiddenSize = 208;
  const std::vector<MambaLayerWeights> layers = mixedProjectionLayers(c);
  PlanOptions options{splitOverrides(2), nullptr, true};
  options.arch = llvm::cantFail(Arch::parse("sm_90a"));
  auto plan = planDecodeStep(modelRegistry(), c, layers, 3, 6, options);
  REQUIRE(bool(plan));
  auto runtimeOptions = runtime::RuntimeOptions::fromEnvironment();
  REQUIRE(bool(runtimeOptions));
  runtimeOptions->useDiskCache = false;
  auto jit = runtime::JitRuntime::create(std::make_unique<runtime::FakeDevice>(),
                                         JitCompiler::fromEnvironment(),
                                         std::move(*runtimeOptions));
  REQUIRE(bool(jit));
  std::string log;
  llvm::raw_string_ostream os(log);
  auto gpu = GpuRunner::create(**jit, modelRegistry(), *plan, os);
  INFO((gpu ? log : llvm::toString(gpu.takeError())));
  REQUIRE(bool(gpu));
  int64_t reducedSplits = 0;
  for (size_t i = 0; i < plan->launches.size(); ++i)
    reducedSplits += plan->launches[i].kernel == "out_proj" &&
                     (*gpu)->launchSums(i) == runtime::SumPrecision::Reduced;
  CHECK(reducedSplits == 2); // layer 0's in_proj, layer 1's out_proj
  InterpreterRunner interpreter(modelRegistry());
  auto compared = compareWithInterpreter(
      **gpu, interpreter, randomStepBuffers(*plan, randomDecodeSlots(3, 6, 5), 41));
  INFO((compared ? "" : llvm::toString(compared.takeError())));
  REQUIRE(bool(compared));
  CHECK_FALSE(compared->ok());
  int64_t atSums = 0;
  for (const ProjectionCheck &p : compared->projections)
    atSums += llvm::StringRef(p.what).contains("_sum on the");
  CHECK(atSums == 4); // the GPU's and the interpreter's, per reduced split GEMM
}
