// Kernel handles: compile on first use (memory cache, disk cache, compiler), load
// with the capture guard and the arch check, launch with checked arguments.
#include "tilejit/runtime/Kernel.h"

#include "tilejit/runtime/Jit.h"
#include "tilejit/support/Timing.h"

#include "llvm/Support/FormatVariadic.h"

using namespace llvm;

namespace tilejit::runtime {

/// Dynamic shared memory a function gets without raising its limit.
static constexpr uint32_t defaultDynamicSharedLimit = 48 * 1024;

StringRef compileOriginName(CompileOrigin origin) {
  switch (origin) {
  case CompileOrigin::None:
    return "none";
  case CompileOrigin::Memory:
    return "memory";
  case CompileOrigin::Disk:
    return "disk";
  case CompileOrigin::Compiler:
    return "compiler";
  }
  llvm_unreachable("unknown CompileOrigin");
}

Kernel::Kernel(JitRuntime &runtime, KernelSpec kernelSpec)
    : runtime(runtime), spec(std::move(kernelSpec)) {
  // The slot is remembered by id: the pointer may dangle once the slot dies,
  // and a new slot may even be created at the same address.
  if (spec.weightSlot) {
    weightSlotId = spec.weightSlot->id();
    weightSlotName = spec.weightSlot->name().str();
    spec.weightSlot = nullptr;
  }
}

Error Kernel::checkWeightSlot() const {
  if (!weightSlotId || runtime.isWeightSlotLive(weightSlotId))
    return Error::success();
  return createStringError(
      inconvertibleErrorCode(),
      formatv("kernel '{0}' is specialized to weight slot #{1} ('{2}'), which was "
              "destroyed: its modules and device memory are gone",
              spec.name, weightSlotId, weightSlotName));
}

Error Kernel::compile() {
  if (kernel)
    return Error::success();
  if (Error err = checkWeightSlot())
    return err;
  if (Error err = runtime.capture().refuseDuringCapture(
          formatv("compile kernel '{0}'", spec.name).str(),
          "compile it before capturing (Kernel::prepare or JitRuntime::compileAll at "
          "load)"))
    return err;
  auto start = std::chrono::steady_clock::now();
  const Arch &arch = runtime.targetArch();
  if (!spec.buildIR)
    return createStringError(inconvertibleErrorCode(),
                             "kernel '" + spec.name + "' has no IR builder");
  Expected<std::string> ir = spec.buildIR(arch);
  if (!ir)
    return createStringError(inconvertibleErrorCode(),
                             formatv("building kernel '{0}' for {1}: {2}", spec.name,
                                     arch.name(), toString(ir.takeError())));
  KernelRequest request{spec.name, std::move(*ir), arch, spec.options};
  request.options.sharedBytesLimit = runtime.sharedBytesLimit();
  ModuleKey memoryKey{runtime.diskKeyFor(request), runtime.device().contextId(),
                      weightSlotId};
  if (std::optional<LoadedModule> loaded = runtime.modules().find(memoryKey)) {
    runtime.stats().addMemoryHit();
    kernel = loaded->kernel;
    compiledFrom = CompileOrigin::Memory;
  } else {
    auto obtained = runtime.obtainCompiled(request, memoryKey.diskKey);
    if (!obtained)
      return obtained.takeError();
    std::tie(kernel, compiledFrom) = std::move(*obtained);
  }
  key = std::move(memoryKey);
  obtainMs = support::msSince(start);
  return Error::success();
}

std::optional<FunctionHandle> Kernel::readyFunction() {
  if (!kernel)
    return std::nullopt;
  uint64_t generation = runtime.modules().generation();
  if (function && functionGeneration == generation)
    return function;
  std::optional<LoadedModule> loaded = runtime.modules().find(key);
  if (!loaded)
    return std::nullopt;
  function = loaded->function;
  functionGeneration = generation;
  return function;
}

bool Kernel::isReady() { return readyFunction().has_value(); }

Error Kernel::load() {
  const DeviceInfo &info = runtime.device().info();
  const Arch &arch = runtime.targetArch();
  if (!canRun(info, arch)) {
    std::string device;
    raw_string_ostream os(device);
    printDeviceInfo(os, info);
    return createStringError(
        inconvertibleErrorCode(),
        formatv("kernel '{0}' was compiled for {1}, which {2} cannot run{3}", spec.name,
                arch.name(), device,
                arch.isArchSpecific() ? ": an `a` target runs only on its own GPU" : ""));
  }
  if (kernel->launch.dynamicSharedBytes > info.maxDynamicSharedBytes)
    return createStringError(
        inconvertibleErrorCode(),
        formatv("kernel '{0}' needs {1} bytes of dynamic shared memory per block; the "
                "device allows at most {2}",
                spec.name, kernel->launch.dynamicSharedBytes,
                info.maxDynamicSharedBytes));
  DeviceApi &device = runtime.device();
  Expected<ModuleHandle> module = device.loadModule(kernel->ptx);
  if (!module)
    return createStringError(inconvertibleErrorCode(),
                             formatv("loading kernel '{0}' ({1}): {2}", spec.name,
                                     arch.name(), toString(module.takeError())));
  Expected<FunctionHandle> entry = device.getFunction(*module, kernel->entryName);
  Error err = entry.takeError();
  if (!err && kernel->launch.dynamicSharedBytes > defaultDynamicSharedLimit)
    err = device.setMaxDynamicSharedBytes(*entry, kernel->launch.dynamicSharedBytes);
  if (err) {
    reportUnhandled(device.unloadModule(*module));
    return createStringError(
        inconvertibleErrorCode(),
        formatv("loading kernel '{0}': {1}", spec.name, toString(std::move(err))));
  }
  runtime.stats().addModuleLoaded();
  runtime.modules().insert(key, LoadedModule{*module, *entry, kernel});
  return Error::success();
}

Error Kernel::prepare() {
  if (Error err = checkWeightSlot())
    return err;
  if (readyFunction())
    return Error::success();
  if (Error err = compile())
    return err;
  if (readyFunction())
    return Error::success();
  if (Error err = runtime.capture().refuseDuringCapture(
          formatv("load the module of kernel '{0}'", spec.name).str(),
          "load it before capturing (Kernel::prepare or JitRuntime::compileAll at load)"))
    return err;
  return load();
}

Error Kernel::launch(const Stream &stream, Dim3 grid, ArrayRef<KernelArg> args) {
  if (Error err = checkWeightSlot())
    return err;
  std::optional<FunctionHandle> ready = readyFunction();
  if (!ready) {
    // Names the capture as the reason when one is under way on this stream,
    // including one begun outside the runtime.
    if (Error err = runtime.capture().refuseDuringCapture(
            formatv("{0} kernel '{1}' at its first launch",
                    kernel ? "load the module of" : "compile", spec.name)
                .str(),
            "a launch in a capture must find its kernel ready; prepare it before "
            "capturing (Kernel::prepare or JitRuntime::compileAll at load)",
            stream.handle()))
      return err;
    if (Error err = prepare())
      return err;
    ready = readyFunction();
    assert(ready && "prepare() left the kernel unready");
  }
  if (Error err = checkArguments(spec.name, kernel->params, args))
    return err;
  SmallVector<KernelArg, 16> all;
  SmallVector<TensorMapBytes, 2> maps;
  if (Error err = withSupplied(args, grid, all, maps))
    return err;
  LaunchConfig config{grid, Dim3{kernel->launch.threadsPerBlock, 1, 1},
                      kernel->launch.dynamicSharedBytes, stream.handle(),
                      kernel->launch.waitsForPredecessors && runtime.dependentLaunch()};
  if (Error err = runtime.device().launch(*ready, config, all))
    return createStringError(
        inconvertibleErrorCode(),
        formatv("launching kernel '{0}': {1}", spec.name, toString(std::move(err))));
  return Error::success();
}

Error Kernel::withSupplied(ArrayRef<KernelArg> args, Dim3 &grid,
                           SmallVectorImpl<KernelArg> &all,
                           SmallVectorImpl<TensorMapBytes> &maps) {
  all.assign(args.begin(), args.end());
  // The arguments point into `maps`: it must not grow past what it reserves.
  maps.clear();
  maps.reserve(llvm::count_if(kernel->params,
                              [](const KernelParam &p) { return bool(p.tensorMap); }));
  Dim3 logical = grid;
  for (const KernelParam &param : kernel->params) {
    if (param.gridAxis) {
      uint32_t extent = *param.gridAxis ? logical.y : logical.x;
      if (logical.z != 1 || extent > uint32_t(INT32_MAX))
        return createStringError(
            inconvertibleErrorCode(),
            formatv("kernel '{0}' walks a 2-D grid of tiles, got {1} x {2} x {3}",
                    spec.name, logical.x, logical.y, logical.z));
      all.push_back(KernelArg::i32(int32_t(extent)));
      uint64_t tiles = uint64_t(logical.x) * logical.y;
      // The kernel counts tiles in i32.
      if (tiles > uint64_t(INT32_MAX))
        return createStringError(
            inconvertibleErrorCode(),
            formatv("kernel '{0}' walks {1} x {2} tiles, more than 2^31 - 1", spec.name,
                    logical.x, logical.y));
      uint64_t programs = uint64_t(std::max(1u, runtime.device().info().smCount)) *
                          std::max(1u, kernel->launch.programsPerSM);
      grid = Dim3{uint32_t(std::min(tiles, programs)), 1, 1};
      continue;
    }
    if (!param.tensorMap)
      continue;
    const TensorMapSpec &map = *param.tensorMap;
    auto extent = [&](int d) -> uint64_t {
      if (map.sizes[d] >= 0)
        return uint64_t(map.sizes[d]);
      // checkArguments saw an i32 there; a negative size views nothing.
      return uint64_t(std::max<int64_t>(0, int32_t(args[map.sizeArgs[d]].pattern())));
    };
    DevicePtr base = args[map.base].pattern();
    uint64_t rows = extent(0), cols = extent(1);
    auto same = [&](const BuiltTensorMap &built) {
      return built.param == map.param && built.base == base && built.rows == rows &&
             built.cols == cols;
    };
    auto it = llvm::find_if(tensorMaps, same);
    if (it == tensorMaps.end()) {
      BuiltTensorMap built{map.param, base, rows, cols, TensorMapBytes{}};
      if (Error err =
              runtime.device().encodeTensorMap(map, base, rows, cols, built.bytes))
        return createStringError(
            inconvertibleErrorCode(),
            formatv("kernel '{0}': the tensor map of '{1}' ({2} x {3} at {4:x}): {5}",
                    spec.name, param.name, rows, cols, base, toString(std::move(err))));
      // Views come and go with activations; weights stay, found at the front
      // (decode's 23 layers hold 92 weight and activation views of one GEMM).
      constexpr size_t kKept = 256;
      if (tensorMaps.size() == kKept)
        tensorMaps.erase(tensorMaps.begin() + kKept / 2);
      tensorMaps.push_back(built);
      it = std::prev(tensorMaps.end());
    }
    maps.push_back(it->bytes);
    all.push_back(KernelArg::tensorMap(maps.back()));
  }
  return Error::success();
}

} // namespace tilejit::runtime
