// JitRuntime: creation from options, the compile path through the disk cache,
// weight slot bookkeeping, allocation under the capture guard.
#include "tilejit/runtime/Jit.h"

#include "llvm/Support/FormatVariadic.h"

using namespace llvm;

namespace tilejit::runtime {

Expected<std::unique_ptr<JitRuntime>>
JitRuntime::create(std::unique_ptr<DeviceApi> device,
                   std::shared_ptr<KernelCompiler> compiler, RuntimeOptions options) {
  if (!device || !compiler)
    return createStringError(inconvertibleErrorCode(),
                             "JitRuntime needs a device and a compiler");
  Expected<Arch> arch =
      options.archOverride ? *options.archOverride : nativeArch(device->info());
  if (!arch) {
    std::string described;
    raw_string_ostream os(described);
    printDeviceInfo(os, device->info());
    return createStringError(
        inconvertibleErrorCode(),
        formatv("no arch to compile for on {0}: {1}{2}", described,
                toString(arch.takeError()),
                options.archOverride ? "" : "; TILEJIT_ARCH selects one explicitly"));
  }
  if (!options.diagnostics)
    options.diagnostics = printWarning;
  if (!options.notes)
    options.notes = printNote;
  std::unique_ptr<DiskCache> disk;
  if (options.useDiskCache) {
    Expected<std::unique_ptr<DiskCache>> opened = DiskCache::open(
        {options.cacheDirectory, options.cacheMaxBytes, options.diagnostics});
    if (!opened)
      return opened.takeError();
    disk = std::move(*opened);
  }
  return std::unique_ptr<JitRuntime>(
      new JitRuntime(std::move(device), std::move(compiler), std::move(options), *arch,
                     std::move(disk)));
}

JitRuntime::JitRuntime(std::unique_ptr<DeviceApi> device,
                       std::shared_ptr<KernelCompiler> compiler, RuntimeOptions options,
                       Arch arch, std::unique_ptr<DiskCache> disk)
    : dev(std::move(device)), comp(std::move(compiler)), options(std::move(options)),
      arch(arch), disk(std::move(disk)), moduleCache(*dev), captureGuard(*dev) {}

JitRuntime::~JitRuntime() = default;

void JitRuntime::warn(const Twine &message) { options.diagnostics(message.str()); }

void JitRuntime::note(const Twine &message) { options.notes(message.str()); }

std::unique_ptr<WeightSlot> JitRuntime::createWeightSlot(StringRef name) {
  // Ids are process-wide, not per runtime: a slot of one runtime must not
  // match a slot of another either.
  static std::atomic<uint64_t> nextId{1};
  uint64_t id = nextId.fetch_add(1, std::memory_order_relaxed);
  {
    std::lock_guard<std::mutex> lock(slotMutex);
    liveSlots.insert(id);
  }
  return std::unique_ptr<WeightSlot>(new WeightSlot(*this, id, name.str()));
}

bool JitRuntime::isWeightSlotLive(uint64_t id) const {
  std::lock_guard<std::mutex> lock(slotMutex);
  return liveSlots.count(id) != 0;
}

void JitRuntime::releaseWeightSlot(uint64_t id) {
  {
    std::lock_guard<std::mutex> lock(slotMutex);
    liveSlots.erase(id);
  }
  moduleCache.evictWeightSlot(id);
}

Expected<DeviceBuffer> JitRuntime::allocate(size_t bytes) {
  if (Error err = captureGuard.refuseDuringCapture(
          formatv("allocate {0} bytes of device memory", bytes).str(),
          "allocate before capturing (at load)"))
    return std::move(err);
  return DeviceBuffer::allocate(*dev, bytes);
}

std::string JitRuntime::diskKeyFor(const KernelRequest &request) const {
  CompilerIdentity identity = comp->identity();
  return computeDiskKey({request.canonicalIR, request.options.canonical(),
                         request.arch.name().str(), request.arch.ptxVersionString(),
                         identity.buildId, identity.llvmVersion});
}

/// Checks that the compiler's output can be cached and launched.
static Error validateCompiled(const KernelRequest &request,
                              const CompiledKernel &kernel) {
  auto invalid = [&](const Twine &what) {
    return createStringError(inconvertibleErrorCode(),
                             "the compiler's output for kernel '" + request.kernelName +
                                 "' (" + request.arch.name() + ") " + what);
  };
  if (kernel.ptx.empty() || kernel.entryName.empty())
    return invalid("has no PTX or no entry name");
  if (kernel.launch.threadsPerBlock == 0 || kernel.launch.threadsPerBlock > 1024)
    return invalid(formatv("asks for {0} threads per block (1 to 1024)",
                           kernel.launch.threadsPerBlock));
  for (const KernelParam &param : kernel.params)
    if (param.size != paramKindSize(param.kind))
      return invalid(formatv(
          "declares parameter '{0}' as {1} of {2} bytes (expected {3})", param.name,
          paramKindName(param.kind), param.size, paramKindSize(param.kind)));
  return Error::success();
}

Expected<std::pair<std::shared_ptr<const CompiledKernel>, CompileOrigin>>
JitRuntime::obtainCompiled(const KernelRequest &request, StringRef diskKey) {
  if (disk) {
    Expected<DiskLookup> found = disk->lookup(diskKey);
    if (!found) {
      warn("kernel cache unreadable, compiling '" + request.kernelName +
           "': " + toString(found.takeError()));
    } else if (found->status == DiskLookup::Hit) {
      loadStats.addDiskHit();
      return std::make_pair(
          std::make_shared<const CompiledKernel>(std::move(found->kernel)),
          CompileOrigin::Disk);
    } else if (found->status == DiskLookup::Corrupt) {
      loadStats.addCorruptEntry();
    }
  }
  Expected<CompiledKernel> compiled = comp->compile(request);
  if (!compiled)
    return createStringError(inconvertibleErrorCode(),
                             formatv("compiling kernel '{0}' for {1}: {2}",
                                     request.kernelName, request.arch.name(),
                                     toString(compiled.takeError())));
  if (Error err = validateCompiled(request, *compiled))
    return std::move(err);
  for (const std::string &warning : compiled->warnings)
    warn(warning);
  loadStats.addCompiled(*compiled);
  if (disk)
    if (Error err =
            disk->store(diskKey, request.kernelName, request.arch.name(), *compiled))
      warn("could not write the kernel cache entry of '" + request.kernelName +
           "': " + toString(std::move(err)));
  return std::make_pair(std::make_shared<const CompiledKernel>(std::move(*compiled)),
                        CompileOrigin::Compiler);
}

} // namespace tilejit::runtime
