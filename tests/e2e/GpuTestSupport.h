// What the GPU test cases share: the registry of every kernel, cache
// directories, the GPU (or why a case is skipped), a JIT runtime over a device,
// and checked allocation, upload and download.
#ifndef TILEJIT_TESTS_E2E_GPUTESTSUPPORT_H
#define TILEJIT_TESTS_E2E_GPUTESTSUPPORT_H

#include "tilejit/jit/JitCompiler.h"
#include "tilejit/models/examples/ExampleKernels.h"
#include "tilejit/models/mamba2/Kernels.h"
#include "tilejit/runtime/CudaDevice.h"
#include "tilejit/runtime/Jit.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/raw_ostream.h"

#include <catch2/catch.hpp>

#include <cstring>
#include <mutex>

namespace tilejit::gputest {

using namespace tilejit::runtime;

/// Every registered kernel (the models' and the examples').
inline const KernelRegistry &registry() {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::cantFail(tilejit::models::registerModelKernels(KernelRegistry::global()));
    llvm::cantFail(tilejit::models::registerExampleKernels(KernelRegistry::global()));
  });
  return KernelRegistry::global();
}

/// A new temporary directory.
inline std::string freshCacheDirectory() {
  llvm::SmallString<128> dir;
  REQUIRE(!llvm::sys::fs::createUniqueDirectory("tilejit-cache", dir));
  return dir.str().str();
}

/// The GPU, or null after printing why the case is skipped.
inline std::unique_ptr<DeviceApi> openGpuOrSkip() {
  auto device = openCudaDevice(0);
  if (!device) {
    std::string reason = llvm::toString(device.takeError());
    WARN("skipped: no GPU: " << reason);
    llvm::outs() << "skipped: no GPU: " << reason << "\n";
    return nullptr;
  }
  return std::move(*device);
}

/// A runtime on `device` compiling for `arch` (empty: the device's, or
/// TILEJIT_ARCH's).
inline std::unique_ptr<JitRuntime> makeRuntime(std::unique_ptr<DeviceApi> device,
                                               const std::string &cacheDir,
                                               const std::string &arch = "") {
  auto options = RuntimeOptions::fromEnvironment(!arch.empty());
  REQUIRE(!!options);
  if (!arch.empty()) {
    llvm::Expected<Arch> parsed = Arch::parse(arch);
    REQUIRE(!!parsed);
    options->archOverride = *parsed;
  }
  options->cacheDirectory = cacheDir;
  options->useDiskCache = true;
  auto jit = JitRuntime::create(std::move(device), JitCompiler::fromEnvironment(),
                                std::move(*options));
  if (!jit)
    FAIL(llvm::toString(jit.takeError()));
  return std::move(*jit);
}

/// A runtime on the GPU when it is an sm_90a one (wgmma's), else null after
/// saying why the case is skipped.
inline std::unique_ptr<JitRuntime> wgmmaRuntimeOrSkip() {
  auto device = openGpuOrSkip();
  if (!device)
    return nullptr;
  auto jit = makeRuntime(std::move(device), freshCacheDirectory());
  if (jit->targetArch().name() != "sm_90a") {
    WARN("skipped: wgmma is sm_90a's, the GPU is " << jit->targetArch().name().str());
    return nullptr;
  }
  return jit;
}

/// The bytes of `v`.
template <typename T> std::vector<uint8_t> asBytes(const std::vector<T> &v) {
  std::vector<uint8_t> bytes(v.size() * sizeof(T));
  std::memcpy(bytes.data(), v.data(), bytes.size());
  return bytes;
}

/// The first `count` elements of `buffer`.
template <typename T = float>
std::vector<T> download(DeviceBuffer &buffer, size_t count) {
  std::vector<uint8_t> bytes(count * sizeof(T));
  llvm::cantFail(buffer.download(bytes));
  std::vector<T> out(count);
  std::memcpy(out.data(), bytes.data(), bytes.size());
  return out;
}

inline void requireOk(llvm::Error err) {
  if (err)
    FAIL(llvm::toString(std::move(err)));
}

inline DeviceBuffer allocateOrFail(JitRuntime &jit, size_t bytes) {
  auto buffer = jit.allocate(bytes);
  if (!buffer)
    FAIL(llvm::toString(buffer.takeError()));
  return std::move(*buffer);
}

} // namespace tilejit::gputest

#endif // TILEJIT_TESTS_E2E_GPUTESTSUPPORT_H
