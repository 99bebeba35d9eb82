// Graph-capture discipline: during capture, a launch that would compile, load a
// module or allocate fails with a clear error; a ready kernel captures and replays.
#include "RuntimeTestSupport.h"

#include <catch2/catch.hpp>

using namespace tilejit::runtime;
using namespace tilejit::runtime::testing;

TEST_CASE("during capture only ready kernels launch; they capture and replay",
          "[runtime][capture]") {
  auto compiler = std::make_shared<FakeCompiler>();
  FakeDevice *device = nullptr;
  auto runtime = fakeRuntime(compiler, optionsFor(""), device);
  Stream stream = llvm::cantFail(Stream::create(*device));
  DeviceBuffer x = llvm::cantFail(runtime->allocate(64));
  std::vector<KernelArg> args = {KernelArg::pointer(x.address()), KernelArg::i32(16)};

  Kernel ready(*runtime, specFor("ready", fakeIR("ready", ptrAndCount())));
  REQUIRE(message(ready.prepare()) == "");
  Kernel cold(*runtime, specFor("cold", fakeIR("cold", ptrAndCount())));
  Kernel compiledOnly(*runtime,
                      specFor("compiled_only", fakeIR("compiled_only", ptrAndCount())));
  REQUIRE(message(compiledOnly.compile()) == "");
  auto slot = runtime->createWeightSlot("w");
  LoadStatsSnapshot before = runtime->stats().snapshot();

  REQUIRE(message(runtime->beginCapture(stream)) == "");
  CHECK(message(cold.launch(stream, {1, 1, 1}, args)) ==
        "cannot compile kernel 'cold' at its first launch during CUDA graph capture: a "
        "launch in a capture must find its kernel ready; prepare it before capturing "
        "(Kernel::prepare or JitRuntime::compileAll at load)");
  CHECK(
      message(compiledOnly.launch(stream, {1, 1, 1}, args)) ==
      "cannot load the module of kernel 'compiled_only' at its first launch during CUDA "
      "graph capture: a launch in a capture must find its kernel ready; prepare it "
      "before "
      "capturing (Kernel::prepare or JitRuntime::compileAll at load)");
  CHECK(message(cold.prepare()) ==
        "cannot compile kernel 'cold' during CUDA graph capture: compile it before "
        "capturing (Kernel::prepare or JitRuntime::compileAll at load)");
  CHECK(message(runtime->allocate(4096).takeError()) ==
        "cannot allocate 4096 bytes of device memory during CUDA graph capture: allocate "
        "before capturing (at load)");
  CHECK_THAT(message(slot->upload("weight", std::vector<uint8_t>(8)).takeError()),
             Catch::Contains("cannot allocate 8 bytes of device memory during CUDA graph "
                             "capture"));
  CHECK_THAT(
      message(runtime->compileAll({&cold}).takeError()),
      Catch::StartsWith("cannot compile kernels at load during CUDA graph capture"));

  REQUIRE(message(ready.launch(stream, {2, 1, 1}, args)) == "");
  REQUIRE(message(ready.launch(stream, {3, 1, 1}, args)) == "");
  CHECK(device->launches().empty()); // captured, not run
  Graph graph = llvm::cantFail(runtime->endCapture(stream));

  // Nothing was compiled, loaded or uploaded inside the capture.
  LoadStatsSnapshot delta = runtime->stats().snapshot() - before;
  CHECK(delta.modulesCompiled == 0);
  CHECK(delta.modulesLoaded == 0);
  CHECK(delta.bytesUploaded == 0);

  for (int replay = 0; replay < 2; ++replay)
    REQUIRE(message(graph.launch(stream)) == "");
  std::vector<FakeLaunch> launches = device->launches();
  REQUIRE(launches.size() == 4);
  for (const FakeLaunch &launch : launches) {
    CHECK(launch.entry == "ready");
    CHECK(launch.fromGraph);
  }
  CHECK(launches[0].config.grid.x == 2);
  CHECK(launches[1].config.grid.x == 3);

  // After the capture, the cold kernel compiles on first use as usual.
  CHECK(message(cold.launch(stream, {1, 1, 1}, args)) == "");
}

TEST_CASE("a capture begun outside the runtime is noticed through the driver",
          "[runtime][capture]") {
  auto compiler = std::make_shared<FakeCompiler>();
  FakeDevice *device = nullptr;
  auto runtime = fakeRuntime(compiler, optionsFor(""), device);
  Stream stream = llvm::cantFail(Stream::create(*device));
  DeviceBuffer x = llvm::cantFail(runtime->allocate(64));
  Kernel cold(*runtime, specFor("cold", fakeIR("cold", ptrAndCount())));

  // E.g. a framework capturing the stream it hands to tilejit.
  REQUIRE(message(device->beginCapture(stream.handle())) == "");
  CHECK_THAT(message(cold.launch(stream, {1, 1, 1},
                                 {KernelArg::pointer(x.address()), KernelArg::i32(1)})),
             Catch::StartsWith("cannot compile kernel 'cold' at its first launch during "
                               "CUDA graph capture"));
  CHECK(compiler->compiles == 0);
  GraphHandle graph = llvm::cantFail(device->endCapture(stream.handle()));
  REQUIRE(message(device->destroyGraph(graph)) == "");
}
