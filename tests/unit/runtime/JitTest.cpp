// The JIT facade on a fake device: compile on first use for the device's arch,
// TILEJIT_ARCH and arches the device cannot run (an error at launch, not at
// compile), dynamic shared memory above 48 KiB, parallel compile at load.
#include "RuntimeTestSupport.h"

#include <catch2/catch.hpp>

#include <cstdlib>

using namespace tilejit;
using namespace tilejit::runtime;
using namespace tilejit::runtime::testing;

namespace {

/// Sets an environment variable for one scope.
class ScopedEnv {
public:
  ScopedEnv(const char *name, const char *value) : name(name) {
    if (const char *old = std::getenv(name))
      previous = old;
    if (value)
      ::setenv(name, value, 1);
    else
      ::unsetenv(name);
  }
  ~ScopedEnv() {
    if (previous)
      ::setenv(name, previous->c_str(), 1);
    else
      ::unsetenv(name);
  }

private:
  const char *name;
  std::optional<std::string> previous;
};

} // namespace

TEST_CASE("a kernel compiles on first use for the device's arch and launches",
          "[runtime][jit]") {
  TempDir dir;
  auto compiler = std::make_shared<FakeCompiler>();
  FakeDevice *device = nullptr;
  auto runtime = fakeRuntime(compiler, optionsFor(dir.path()), device);
  CHECK(runtime->targetArch().name() == "sm_90a");

  Stream stream = llvm::cantFail(Stream::create(*device));
  DeviceBuffer x = llvm::cantFail(runtime->allocate(256));
  Kernel kernel(*runtime, specFor("scale", fakeIR("scale", ptrAndCount(), 256)));
  CHECK_FALSE(kernel.isReady());
  CHECK(compiler->compiles == 0);

  REQUIRE(message(kernel.launch(stream, {4, 1, 1},
                                {KernelArg::pointer(x.address()), KernelArg::i32(64)})) ==
          "");
  CHECK(kernel.isReady());
  CHECK(kernel.origin() == CompileOrigin::Compiler);
  CHECK_THAT(kernel.compiled()->ptx, Catch::Contains(".target sm_90a"));
  std::vector<FakeLaunch> launches = device->launches();
  REQUIRE(launches.size() == 1);
  CHECK(launches[0].entry == "scale");
  CHECK(launches[0].config.grid.x == 4);
  CHECK(launches[0].config.block.x == 256);

  // A wrong argument never reaches the device.
  CHECK(message(kernel.launch(stream, {1, 1, 1},
                              {KernelArg::pointer(x.address()), KernelArg::f32(1)})) ==
        "kernel 'scale': argument 1 ('n') expects i32 (4 bytes), got f32 (4 bytes)");
  CHECK(device->launches().size() == 1);

  LoadStatsSnapshot stats = runtime->stats().snapshot();
  CHECK(stats.modulesCompiled == 1);
  CHECK(stats.modulesLoaded == 1);
  CHECK(stats.compileMsByStage.at("tile") == 1.0);
  CHECK(stats.compileMsByStage.at("ptx") == 2.0);
  CHECK(stats.compileMs() == 3.0);

  // A compile error is an error value carrying the compiler's diagnostic.
  Kernel broken(*runtime, specFor("broken", fakeIR("broken", {}, 128, 0, "FAIL")));
  CHECK(message(broken.prepare()) == "compiling kernel 'broken' for sm_90a: "
                                     "fake.tile:3:1: error: the body asked to fail");
}

TEST_CASE("TILEJIT_ARCH overrides the device's arch; one it cannot run fails at launch",
          "[runtime][jit]") {
  auto compiler = std::make_shared<FakeCompiler>();
  {
    RuntimeOptions options = optionsFor("");
    options.archOverride = archNamed("sm_121a");
    FakeDevice *device = nullptr;
    auto runtime = fakeRuntime(compiler, options, device);
    Kernel kernel(*runtime, specFor("scale", fakeIR("scale", ptrAndCount())));
    REQUIRE(message(kernel.compile()) == "");
    CHECK_THAT(kernel.compiled()->ptx, Catch::Contains(".target sm_121a"));

    // compileAll compiles it but leaves the load, and its error, to the launch.
    LoadReport report = llvm::cantFail(runtime->compileAll({&kernel}));
    CHECK(report.kernels[0].notLoaded == "the device cannot run sm_121a");

    Stream stream = llvm::cantFail(Stream::create(*device));
    DeviceBuffer x = llvm::cantFail(runtime->allocate(16));
    CHECK(message(kernel.launch(stream, {1, 1, 1},
                                {KernelArg::pointer(x.address()), KernelArg::i32(4)})) ==
          "kernel 'scale' was compiled for sm_121a, which device 0 (Fake NVIDIA H200, "
          "compute capability 9.0, 132 SMs, 139.7 GiB, sm_90a) cannot run: an `a` target "
          "runs only on its own GPU");
    CHECK(device->modulesLoaded() == 0);
  }
  {
    // A portable target runs on later GPUs.
    RuntimeOptions options = optionsFor("");
    options.archOverride = archNamed("sm_90");
    FakeDevice *device = nullptr;
    auto runtime =
        fakeRuntime(compiler, options, device, FakeDevice::withComputeCapability(12, 1));
    Kernel kernel(*runtime, specFor("scale", fakeIR("scale", ptrAndCount())));
    REQUIRE(message(kernel.prepare()) == "");
  }
  {
    ScopedEnv arch("TILEJIT_ARCH", "sm_110");
    CHECK_THAT(message(RuntimeOptions::fromEnvironment().takeError()),
               Catch::StartsWith("TILEJIT_ARCH: arch 'sm_110' is not supported"));
  }
  {
    // A caller that names its arch does not read a bad TILEJIT_ARCH.
    ScopedEnv arch("TILEJIT_ARCH", "sm_110");
    RuntimeOptions options = llvm::cantFail(RuntimeOptions::fromEnvironment(true));
    CHECK_FALSE(options.archOverride);
  }
  {
    // TILEJIT_NO_CACHE: booleans in either spelling; anything else is an error.
    ScopedEnv dir("TILEJIT_CACHE_DIR", "/tmp/tilejit-env-test");
    for (const char *off : {"1", "true", "YES", "on"}) {
      ScopedEnv noCache("TILEJIT_NO_CACHE", off);
      CHECK_FALSE(llvm::cantFail(RuntimeOptions::fromEnvironment()).useDiskCache);
    }
    for (const char *on : {"", "0", "false", "No", "off"}) {
      ScopedEnv noCache("TILEJIT_NO_CACHE", on);
      CHECK(llvm::cantFail(RuntimeOptions::fromEnvironment()).useDiskCache);
    }
    ScopedEnv noCache("TILEJIT_NO_CACHE", "nope");
    CHECK(message(RuntimeOptions::fromEnvironment().takeError()) ==
          "TILEJIT_NO_CACHE='nope': expected 1, true, yes or on, or 0, false, no or off");
  }
  {
    ScopedEnv arch("TILEJIT_ARCH", "sm_121a");
    ScopedEnv dir("TILEJIT_CACHE_DIR", "/tmp/tilejit-env-test");
    ScopedEnv off("TILEJIT_NO_CACHE", nullptr);
    RuntimeOptions options = llvm::cantFail(RuntimeOptions::fromEnvironment());
    REQUIRE(options.archOverride);
    CHECK(options.archOverride->name() == "sm_121a");
    CHECK(options.useDiskCache);
    CHECK(options.cacheDirectory == "/tmp/tilejit-env-test");
  }
  {
    ScopedEnv arch("TILEJIT_ARCH", nullptr);
    ScopedEnv dir("TILEJIT_CACHE_DIR", nullptr);
    ScopedEnv xdg("XDG_CACHE_HOME", "/tmp/xdg");
    ScopedEnv off("TILEJIT_NO_CACHE", "1");
    RuntimeOptions options = llvm::cantFail(RuntimeOptions::fromEnvironment());
    CHECK_FALSE(options.archOverride);
    CHECK_FALSE(options.useDiskCache);
    CHECK(llvm::cantFail(cacheDirectoryFromEnvironment()) == "/tmp/xdg/tilejit");
  }
  {
    ScopedEnv dir("TILEJIT_CACHE_DIR", nullptr);
    ScopedEnv xdg("XDG_CACHE_HOME", nullptr);
    ScopedEnv home("HOME", "/home/someone");
    CHECK(llvm::cantFail(cacheDirectoryFromEnvironment()) ==
          "/home/someone/.cache/tilejit");
  }
  {
    // No arch for the device and no override: the runtime says so.
    auto owned = std::make_unique<FakeDevice>(FakeDevice::withComputeCapability(8, 0));
    CHECK_THAT(
        message(
            JitRuntime::create(std::move(owned), compiler, optionsFor("")).takeError()),
        Catch::StartsWith("no arch to compile for on device 0 (Fake GPU 8.0") &&
            Catch::Contains("no tilejit arch for a device of compute capability 8.0"));
  }
}

TEST_CASE("dynamic shared memory above 48 KiB is configured at load", "[runtime][jit]") {
  auto compiler = std::make_shared<FakeCompiler>();
  FakeDevice *device = nullptr;
  auto runtime = fakeRuntime(compiler, optionsFor(""), device);
  Stream stream = llvm::cantFail(Stream::create(*device));
  DeviceBuffer x = llvm::cantFail(runtime->allocate(16));

  Kernel big(*runtime, specFor("big", fakeIR("big", ptrAndCount(), 128, 100 * 1024)));
  REQUIRE(message(big.launch(stream, {1, 1, 1},
                             {KernelArg::pointer(x.address()), KernelArg::i32(1)})) ==
          "");
  LoadedModule loaded =
      *runtime->modules().find({big.diskKey().str(), device->contextId(), 0});
  CHECK(device->dynamicSharedLimit(loaded.function) == 100 * 1024);
  CHECK(device->launches().back().config.dynamicSharedBytes == 100 * 1024);

  Kernel small(*runtime, specFor("small", fakeIR("small", ptrAndCount(), 128, 1024)));
  REQUIRE(message(small.prepare()) == "");
  LoadedModule smallLoaded =
      *runtime->modules().find({small.diskKey().str(), device->contextId(), 0});
  CHECK(device->dynamicSharedLimit(smallLoaded.function) == 48 * 1024);

  Kernel huge(*runtime, specFor("huge", fakeIR("huge", ptrAndCount(), 128, 300 * 1024)));
  CHECK(message(huge.prepare()) ==
        "kernel 'huge' needs 307200 bytes of dynamic shared memory per block; the device "
        "allows at most 232448");
}

TEST_CASE("a kernel that waits for its predecessors launches programmatically",
          "[runtime][jit]") {
  // Only a kernel that waits may start before its predecessor ends; the
  // disk cache keeps that, and RuntimeOptions::dependentLaunch turns it off.
  for (bool dependent : {true, false}) {
    TempDir dir; // the option is not part of the cache key: each its own cache
    for (int pass = 0; pass < 2; ++pass) { // compiled, then from the disk cache
      INFO("dependentLaunch " << dependent << ", pass " << pass);
      auto compiler = std::make_shared<FakeCompiler>();
      FakeDevice *device = nullptr;
      RuntimeOptions options = optionsFor(dir.path());
      options.dependentLaunch = dependent;
      auto runtime = fakeRuntime(compiler, options, device);
      Stream stream = llvm::cantFail(Stream::create(*device));
      DeviceBuffer x = llvm::cantFail(runtime->allocate(16));
      Kernel waits(*runtime,
                   specFor("waits", fakeIR("waits", ptrAndCount()) + "waits\n"));
      Kernel plain(*runtime, specFor("plain", fakeIR("plain", ptrAndCount())));
      for (Kernel *k : {&waits, &plain})
        REQUIRE(message(k->launch(
                    stream, {1, 1, 1},
                    {KernelArg::pointer(x.address()), KernelArg::i32(1)})) == "");
      CHECK(waits.origin() ==
            (pass == 0 ? CompileOrigin::Compiler : CompileOrigin::Disk));
      std::vector<FakeLaunch> launches = device->launches();
      REQUIRE(launches.size() == 2);
      CHECK(launches[0].config.programmatic == dependent);
      CHECK_FALSE(launches[1].config.programmatic);
    }
  }
}

TEST_CASE("a model's kernels compile in parallel at load, with a report",
          "[runtime][jit]") {
  TempDir dir;
  auto compiler = std::make_shared<FakeCompiler>();
  compiler->delay = std::chrono::milliseconds(40);
  std::vector<std::string> names;
  for (int i = 0; i < 8; ++i)
    names.push_back("kernel_" + std::to_string(i));
  auto makeKernels = [&](JitRuntime &runtime) {
    std::vector<std::unique_ptr<Kernel>> kernels;
    for (const std::string &name : names)
      kernels.push_back(
          std::make_unique<Kernel>(runtime, specFor(name, fakeIR(name, ptrAndCount()))));
    return kernels;
  };
  auto pointers = [](std::vector<std::unique_ptr<Kernel>> &kernels) {
    std::vector<Kernel *> out;
    for (auto &kernel : kernels)
      out.push_back(kernel.get());
    return out;
  };

  {
    FakeDevice *device = nullptr;
    auto runtime = fakeRuntime(compiler, optionsFor(dir.path()), device);
    auto kernels = makeKernels(*runtime);
    LoadReport report = llvm::cantFail(runtime->compileAll(pointers(kernels), 4));
    CHECK(report.threads == 4);
    CHECK(compiler->maxConcurrent >= 2);
    REQUIRE(report.kernels.size() == 8);
    for (const KernelLoadRecord &record : report.kernels) {
      CHECK(record.origin == CompileOrigin::Compiler);
      CHECK(record.compileMs >= 40);
      CHECK(record.notLoaded.empty());
    }
    for (auto &kernel : kernels)
      CHECK(kernel->isReady());
    CHECK(device->modulesLoaded() == 8);
    std::string text;
    llvm::raw_string_ostream os(text);
    report.print(os);
    CHECK_THAT(text, Catch::StartsWith("prepared 8 kernels in ") &&
                         Catch::Contains("on 4 threads") && Catch::Contains("kernel_7"));
  }
  {
    // A new process (runtime) finds them all on disk.
    FakeDevice *device = nullptr;
    auto runtime = fakeRuntime(compiler, optionsFor(dir.path()), device);
    auto kernels = makeKernels(*runtime);
    int before = compiler->compiles;
    LoadReport report = llvm::cantFail(runtime->compileAll(pointers(kernels)));
    CHECK(compiler->compiles == before);
    CHECK(runtime->stats().snapshot().diskHits == 8);
    for (const KernelLoadRecord &record : report.kernels)
      CHECK(record.origin == CompileOrigin::Disk);
  }
  {
    // Every kernel is attempted; the error lists each failure.
    compiler->delay = std::chrono::milliseconds(0);
    FakeDevice *device = nullptr;
    auto runtime = fakeRuntime(compiler, optionsFor(""), device);
    Kernel good(*runtime, specFor("good", fakeIR("good", ptrAndCount())));
    Kernel bad1(*runtime, specFor("bad1", fakeIR("bad1", {}, 128, 0, "FAIL")));
    Kernel bad2(*runtime, specFor("bad2", fakeIR("bad2", {}, 128, 0, "FAIL")));
    CHECK(message(runtime->compileAll({&bad1, &good, &bad2}, 2).takeError()) ==
          "2 of 3 kernels failed to compile or load:\n"
          "  bad1: compiling kernel 'bad1' for sm_90a: fake.tile:3:1: error: the body "
          "asked "
          "to fail\n"
          "  bad2: compiling kernel 'bad2' for sm_90a: fake.tile:3:1: error: the body "
          "asked "
          "to fail");
    CHECK(good.isReady());
  }
}

TEST_CASE("the runtime's own error texts", "[runtime][jit]") {
  auto compiler = std::make_shared<FakeCompiler>();
  FakeDevice *device = nullptr;
  auto runtime = fakeRuntime(compiler, optionsFor(""), device);

  CHECK(message(JitRuntime::create(nullptr, compiler, optionsFor("")).takeError()) ==
        "JitRuntime needs a device and a compiler");

  KernelSpec failing = specFor("k", "");
  failing.buildIR = [](const Arch &arch) -> llvm::Expected<std::string> {
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "k.cpp:12:3: error: shapes do not broadcast");
  };
  Kernel unbuildable(*runtime, failing);
  CHECK(message(unbuildable.compile()) ==
        "building kernel 'k' for sm_90a: k.cpp:12:3: error: shapes do not broadcast");
  KernelSpec empty;
  empty.name = "empty";
  CHECK(message(Kernel(*runtime, empty).compile()) == "kernel 'empty' has no IR builder");

  Kernel zeroThreads(*runtime, specFor("zero", fakeIR("zero", ptrAndCount(), 0)));
  CHECK(message(zeroThreads.compile()) == "the compiler's output for kernel 'zero' "
                                          "(sm_90a) asks for 0 threads per block (1 to "
                                          "1024)");

  auto slot = runtime->createWeightSlot("w");
  CHECK_THAT(message(slot->address("scales").takeError()),
             Catch::Matches("weight slot #[0-9]+ \\('w'\\) holds no 'scales'"));

  DeviceBuffer small = llvm::cantFail(runtime->allocate(8));
  CHECK(message(small.upload(std::vector<uint8_t>(16))) ==
        "cannot upload 16 bytes into a buffer of 8");
  std::vector<uint8_t> tooMuch(16);
  CHECK(message(small.download(tooMuch)) ==
        "cannot download 16 bytes from a buffer of 8");

  CHECK(message(DiskCache::open({""}).takeError()) == "no disk cache directory given");
  TempDir dir;
  auto cache = llvm::cantFail(DiskCache::open({dir.path()}));
  CHECK(message(cache->lookup("../../etc/passwd").takeError()) ==
        "not a disk cache key: '../../etc/passwd'");

  ScopedEnv cacheDir("TILEJIT_CACHE_DIR", nullptr);
  ScopedEnv xdg("XDG_CACHE_HOME", nullptr);
  ScopedEnv home("HOME", nullptr);
  CHECK(
      message(cacheDirectoryFromEnvironment().takeError()) ==
      "cannot place the kernel cache: none of TILEJIT_CACHE_DIR, XDG_CACHE_HOME and HOME "
      "is set");
}
