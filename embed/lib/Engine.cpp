// The engine (the JIT runtime on a GPU, or the interpreter), its buffers, and
// the names and errors every part of the embedding API shares.
#include "EmbedInternal.h"
#include "tilejit/embed/Format.h"

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
  case Backend::CompileOnly:
    return "compile-only";
  }
  return "?";
}

Error toError(ErrorKind kind, llvm::Error err) {
  if (err.isA<models::ArgumentError>())
    kind = ErrorKind::InvalidArgument;
  return Error(kind, llvm::toString(std::move(err)));
}

namespace {
models::BackendKind toBackendKind(Backend backend) {
  switch (backend) {
  case Backend::Auto:
    return models::BackendKind::Auto;
  case Backend::Gpu:
    return models::BackendKind::Gpu;
  case Backend::Interpreter:
    return models::BackendKind::Interpreter;
  case Backend::CompileOnly:
    return models::BackendKind::CompileOnly;
  }
  return models::BackendKind::Auto;
}

/// An arch option (empty: none), parsed at this edge.
Result<std::optional<Arch>> parseArch(const std::string &name, const char *what) {
  if (name.empty())
    return std::optional<Arch>();
  llvm::Expected<Arch> arch = Arch::parse(name);
  if (!arch)
    return Error(ErrorKind::InvalidArgument,
                 std::string(what) + ": " + llvm::toString(arch.takeError()));
  return std::optional<Arch>(*arch);
}
} // namespace

Result<Engine> Engine::open(const EngineOptions &options) {
  models::BackendOptions backendOptions;
  backendOptions.kind = toBackendKind(options.backend);
  backendOptions.device = options.device;
  backendOptions.cacheDirectory = options.cacheDirectory;
  backendOptions.tuneDatabase = options.tuneDatabase;
  auto arch = parseArch(options.arch, "arch");
  if (!arch)
    return arch.error();
  auto planArch = parseArch(options.planArch, "plan arch");
  if (!planArch)
    return planArch.error();
  backendOptions.arch = *arch;
  backendOptions.planArch = *planArch;
  if (options.log)
    backendOptions.log = [log = options.log](llvm::StringRef line) { log(line.str()); };
  auto backend = models::Backend::open(std::move(backendOptions));
  if (!backend)
    return toError(ErrorKind::Device, backend.takeError());
  auto state = std::make_shared<State>();
  state->backend = std::move(*backend);
  switch (state->backend->kind()) {
  case models::BackendKind::Gpu:
    state->kind = Backend::Gpu;
    state->device = options.device;
    break;
  case models::BackendKind::CompileOnly:
    state->kind = Backend::CompileOnly;
    break;
  default:
    state->kind = Backend::Interpreter;
  }
  return Engine(std::move(state));
}

Backend Engine::backend() const { return state->kind; }
int Engine::device() const { return state->device; }
const std::string &Engine::describe() const { return state->backend->describe(); }

LoadStatistics Engine::stats() const {
  runtime::LoadStatsSnapshot s = state->backend->stats();
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
  if (state->backend->jit()) {
    auto device = state->backend->jit()->allocate(bytes);
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
  if (!state->backend->jit()) {
    std::memcpy(dst.data(), src, bytes);
    return {};
  }
  runtime::DeviceApi &device = state->backend->jit()->device();
  if (llvm::Error err = llvm::joinErrors(
          device.copyToDevice(runtime::DevicePtr(uintptr_t(dst.data())), src, bytes, {}),
          device.synchronize({})))
    return toError(ErrorKind::Device, std::move(err));
  return {};
}

Status Engine::download(void *dst, const Buffer &src, size_t bytes) {
  if (Status s = checkCopy("download", src, bytes); !s)
    return s;
  if (!state->backend->jit()) {
    std::memcpy(dst, src.data(), bytes);
    return {};
  }
  runtime::DeviceApi &device = state->backend->jit()->device();
  if (llvm::Error err = llvm::joinErrors(
          device.copyToHost(dst, runtime::DevicePtr(uintptr_t(src.data())), bytes, {}),
          device.synchronize({})))
    return toError(ErrorKind::Device, std::move(err));
  return {};
}

Status Engine::synchronize(Stream stream) {
  if (!state->backend->jit())
    return {};
  if (llvm::Error err =
          state->backend->jit()->device().synchronize(runtime::StreamHandle{stream}))
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
