// The engine (the JIT runtime on a GPU, or the interpreter), its buffers, and
// the names and errors every part of the embedding API shares.
#include "EmbedInternal.h"
#include "tilejit/embed/Format.h"

#include "tilejit/jit/JitCompiler.h"
#include "tilejit/models/mamba2/Kernels.h"
#include "tilejit/runtime/CudaDevice.h"

#include "llvm/Support/raw_ostream.h"

#include <cstring>

namespace tilejit::embed {

const char *errorKindName(ErrorKind kind) {
  switch (kind) {
  case ErrorKind::InvalidArgument:
    return "invalid argument";
  case ErrorKind::Checkpoint:
    return "checkpoint";
  case ErrorKind::Device:
    return "device";
  case ErrorKind::Run:
    return "run";
  }
  return "error";
}

std::string Error::describe() const {
  return fmt::format("{}: {}", errorKindName(errorKind), text);
}

const char *dtypeName(DType type) {
  switch (type) {
  case DType::BF16:
    return "bf16";
  case DType::F32:
    return "f32";
  case DType::I32:
    return "i32";
  }
  return "?";
}

size_t dtypeBytes(DType type) { return type == DType::BF16 ? 2 : 4; }

const char *backendName(Backend backend) {
  switch (backend) {
  case Backend::Auto:
    return "auto";
  case Backend::Gpu:
    return "gpu";
  case Backend::Interpreter:
    return "interpreter";
  }
  return "?";
}

Error toError(ErrorKind kind, llvm::Error err) {
  return Error(kind, llvm::toString(std::move(err)));
}

Result<const KernelRegistry *> modelRegistry() {
  static KernelRegistry kernels;
  static std::string failure = [] {
    llvm::Error err = models::registerModelKernels(kernels);
    return err ? llvm::toString(std::move(err)) : std::string();
  }();
  if (!failure.empty())
    return Error(ErrorKind::Run, "registering the model kernels: " + failure);
  return &kernels;
}

void Engine::State::say(llvm::StringRef text) const {
  if (!options.log)
    return;
  llvm::SmallVector<llvm::StringRef> lines;
  text.split(lines, '\n', -1, /*KeepEmpty=*/false);
  for (llvm::StringRef line : lines)
    options.log(line.str());
}

Result<Engine> Engine::open(const EngineOptions &options) {
  auto state = std::make_shared<State>();
  state->options = options;
  auto runtimeOptions = runtime::RuntimeOptions::fromEnvironment();
  if (!runtimeOptions)
    return toError(ErrorKind::Device, runtimeOptions.takeError());
  if (!options.cacheDirectory.empty())
    runtimeOptions->cacheDirectory = options.cacheDirectory;
  if (!options.tuneDatabase.empty())
    runtimeOptions->tuneDbPath = options.tuneDatabase;
  // The runtime's notes (a tuned configuration used) go to the log too.
  State *self = state.get();
  runtimeOptions->notes = [self](llvm::StringRef message) { self->say(message); };

  std::string noGpu;
  if (options.backend != Backend::Interpreter) {
    auto device = runtime::openCudaDevice(options.device);
    if (device) {
      auto jit = runtime::JitRuntime::create(
          std::move(*device), JitCompiler::fromEnvironment(), std::move(*runtimeOptions));
      if (!jit)
        return toError(ErrorKind::Device, jit.takeError());
      state->jit = std::move(*jit);
      state->backend = Backend::Gpu;
      state->device = options.device;
      state->description =
          fmt::format("gpu: {}, compiling for {}", state->jit->device().info().name,
                      state->jit->targetArch().name().str());
      return Engine(std::move(state));
    }
    noGpu = llvm::toString(device.takeError());
    if (options.backend == Backend::Gpu)
      return Error(ErrorKind::Device,
                   fmt::format("no GPU {}: {}", options.device, noGpu));
  }
  state->description = noGpu.empty() ? std::string("interpreter")
                                     : fmt::format("interpreter (no GPU: {})", noGpu);
  return Engine(std::move(state));
}

Backend Engine::backend() const { return state->backend; }
int Engine::device() const { return state->device; }
const std::string &Engine::describe() const { return state->description; }

LoadStatistics Engine::stats() const {
  runtime::LoadStatsSnapshot s =
      state->jit ? state->jit->stats().snapshot() : runtime::LoadStatsSnapshot();
  LoadStatistics out;
  out.bytesUploaded = s.bytesUploaded;
  out.modulesCompiled = s.modulesCompiled;
  out.modulesLoaded = s.modulesLoaded;
  out.memoryHits = s.memoryHits;
  out.diskHits = s.diskHits;
  out.corruptEntries = s.corruptEntries;
  out.compileMsByStage = s.compileMsByStage;
  llvm::raw_string_ostream os(out.text);
  s.print(os);
  return out;
}

Result<Buffer> Engine::allocate(size_t bytes) {
  auto buffer = std::make_shared<Buffer::State>();
  buffer->engine = state;
  buffer->size = bytes;
  if (state->jit) {
    auto device = state->jit->allocate(bytes);
    if (!device)
      return toError(ErrorKind::Device, device.takeError());
    buffer->device = std::move(*device);
    buffer->data = reinterpret_cast<void *>(uintptr_t(buffer->device.address()));
  } else {
    buffer->host.resize(bytes);
    buffer->data = buffer->host.data();
  }
  return Buffer(std::move(buffer));
}

namespace {
Status checkCopy(const char *what, const Buffer &buffer, size_t bytes) {
  if (bytes <= buffer.size())
    return {};
  return Error(
      ErrorKind::InvalidArgument,
      fmt::format("{} of {} bytes: the buffer holds {}", what, bytes, buffer.size()));
}
} // namespace

Status Engine::upload(const Buffer &dst, const void *src, size_t bytes) {
  if (Status s = checkCopy("upload", dst, bytes); !s)
    return s;
  if (!state->jit) {
    std::memcpy(dst.data(), src, bytes);
    return {};
  }
  runtime::DeviceApi &device = state->jit->device();
  if (llvm::Error err = llvm::joinErrors(
          device.copyToDevice(runtime::DevicePtr(uintptr_t(dst.data())), src, bytes, {}),
          device.synchronize({})))
    return toError(ErrorKind::Device, std::move(err));
  return {};
}

Status Engine::download(void *dst, const Buffer &src, size_t bytes) {
  if (Status s = checkCopy("download", src, bytes); !s)
    return s;
  if (!state->jit) {
    std::memcpy(dst, src.data(), bytes);
    return {};
  }
  runtime::DeviceApi &device = state->jit->device();
  if (llvm::Error err = llvm::joinErrors(
          device.copyToHost(dst, runtime::DevicePtr(uintptr_t(src.data())), bytes, {}),
          device.synchronize({})))
    return toError(ErrorKind::Device, std::move(err));
  return {};
}

Status Engine::synchronize(Stream stream) {
  if (!state->jit)
    return {};
  if (llvm::Error err = state->jit->device().synchronize(runtime::StreamHandle{stream}))
    return toError(ErrorKind::Device, std::move(err));
  return {};
}

void *Buffer::data() const { return state->data; }
size_t Buffer::size() const { return state->size; }
int Buffer::device() const { return state->engine->device; }

Result<TensorView> Buffer::view(DType dtype, std::vector<int64_t> shape) const {
  uint64_t elements = 1;
  for (int64_t d : shape) {
    if (d < 0)
      return Error(ErrorKind::InvalidArgument,
                   fmt::format("a view of shape [{}]: extent {} is negative",
                               fmt::join(shape, ", "), d));
    elements = d == 0 || elements <= UINT64_MAX / uint64_t(d) ? elements * uint64_t(d)
                                                              : UINT64_MAX;
  }
  const uint64_t bytes = elements <= UINT64_MAX / dtypeBytes(dtype)
                             ? elements * dtypeBytes(dtype)
                             : UINT64_MAX;
  if (bytes > size())
    return Error(ErrorKind::InvalidArgument,
                 fmt::format("a view of {}[{}] needs {} bytes; the buffer holds {}",
                             dtypeName(dtype), fmt::join(shape, ", "), bytes, size()));
  return TensorView{dtype, std::move(shape), device(), data()};
}

} // namespace tilejit::embed
