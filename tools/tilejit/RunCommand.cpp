// `tilejit run`: its options, the weights (a checkpoint or the embedded
// synthetic ones) and the dispatch to a mode: decode (RunDecode.cpp) or prefill
// (RunPrefill.cpp), on the GPU or, without one, on the interpreter.
#include "Commands.h"
#include "RunSupport.h"

#include "tilejit/jit/JitCompiler.h"
#include "tilejit/models/plan/Validate.h"
#include "tilejit/runtime/CudaDevice.h"
#include "tilejit/tuning/TunedLookup.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Threading.h"
#include "llvm/Support/raw_ostream.h"

using namespace llvm;
using namespace tilejit;
using namespace tilejit::models;
using tilejit::cli::fail;

namespace {

enum class Mode { Decode, Prefill };
enum class Backend { Auto, Gpu, Interp };

cl::SubCommand runCmd("run",
                      "Run the NemotronH Mamba2 mixer (decode step or prefill) and "
                      "check it against the f64 reference (GPU, or the interpreter "
                      "without one)");
cl::opt<std::string> modelDir("model",
                              cl::desc("Checkpoint folder (config.json + "
                                       "safetensors); default: synthetic weights"),
                              cl::sub(runCmd));
cl::opt<Mode> mode("mode", cl::desc("What to run (default decode)"),
                   cl::init(Mode::Decode),
                   cl::values(clEnumValN(Mode::Decode, "decode", "one token per row"),
                              clEnumValN(Mode::Prefill, "prefill",
                                         "a packed varlen batch of sequences")),
                   cl::sub(runCmd));
cl::opt<int> batch("batch",
                   cl::desc("Rows per checked step (default: 1 on the interpreter; "
                            "checks at 1, 3 and 64 on the GPU)"),
                   cl::init(0), cl::sub(runCmd));
cl::opt<int> layers("layers",
                    cl::desc("Mamba layers (default: 1 on the interpreter, "
                             "all of the model's on the GPU)"),
                    cl::init(0), cl::sub(runCmd));
cl::opt<int> steps("steps",
                   cl::desc("Carried steps per check (prefill: forwards, default 2)"),
                   cl::init(3), cl::sub(runCmd));
cl::opt<Backend>
    backend("backend", cl::desc("Where to run (default auto)"), cl::init(Backend::Auto),
            cl::values(clEnumValN(Backend::Auto, "auto", "the GPU when there is one"),
                       clEnumValN(Backend::Gpu, "gpu", "the GPU, or an error"),
                       clEnumValN(Backend::Interp, "interp", "the CPU interpreter")),
            cl::sub(runCmd));
cl::list<std::string> kernelSettings(
    "set",
    cl::desc("KERNEL.CONSTANT=VALUE: a kernel's constant in the plan, e.g. "
             "in_proj_conv.block_n=32 (repeatable)"),
    cl::sub(runCmd));
cl::opt<int> tokens("tokens",
                    cl::desc("Prefill: tokens of the timed sequence on the GPU "
                             "(default 8192), of the checked batch on the "
                             "interpreter (default 64)"),
                    cl::init(0), cl::sub(runCmd));
cl::list<int>
    timeBatches("time-batch",
                cl::desc("Decode: batches whose step and kernels are timed on the "
                         "GPU (default 1,8,64,256); 0: no timing (prefill too)"),
                cl::CommaSeparated, cl::sub(runCmd));
cl::opt<std::string> planArch(
    "plan-arch",
    cl::desc("Plan for this arch's device (sm_90, sm_90a, sm_110a, sm_121a: its "
             "tiles, its shared memory); on a GPU of another arch, run the portable "
             "sm_90 build of that plan with every kernel held to the device's shared "
             "memory (default: the GPU's own arch; none on the interpreter)"),
    cl::sub(runCmd));
cl::opt<std::string> plantDefect(
    "plant-defect",
    cl::desc("Test only: plant a defect in what the backend runs (drop-k-step, "
             "scale-column, drop-input-scale, drop-carry); the checks must then fail"),
    cl::init("none"), cl::Hidden, cl::sub(runCmd));

/// The --set options as per-kernel overrides of registered kernels' constants.
Expected<KernelOverrides> parseSettings(const KernelRegistry &registry) {
  return parseKernelSettings(registry, kernelSettings, [](StringRef setting) {
    return ("--set " + setting).str();
  });
}

/// "52 layers: 23 Mamba, 23 MoE, 6 attention" from the config's layer kinds.
std::string describeLayers(const NemotronHConfig &config) {
  std::string text = formatv("{0} layers:", config.numLayers());
  const char *sep = " ";
  for (auto [kind, name] :
       {std::pair{'M', "Mamba"}, {'E', "MoE"}, {'*', "attention"}, {'-', "MLP"}}) {
    if (size_t n = llvm::count(config.layerPattern, kind)) {
      text += formatv("{0}{1} {2}", sep, n, name);
      sep = ", ";
    }
  }
  return text;
}

/// The first `count` Mamba layers of the checkpoint, or of the synthetic model.
Expected<std::vector<MambaLayerWeights>>
loadLayers(const std::optional<NemotronHCheckpoint> &checkpoint,
           const NemotronHConfig &config, int count) {
  if (!checkpoint) {
    // Generating the full geometry takes about a second per layer and core: say
    // so from the start, then report as layers finish (in place on a terminal).
    outs() << formatv(
        "weights: generating the embedded synthetic NemotronH geometry, {0} "
        "Mamba layer(s) on {1} thread(s)\n",
        count,
        std::min<unsigned>(count, llvm::hardware_concurrency().compute_thread_count()));
    outs().flush();
    const bool terminal = outs().is_displayed();
    auto progress = [&](int64_t done, int64_t total) {
      if (terminal)
        outs() << formatv("\rweights: {0}/{1} layers", done, total)
               << (done == total ? "\n" : "");
      else if (done == total || done * 4 / total != (done - 1) * 4 / total)
        outs() << formatv("weights: {0}/{1} layers\n", done, total);
      outs().flush();
    };
    return syntheticMambaLayers(config, count, kSyntheticSeed, progress);
  }
  auto loaded = checkpoint->loadMambaLayers(count);
  if (!loaded)
    return loaded.takeError();
  std::vector<MambaLayerWeights> weights = std::move(*loaded);
  const size_t total = config.mambaLayers().size();
  int fp8 = 0, bf16 = 0, mixed = 0;
  for (const MambaLayerWeights &layer : weights)
    ++(layer.inProj.isFP8 != layer.outProj.isFP8 ? mixed
       : layer.inProj.isFP8                      ? fp8
                                                 : bf16);
  outs() << formatv("weights: {0} ({1}), {2} of its {3} Mamba layer(s): projections FP8 "
                    "in {4}, bf16 in {5}, mixed in {6}{7}{8}\n",
                    modelDir, describeLayers(config), weights.size(), total, fp8, bf16,
                    mixed,
                    checkpoint->quantization().declared()
                        ? "; quantization from " + checkpoint->quantization().origin
                        : std::string(),
                    checkpoint->tensorPrefix().empty()
                        ? std::string()
                        : "; tensors under '" + checkpoint->tensorPrefix() + "'");
  return weights;
}

} // namespace

namespace tilejit::cli {

bool runRequested() { return bool(runCmd); }

int runMain(const KernelRegistry &registry) {
  if (batch < 0 || layers < 0 || tokens < 0 || steps < 1)
    return fail("--batch, --layers and --tokens must be positive and --steps at least 1");
  const bool prefill = mode == Mode::Prefill;
  if (prefill && tokens.getNumOccurrences() && tokens < 8)
    return fail(
        "--tokens: the prefill batch needs at least 8 tokens (its five sequences)");
  RunOptions options;
  options.batch = batch;
  options.layers = layers;
  options.steps = steps;
  options.stepsGiven = steps.getNumOccurrences() > 0;
  options.tokens = tokens;
  if (timeBatches.empty())
    options.timeBatches = {1, 8, 64, 256};
  for (int b : timeBatches) {
    if (b < 0)
      return fail(formatv("--time-batch: {0} is not a batch size", b));
    if (b > 0)
      options.timeBatches.push_back(b);
  }
  auto defect = parseDefect(plantDefect);
  if (!defect)
    return fail("--plant-defect: " + toString(defect.takeError()));
  options.defect = *defect;
  auto overrides = parseSettings(registry);
  if (!overrides)
    return fail(toString(overrides.takeError()));
  options.overrides = std::move(*overrides);
  if (!planArch.empty()) {
    auto arch = Arch::parse(planArch);
    if (!arch)
      return fail("--plan-arch: " + toString(arch.takeError()));
    options.planArch = *arch;
  }

  std::unique_ptr<runtime::DeviceApi> device;
  const char *modeName = prefill ? "prefill" : "decode";
  if (backend != Backend::Interp) {
    auto opened = runtime::openCudaDevice(0);
    if (opened) {
      device = std::move(*opened);
    } else if (backend == Backend::Gpu) {
      return fail("--backend gpu: " + toString(opened.takeError()));
    } else {
      outs() << "no GPU (" << toString(opened.takeError()) << "): running the "
             << modeName << " on the interpreter\n";
    }
  }
  // The layer count comes from the checkpoint's own config, never from the
  // built-in geometry.
  auto start = std::chrono::steady_clock::now();
  NemotronHConfig config;
  std::optional<NemotronHCheckpoint> checkpoint;
  if (!modelDir.empty()) {
    auto opened = NemotronHCheckpoint::open(modelDir);
    if (!opened)
      return fail(toString(opened.takeError()));
    config = opened->config();
    checkpoint = std::move(*opened);
  }
  const int available = int(config.mambaLayers().size());
  if (available == 0)
    return fail(formatv("{0}: the model has no Mamba layer ({1})", modelDir,
                        describeLayers(config)));
  if (layers > available)
    return fail(formatv("--layers {0}: the model has {1} Mamba layer(s) ({2})",
                        int(layers), available, describeLayers(config)));
  const int count = layers ? layers : device ? available : 1;
  auto w = loadLayers(checkpoint, config, count);
  if (!w)
    return fail(toString(w.takeError()));
  outs() << formatv("load {0:f1} ms\n", msSince(start));
  // Which tuning database the GPU plans are configured from (`make run` names
  // the shipped one), and whether this build measured its entries.
  if (auto runtimeOptions = runtime::RuntimeOptions::fromEnvironment())
    outs() << tuning::describeTuneDb(runtimeOptions->tuneDbPath,
                                     tuning::tuneVersion(*JitCompiler::fromEnvironment()))
           << (device ? "" : " (the interpreter runs the registered defaults)") << "\n";
  else
    consumeError(runtimeOptions.takeError());
  std::vector<MambaLayerWeights> planted;
  if (options.defect != Defect::None) {
    outs() << "planted defect: " << defectName(options.defect)
           << " (the backend runs it, the reference does not: the checks must fail)\n";
    planted = plantWeightDefect(*w, options.defect);
  }
  RunInputs in{registry, config, *w, planted.empty() ? *w : planted, options};
  if (prefill)
    return device ? runPrefillGpu(in, std::move(device)) : runPrefillInterpreter(in);
  return device ? runDecodeGpu(in, std::move(device)) : runDecodeInterpreter(in);
}

Expected<std::unique_ptr<runtime::JitRuntime>>
openGpuRuntime(std::unique_ptr<runtime::DeviceApi> device,
               const std::optional<Arch> &planArch) {
  const runtime::DeviceInfo &info = device->info();
  auto deviceArch = Arch::forComputeCapability(info.ccMajor, info.ccMinor);
  // A plan for another arch's device runs here as the portable sm_90 build of
  // that plan (the same tiles), each kernel held to that device's shared
  // memory; the plan's own arch when this GPU is its device.
  const bool portable = planArch && (!deviceArch || *deviceArch != *planArch);
  if (!deviceArch)
    consumeError(deviceArch.takeError());
  auto options = runtime::RuntimeOptions::fromEnvironment(portable);
  if (!options)
    return options.takeError();
  if (portable) {
    options->archOverride =
        planArch->smVersion() == 90 ? *planArch : cantFail(Arch::parse("sm_90"));
    options->sharedBytesLimit = planArch->profile().sharedBytesPerBlock;
  }
  auto jit = runtime::JitRuntime::create(
      std::move(device), JitCompiler::fromEnvironment(), std::move(*options));
  if (!jit)
    return jit;
  outs() << formatv("backend gpu: {0}, compiling for {1}\n", (*jit)->device().info().name,
                    (*jit)->targetArch().name());
  if (portable)
    outs() << formatv(
        "plan for {0} ({1}: {2} SMs, {3} KiB of shared memory per "
        "program); this GPU runs its {4} build, every kernel held to {3} "
        "KiB\n",
        planArch->name(), planArch->profile().device, planArch->profile().smCount,
        planArch->profile().sharedBytesPerBlock / 1024, (*jit)->targetArch().name());
  return jit;
}

Arch planArchOf(const RunOptions &options, const runtime::JitRuntime &jit) {
  return options.planArch ? *options.planArch : jit.targetArch();
}

std::vector<size_t> checkedLayers(const std::vector<MambaLayerWeights> &w) {
  std::vector<size_t> checked = {0};
  for (size_t i = 1; i < w.size(); ++i)
    if (w[i].inProj.isFP8 != w.front().inProj.isFP8) {
      checked.push_back(i);
      break;
    }
  if (checked.size() == 1 && w.size() > 1)
    checked.push_back(1);
  return checked;
}

std::vector<MambaLayerWeights> select(const std::vector<MambaLayerWeights> &w,
                                      const std::vector<size_t> &indices) {
  std::vector<MambaLayerWeights> out;
  for (size_t i : indices)
    out.push_back(w[i]);
  return out;
}

void printSums(const GpuRunner &runner, raw_ostream &os) {
  const StepPlan &plan = runner.plan();
  std::string reduced;
  for (size_t i = 0; i < plan.launches.size(); ++i)
    if (runner.launchSums(i) == runtime::SumPrecision::Reduced)
      reduced +=
          formatv("{0}layer {1} {2} ({3})", reduced.empty() ? "" : ", ",
                  plan.launches[i].layer, plan.launches[i].role, plan.launches[i].kernel);
  os << "sums: "
     << (reduced.empty()
             ? std::string("exact in every kernel")
             : "reduced (e4m3 wgmma, R1h bands) in " + reduced + "; exact elsewhere")
     << "\n";
}

void printKernelTimes(ArrayRef<KernelTime> times, StringRef what, raw_ostream &os) {
  for (const KernelTime &t : times)
    os << formatv(
        "kernel {0,-14} {1,-10} {2,-10} {3}: {4,9:f2} us per launch, {5,8:f2} MB "
        "moved, {6:f2} TB/s; floor {7:f2} us ({8:f2}x); {9} sums\n",
        t.kernel, t.role, t.variant, what, t.us, (t.bytesRead + t.bytesWritten) / 1e6,
        t.terabytesPerSecond(), t.floorUs, t.us / t.floorUs,
        runtime::sumPrecisionName(t.sums));
}

bool printCheck(const StepCheck &check, StringRef headline, double ms, raw_ostream &os) {
  os << formatv("{0}: {1} ({2:f0} ms with the reference)\n", headline,
                check.ok() ? "PASS" : "FAIL", ms);
  check.print(os);
  return check.ok();
}

} // namespace tilejit::cli
