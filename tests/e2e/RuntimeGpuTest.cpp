// The runtime end to end through JitCompiler: every registered kernel compiled in
// parallel (cold), then loaded from the disk cache (warm); on a GPU also a launch
// checked against the host, weight slots across engines and graph capture. Without
// a GPU the [gpu] cases print why they are skipped; [jit] runs on the FakeDevice.
#include "GpuTestSupport.h"
#include "tilejit/runtime/FakeDevice.h"
#include "tilejit/support/Timing.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Process.h"

using tilejit::buildCanonicalIR;
using tilejit::ConstantValues;
using tilejit::JitCompiler;
using tilejit::KernelDef;
using tilejit::makeKernelSpec;
using namespace tilejit::gputest;

namespace {

/// A new directory under $TILEJIT_CACHE_DIR when set (a GPU host's disk of
/// choice), else under the temporary directory: each case's first compile must
/// be cold, and two cases share one run.
std::string coldCacheDirectory() {
  auto dir = llvm::sys::Process::GetEnv("TILEJIT_CACHE_DIR");
  if (!dir)
    return freshCacheDirectory();
  REQUIRE(!llvm::sys::fs::create_directories(*dir));
  llvm::SmallString<128> cold;
  REQUIRE(!llvm::sys::fs::createUniqueDirectory(*dir + "/cold", cold));
  return cold.str().str();
}

/// Every registered kernel at its default specialization.
std::vector<std::unique_ptr<Kernel>> allKernels(JitRuntime &jit) {
  std::vector<std::unique_ptr<Kernel>> kernels;
  for (const KernelDef *def : registry().all()) {
    auto spec = def->specialize({});
    REQUIRE(!!spec);
    kernels.push_back(
        std::make_unique<Kernel>(jit, makeKernelSpec(*def, std::move(*spec))));
  }
  return kernels;
}

LoadReport compileAllOrFail(JitRuntime &jit,
                            std::vector<std::unique_ptr<Kernel>> &kernels) {
  std::vector<Kernel *> pointers;
  for (auto &k : kernels)
    pointers.push_back(k.get());
  auto report = jit.compileAll(pointers);
  if (!report)
    FAIL(llvm::toString(report.takeError()));
  return std::move(*report);
}

/// Cold compile of every kernel into a fresh cache, then `warmRuns` warm starts
/// (each a new JitRuntime on a new device handle) that must all hit the disk.
void coldThenWarm(const std::function<std::unique_ptr<DeviceApi>()> &openDevice,
                  int warmRuns) {
  std::string cacheDir = coldCacheDirectory();
  {
    auto jit = makeRuntime(openDevice(), cacheDir);
    auto kernels = allKernels(*jit);
    LoadReport cold = compileAllOrFail(*jit, kernels);
    llvm::outs() << "cold (" << jit->targetArch().name() << ", cache " << cacheDir
                 << "): ";
    cold.print(llvm::outs());
    for (const KernelLoadRecord &record : cold.kernels)
      CHECK(record.origin == CompileOrigin::Compiler);
  }
  std::vector<double> warm;
  for (int run = 0; run < warmRuns; ++run) {
    auto jit = makeRuntime(openDevice(), cacheDir);
    auto kernels = allKernels(*jit);
    LoadReport report = compileAllOrFail(*jit, kernels);
    if (run == 0) {
      llvm::outs() << "warm: ";
      report.print(llvm::outs());
    }
    for (const KernelLoadRecord &record : report.kernels)
      CHECK(record.origin == CompileOrigin::Disk);
    CHECK(jit->stats().snapshot().modulesCompiled == 0);
    warm.push_back(report.totalMs);
  }
  tilejit::support::SampleSummary s = tilejit::support::summarize(warm);
  llvm::outs() << llvm::formatv("warm start of {0} kernels: n={1} median {2:f2} ms, min "
                                "{3:f2} ms, max {4:f2} ms\n",
                                registry().all().size(), warm.size(), s.median, s.min,
                                s.max);
}

Kernel vectorAdd(JitRuntime &jit, const WeightSlot *slot = nullptr) {
  const KernelDef *def = registry().find("vector_add");
  REQUIRE(def);
  KernelSpec spec = makeKernelSpec(*def, llvm::cantFail(def->specialize({})));
  spec.weightSlot = slot;
  return Kernel(jit, std::move(spec));
}

constexpr int32_t kBlock = 1024; // vector_add's default specialization

} // namespace

TEST_CASE("every registered kernel compiles through JitCompiler, then loads from disk",
          "[jit]") {
  coldThenWarm([] { return std::make_unique<FakeDevice>(); }, 3);
}

TEST_CASE("canonical IR is generic and without locations", "[jit]") {
  const KernelDef *def = registry().find("vector_add");
  REQUIRE(def);
  auto ir = buildCanonicalIR(*def, llvm::cantFail(def->specialize({})));
  REQUIRE(!!ir);
  CHECK(ir->find("\"tile.kernel\"") != std::string::npos);
  CHECK(ir->find("loc(") == std::string::npos);
  auto again = buildCanonicalIR(*def, llvm::cantFail(def->specialize({})));
  CHECK(*ir == *again);
}

TEST_CASE("the lowering records which kernels add their products with fewer bits",
          "[jit]") {
  // e4m3 wgmma (sm_90a) sums inside one instruction with fewer bits than f32;
  // mma.sync (sm_90 PTX), bf16 operands and CUDA-core kernels do not.
  struct Case {
    const char *kernel, *arch;
    SumPrecision sums;
  };
  const Case cases[] = {{"gemm_e4m3", "sm_90a", SumPrecision::Reduced},
                        {"gemm_e4m3", "sm_90", SumPrecision::Exact},
                        {"gemm_e4m3", "sm_121a", SumPrecision::Exact},
                        {"gemm_bf16", "sm_90a", SumPrecision::Exact},
                        {"vector_add", "sm_90a", SumPrecision::Exact}};
  JitCompiler compiler;
  for (const Case &c : cases) {
    INFO(c.kernel << " for " << c.arch);
    const KernelDef *def = registry().find(c.kernel);
    REQUIRE(def);
    // Small shapes keep the compile quick; the matrix path does not depend on them.
    ConstantValues constants;
    if (llvm::StringRef(c.kernel).starts_with("gemm"))
      constants = {{"n", 256}, {"k", 256}};
    auto ir = buildCanonicalIR(*def, llvm::cantFail(def->specialize(constants)));
    REQUIRE(!!ir);
    auto compiled = compiler.compile(
        {c.kernel, *ir, llvm::cantFail(tilejit::Arch::parse(c.arch)), {}});
    REQUIRE(!!compiled);
    CHECK(sumPrecisionName(compiled->sums) == sumPrecisionName(c.sums));
  }
}

TEST_CASE("a kernel is held to the shared memory of the plan's smaller device", "[jit]") {
  const KernelDef *def = registry().find("gemm_bf16");
  REQUIRE(def);
  auto ir =
      buildCanonicalIR(*def, llvm::cantFail(def->specialize({{"n", 256}, {"k", 256}})));
  REQUIRE(!!ir);
  tilejit::runtime::KernelRequest request{"gemm_bf16", *ir,
                                          llvm::cantFail(tilejit::Arch::parse("sm_90a"))};
  JitCompiler compiler;
  auto whole = compiler.compile(request);
  REQUIRE(!!whole);
  const uint32_t needs = whole->launch.dynamicSharedBytes;
  REQUIRE(needs > 1024);

  request.options.sharedBytesLimit = needs;
  auto enough = compiler.compile(request);
  REQUIRE(!!enough);
  CHECK(enough->launch.dynamicSharedBytes == needs);

  request.options.sharedBytesLimit = 1024;
  auto refused = compiler.compile(request);
  REQUIRE(!refused);
  CHECK_THAT(
      llvm::toString(refused.takeError()),
      Catch::Contains(llvm::formatv("needs {0} bytes of shared memory per program, "
                                    "more than the 1024 a program may use on "
                                    "sm_90a (the plan's device)",
                                    needs)
                          .str()));

  request.options.sharedBytesLimit = -1;
  auto negative = compiler.compile(request);
  REQUIRE(!negative);
  CHECK(llvm::toString(negative.takeError()) ==
        "kernel 'gemm_bf16': shared memory limit -1 bytes (expected a positive byte "
        "count, or 0 for the arch's own)");
}

TEST_CASE("GPU: every registered kernel compiled cold in parallel, then warm from disk",
          "[gpu]") {
  if (!openGpuOrSkip())
    return;
  coldThenWarm([] { return llvm::cantFail(openCudaDevice(0)); }, 5);
}

TEST_CASE("GPU: warm start of a process from a populated TILEJIT_CACHE_DIR",
          "[.][warm-process]") {
  auto device = openGpuOrSkip();
  if (!device)
    return;
  auto dir = llvm::sys::Process::GetEnv("TILEJIT_CACHE_DIR");
  REQUIRE(dir);
  auto jit = makeRuntime(std::move(device), *dir);
  auto kernels = allKernels(*jit);
  LoadReport report = compileAllOrFail(*jit, kernels);
  for (const KernelLoadRecord &record : report.kernels)
    CHECK(record.origin == CompileOrigin::Disk);
  llvm::outs() << llvm::formatv("warm process: {0} kernels in {1:f2} ms\n",
                                report.kernels.size(), report.totalMs);
}

TEST_CASE("GPU: vector_add matches the host", "[gpu]") {
  auto device = openGpuOrSkip();
  if (!device)
    return;
  auto jit = makeRuntime(std::move(device), freshCacheDirectory());
  const int32_t n = (1 << 20) + 17; // a masked tail
  std::vector<float> x(n), y(n);
  for (int32_t i = 0; i < n; ++i) {
    x[i] = 0.5f * i;
    y[i] = 1.0f - 0.25f * (i % 97);
  }
  DeviceBuffer dx = allocateOrFail(*jit, n * 4), dy = allocateOrFail(*jit, n * 4),
               dout = allocateOrFail(*jit, n * 4);
  requireOk(dx.upload(asBytes(x)));
  requireOk(dy.upload(asBytes(y)));
  Kernel add = vectorAdd(*jit);
  auto stream = Stream::create(jit->device());
  REQUIRE(!!stream);
  requireOk(
      add.launch(*stream, {uint32_t((n + kBlock - 1) / kBlock), 1, 1},
                 {KernelArg::pointer(dx.address()), KernelArg::pointer(dy.address()),
                  KernelArg::pointer(dout.address()), KernelArg::i32(n)}));
  requireOk(stream->synchronize());
  std::vector<float> out = download(dout, n);
  int32_t mismatches = 0;
  for (int32_t i = 0; i < n; ++i)
    mismatches += out[i] != x[i] + y[i];
  CHECK(mismatches == 0);
  llvm::outs() << "vector_add n=" << n << ": " << mismatches << " mismatches\n";
}

TEST_CASE("GPU: a weight at a reused host address never sees the old device pointer",
          "[gpu]") {
  auto device = openGpuOrSkip();
  if (!device)
    return;
  auto jit = makeRuntime(std::move(device), freshCacheDirectory());
  const int32_t n = 4096;
  std::vector<float> hostWeight(n); // both engines' weight lives here
  DeviceBuffer zeros = allocateOrFail(*jit, n * 4), out = allocateOrFail(*jit, n * 4);
  requireOk(zeros.upload(asBytes(std::vector<float>(n, 0.0f))));
  auto stream = Stream::create(jit->device());
  REQUIRE(!!stream);

  // One engine: its weight in a slot, vector_add specialized to the slot.
  auto runEngine = [&](float value, DevicePtr &weightAddress, uint64_t &slotId) {
    std::fill(hostWeight.begin(), hostWeight.end(), value);
    uint64_t uploadedBefore = jit->stats().snapshot().bytesUploaded;
    auto slot = jit->createWeightSlot("weight");
    slotId = slot->id();
    auto w = slot->upload("weight", asBytes(hostWeight));
    if (!w)
      FAIL(llvm::toString(w.takeError()));
    weightAddress = *w;
    CHECK(jit->stats().snapshot().bytesUploaded - uploadedBefore == uint64_t(n) * 4);
    Kernel add = vectorAdd(*jit, slot.get());
    requireOk(add.launch(*stream, {uint32_t(n / kBlock), 1, 1},
                         {KernelArg::pointer(*w), KernelArg::pointer(zeros.address()),
                          KernelArg::pointer(out.address()), KernelArg::i32(n)}));
    requireOk(stream->synchronize());
    std::vector<float> result = download(out, n);
    CHECK(std::count(result.begin(), result.end(), value) == n);
  };
  DevicePtr addressA = 0, addressB = 0;
  uint64_t slotA = 0, slotB = 0;
  runEngine(1.0f, addressA, slotA); // engine A, destroyed at the end of the call
  CHECK(!jit->isWeightSlotLive(slotA));
  runEngine(2.0f, addressB, slotB); // engine B, same host address, its own bytes
  CHECK(slotA != slotB);
  llvm::outs() << llvm::formatv("stale pointer: slot {0} at {1:x} then slot {2} at {3:x}"
                                "{4}; engine B read its own bytes\n",
                                slotA, addressA, slotB, addressB,
                                addressA == addressB ? " (the driver reused the freed "
                                                       "address, now owned by B)"
                                                     : "");
}

TEST_CASE("GPU: capture refuses an uncompiled kernel and replays a compiled one",
          "[gpu]") {
  auto device = openGpuOrSkip();
  if (!device)
    return;
  auto jit = makeRuntime(std::move(device), freshCacheDirectory());
  const int32_t n = 8 * kBlock;
  DeviceBuffer dx = allocateOrFail(*jit, n * 4), dy = allocateOrFail(*jit, n * 4),
               dout = allocateOrFail(*jit, n * 4);
  auto stream = Stream::create(jit->device());
  REQUIRE(!!stream);
  std::vector<KernelArg> args = {KernelArg::pointer(dx.address()),
                                 KernelArg::pointer(dy.address()),
                                 KernelArg::pointer(dout.address()), KernelArg::i32(n)};

  Kernel uncompiled = vectorAdd(*jit);
  requireOk(jit->beginCapture(*stream));
  llvm::Error refused = uncompiled.launch(*stream, {n / kBlock, 1, 1}, args);
  REQUIRE(!!refused);
  std::string message = llvm::toString(std::move(refused));
  llvm::outs() << "launch of an uncompiled kernel during capture: " << message << "\n";
  CHECK(message.find("capture") != std::string::npos);
  auto empty = jit->endCapture(*stream);
  if (!empty)
    FAIL(llvm::toString(empty.takeError()));

  Kernel add = vectorAdd(*jit);
  requireOk(add.prepare());
  requireOk(jit->beginCapture(*stream));
  requireOk(add.launch(*stream, {n / kBlock, 1, 1}, args));
  auto graph = jit->endCapture(*stream);
  if (!graph)
    FAIL(llvm::toString(graph.takeError()));
  for (float scale : {1.0f, 3.0f}) { // the replay reads the buffers' current data
    std::vector<float> x(n), y(n);
    for (int32_t i = 0; i < n; ++i) {
      x[i] = scale * i;
      y[i] = -2.0f * scale;
    }
    requireOk(dx.upload(asBytes(x)));
    requireOk(dy.upload(asBytes(y)));
    requireOk(graph->launch(*stream));
    requireOk(stream->synchronize());
    std::vector<float> out = download(dout, n);
    int32_t mismatches = 0;
    for (int32_t i = 0; i < n; ++i)
      mismatches += out[i] != x[i] + y[i];
    CHECK(mismatches == 0);
    llvm::outs() << "graph replay (scale " << scale << "): " << mismatches
                 << " mismatches\n";
  }
}
