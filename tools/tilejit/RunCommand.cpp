// `tilejit run`: the NemotronH Mamba2 mixer on a checkpoint or the embedded
// synthetic weights. Decode (the default): on a GPU, check carried steps
// against the f64 reference for several batches, then time the step (one CUDA
// graph) and each kernel against the read ceiling; without a GPU the same plan
// on the interpreter (B=1, L=1), checked. Prefill (--mode prefill): on a GPU,
// check a mixed varlen batch, then time a fresh sequence of --tokens through
// every layer and each kernel; without a GPU the batch on the interpreter.
#include "Commands.h"

#include "tilejit/Jit/JitCompiler.h"
#include "tilejit/models/DecodeCheck.h"
#include "tilejit/models/NemotronH.h"
#include "tilejit/models/PlanCheck.h"
#include "tilejit/models/PrefillPlan.h"
#include "tilejit/runtime/CudaDevice.h"
#include "tilejit/runtime/Jit.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>
#include <cstring>
#include <set>

using namespace llvm;
using namespace tilejit;
using namespace tilejit::models;
using tilejit::cli::fail;

namespace {

cl::SubCommand runCmd("run", "Run the NemotronH Mamba2 decode step and check it against the "
                             "f64 reference (GPU, or the interpreter without one)");
cl::opt<std::string> modelDir("model", cl::desc("Checkpoint folder (config.json + "
                                                "safetensors); default: synthetic weights"),
                              cl::sub(runCmd));
cl::opt<std::string> mode("mode", cl::desc("decode|prefill"), cl::init("decode"),
                          cl::sub(runCmd));
cl::opt<int> batch("batch", cl::desc("Rows per step (default: 1 on the interpreter; "
                                     "checks at 1, 3 and 64 on the GPU)"),
                   cl::init(0), cl::sub(runCmd));
cl::opt<int> layers("layers", cl::desc("Mamba layers (default: 1 on the interpreter, "
                                       "all of the model's on the GPU)"),
                    cl::init(0), cl::sub(runCmd));
cl::opt<int> steps("steps", cl::desc("Carried steps per check"), cl::init(3), cl::sub(runCmd));
cl::opt<std::string> backend("backend", cl::desc("auto|gpu|interp (auto: the GPU when "
                                                 "there is one)"),
                             cl::init("auto"), cl::sub(runCmd));
cl::list<std::string> kernelSettings(
    "set", cl::desc("KERNEL.CONSTANT=VALUE: a decode kernel's tuning constant, e.g. "
                    "in_proj_conv.block_n=32 (repeatable)"),
    cl::sub(runCmd));
cl::opt<int> tokens("tokens", cl::desc("Prefill: tokens of the timed sequence on the GPU "
                                       "(default 8192), of the checked batch on the "
                                       "interpreter (default 64)"),
                    cl::init(0), cl::sub(runCmd));
cl::opt<int> timedBatch("time-batch", cl::desc("Extra batch size whose step is timed "
                                               "on the GPU (0: none)"),
                        cl::init(256), cl::sub(runCmd));

/// The --set options as per-kernel overrides of registered kernels' constants.
Expected<KernelOverrides> parseSettings(const KernelRegistry &registry) {
  KernelOverrides overrides;
  for (StringRef setting : kernelSettings) {
    auto [kernel, assignment] = setting.split('.');
    if (assignment.empty() || !assignment.contains('='))
      return createStringError("--set " + setting + ": expected KERNEL.CONSTANT=VALUE");
    overrides[kernel.str()].push_back(assignment.str());
  }
  if (Error err = checkOverrideNames(registry, overrides))
    return std::move(err);
  return overrides;
}

double msSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
      .count();
}

Expected<std::vector<MambaLayerWeights>> loadLayers(NemotronHConfig &config, int count) {
  if (modelDir.empty()) {
    outs() << formatv("weights: embedded synthetic NemotronH geometry, {0} Mamba layer(s)\n",
                      count);
    return syntheticMambaLayers(config, count);
  }
  auto checkpoint = NemotronHCheckpoint::open(modelDir);
  if (!checkpoint)
    return checkpoint.takeError();
  config = checkpoint->config();
  std::vector<MambaLayerWeights> weights;
  std::vector<int64_t> mamba = config.mambaLayers();
  for (int i = 0; i < count && i < int(mamba.size()); ++i) {
    auto layer = checkpoint->loadMambaLayer(mamba[i]);
    if (!layer)
      return layer.takeError();
    weights.push_back(std::move(*layer));
  }
  outs() << formatv("weights: {0}, {1} Mamba layer(s)\n", modelDir, weights.size());
  return weights;
}

/// Checks `steps` carried steps at `rows` rows through `runStep`; prints it.
Expected<bool> check(const NemotronHConfig &config, const std::vector<MambaLayerWeights> &w,
                     const DecodePlan &plan, const DecodeStepFn &runStep, StringRef what) {
  auto slots = randomDecodeSlots(plan.rows, plan.numSlots, 7 + plan.rows);
  auto start = std::chrono::steady_clock::now();
  auto result = checkDecodeSteps(config, w, plan, slots, steps, 11 + plan.rows, runStep);
  if (!result)
    return result.takeError();
  outs() << formatv("check {0}: B={1} L={2}, {3} steps, slots of {4}: {5} ({6:f0} ms with "
                    "the reference)\n",
                    what, plan.rows, plan.numLayers, steps.getValue(), plan.numSlots,
                    result->ok() ? "PASS" : "FAIL", msSince(start));
  result->print(outs());
  return result->ok();
}

int runInterpreter(const KernelRegistry &registry, const NemotronHConfig &config,
                   const std::vector<MambaLayerWeights> &w, int rows,
                   const KernelOverrides &overrides) {
  auto plan = planDecodeStep(registry, config, w, rows, int64_t(rows) + 2, overrides);
  if (!plan)
    return fail(toString(plan.takeError()));
  InterpreterDecoder decoder(registry);
  double runMs = 0;
  int runs = 0;
  auto ok = check(config, w, *plan,
                  [&](HostBuffers &b) {
                    auto start = std::chrono::steady_clock::now();
                    Error err = decoder.run(*plan, w, b);
                    runMs += msSince(start), ++runs;
                    return err;
                  },
                  "interpreter");
  if (!ok)
    return fail(toString(ok.takeError()));
  outs() << formatv("interpreter: {0:f0} ms per decode step (B={1}, L={2}, one core, the "
                    "first step includes building the kernels)\n",
                    runMs / runs, rows, w.size());
  outs() << (*ok ? "all checks passed\n" : "some checks FAILED\n");
  return *ok ? 0 : 1;
}

/// A step through the GPU decoder from and back to host buffers.
DecodeStepFn hostRoundTrip(GpuDecoder &d) {
  return [&d](HostBuffers &b) -> Error {
    if (Error err = d.upload(b))
      return err;
    if (Error err = d.step())
      return err;
    return d.download(b);
  };
}

/// The layers a GPU check runs: the first, and the first of the other
/// projection kind when there is one (an FP8 and a bf16 layer).
std::vector<MambaLayerWeights> checkedLayers(const std::vector<MambaLayerWeights> &w) {
  std::vector<MambaLayerWeights> checked = {w.front()};
  for (const MambaLayerWeights &layer : w)
    if (layer.inProj.isFP8 != w.front().inProj.isFP8) {
      checked.push_back(layer);
      break;
    }
  if (checked.size() == 1 && w.size() > 1)
    checked.push_back(w[1]);
  return checked;
}

/// Fills a plan's pages and first activation with random values, runs one step
/// on the GPU decoder and on the interpreter from the same bytes, and prints
/// every buffer the step writes compared in its type's band. True when all agree.
Expected<bool> compareWithInterpreter(const KernelRegistry &registry, GpuDecoder &gpuDecoder,
                                      const std::vector<MambaLayerWeights> &layers,
                                      HostBuffers gpu, uint64_t seed, StringRef what) {
  const DecodePlan &plan = gpuDecoder.plan();
  Rng rng(seed);
  for (auto &[name, bytes] : gpu) {
    if (StringRef(name).ends_with("ssm_page")) {
      auto t = randomF32({int64_t(bytes.size() / 4)}, rng, -1, 1);
      std::memcpy(bytes.data(), t.data.data(), bytes.size());
    } else if (StringRef(name).ends_with("conv_page") || name == DecodePlan::activation(0)) {
      auto t = randomBF16({int64_t(bytes.size() / 2)}, rng, -2, 2);
      std::memcpy(bytes.data(), t.data.data(), bytes.size());
    }
  }
  HostBuffers cpu = gpu;
  InterpreterDecoder interpreter(registry);
  // One call per statement: the order of upload, step and download matters.
  if (Error err = gpuDecoder.upload(gpu))
    return std::move(err);
  if (Error err = gpuDecoder.step())
    return std::move(err);
  if (Error err = gpuDecoder.download(gpu))
    return std::move(err);
  if (Error err = interpreter.run(plan, layers, cpu))
    return std::move(err);
  bool agree = true;
  outs() << "gpu against the interpreter, " << what << ", every buffer it writes:\n";
  for (const BufferAgreement &b : compareBackends(plan, gpu, cpu, layers)) {
    agree &= b.outside == 0 && b.elements > 0;
    outs() << formatv("  {0,-18} {1,-4} {2,9} elements, {3,9} identical, {4} outside "
                      "(worst {5:f2})\n",
                      b.name, b.type, b.elements, b.identical, b.outside, b.maxError);
  }
  outs() << "gpu against the interpreter: " << (agree ? "PASS" : "FAIL") << "\n";
  return agree;
}

/// The JIT runtime on `device` with the environment's options; says which
/// GPU and arch it compiles for.
Expected<std::unique_ptr<runtime::JitRuntime>>
openGpuRuntime(std::unique_ptr<runtime::DeviceApi> device) {
  auto options = runtime::RuntimeOptions::fromEnvironment();
  if (!options)
    return options.takeError();
  auto jit = runtime::JitRuntime::create(std::move(device), JitCompiler::fromEnvironment(),
                                         std::move(*options));
  if (jit)
    outs() << formatv("backend gpu: {0}, compiling for {1}\n", (*jit)->device().info().name,
                      (*jit)->targetArch().name());
  return jit;
}

int runGpu(const KernelRegistry &registry, const NemotronHConfig &config,
           const std::vector<MambaLayerWeights> &w, std::unique_ptr<runtime::DeviceApi> device,
           const KernelOverrides &overrides) {
  auto jit = openGpuRuntime(std::move(device));
  if (!jit)
    return fail(toString(jit.takeError()));
  bool ok = true;
  auto create = [&](int rows, const std::vector<MambaLayerWeights> &layersToRun)
      -> Expected<std::unique_ptr<GpuDecoder>> {
    auto plan = planDecodeStep(registry, config, layersToRun, rows,
                               std::max<int64_t>(int64_t(rows) + 2, 8), overrides,
                               tunedFromDatabase(**jit, registry, rows, 0, outs()));
    if (!plan)
      return plan.takeError();
    auto start = std::chrono::steady_clock::now();
    auto decoder = GpuDecoder::create(**jit, registry, *plan, layersToRun, outs());
    if (decoder)
      outs() << formatv("decoder B={0} L={1} ready in {2:f1} ms (upload, compile, load, "
                        "capture)\n",
                        rows, layersToRun.size(), msSince(start));
    return decoder;
  };

  // Correctness: carried steps at B = 1, 3, 64 (or --batch) on the first two
  // layers (an FP8 and, when loaded, a bf16 one), against f64.
  std::vector<MambaLayerWeights> checked = checkedLayers(w);
  std::vector<int> batches = batch ? std::vector<int>{batch} : std::vector<int>{1, 3, 64};
  for (int rows : batches) {
    auto decoder = create(rows, checked);
    if (!decoder)
      return fail(toString(decoder.takeError()));
    GpuDecoder &d = **decoder;
    auto result = check(config, checked, d.plan(),
                        hostRoundTrip(d),
                        "gpu");
    if (!result)
      return fail(toString(result.takeError()));
    ok &= *result;
  }

  // The GPU against the interpreter: one step of B=3 over the same inputs,
  // every buffer the step writes compared in its type's band.
  {
    auto decoder = create(3, checked);
    if (!decoder)
      return fail(toString(decoder.takeError()));
    HostBuffers buffers = allocateHostBuffers((*decoder)->plan());
    auto slots = randomDecodeSlots(3, (*decoder)->plan().numSlots, 3);
    std::memcpy(buffers["slots"].data(), slots.data(), slots.size() * 4);
    auto agree = compareWithInterpreter(registry, **decoder, checked, std::move(buffers), 77,
                                        "B=3, one step");
    if (!agree)
      return fail(toString(agree.takeError()));
    ok &= *agree;
  }

  // Timing: the whole L-layer step as one graph, then each kernel of the
  // first FP8 and bf16 layers as 20 back-to-back launches over distinct weight
  // copies, next to a pure read of the same bytes.
  for (int rows : {1, timedBatch.getValue()}) {
    if (rows < 1 || (rows != 1 && rows == batches.front() && batches.size() == 1))
      continue;
    auto decoder = create(rows, w);
    if (!decoder)
      return fail(toString(decoder.takeError()));
    auto slots = randomDecodeSlots(rows, (*decoder)->plan().numSlots, 5);
    HostBuffers buffers = allocateHostBuffers((*decoder)->plan());
    std::memcpy(buffers["slots"].data(), slots.data(), slots.size() * 4);
    Rng rng(9);
    auto hidden = randomBF16({rows, config.hiddenSize}, rng, -2, 2);
    std::memcpy(buffers[DecodePlan::activation(0)].data(), hidden.data.data(),
                hidden.data.size() * 2);
    if (Error err = (*decoder)->upload(buffers))
      return fail(toString(std::move(err)));
    auto times = (*decoder)->time(50);
    if (!times)
      return fail(toString(times.takeError()));
    outs() << formatv("step B={0} L={1}: median {2:f1} us (min {3:f1}, max {4:f1}, n={5} graph "
                      "replays) = {6:f2} us per layer\n",
                      rows, w.size(), times->stepUs, times->stepMinUs, times->stepMaxUs,
                      times->replays, times->stepUs / w.size());
    if (rows != 1)
      continue;
    std::set<std::string> seen;
    const DecodePlan &plan = (*decoder)->plan();
    for (size_t i = 0; i < plan.launches.size(); ++i) {
      const PlannedLaunch &launch = plan.launches[i];
      bool fp8 = false;
      for (const MambaLayerWeights &layer : w)
        if (layer.layer == launch.layer)
          fp8 = layer.inProj.isFP8;
      std::string kind = launch.kernel + (fp8 ? " (fp8 layer)" : " (bf16 layer)");
      if (!seen.insert(kind).second)
        continue;
      auto us = (*decoder)->timeLaunch(i, 20, 30, w);
      if (!us)
        return fail(toString(us.takeError()));
      size_t weightBytes = 0;
      for (const PlanArg &arg : launch.args)
        if (arg.kind == PlanArg::Kind::Buffer &&
            plan.buffers.at(arg.buffer).role == PlanBuffer::Role::Weight)
          weightBytes += plan.buffers.at(arg.buffer).bytes;
      outs() << formatv("kernel {0,-28} B=1: {1,7:f2} us per launch (median of 30 replays of "
                        "20 launches over distinct weights)",
                        kind, *us);
      if (launch.kernel == "ssm_update") {
        // Its bytes are the state slot, read and written: no read ceiling.
        double bytes = 2.0 * config.numHeads * config.headDim * config.stateSize * 4;
        outs() << formatv("; state read + written {0:f2} MB: {1:f2} TB/s\n", bytes / 1e6,
                          bytes / (*us * 1e6));
        continue;
      }
      auto ceiling = timeReadCeiling(**jit, registry, weightBytes, 20, 30);
      if (!ceiling)
        return fail(toString(ceiling.takeError()));
      outs() << formatv("; weights {0:f2} MB: {1:f2} TB/s; read_bytes of the same bytes "
                        "{2:f2} us: {3:f2}x the ceiling\n",
                        weightBytes / 1e6, weightBytes / (*us * 1e6), *ceiling, *us / *ceiling);
    }
  }
  outs() << (ok ? "all checks passed\n" : "some checks FAILED\n");
  return ok ? 0 : 1;
}

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

/// Checks one prefill forward of `batch` through `runStep`; prints it.
Expected<bool> checkPrefill(const NemotronHConfig &config,
                            const std::vector<MambaLayerWeights> &w, const PrefillPlan &plan,
                            const ref::PrefillBatch &b, const DecodeStepFn &runStep,
                            StringRef what) {
  auto start = std::chrono::steady_clock::now();
  // Two forwards by default: the second continues from the state the first wrote.
  const int forwards = steps.getNumOccurrences() ? steps.getValue() : 2;
  auto result = checkPrefillSteps(config, w, plan, b, forwards, 13, runStep);
  if (!result)
    return result.takeError();
  std::string lengths;
  for (size_t s = 0; s + 1 < b.cuSeqlens.size(); ++s)
    lengths += formatv("{0}{1}{2}", s ? ", " : "", b.cuSeqlens[s + 1] - b.cuSeqlens[s],
                       b.slots[s] < 0 ? " padding" : b.continueFromSlot[s] ? " continued"
                                                                             : " fresh")
                   .str();
  outs() << formatv("check {0} prefill: T={1} ({2}), L={3}, {4} forward(s), chunks of {5}: "
                    "{6} ({7:f0} ms with the reference)\n",
                    what, plan.tokens, lengths, plan.plan.numLayers, forwards,
                    plan.chunk, result->ok() ? "PASS" : "FAIL", msSince(start));
  result->print(outs());
  return result->ok();
}

int runPrefillInterpreter(const KernelRegistry &registry, const NemotronHConfig &config,
                          const std::vector<MambaLayerWeights> &w, int total,
                          const KernelOverrides &overrides) {
  ref::PrefillBatch b = mixedBatch(total);
  auto plan = planPrefill(registry, config, w, b, total, 6, overrides);
  if (!plan)
    return fail(toString(plan.takeError()));
  InterpreterDecoder decoder(registry);
  double runMs = 0;
  auto ok = checkPrefill(config, w, *plan, b,
                         [&](HostBuffers &buffers) {
                           auto start = std::chrono::steady_clock::now();
                           Error err = decoder.run(plan->plan, w, buffers);
                           runMs += msSince(start);
                           return err;
                         },
                         "interpreter");
  if (!ok)
    return fail(toString(ok.takeError()));
  outs() << formatv("interpreter: {0:f0} ms per prefill forward (T={1}, L={2}, one core, the "
                    "first includes building the kernels)\n",
                    runMs / (steps.getNumOccurrences() ? steps.getValue() : 2), total, w.size());
  outs() << (*ok ? "all checks passed\n" : "some checks FAILED\n");
  return *ok ? 0 : 1;
}

int runPrefillGpu(const KernelRegistry &registry, const NemotronHConfig &config,
                  const std::vector<MambaLayerWeights> &w,
                  std::unique_ptr<runtime::DeviceApi> device, const KernelOverrides &overrides) {
  auto jit = openGpuRuntime(std::move(device));
  if (!jit)
    return fail(toString(jit.takeError()));
  auto create = [&](const ref::PrefillBatch &b, int64_t total,
                    const std::vector<MambaLayerWeights> &layersToRun)
      -> Expected<std::pair<PrefillPlan, std::unique_ptr<GpuDecoder>>> {
    auto plan = planPrefill(registry, config, layersToRun, b, total, 8, overrides,
                            tunedFromDatabase(**jit, registry, 0, total, outs()));
    if (!plan)
      return plan.takeError();
    auto start = std::chrono::steady_clock::now();
    auto decoder = GpuDecoder::create(**jit, registry, plan->plan, layersToRun, outs());
    if (!decoder)
      return decoder.takeError();
    outs() << formatv("prefill T={0} L={1} ready in {2:f1} ms (upload, compile, load, "
                      "capture)\n",
                      total, layersToRun.size(), msSince(start));
    return std::make_pair(std::move(*plan), std::move(*decoder));
  };

  // Correctness: a mixed varlen batch through an FP8 and a bf16 layer.
  std::vector<MambaLayerWeights> checked = checkedLayers(w);
  ref::PrefillBatch b = mixedBatch(300);
  auto small = create(b, 300, checked);
  if (!small)
    return fail(toString(small.takeError()));
  GpuDecoder &d = *small->second;
  auto ok = checkPrefill(config, checked, small->first, b,
                         hostRoundTrip(d),
                         "gpu");
  if (!ok)
    return fail(toString(ok.takeError()));

  // The GPU against the interpreter: one forward of a mixed batch of 100
  // tokens per checked layer, each layer alone from the same inputs (chained,
  // a one-ulp difference moves e4m3 codes of the next layer's quant), every
  // buffer the forward writes compared in its type's band.
  for (const MambaLayerWeights &layer : checked) {
    ref::PrefillBatch mixed = mixedBatch(100);
    auto pair = create(mixed, 100, {layer});
    if (!pair)
      return fail(toString(pair.takeError()));
    HostBuffers buffers = allocateHostBuffers(pair->first.plan);
    pair->first.writeInputs(buffers);
    auto agree = compareWithInterpreter(
        registry, *pair->second, {layer}, std::move(buffers), 78,
        formatv("prefill T=100, one forward of layer {0} ({1})", layer.layer,
                layer.inProj.isFP8 ? "FP8" : "bf16")
            .str());
    if (!agree)
      return fail(toString(agree.takeError()));
    *ok &= *agree;
  }

  // Timing: one fresh sequence of --tokens through every layer as one graph,
  // then each kernel of the first FP8 and bf16 layers on its own.
  const int64_t total = tokens ? tokens : 8192;
  ref::PrefillBatch one{{0, total}, {0}, {false}};
  auto big = create(one, total, w);
  if (!big)
    return fail(toString(big.takeError()));
  HostBuffers buffers = allocateHostBuffers(big->first.plan);
  big->first.writeInputs(buffers);
  Rng rng(9);
  auto hidden = randomBF16({total, config.hiddenSize}, rng, -2, 2);
  std::memcpy(buffers[DecodePlan::activation(0)].data(), hidden.data.data(),
              hidden.data.size() * 2);
  if (Error err = big->second->upload(buffers))
    return fail(toString(std::move(err)));
  auto times = big->second->time(10);
  if (!times)
    return fail(toString(times.takeError()));
  outs() << formatv("prefill T={0} L={1}: median {2:f1} us (min {3:f1}, max {4:f1}, n={5} "
                    "graph replays) = {6:f1} us per layer\n",
                    total, w.size(), times->stepUs, times->stepMinUs, times->stepMaxUs,
                    times->replays, times->stepUs / w.size());
  const DecodePlan &plan = big->first.plan;
  std::set<std::string> seen;
  for (size_t i = 0; i < plan.launches.size(); ++i) {
    const PlannedLaunch &launch = plan.launches[i];
    bool fp8 = false;
    for (const MambaLayerWeights &layer : w)
      if (layer.layer == launch.layer)
        fp8 = layer.inProj.isFP8;
    // The first out_proj launch of a layer is its in_proj GEMM.
    std::string name = launch.kernel;
    if (name == "out_proj" && (i == 0 || plan.launches[i - 1].kernel != "gated_rmsnorm"))
      name = "in_proj GEMM";
    std::string kind = name + (fp8 ? " (fp8 layer)" : " (bf16 layer)");
    if (!seen.insert(kind).second)
      continue;
    auto us = big->second->timeLaunch(i, 3, 10, w);
    if (!us)
      return fail(toString(us.takeError()));
    outs() << formatv("kernel {0,-28} T={1}: {2,9:f1} us per launch (median of 10 replays of "
                      "3 launches over distinct weights)\n",
                      kind, total, *us);
  }
  outs() << (*ok ? "all checks passed\n" : "some checks FAILED\n");
  return *ok ? 0 : 1;
}

} // namespace

namespace tilejit::cli {

bool runRequested() { return bool(runCmd); }

int runMain(const KernelRegistry &registry) {
  if (mode != "decode" && mode != "prefill")
    return fail("--mode must be decode or prefill, not '" + mode + "'");
  if (backend != "auto" && backend != "gpu" && backend != "interp")
    return fail("--backend must be auto, gpu or interp, not '" + backend + "'");
  if (batch < 0 || layers < 0 || tokens < 0 || steps < 1)
    return fail("--batch, --layers and --tokens must be positive and --steps at least 1");
  const bool prefill = mode == "prefill";
  if (prefill && tokens.getNumOccurrences() && tokens < 8)
    return fail("--tokens: the prefill batch needs at least 8 tokens (its five sequences)");

  std::unique_ptr<runtime::DeviceApi> device;
  if (backend != "interp") {
    auto opened = runtime::openCudaDevice(0);
    if (opened) {
      device = std::move(*opened);
    } else if (backend == "gpu") {
      return fail("--backend gpu: " + toString(opened.takeError()));
    } else {
      outs() << "no GPU (" << toString(opened.takeError()) << "): running the " << mode
             << " on the interpreter\n";
    }
  }
  auto overrides = parseSettings(registry);
  if (!overrides)
    return fail(toString(overrides.takeError()));
  NemotronHConfig config;
  const int count = layers ? layers : device ? int(config.mambaLayers().size()) : 1;
  auto start = std::chrono::steady_clock::now();
  auto w = loadLayers(config, count);
  if (!w)
    return fail(toString(w.takeError()));
  outs() << formatv("load {0:f1} ms\n", msSince(start));
  if (prefill && !device)
    return runPrefillInterpreter(registry, config, *w, tokens ? tokens : 64, *overrides);
  if (prefill)
    return runPrefillGpu(registry, config, *w, std::move(device), *overrides);
  if (!device)
    return runInterpreter(registry, config, *w, batch ? batch : 1, *overrides);
  return runGpu(registry, config, *w, std::move(device), *overrides);
}

} // namespace tilejit::cli
