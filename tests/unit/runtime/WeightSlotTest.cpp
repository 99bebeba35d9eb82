// Weight slots, never addresses (docs/design.md#weight-slots): the stale-pointer scenario
// of two engines in one process, uploads counted once, the second forward free of work.
#include "RuntimeTestSupport.h"

#include <catch2/catch.hpp>

#include <set>

using namespace tilejit::runtime;
using namespace tilejit::runtime::testing;

namespace {

/// A toy model engine: one weight in a slot, a kernel specialized to that
/// weight (its IR bakes in the weight's size, as a real specialization bakes in
/// shapes) and a kernel bound to no weight, shared by every engine.
class Engine {
public:
  Engine(JitRuntime &runtime, llvm::ArrayRef<uint8_t> hostWeight)
      : slot(runtime.createWeightSlot("in_proj")) {
    weight = llvm::cantFail(slot->upload("weight", hostWeight));
    output = llvm::cantFail(runtime.allocate(256));
    std::vector<KernelParam> gemvParams = {{"w", ParamKind::Pointer, 8},
                                           {"y", ParamKind::Pointer, 8},
                                           {"n", ParamKind::I32, 4}};
    gemv = std::make_unique<Kernel>(
        runtime,
        specFor("gemv",
                fakeIR("gemv", gemvParams, 128, 0,
                       "rows 64 weight bytes " + std::to_string(hostWeight.size())),
                slot.get()));
    norm =
        std::make_unique<Kernel>(runtime, specFor("norm", fakeIR("norm", ptrAndCount())));
  }

  llvm::Error forward(const Stream &stream) {
    if (llvm::Error err =
            gemv->launch(stream, {64, 1, 1},
                         {KernelArg::pointer(weight),
                          KernelArg::pointer(output.address()), KernelArg::i32(64)}))
      return err;
    return norm->launch(stream, {1, 1, 1},
                        {KernelArg::pointer(output.address()), KernelArg::i32(64)});
  }

  std::unique_ptr<WeightSlot> slot;
  DevicePtr weight = 0;
  DeviceBuffer output;
  std::unique_ptr<Kernel> gemv, norm;
};

} // namespace

TEST_CASE("a second engine at the first one's host addresses never sees its device "
          "pointers or modules",
          "[runtime][weights]") {
  TempDir dir;
  auto compiler = std::make_shared<FakeCompiler>();
  FakeDevice *device = nullptr;
  auto runtime = fakeRuntime(compiler, optionsFor(dir.path()), device);
  Stream stream = llvm::cantFail(Stream::create(*device));

  // One host buffer serves both engines: B's weights land at A's addresses.
  std::vector<uint8_t> host(4096);
  std::fill(host.begin(), host.end(), 0xA1);
  const uint8_t *hostAddress = host.data();
  auto engineA = std::make_unique<Engine>(*runtime, host);
  REQUIRE(message(engineA->forward(stream)) == "");
  uint64_t slotA = engineA->slot->id();
  std::vector<DevicePtr> devicePointersOfA = device->allocationsEverMade();
  std::set<uint64_t> modulesOfA;
  for (const FakeLaunch &launch : device->launches())
    if (launch.entry == "gemv")
      modulesOfA.insert(launch.moduleId);
  REQUIRE(modulesOfA.size() == 1);
  uint64_t unloadedBefore = device->modulesUnloaded();

  engineA.reset();
  // A's weight module is unloaded and its memory freed; the shared kernel stays.
  CHECK(device->modulesUnloaded() == unloadedBefore + 1);
  CHECK(runtime->modules().size() == 1);
  for (DevicePtr pointer : devicePointersOfA)
    CHECK_FALSE(device->isLive(pointer));
  CHECK_FALSE(runtime->isWeightSlotLive(slotA));

  std::fill(host.begin(), host.end(), 0xB2);
  REQUIRE(host.data() == hostAddress);
  device->clearLaunches();
  LoadStatsSnapshot before = runtime->stats().snapshot();
  auto engineB = std::make_unique<Engine>(*runtime, host);
  REQUIRE(message(engineB->forward(stream)) == "");
  LoadStatsSnapshot delta = runtime->stats().snapshot() - before;

  CHECK(engineB->slot->id() != slotA);
  CHECK(delta.bytesUploaded == 4096); // B uploads its own weight
  CHECK(delta.modulesLoaded == 1);    // and loads its own weight-specialized module
  CHECK(delta.memoryHits == 1);       // the shared kernel is reused
  CHECK(delta.diskHits == 1);         // same IR: the PTX itself comes from disk
  CHECK(delta.modulesCompiled == 0);

  std::set<DevicePtr> stale(devicePointersOfA.begin(), devicePointersOfA.end());
  std::vector<FakeLaunch> launches = device->launches();
  REQUIRE(launches.size() == 2);
  for (const FakeLaunch &launch : launches) {
    if (launch.entry == "gemv")
      CHECK(modulesOfA.count(launch.moduleId) == 0);
    for (const KernelArg &arg : launch.args)
      if (arg.kind() == ParamKind::Pointer)
        CHECK(stale.count(arg.pattern()) == 0);
  }
  std::vector<uint8_t> onDevice(4096);
  REQUIRE(message(device->copyToHost(onDevice.data(), engineB->weight, 4096, {})) == "");
  CHECK(onDevice == host);
}

TEST_CASE("a kernel of a destroyed weight slot refuses to launch", "[runtime][weights]") {
  auto compiler = std::make_shared<FakeCompiler>();
  FakeDevice *device = nullptr;
  auto runtime = fakeRuntime(compiler, optionsFor(""), device);
  Stream stream = llvm::cantFail(Stream::create(*device));
  auto slot = runtime->createWeightSlot("out_proj");
  DevicePtr weight = llvm::cantFail(slot->upload("weight", std::vector<uint8_t>(64, 1)));
  CHECK_THAT(message(slot->upload("weight", std::vector<uint8_t>(64, 1)).takeError()),
             Catch::Contains("already holds 'weight': a weight uploads once"));
  Kernel kernel(*runtime, specFor("gemv", fakeIR("gemv", ptrAndCount()), slot.get()));
  REQUIRE(message(kernel.launch(stream, {1, 1, 1},
                                {KernelArg::pointer(weight), KernelArg::i32(1)})) == "");
  uint64_t id = slot->id();
  slot.reset();
  CHECK(message(kernel.launch(stream, {1, 1, 1},
                              {KernelArg::pointer(weight), KernelArg::i32(1)})) ==
        "kernel 'gemv' is specialized to weight slot #" + std::to_string(id) +
            " ('out_proj'), which was destroyed: its modules and device memory are gone");
  CHECK(device->launches().size() == 1);
}

TEST_CASE("the second forward uploads 0 bytes and compiles 0 modules",
          "[runtime][weights]") {
  auto compiler = std::make_shared<FakeCompiler>();
  FakeDevice *device = nullptr;
  auto runtime = fakeRuntime(compiler, optionsFor(""), device);
  Stream stream = llvm::cantFail(Stream::create(*device));
  std::vector<uint8_t> host(1024, 3);
  Engine engine(*runtime, host);

  LoadStatsSnapshot start = runtime->stats().snapshot();
  REQUIRE(message(engine.forward(stream)) == "");
  LoadStatsSnapshot first = runtime->stats().snapshot() - start;
  CHECK(first.modulesCompiled == 2);
  CHECK(first.modulesLoaded == 2);
  CHECK(runtime->stats().snapshot().bytesUploaded == 1024);

  LoadStatsSnapshot afterFirst = runtime->stats().snapshot();
  REQUIRE(message(engine.forward(stream)) == "");
  LoadStatsSnapshot second = runtime->stats().snapshot() - afterFirst;
  CHECK(second.bytesUploaded == 0);
  CHECK(second.modulesCompiled == 0);
  CHECK(second.modulesLoaded == 0);
  CHECK(second.memoryHits == 0);
  CHECK(second.diskHits == 0);
  CHECK(second.compileMs() == 0);
  CHECK(device->launches().size() == 4);

  std::string text;
  llvm::raw_string_ostream os(text);
  runtime->stats().snapshot().print(os);
  CHECK(text == "uploaded 1.0 KB, compiled 2 (ptx 4.0 ms, tile 2.0 ms; total 6.0 ms), "
                "loaded 2, memory hits 0, disk hits 0, corrupt 0");
}
