// Opening a backend: the CUDA device (or a fake one for compile-only), the
// runtime's options from the environment and the caller, the portable build of
// a plan for another arch's device, and the plan options of every plan.
#include "tilejit/models/session/Backend.h"

#include "tilejit/jit/JitCompiler.h"
#include "tilejit/models/examples/ExampleKernels.h"
#include "tilejit/models/mamba2/Kernels.h"
#include "tilejit/runtime/CudaDevice.h"
#include "tilejit/runtime/FakeDevice.h"
#include "tilejit/tuning/TunedLookup.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

using namespace llvm;

namespace tilejit::models {

StringRef backendKindName(BackendKind kind) {
  switch (kind) {
  case BackendKind::Auto:
    return "auto";
  case BackendKind::Gpu:
    return "gpu";
  case BackendKind::Interpreter:
    return "interpreter";
  case BackendKind::CompileOnly:
    return "compile-only";
  }
  return "?";
}

Expected<const KernelRegistry &> modelKernels() {
  static KernelRegistry kernels;
  static const std::string failure = [] {
    Error err =
        joinErrors(registerModelKernels(kernels), registerExampleKernels(kernels));
    return err ? toString(std::move(err)) : std::string();
  }();
  if (!failure.empty())
    return createStringError("registering the model kernels: " + failure);
  return kernels;
}

namespace {

/// A stream that hands each finished line to the backend's log (the tuning
/// lookup writes its choices to a raw_ostream).
class LineLog final : public raw_ostream {
public:
  explicit LineLog(std::function<void(StringRef)> sink) : sink(std::move(sink)) {
    SetUnbuffered();
  }
  ~LineLog() override {
    if (!pending.empty() && sink)
      sink(pending);
  }

private:
  void write_impl(const char *data, size_t size) override {
    pending.append(data, size);
    size_t end;
    while ((end = pending.find('\n')) != std::string::npos) {
      if (sink)
        sink(StringRef(pending).take_front(end));
      pending.erase(0, end + 1);
    }
    written += size;
  }
  uint64_t current_pos() const override { return written; }

  std::function<void(StringRef)> sink;
  std::string pending;
  uint64_t written = 0;
};

} // namespace

struct Backend::State {
  BackendOptions options;
  BackendKind kind = BackendKind::Interpreter;
  std::unique_ptr<runtime::JitRuntime> jit;
  std::optional<Arch> planArch;
  std::string description;
  const KernelRegistry *registry = nullptr;
  std::unique_ptr<LineLog> log;
};

Backend::Backend(std::unique_ptr<State> state) : state(std::move(state)) {}
Backend::~Backend() = default;

namespace {

/// The runtime's options: the environment's, then the caller's. A plan for
/// another device than `device` compiles the portable build of that plan.
Expected<runtime::RuntimeOptions> runtimeOptions(const BackendOptions &options,
                                                 const runtime::DeviceInfo *device,
                                                 std::string &portableNote) {
  std::optional<Arch> deviceArch;
  if (device) {
    auto native = Arch::forComputeCapability(device->ccMajor, device->ccMinor);
    if (native)
      deviceArch = *native;
    else
      consumeError(native.takeError());
  }
  const bool portable =
      device && options.planArch && (!deviceArch || *deviceArch != *options.planArch);
  std::optional<Arch> arch = options.arch;
  // The portable arch of SM 90 (not the H100's and H200's arch-specific one,
  // which compute capability 9.0 names): with wgmma the dots would not be the
  // ones GB10 and Thor run.
  if (portable)
    arch = options.planArch->smVersion() == 90
               ? *options.planArch
               : *llvm::find_if(Arch::all(), [](const Arch &a) {
                   return a.smVersion() == 90 && !a.isArchSpecific();
                 });
  else if (!device && !arch)
    arch = options.planArch;
  auto runtimeOptions = runtime::RuntimeOptions::fromEnvironment(arch.has_value());
  if (!runtimeOptions)
    return runtimeOptions.takeError();
  if (arch)
    runtimeOptions->archOverride = *arch;
  if (portable) {
    const DeviceProfile &profile = options.planArch->profile();
    runtimeOptions->sharedBytesLimit = profile.sharedBytesPerBlock;
    portableNote =
        formatv("; plan for {0} ({1}: {2} SMs, {3} KiB of shared memory per program), "
                "every kernel held to {3} KiB",
                options.planArch->name(), profile.device, profile.smCount,
                profile.sharedBytesPerBlock / 1024);
  }
  if (!options.cacheDirectory.empty())
    runtimeOptions->cacheDirectory = options.cacheDirectory;
  runtimeOptions->useDiskCache = runtimeOptions->useDiskCache && options.diskCache;
  if (!options.tuneDatabase.empty())
    runtimeOptions->tuneDbPath = options.tuneDatabase;
  return runtimeOptions;
}

/// A device that stands in for `arch`'s GPU where nothing runs: compiles fill
/// the caches and the tuning key sees that device's multiprocessors.
std::unique_ptr<runtime::DeviceApi> compileOnlyDevice(const Arch &arch) {
  return std::make_unique<runtime::FakeDevice>(runtime::compileOnlyInfo(arch));
}

} // namespace

Expected<std::shared_ptr<Backend>> Backend::open(BackendOptions options) {
  auto state = std::make_unique<State>();
  auto registry = modelKernels();
  if (!registry)
    return registry.takeError();
  state->registry = &*registry;
  state->log = std::make_unique<LineLog>(options.log);
  const BackendKind requested = options.kind;

  std::unique_ptr<runtime::DeviceApi> device;
  std::string noGpu;
  if (requested == BackendKind::Gpu || requested == BackendKind::Auto) {
    auto opened = runtime::openCudaDevice(options.device);
    if (opened)
      device = options.wrapDevice ? options.wrapDevice(std::move(*opened))
                                  : std::move(*opened);
    else if (requested == BackendKind::Gpu)
      return createStringError(
          formatv("no GPU {0}: {1}", options.device, toString(opened.takeError())));
    else
      noGpu = toString(opened.takeError());
  }

  if (device || requested == BackendKind::CompileOnly) {
    std::string portableNote;
    auto runtimeOpts =
        runtimeOptions(options, device ? &device->info() : nullptr, portableNote);
    if (!runtimeOpts)
      return runtimeOpts.takeError();
    State *self = state.get();
    runtimeOpts->notes = [self](StringRef message) {
      if (self->options.log)
        self->options.log(message);
    };
    if (!device) {
      if (!runtimeOpts->archOverride)
        return make_error<ArgumentError>("a compile-only backend needs an arch (the "
                                         "arch or plan arch option, or TILEJIT_ARCH)");
      device = compileOnlyDevice(*runtimeOpts->archOverride);
    }
    const std::string deviceName = device->info().name;
    auto jit = runtime::JitRuntime::create(
        std::move(device), JitCompiler::fromEnvironment(), std::move(*runtimeOpts));
    if (!jit)
      return jit.takeError();
    state->jit = std::move(*jit);
    state->kind = requested == BackendKind::CompileOnly ? BackendKind::CompileOnly
                                                        : BackendKind::Gpu;
    state->planArch = options.planArch ? *options.planArch : state->jit->targetArch();
    state->description =
        formatv("{0}: {1}, compiling for {2}{3}", backendKindName(state->kind),
                deviceName, state->jit->targetArch().name(), portableNote);
  } else {
    state->kind = BackendKind::Interpreter;
    state->planArch = options.planArch;
    state->description = noGpu.empty()
                             ? std::string("interpreter")
                             : formatv("interpreter (no GPU: {0})", noGpu).str();
    if (options.planArch)
      state->description += formatv(", planning for {0}", options.planArch->name()).str();
  }
  state->options = std::move(options);
  return std::shared_ptr<Backend>(new Backend(std::move(state)));
}

BackendKind Backend::kind() const { return state->kind; }
runtime::JitRuntime *Backend::jit() const { return state->jit.get(); }
std::optional<Arch> Backend::planArch() const { return state->planArch; }
const std::string &Backend::describe() const { return state->description; }
const KernelRegistry &Backend::registry() const { return *state->registry; }

std::string Backend::describeTuneDb() const {
  if (state->jit)
    return tuning::describeTuneDb(state->jit->tuneDbPath(),
                                  tuning::tuneVersion(state->jit->compiler()));
  // The database a runtime would use, so a run without a GPU names it too.
  std::string path = state->options.tuneDatabase;
  if (path.empty()) {
    Expected<std::string> fromEnvironment = runtime::tuneDbPathFromEnvironment();
    if (fromEnvironment)
      path = std::move(*fromEnvironment);
    else
      consumeError(fromEnvironment.takeError());
  }
  return tuning::describeTuneDb(path,
                                tuning::tuneVersion(*JitCompiler::fromEnvironment())) +
         " (the interpreter runs the registered defaults)";
}

runtime::LoadStatsSnapshot Backend::stats() const {
  return state->jit ? state->jit->stats().snapshot() : runtime::LoadStatsSnapshot();
}

void Backend::say(StringRef text) const {
  if (!state->options.log)
    return;
  SmallVector<StringRef> lines;
  text.split(lines, '\n', -1, /*KeepEmpty=*/false);
  for (StringRef line : lines)
    state->options.log(line);
}

PlanOptions Backend::planOptions(const KernelOverrides &overrides,
                                 bool overridesMustApply, int64_t rows, int64_t tokens,
                                 bool perLayerActivations) const {
  PlanOptions options;
  options.overrides = overrides;
  options.overridesMustApply = overridesMustApply;
  options.perLayerActivations = perLayerActivations;
  options.arch = state->planArch;
  if (state->jit)
    options.tuned = tunedFromDatabase(*state->jit, *state->registry,
                                      {{"rows", rows}, {"tokens", tokens}}, *state->log);
  return options;
}

} // namespace tilejit::models
