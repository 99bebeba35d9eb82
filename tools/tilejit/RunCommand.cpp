// `tilejit run`: its options, the weights (a checkpoint or the embedded
// synthetic ones) and the dispatch to a mode: decode (RunDecode.cpp) or prefill
// (RunPrefill.cpp), on the GPU or, without one, on the interpreter.
#include "Commands.h"
#include "RunSupport.h"

#include "tilejit/models/plan/Validate.h"

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
cl::opt<models::BackendKind> backend(
    "backend", cl::desc("Where to run (default auto)"),
    cl::init(models::BackendKind::Auto),
    cl::values(
        clEnumValN(models::BackendKind::Auto, "auto", "the GPU when there is one"),
        clEnumValN(models::BackendKind::Gpu, "gpu", "the GPU, or an error"),
        clEnumValN(models::BackendKind::Interpreter, "interp", "the CPU interpreter"),
        clEnumValN(models::BackendKind::CompileOnly, "compile-only",
                   "no GPU: plan (and with --dry-run print) for --plan-arch's device, "
                   "its tuning database entries included")),
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
cl::opt<bool> dryRun("dry-run",
                     cl::desc("Print the plan of the step (decode of --batch rows, or "
                              "prefill of one fresh sequence of --tokens) and run "
                              "nothing"),
                     cl::sub(runCmd));
cl::opt<int> slots("slots",
                   cl::desc("Slots of the state pages (default: the mode's, e.g. "
                            "--batch + 2 and at least 8 for decode)"),
                   cl::init(0), cl::sub(runCmd));
cl::opt<std::string>
    ssmStateType("ssm-state-dtype",
                 cl::desc("Element type of the SSM state pages: f32 (default), bf16 "
                          "or f16 (docs/numerics.md R8s)"),
                 cl::init("f32"), cl::sub(runCmd));
cl::opt<bool> stochasticRounding(
    "stochastic-rounding",
    cl::desc("With a 16-bit --ssm-state-dtype: round the new state stochastically, "
             "seeded by the step counter (default: to nearest even)"),
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

/// Progress of loading or generating the weights, in place on a terminal.
void printProgress(int64_t done, int64_t total) {
  if (outs().is_displayed())
    outs() << formatv("\rweights: {0}/{1} layers", done, total)
           << (done == total ? "\n" : "");
  else if (done == total || done * 4 / total != (done - 1) * 4 / total)
    outs() << formatv("weights: {0}/{1} layers\n", done, total);
  outs().flush();
}

/// The model the run uses: a checkpoint's first layers (all of its config's
/// on the GPU), or the embedded synthetic weights (about a second per layer
/// and core to generate: said from the start, then as layers finish).
Expected<std::shared_ptr<const LoadedModel>> loadRunModel(bool onGpu) {
  ModelSource source;
  source.checkpoint = modelDir;
  source.progress = printProgress;
  source.layers = layers ? int(layers) : onGpu ? 0 : 1;
  if (modelDir.empty()) {
    const int64_t count =
        source.layers ? source.layers : int64_t(source.geometry.mambaLayers().size());
    outs() << formatv(
        "weights: generating the embedded synthetic NemotronH geometry, {0} "
        "Mamba layer(s) on {1} thread(s)\n",
        count,
        std::min<int64_t>(count, llvm::hardware_concurrency().compute_thread_count()));
    outs().flush();
  }
  auto model = loadModel(source);
  if (!model || modelDir.empty())
    return model;
  const LoadedModel &m = **model;
  outs() << formatv(
      "weights: {0} ({1}), {2} of its {3} Mamba layer(s): projections FP8 "
      "in {4}, bf16 in {5}, mixed in {6}{7}{8}\n",
      m.source, m.describeLayers(), m.weights.size(), m.config.mambaLayers().size(),
      m.fp8Layers, m.bf16Layers, m.mixedLayers,
      m.quantization.empty() ? std::string() : "; quantization from " + m.quantization,
      m.tensorPrefix.empty() ? std::string()
                             : "; tensors under '" + m.tensorPrefix + "'");
  return model;
}

/// --dry-run: the plan of the step the run would time, printed.
int printDryRun(const cli::RunInputs &in, bool prefill) {
  const cli::RunOptions &o = in.options;
  const int64_t rows = o.batch ? o.batch : 1, tokens = o.tokens ? o.tokens : 8192;
  const int64_t pages = o.slots ? o.slots : prefill ? 8 : std::max<int64_t>(rows + 2, 8);
  auto session = in.session(pages, /*perLayerActivations=*/false);
  if (!session)
    return fail(toString(session.takeError()));
  Expected<StepPlan> plan = [&]() -> Expected<StepPlan> {
    if (!prefill)
      return (*session)->planDecode(rows);
    auto planned = (*session)->planPrefill(ref::PrefillBatch{{0, tokens}, {0}, {false}});
    if (!planned)
      return planned.takeError();
    return std::move(planned->plan);
  }();
  if (!plan)
    return fail(toString(plan.takeError()));
  outs() << formatv("plan: {0} {1}={2} L={3}, {4} slots, ssm state {5}\n",
                    prefill ? "prefill" : "decode", prefill ? "T" : "B",
                    prefill ? tokens : rows, plan->numLayers, pages,
                    o.ssmState.describe())
         << describePlan(*plan);
  return 0;
}

} // namespace

namespace tilejit::cli {

bool runRequested() { return bool(runCmd); }

Expected<std::unique_ptr<ModelSession>>
RunInputs::session(int64_t slots, bool perLayerActivations,
                   ArrayRef<size_t> layers) const {
  std::shared_ptr<const LoadedModel> selected = backendModel;
  if (!layers.empty())
    selected = std::make_shared<const LoadedModel>(backendModel->select(layers));
  SessionOptions sessionOptions;
  sessionOptions.slots = slots;
  sessionOptions.overrides = options.overrides;
  sessionOptions.overridesMustApply = true;
  sessionOptions.perLayerActivations = perLayerActivations;
  sessionOptions.ssmState = options.ssmState;
  return ModelSession::create(backend, std::move(selected), std::move(sessionOptions));
}

int runMain(const KernelRegistry &registry) {
  if (batch < 0 || layers < 0 || tokens < 0 || slots < 0 || steps < 1)
    return fail("--batch, --layers, --tokens and --slots must be positive and --steps at "
                "least 1");
  const bool prefill = mode == Mode::Prefill;
  if (prefill && tokens.getNumOccurrences() && tokens < 8 && !dryRun)
    return fail(
        "--tokens: the prefill batch needs at least 8 tokens (its five sequences)");
  RunOptions options;
  options.batch = batch;
  options.layers = layers;
  options.steps = steps;
  options.stepsGiven = steps.getNumOccurrences() > 0;
  options.tokens = tokens;
  options.slots = slots;
  options.dryRun = dryRun;
  auto stateType = SsmStateOptions::parseType(ssmStateType);
  if (!stateType)
    return fail("--ssm-state-dtype: " + toString(stateType.takeError()));
  options.ssmState = {*stateType, stochasticRounding};
  if (auto err = options.ssmState.validate())
    return fail("--stochastic-rounding: " + toString(std::move(err)));
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

  BackendOptions backendOptions;
  backendOptions.kind = backend;
  if (!planArch.empty()) {
    auto arch = Arch::parse(planArch);
    if (!arch)
      return fail("--plan-arch: " + toString(arch.takeError()));
    backendOptions.planArch = *arch;
  }
  backendOptions.log = [](StringRef line) { outs() << line << "\n"; };
  auto opened = Backend::open(std::move(backendOptions));
  if (!opened)
    return fail("--backend " + backendKindName(backend) + ": " +
                toString(opened.takeError()));
  std::shared_ptr<Backend> backendHandle = std::move(*opened);
  const bool onGpu = backendHandle->kind() == BackendKind::Gpu;
  const char *modeName = prefill ? "prefill" : "decode";
  if (backendHandle->kind() != BackendKind::Interpreter)
    outs() << "backend " << backendHandle->describe() << "\n";
  else if (backend == BackendKind::Auto)
    outs() << "backend " << backendHandle->describe() << ": running the " << modeName
           << " on the interpreter\n";
  auto model = loadRunModel(onGpu);
  if (!model)
    return fail(toString(model.takeError()));
  outs() << formatv("load {0:f1} ms\n", (*model)->loadMs);
  // Which tuning database the plans are configured from, and whether this
  // build measured its entries.
  outs() << backendHandle->describeTuneDb() << "\n";
  std::shared_ptr<const LoadedModel> backendModel = *model;
  if (options.defect != Defect::None) {
    outs() << "planted defect: " << defectName(options.defect)
           << " (the backend runs it, the reference does not: the checks must fail)\n";
    auto planted = std::make_shared<LoadedModel>(**model);
    planted->weights = plantWeightDefect(planted->weights, options.defect);
    backendModel = std::move(planted);
  }
  RunInputs in{backendHandle, *model, backendModel, options};
  if (dryRun)
    return printDryRun(in, prefill);
  if (backendHandle->kind() == BackendKind::CompileOnly)
    return fail("--backend compile-only runs nothing: add --dry-run to see the plan");
  if (prefill)
    return onGpu ? runPrefillGpu(in) : runPrefillInterpreter(in);
  return onGpu ? runDecodeGpu(in) : runDecodeInterpreter(in);
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

void printKernelSum(const StepPlan &plan, ArrayRef<KernelTime> times, double stepUs,
                    size_t layers, StringRef what, raw_ostream &os) {
  const KernelSum sum = sumKernelTimes(plan, times);
  const double perLayer = sum.us / layers, stepPerLayer = stepUs / layers;
  // Negative where programmatic dependent launch overlaps a kernel's start
  // with its predecessor's tail.
  os << formatv("kernels {0}: {1:f2} us per layer summed over the step's {2} launches "
                "(each kind timed alone; floors {3:f2} us); the step's {4:f2} us per "
                "layer leaves {5:f2} us ({6:f1} %) between kernels\n",
                what, perLayer, plan.launches.size() - sum.untimed, sum.floorUs / layers,
                stepPerLayer, stepPerLayer - perLayer,
                100 * (stepPerLayer - perLayer) / stepPerLayer);
}

bool printCheck(const StepCheck &check, StringRef headline, double ms, raw_ostream &os) {
  os << formatv("{0}: {1} ({2:f0} ms with the reference)\n", headline,
                check.ok() ? "PASS" : "FAIL", ms);
  check.print(os);
  return check.ok();
}

} // namespace tilejit::cli
