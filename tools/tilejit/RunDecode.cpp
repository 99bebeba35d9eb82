// `tilejit run` (decode): on a GPU, carried steps checked against the f64
// reference at several batches, the GPU against the interpreter launch by
// launch, then the whole step (one CUDA graph) and each kernel timed at every
// --time-batch; without a GPU the same plan on the interpreter, checked.
#include "Commands.h"
#include "RunSupport.h"

#include "tilejit/support/Timing.h"

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
  auto result =
      checkDecodeSteps(in.config(), in.model->select(layerIndices).weights, plan, sums,
                       slots, in.options.steps, 11 + plan.rows,
                       plantCarryDefect(std::move(runStep), plan, in.options.defect));
  if (!result)
    return result.takeError();
  return printCheck(*result,
                    formatv("check {0}: B={1} L={2}, {3} steps, slots of {4}", what,
                            plan.rows, plan.numLayers, in.options.steps, plan.numSlots)
                        .str(),
                    msSince(start), outs());
}

/// A decode step of `rows` rows on the GPU over `layers` (all when empty),
/// ready to run, with its readiness and sums printed.
Expected<std::unique_ptr<ModelStep>> gpuStep(const RunInputs &in, int rows, bool perLayer,
                                             ArrayRef<size_t> layers = {}) {
  auto session = in.session(std::max<int64_t>(int64_t(rows) + 2, 8), perLayer, layers);
  if (!session)
    return session.takeError();
  auto start = std::chrono::steady_clock::now();
  auto step = (*session)->decode(rows);
  if (step) {
    outs() << formatv("decode B={0} L={1} ready in {2:f1} ms (upload, compile, load, "
                      "capture); ",
                      rows, (*step)->plan().numLayers, msSince(start));
    printSums(*(*step)->gpu(), outs());
  }
  return step;
}

} // namespace

int runDecodeInterpreter(const RunInputs &in) {
  const int rows = in.options.batch ? in.options.batch : 1;
  std::vector<size_t> all;
  for (size_t i = 0; i < in.weights().size(); ++i)
    all.push_back(i);
  auto session = in.session(int64_t(rows) + 2, /*perLayerActivations=*/true);
  if (!session)
    return fail(toString(session.takeError()));
  auto step = (*session)->decode(rows);
  if (!step)
    return fail(toString(step.takeError()));
  InterpreterRunner &runner = *(*step)->interpreter();
  const StepPlan &plan = (*step)->plan();
  double runMs = 0;
  int runs = 0;
  auto ok = checkDecode(
      in, all, plan, {},
      [&](HostBuffers &b) {
        auto start = std::chrono::steady_clock::now();
        Error err = runner.run(plan, b);
        runMs += msSince(start), ++runs;
        return err;
      },
      "interpreter");
  if (!ok)
    return fail(toString(ok.takeError()));
  outs() << formatv("interpreter: {0:f0} ms per decode step (B={1}, L={2}, one core, the "
                    "first step includes building the kernels); sums exact\n",
                    runMs / runs, rows, in.weights().size());
  outs() << (*ok ? "all checks passed\n" : "some checks FAILED\n");
  return *ok ? 0 : 1;
}

int runDecodeGpu(const RunInputs &in) {
  bool ok = true;
  // Correctness: carried steps at B = 1, 3, 64 (or --batch) on the first two
  // layers (an FP8 and, when loaded, a bf16 one), against f64.
  const std::vector<size_t> checked = checkedLayers(in.weights());
  std::vector<int> batches =
      in.options.batch ? std::vector<int>{in.options.batch} : std::vector<int>{1, 3, 64};
  for (int rows : batches) {
    auto step = gpuStep(in, rows, true, checked);
    if (!step)
      return fail(toString(step.takeError()));
    GpuRunner &runner = *(*step)->gpu();
    auto result = checkDecode(in, checked, runner.plan(), launchSumsOf(runner),
                              hostRoundTrip(runner), "gpu");
    if (!result)
      return fail(toString(result.takeError()));
    ok &= *result;
  }

  // The GPU against the interpreter: one step of B=3, launch by launch.
  {
    auto step = gpuStep(in, 3, true, checked);
    if (!step)
      return fail(toString(step.takeError()));
    GpuRunner &runner = *(*step)->gpu();
    const StepPlan &plan = runner.plan();
    InterpreterRunner interpreter(in.backend->registry());
    auto compared = compareWithInterpreter(
        runner, interpreter,
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
    auto step = gpuStep(in, rows, false);
    if (!step)
      return fail(toString(step.takeError()));
    GpuRunner &runner = *(*step)->gpu();
    const StepPlan &plan = runner.plan();
    // Every row live (a padding row skips its state: a third of them made the
    // state update look faster than a copy of its counted bytes). The pages
    // stay zero: the state update's time does not depend on them.
    HostBuffers buffers = randomStepBuffers(
        plan, randomDecodeSlots(rows, plan.numSlots, 5, /*padding=*/false), 9,
        /*randomPages=*/false);
    if (Error err = runner.upload(buffers))
      return fail(toString(std::move(err)));
    auto times = runner.time(50);
    if (!times)
      return fail(toString(times.takeError()));
    const size_t layerCount = in.weights().size();
    outs() << formatv(
        "step B={0} L={1}: median {2:f1} us (min {3:f1}, max {4:f1}, n={5} graph "
        "replays) = {6:f2} us per layer; {7:f1} MB moved per layer, ssm state {8}\n",
        rows, layerCount, times->stepUs, times->stepMinUs, times->stepMaxUs,
        times->replays, times->stepUs / layerCount, plan.bytesMoved() / 1e6 / layerCount,
        in.options.ssmState.describe());
    auto kernels = timeKernels(runner, in.backend->registry(), 20, 30);
    if (!kernels)
      return fail(toString(kernels.takeError()));
    printKernelTimes(*kernels, formatv("B={0}", rows).str(), outs());
    printKernelSum(plan, *kernels, times->stepUs, layerCount,
                   formatv("B={0}", rows).str(), outs());
  }
  outs() << (ok ? "all checks passed\n" : "some checks FAILED\n");
  return ok ? 0 : 1;
}

} // namespace tilejit::cli
