// `tilejit run --mode prefill`: on a GPU, a mixed varlen batch checked against
// the f64 reference, each checked layer against the interpreter launch by
// launch, then a fresh sequence of --tokens timed through every layer and each
// kernel on its own; without a GPU the batch on the interpreter.
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

/// A varlen batch over `total` tokens as a serving engine issues one: a fresh
/// sequence of several chunks, a short continued one, a padding one, a
/// continued one and a one-token fresh one (the remainder goes to the first).
ref::PrefillBatch mixedBatch(int64_t total) {
  std::vector<int64_t> lengths = {0, std::min<int64_t>(37, total / 6),
                                  std::min<int64_t>(13, total / 6), total / 3, 1};
  lengths[0] = total - lengths[1] - lengths[2] - lengths[3] - lengths[4];
  ref::PrefillBatch b{{0}, {4, 0, -1, 2, 5}, {false, true, true, true, false}};
  for (int64_t n : lengths)
    b.cuSeqlens.push_back(b.cuSeqlens.back() + n);
  return b;
}

/// Checks the forwards of `plan` over `b` through `runStep`; prints it.
Expected<bool> checkPrefill(const RunInputs &in, const std::vector<size_t> &layerIndices,
                            const PrefillPlan &plan, const LaunchSums &sums,
                            const ref::PrefillBatch &b, StepFn runStep, StringRef what) {
  auto start = std::chrono::steady_clock::now();
  // Two forwards by default: the second continues from the state the first wrote.
  const int forwards = in.options.stepsGiven ? in.options.steps : 2;
  auto result = checkPrefillSteps(
      in.config(), in.model->select(layerIndices).weights, plan, sums, b, forwards, 13,
      plantCarryDefect(std::move(runStep), plan.plan, in.options.defect));
  if (!result)
    return result.takeError();
  std::string lengths;
  for (size_t s = 0; s + 1 < b.cuSeqlens.size(); ++s)
    lengths += formatv("{0}{1}{2}", s ? ", " : "", b.cuSeqlens[s + 1] - b.cuSeqlens[s],
                       b.slots[s] < 0          ? " padding"
                       : b.continueFromSlot[s] ? " continued"
                                               : " fresh")
                   .str();
  return printCheck(
      *result,
      formatv("check {0} prefill: T={1} ({2}), L={3}, {4} forward(s), chunks "
              "of {5}",
              what, plan.tokens, lengths, plan.plan.numLayers, forwards, plan.chunk)
          .str(),
      msSince(start), outs());
}

/// A prefill plan of `b` over `slots` slots and its step, ready to run.
struct PlannedPrefill {
  std::unique_ptr<ModelSession> session;
  PrefillPlan plan;
  std::unique_ptr<ModelStep> step;
};

/// Plans `b` over `layers` (all when empty) and makes its step runnable.
Expected<PlannedPrefill> prefillStep(const RunInputs &in, const ref::PrefillBatch &b,
                                     int64_t slots, bool perLayer,
                                     ArrayRef<size_t> layers = {}) {
  auto session = in.session(slots, perLayer, layers);
  if (!session)
    return session.takeError();
  auto plan = (*session)->planPrefill(b);
  if (!plan)
    return plan.takeError();
  HostBuffers inputs;
  plan->writeInputs(inputs);
  auto start = std::chrono::steady_clock::now();
  auto step = (*session)->makeStep(plan->plan, inputs);
  if (!step)
    return step.takeError();
  if (GpuRunner *gpu = (*step)->gpu()) {
    outs() << formatv("prefill T={0} L={1} ready in {2:f1} ms (upload, compile, load, "
                      "capture); ",
                      plan->tokens, plan->plan.numLayers, msSince(start));
    printSums(*gpu, outs());
    outs() << "ssd precision (R5p-m): "
           << (plan->ssdPrecision == SsdPrecision::Exact ? "exact (hi + lo bf16 operands)"
               : plan->ssdPrecision == SsdPrecision::UpstreamBF16
                   ? "upstream (single bf16 operands)"
                   : "split state (hi + lo state, single bf16 mix and dt x)")
           << "\n";
  }
  return PlannedPrefill{std::move(*session), std::move(*plan), std::move(*step)};
}

} // namespace

int runPrefillInterpreter(const RunInputs &in) {
  const int total = in.options.tokens ? in.options.tokens : 64;
  ref::PrefillBatch b = mixedBatch(total);
  std::vector<size_t> all;
  for (size_t i = 0; i < in.weights().size(); ++i)
    all.push_back(i);
  auto planned = prefillStep(in, b, 6, /*perLayer=*/true);
  if (!planned)
    return fail(toString(planned.takeError()));
  InterpreterRunner &runner = *planned->step->interpreter();
  double runMs = 0;
  auto ok = checkPrefill(
      in, all, planned->plan, {}, b,
      [&](HostBuffers &buffers) {
        auto start = std::chrono::steady_clock::now();
        Error err = runner.run(planned->plan.plan, buffers);
        runMs += msSince(start);
        return err;
      },
      "interpreter");
  if (!ok)
    return fail(toString(ok.takeError()));
  outs() << formatv(
      "interpreter: {0:f0} ms per prefill forward (T={1}, L={2}, one core, the "
      "first includes building the kernels); sums exact\n",
      runMs / (in.options.stepsGiven ? in.options.steps : 2), total, in.weights().size());
  outs() << (*ok ? "all checks passed\n" : "some checks FAILED\n");
  return *ok ? 0 : 1;
}

int runPrefillGpu(const RunInputs &in) {
  // Correctness: a mixed varlen batch through an FP8 and a bf16 layer.
  const std::vector<size_t> checked = checkedLayers(in.weights());
  ref::PrefillBatch b = mixedBatch(300);
  auto small = prefillStep(in, b, 8, true, checked);
  if (!small)
    return fail(toString(small.takeError()));
  GpuRunner &smallRunner = *small->step->gpu();
  auto ok = checkPrefill(in, checked, small->plan, launchSumsOf(smallRunner), b,
                         hostRoundTrip(smallRunner), "gpu");
  if (!ok)
    return fail(toString(ok.takeError()));

  // The GPU against the interpreter: one forward of a mixed batch of 100
  // tokens per checked layer, launch by launch.
  for (size_t index : checked) {
    const MambaLayerWeights &layer = in.backendModel->weights[index];
    ref::PrefillBatch mixed = mixedBatch(100);
    auto one = prefillStep(in, mixed, 8, true, {index});
    if (!one)
      return fail(toString(one.takeError()));
    HostBuffers buffers = randomStepBuffers(one->plan.plan, {}, 78);
    one->plan.writeInputs(buffers);
    InterpreterRunner interpreter(in.backend->registry());
    auto compared =
        compareWithInterpreter(*one->step->gpu(), interpreter, std::move(buffers));
    if (!compared)
      return fail(toString(compared.takeError()));
    outs() << formatv(
        "gpu against the interpreter, prefill T=100, one forward of layer {0} "
        "({1}), launch by launch, every buffer each launch writes:\n",
        layer.layer, layer.inProj.isFP8 ? "FP8" : "bf16");
    compared->print(outs());
    outs() << "gpu against the interpreter: " << (compared->ok() ? "PASS" : "FAIL")
           << "\n";
    *ok &= compared->ok();
  }

  // Timing: one fresh sequence of --tokens through every layer as one graph,
  // then each kernel of the first FP8 and bf16 layers on its own.
  if (in.options.timeBatches.empty()) { // --time-batch 0
    outs() << (*ok ? "all checks passed\n" : "some checks FAILED\n");
    return *ok ? 0 : 1;
  }
  const int64_t total = in.options.tokens ? in.options.tokens : 8192;
  auto big = prefillStep(in, ref::PrefillBatch{{0, total}, {0}, {false}}, 8, false);
  if (!big)
    return fail(toString(big.takeError()));
  GpuRunner &runner = *big->step->gpu();
  HostBuffers buffers = randomStepBuffers(big->plan.plan, {}, 9, /*randomPages=*/false);
  big->plan.writeInputs(buffers);
  if (Error err = runner.upload(buffers))
    return fail(toString(std::move(err)));
  auto times = runner.time(10);
  if (!times)
    return fail(toString(times.takeError()));
  const size_t layerCount = in.weights().size();
  outs() << formatv(
      "prefill T={0} L={1}: median {2:f1} us (min {3:f1}, max {4:f1}, n={5} "
      "graph replays) = {6:f1} us per layer\n",
      total, layerCount, times->stepUs, times->stepMinUs, times->stepMaxUs,
      times->replays, times->stepUs / layerCount);
  auto kernels = timeKernels(runner, in.backend->registry(), 3, 10);
  if (!kernels)
    return fail(toString(kernels.takeError()));
  printKernelTimes(*kernels, formatv("T={0}", total).str(), outs());
  printKernelSum(big->plan.plan, *kernels, times->stepUs, layerCount,
                 formatv("T={0}", total).str(), outs());
  outs() << (*ok ? "all checks passed\n" : "some checks FAILED\n");
  return *ok ? 0 : 1;
}

} // namespace tilejit::cli
