// Test support for the runtime: a fake compiler that turns a small text "IR" into
// PTX with a real `.entry` signature, temporary cache directories, engine helpers.
#ifndef TILEJIT_TESTS_UNIT_RUNTIME_RUNTIMETESTSUPPORT_H
#define TILEJIT_TESTS_UNIT_RUNTIME_RUNTIMETESTSUPPORT_H

#include "tilejit/runtime/CompilerInterface.h"
#include "tilejit/runtime/FakeDevice.h"
#include "tilejit/runtime/Jit.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"

#include <atomic>
#include <chrono>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace tilejit::runtime::testing {

/// The fake compiler's input: the kernel's signature and launch info in a
/// line-based text, and a body that only changes the output's bytes.
inline std::string fakeIR(llvm::StringRef name, llvm::ArrayRef<KernelParam> params,
                          uint32_t threads = 128, uint32_t sharedBytes = 0,
                          llvm::StringRef body = "") {
  std::string ir = "kernel " + name.str() + "\n";
  for (const KernelParam &param : params)
    ir += llvm::formatv("param {0} {1}\n", param.name, paramKindName(param.kind));
  ir += llvm::formatv("threads {0}\nshared {1}\nbody {2}\n", threads, sharedBytes, body);
  return ir;
}

/// The arch named `name`, for tests that name one.
inline Arch archNamed(llvm::StringRef name) { return llvm::cantFail(Arch::parse(name)); }

/// A ptr and an i32 parameter: the signature most tests use.
inline std::vector<KernelParam> ptrAndCount() {
  return {{"x", ParamKind::Pointer, 8}, {"n", ParamKind::I32, 4}};
}

/// A KernelCompiler for tests: parses fakeIR text, emits PTX whose `.target`
/// is the requested arch and whose `.entry` declares the parameters (so
/// FakeDevice checks launches against it), counts compiles and the largest
/// number running at once. A body containing "FAIL" is a compile error; a
/// line "waits" makes a kernel that waits for its predecessors.
class FakeCompiler : public KernelCompiler {
public:
  std::string buildId = "fake-build-1";
  std::chrono::milliseconds delay{0};
  std::atomic<int> compiles{0};
  std::atomic<int> maxConcurrent{0};

  CompilerIdentity identity() const override { return {buildId, "22.fake"}; }

  llvm::Expected<CompiledKernel> compile(const KernelRequest &request) override {
    int now = ++running;
    for (int seen = maxConcurrent;
         now > seen && !maxConcurrent.compare_exchange_weak(seen, now);)
      ;
    std::this_thread::sleep_for(delay);
    --running;
    ++compiles;
    CompiledKernel out;
    llvm::SmallVector<llvm::StringRef> lines;
    llvm::StringRef(request.canonicalIR).split(lines, '\n', -1, false);
    for (llvm::StringRef line : lines) {
      auto [word, rest] = line.split(' ');
      if (word == "kernel") {
        out.entryName = rest.str();
      } else if (word == "param") {
        auto [name, kind] = rest.split(' ');
        ParamKind parsed = *parseParamKind(kind);
        out.params.push_back({name.str(), parsed, paramKindSize(parsed)});
      } else if (word == "threads") {
        rest.getAsInteger(10, out.launch.threadsPerBlock);
      } else if (word == "shared") {
        rest.getAsInteger(10, out.launch.dynamicSharedBytes);
      } else if (word == "waits") { // the kernel holds a tile.grid_dep_wait
        out.launch.waitsForPredecessors = true;
      } else if (word == "body" && rest.contains("FAIL")) {
        return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                       "fake.tile:3:1: error: the body asked to fail");
      }
    }
    out.ptx = ptxFor(request, out);
    out.timings = {{"tile", 1.0}, {"ptx", 2.0}};
    return out;
  }

  /// The PTX compile() returns for `request`.
  static std::string ptxFor(const KernelRequest &request, const CompiledKernel &kernel) {
    std::string ptx =
        llvm::formatv("// fake PTX, {0}\n.version 8.8\n.target {1}\n"
                      ".address_size 64\n\n.visible .entry {2}(\n",
                      request.options.canonical(), request.arch.name(), kernel.entryName);
    for (auto [index, param] : llvm::enumerate(kernel.params))
      ptx += llvm::formatv(
          "{0}\t.param .{1}{2} {3}_param_{4}", index ? ",\n" : "",
          param.kind == ParamKind::F32 || param.kind == ParamKind::F64 ? "f" : "b",
          param.size * 8, kernel.entryName, index);
    ptx += llvm::formatv("\n)\n{\n\t// {0}\n\tret;\n}\n",
                         llvm::toHex(llvm::StringRef(request.canonicalIR)).substr(0, 64));
    return ptx;
  }

private:
  std::atomic<int> running{0};
};

/// A directory under the system temp dir, removed with its contents.
class TempDir {
public:
  TempDir() {
    llvm::cantFail(llvm::errorCodeToError(
        llvm::sys::fs::createUniqueDirectory("tilejit-runtime-test", dir)));
  }
  ~TempDir() { llvm::sys::fs::remove_directories(dir); }
  std::string path() const { return std::string(dir); }
  std::string sub(llvm::StringRef name) const { return (dir + "/" + name).str(); }

private:
  llvm::SmallString<128> dir;
};

/// Options for a runtime on `cacheDir` whose warnings land in `warnings`.
inline RuntimeOptions optionsFor(const std::string &cacheDir,
                                 std::vector<std::string> *warnings = nullptr) {
  RuntimeOptions options;
  options.cacheDirectory = cacheDir;
  options.useDiskCache = !cacheDir.empty();
  options.diagnostics = [warnings](llvm::StringRef message) {
    if (warnings)
      warnings->push_back(message.str());
  };
  return options;
}

/// A runtime on a FakeDevice; `device` receives the device for inspection.
inline std::unique_ptr<JitRuntime> fakeRuntime(std::shared_ptr<FakeCompiler> compiler,
                                               RuntimeOptions options,
                                               FakeDevice *&device,
                                               DeviceInfo info = FakeDevice::h200()) {
  auto owned = std::make_unique<FakeDevice>(info);
  device = owned.get();
  return llvm::cantFail(
      JitRuntime::create(std::move(owned), compiler, std::move(options)));
}

/// A spec whose IR is fixed text.
inline KernelSpec specFor(llvm::StringRef name, std::string ir,
                          const WeightSlot *slot = nullptr) {
  KernelSpec spec;
  spec.name = name.str();
  spec.buildIR = [ir](const Arch &) -> llvm::Expected<std::string> { return ir; };
  spec.weightSlot = slot;
  return spec;
}

/// The message of `err`, consumed; "" for success.
inline std::string message(llvm::Error err) {
  return err ? llvm::toString(std::move(err)) : std::string();
}

} // namespace tilejit::runtime::testing

#endif // TILEJIT_TESTS_UNIT_RUNTIME_RUNTIMETESTSUPPORT_H
