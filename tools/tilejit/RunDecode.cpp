// `tilejit run` (decode): on a GPU, carried steps checked against the f64
// reference at several batches, the GPU against the interpreter launch by
// launch, then the whole step (one CUDA graph) and each kernel timed at every
// --time-batch; without a GPU the same plan on the interpreter, checked.
#include "Commands.h"
#include "RunSupport.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

using namespace llvm;
using namespace tilejit;
using namespace tilejit::models;

namespace tilejit::cli {
namespace {

/// Checks `options.steps` carried steps of `plan` through `runStep`; prints it.
Expected<bool> checkDecode(const RunInputs &in, const std::vector<size_t> &layerIndices,
                           const StepPlan &plan, const LaunchSums &sums, StepFn runStep,
                           StringRef what) {
  auto slots = randomDecodeSlots(plan.rows, plan.numSlots, 7 + plan.rows);
  auto start = std::chrono::steady_clock::now();
  auto result = checkDecodeSteps(
      in.config, select(in.weights, layerIndices), plan, sums, slots, in.options.steps,
      11 + plan.rows, plantCarryDefect(std::move(runStep), plan, in.options.defect));
  if (!result)
    return result.takeError();
  return printCheck(*result,
                    formatv("check {0}: B={1} L={2}, {3} steps, slots of {4}", what,
                            plan.rows, plan.numLayers, in.options.steps, plan.numSlots)
                        .str(),
                    msSince(start), outs());
}

} // namespace

int runDecodeInterpreter(const RunInputs &in) {
  const int rows = in.options.batch ? in.options.batch : 1;
  std::vector<size_t> all;
  for (size_t i = 0; i < in.weights.size(); ++i)
    all.push_back(i);
  PlanOptions planOptions{in.options.overrides, nullptr, /*perLayerActivations=*/true};
  planOptions.arch = in.options.planArch;
  auto plan = planDecodeStep(in.registry, in.config, in.backendWeights, rows,
                             int64_t(rows) + 2, planOptions);
  if (!plan)
    return fail(toString(plan.takeError()));
  InterpreterRunner runner(in.registry);
  double runMs = 0;
  int runs = 0;
  auto ok = checkDecode(
      in, all, *plan, {},
      [&](HostBuffers &b) {
        auto start = std::chrono::steady_clock::now();
        Error err = runner.run(*plan, b);
        runMs += msSince(start), ++runs;
        return err;
      },
      "interpreter");
  if (!ok)
    return fail(toString(ok.takeError()));
  outs() << formatv("interpreter: {0:f0} ms per decode step (B={1}, L={2}, one core, the "
                    "first step includes building the kernels); sums exact\n",
                    runMs / runs, rows, in.weights.size());
  outs() << (*ok ? "all checks passed\n" : "some checks FAILED\n");
  return *ok ? 0 : 1;
}

int runDecodeGpu(const RunInputs &in, std::unique_ptr<runtime::DeviceApi> device) {
  auto jit = openGpuRuntime(std::move(device), in.options.planArch);
  if (!jit)
    return fail(toString(jit.takeError()));
  bool ok = true;
  auto create = [&](int rows, const std::vector<MambaLayerWeights> &layersToRun,
                    bool perLayer) -> Expected<std::unique_ptr<GpuRunner>> {
    PlanOptions planOptions{
        in.options.overrides,
        tunedFromDatabase(**jit, in.registry, {{"rows", rows}}, outs()), perLayer};
    planOptions.arch = planArchOf(in.options, **jit);
    auto plan = planDecodeStep(in.registry, in.config, layersToRun, rows,
                               std::max<int64_t>(int64_t(rows) + 2, 8), planOptions);
    if (!plan)
      return plan.takeError();
    auto start = std::chrono::steady_clock::now();
    auto runner = GpuRunner::create(**jit, in.registry, *plan, outs());
    if (runner) {
      outs() << formatv("decode B={0} L={1} ready in {2:f1} ms (upload, compile, load, "
                        "capture); ",
                        rows, layersToRun.size(), msSince(start));
      printSums(**runner, outs());
    }
    return runner;
  };

  // Correctness: carried steps at B = 1, 3, 64 (or --batch) on the first two
  // layers (an FP8 and, when loaded, a bf16 one), against f64.
  const std::vector<size_t> checked = checkedLayers(in.weights);
  const std::vector<MambaLayerWeights> backendChecked =
      select(in.backendWeights, checked);
  std::vector<int> batches =
      in.options.batch ? std::vector<int>{in.options.batch} : std::vector<int>{1, 3, 64};
  for (int rows : batches) {
    auto runner = create(rows, backendChecked, true);
    if (!runner)
      return fail(toString(runner.takeError()));
    auto result = checkDecode(in, checked, (*runner)->plan(), launchSumsOf(**runner),
                              hostRoundTrip(**runner), "gpu");
    if (!result)
      return fail(toString(result.takeError()));
    ok &= *result;
  }

  // The GPU against the interpreter: one step of B=3, launch by launch.
  {
    auto runner = create(3, backendChecked, true);
    if (!runner)
      return fail(toString(runner.takeError()));
    const StepPlan &plan = (*runner)->plan();
    InterpreterRunner interpreter(in.registry);
    auto compared = compareWithInterpreter(
        **runner, interpreter,
        randomStepBuffers(plan, randomDecodeSlots(3, plan.numSlots, 3), 77));
    if (!compared)
      return fail(toString(compared.takeError()));
    outs()
        << "gpu against the interpreter, B=3, one step, launch by launch, every buffer "
           "each launch writes:\n";
    compared->print(outs());
    outs() << "gpu against the interpreter: " << (compared->ok() ? "PASS" : "FAIL")
           << "\n";
    ok &= compared->ok();
  }

  // Timing: the whole L-layer step as one graph, then each kernel of the
  // first FP8 and bf16 layers as 20 back-to-back launches over distinct weight
  // copies, next to the floor of its bytes, at every timed batch.
  for (int rows : in.options.timeBatches) {
    auto runner = create(rows, in.backendWeights, false);
    if (!runner)
      return fail(toString(runner.takeError()));
    const StepPlan &plan = (*runner)->plan();
    // Every row live (a padding row skips its state: a third of them made the
    // state update look faster than a copy of its counted bytes). The pages
    // stay zero: the state update's time does not depend on them.
    HostBuffers buffers = randomStepBuffers(
        plan, randomDecodeSlots(rows, plan.numSlots, 5, /*padding=*/false), 9,
        /*randomPages=*/false);
    if (Error err = (*runner)->upload(buffers))
      return fail(toString(std::move(err)));
    auto times = (*runner)->time(50);
    if (!times)
      return fail(toString(times.takeError()));
    outs() << formatv(
        "step B={0} L={1}: median {2:f1} us (min {3:f1}, max {4:f1}, n={5} graph "
        "replays) = {6:f2} us per layer; {7:f1} MB moved per layer\n",
        rows, in.weights.size(), times->stepUs, times->stepMinUs, times->stepMaxUs,
        times->replays, times->stepUs / in.weights.size(),
        plan.bytesMoved() / 1e6 / in.weights.size());
    auto kernels = timeKernels(**runner, in.registry, 20, 30);
    if (!kernels)
      return fail(toString(kernels.takeError()));
    printKernelTimes(*kernels, formatv("B={0}", rows).str(), outs());
  }
  outs() << (ok ? "all checks passed\n" : "some checks FAILED\n");
  return ok ? 0 : 1;
}

} // namespace tilejit::cli
