// Runtime and DeviceKernel: the JIT runtime (caches, load statistics) on a CUDA
// device or compile-only, launching on a stream the caller owns.
#include "CoreInternal.h"
#include "StreamLendingDevice.h"

#include "tilejit/models/nemotron_h/Planner.h"
#include "tilejit/models/session/Backend.h"
#include "tilejit/runtime/Jit.h"
#include "tilejit/support/FloatFormats.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/FormatVariadic.h"

#include <cmath>
#include <limits>

namespace tilejit::python {

struct DeviceKernel::State {
  std::shared_ptr<Runtime::State> runtime;
  std::shared_ptr<KernelModule> module;
  std::unique_ptr<runtime::Kernel> kernel;
};

std::shared_ptr<Runtime> Runtime::open(const RuntimeConfig &config) {
  auto state = std::make_unique<State>();
  state->ordinal = config.ordinal;
  models::BackendOptions options;
  options.device = config.ordinal;
  options.cacheDirectory = config.cacheDirectory;
  options.diskCache = config.diskCache;
  if (!config.arch.empty())
    options.arch = unwrap(Arch::parse(config.arch), ErrorKind::Argument);
  if (config.device == "cuda") {
    options.kind = models::BackendKind::Gpu;
    State *self = state.get();
    options.wrapDevice = [self](std::unique_ptr<runtime::DeviceApi> device) {
      auto lending = std::make_unique<StreamLendingDevice>(std::move(device));
      self->lending = lending.get();
      return std::unique_ptr<runtime::DeviceApi>(std::move(lending));
    };
  } else if (config.device == "compile-only") {
    // Stands in for a device the kernels are never loaded on: compile() does
    // no device work, and prepare/launch are refused below.
    options.kind = models::BackendKind::CompileOnly;
  } else {
    throw Error(ErrorKind::Argument,
                "unknown device '" + config.device + "' (expected cuda or compile-only)");
  }
  state->backend = unwrap(models::Backend::open(std::move(options)), ErrorKind::Device);
  return std::make_shared<Runtime>(std::move(state));
}

Runtime::Runtime(std::shared_ptr<State> s) : state(std::move(s)) {}
Runtime::~Runtime() = default;

std::string Runtime::arch() const {
  return state->backend->jit()->targetArch().name().str();
}
int Runtime::ordinal() const { return state->ordinal; }
bool Runtime::canLaunch() const { return state->lending != nullptr; }

std::string Runtime::describe() const {
  if (!canLaunch())
    return "compile-only (" + arch() + ")";
  std::string text;
  llvm::raw_string_ostream os(text);
  runtime::printDeviceInfo(os, state->backend->jit()->device().info());
  return text;
}

LoadStatistics Runtime::stats() const {
  runtime::LoadStatsSnapshot s = state->backend->stats();
  LoadStatistics out;
  out.bytesUploaded = s.bytesUploaded;
  out.modulesCompiled = s.modulesCompiled;
  out.modulesLoaded = s.modulesLoaded;
  out.memoryHits = s.memoryHits;
  out.diskHits = s.diskHits;
  out.corruptEntries = s.corruptEntries;
  out.compileMsByStage = s.compileMsByStage;
  if (state->lending) {
    StreamLendingDevice::CopiedBytes copied = state->lending->copiedBytes();
    out.bytesToDevice = copied.toDevice;
    out.bytesToHost = copied.toHost;
    out.bytesOnDevice = copied.onDevice;
  }
  llvm::raw_string_ostream os(out.text);
  s.print(os);
  return out;
}

std::shared_ptr<DeviceKernel> Runtime::kernel(std::shared_ptr<KernelModule> module,
                                              unsigned optLevel) {
  if (optLevel > 3)
    throw Error(ErrorKind::Argument,
                "optimization level " + std::to_string(optLevel) + " (expected 0 to 3)");
  auto s = std::make_unique<DeviceKernel::State>();
  runtime::KernelSpec spec;
  spec.name = module->name();
  // The tile IR is arch-independent; the module keeps its canonical text.
  spec.buildIR = [module](const Arch &) -> llvm::Expected<std::string> {
    return module->canonicalIR();
  };
  spec.options.optLevel = optLevel;
  s->kernel = std::make_unique<runtime::Kernel>(*state->backend->jit(), std::move(spec));
  s->runtime = state;
  s->module = std::move(module);
  return std::make_shared<DeviceKernel>(std::move(s));
}

void Runtime::synchronizeStream(uint64_t stream) {
  if (!state->lending)
    throw Error(ErrorKind::Device, "a compile-only runtime has no streams");
  if (llvm::Error err = state->lending->synchronize(
          runtime::StreamHandle{reinterpret_cast<void *>(stream)}))
    throwError(ErrorKind::Device, std::move(err));
}

DeviceKernel::DeviceKernel(std::unique_ptr<State> s) : state(std::move(s)) {}
DeviceKernel::~DeviceKernel() = default;

const std::string &DeviceKernel::name() const { return state->module->name(); }

void DeviceKernel::compile() {
  if (llvm::Error err = state->kernel->compile())
    throwError(ErrorKind::Compile, std::move(err));
}

void DeviceKernel::prepare() {
  if (!state->runtime->lending)
    throw Error(ErrorKind::Device,
                "kernel '" + name() + "': a compile-only runtime cannot load or launch");
  compile();
  if (llvm::Error err = state->kernel->prepare())
    throwError(ErrorKind::Device, std::move(err));
}

std::string DeviceKernel::origin() const {
  return runtime::compileOriginName(state->kernel->origin()).str();
}
double DeviceKernel::compileMs() const { return state->kernel->compileMs(); }
std::string DeviceKernel::diskKey() const { return state->kernel->diskKey().str(); }
std::string DeviceKernel::ptx() const {
  const runtime::CompiledKernel *compiled = state->kernel->compiled();
  return compiled ? compiled->ptx : std::string();
}

/// `arg` as a value of the compiled parameter `param`; an Argument error
/// naming both when it does not fit.
static runtime::KernelArg toKernelArg(const std::string &kernel, size_t index,
                                      const runtime::KernelParam &param,
                                      const DeviceArg &arg) {
  using runtime::ParamKind;
  auto fail = [&](const std::string &why) {
    return Error(ErrorKind::Argument,
                 llvm::formatv("kernel '{0}': argument {1} ('{2}') expects {3}: {4}",
                               kernel, index, param.name,
                               runtime::paramKindName(param.kind), why)
                     .str());
  };
  if (param.kind == ParamKind::Pointer) {
    if (arg.kind != DeviceArg::Kind::Pointer)
      throw fail("got a scalar");
    return runtime::KernelArg::pointer(arg.address);
  }
  if (arg.kind == DeviceArg::Kind::Pointer)
    throw fail("got a device array");
  auto integer = [&](int64_t lo, int64_t hi) {
    if (arg.kind != DeviceArg::Kind::Int)
      throw fail("got a float");
    if (arg.integer < lo || arg.integer > hi)
      throw fail(std::to_string(arg.integer) + " is out of range");
    return arg.integer;
  };
  double number = arg.kind == DeviceArg::Kind::Int ? double(arg.integer) : arg.number;
  switch (param.kind) {
  case ParamKind::I8:
    return runtime::KernelArg::i8(int8_t(integer(INT8_MIN, INT8_MAX)));
  case ParamKind::I16:
    return runtime::KernelArg::i16(int16_t(integer(INT16_MIN, INT16_MAX)));
  case ParamKind::I32:
    return runtime::KernelArg::i32(int32_t(integer(INT32_MIN, INT32_MAX)));
  case ParamKind::I64:
    return runtime::KernelArg::i64(integer(INT64_MIN, INT64_MAX));
  case ParamKind::F16:
    return runtime::KernelArg::bits(ParamKind::F16, tilejit::f32ToF16(float(number)));
  case ParamKind::BF16:
    return runtime::KernelArg::bits(ParamKind::BF16, tilejit::f32ToBF16(float(number)));
  case ParamKind::F32:
    return runtime::KernelArg::f32(float(number));
  case ParamKind::F64:
    return runtime::KernelArg::f64(number);
  case ParamKind::Pointer:
  case ParamKind::TensorMap:
    break;
  }
  throw fail("an unknown parameter kind");
}

void DeviceKernel::launch(uint64_t stream, const std::array<uint32_t, 3> &grid,
                          const std::vector<DeviceArg> &args) {
  prepare();
  // The caller passes the parameters before those the launcher supplies
  // (tensor maps, a persistent kernel's grid), which come last.
  llvm::ArrayRef<runtime::KernelParam> params = state->kernel->compiled()->params;
  params =
      params.take_until([](const runtime::KernelParam &p) { return p.isSupplied(); });
  if (args.size() != params.size())
    throw Error(ErrorKind::Argument,
                llvm::formatv("kernel '{0}' takes {1} argument(s) {2}, got {3}", name(),
                              params.size(), runtime::formatSignature(params),
                              args.size())
                    .str());
  llvm::SmallVector<runtime::KernelArg, 16> kernelArgs;
  for (size_t i = 0; i < args.size(); ++i)
    kernelArgs.push_back(toKernelArg(name(), i, params[i], args[i]));
  runtime::Stream borrowed = unwrap(state->runtime->lending->borrow(runtime::StreamHandle{
                                        reinterpret_cast<void *>(stream)}),
                                    ErrorKind::Device);
  if (llvm::Error err = state->kernel->launch(
          borrowed, runtime::Dim3{grid[0], grid[1], grid[2]}, kernelArgs))
    throwError(ErrorKind::Device, std::move(err));
}

std::map<std::string, int64_t>
planProjection(const Runtime *runtime, int64_t rows,
               const std::map<std::string, int64_t> &geometry) {
  models::PlanOptions options;
  const KernelRegistry *kernels = &registry();
  if (runtime) {
    const models::Backend &backend = *runtime->internal()->backend;
    options = backend.planOptions({}, /*overridesMustApply=*/false, rows, rows,
                                  /*perLayerActivations=*/false);
    kernels = &backend.registry();
  }
  Specialization spec = unwrap(models::planProjection(*kernels, options, rows, geometry),
                               ErrorKind::Argument);
  std::map<std::string, int64_t> out;
  for (const KernelConstant &c : kernels->find("out_proj")->constants)
    out[c.name] = spec.get(c.name);
  return out;
}

} // namespace tilejit::python
