// Weights packed into a kernel's layout at upload (docs/design.md#weight-layouts):
// the slot packs once per layout, holds each layout as its own part, counts the
// packing, and a module's cache key names the layouts it reads.
#include "RuntimeTestSupport.h"

#include <catch2/catch.hpp>

using namespace tilejit;
using namespace tilejit::runtime;
using namespace tilejit::runtime::testing;

TEST_CASE("a weight slot packs a weight once per layout and counts it",
          "[runtime][weights]") {
  auto compiler = std::make_shared<FakeCompiler>();
  FakeDevice *device = nullptr;
  auto runtime = fakeRuntime(compiler, optionsFor(""), device);
  auto slot = runtime->createWeightSlot("in_proj");
  const int64_t rows = 20, rowBytes = 64;
  std::vector<uint8_t> host(rows * rowBytes);
  for (size_t i = 0; i < host.size(); ++i)
    host[i] = uint8_t(i * 7);
  const WeightLayout packed{8};

  LoadStatsSnapshot start = runtime->stats().snapshot();
  DevicePtr rowMajor =
      llvm::cantFail(slot->uploadPacked("weight", WeightLayout{}, host, rows, rowBytes));
  DevicePtr chunked =
      llvm::cantFail(slot->uploadPacked("weight", packed, host, rows, rowBytes));
  // A second kernel reading the same layout finds it: no second packing.
  CHECK(llvm::cantFail(slot->uploadPacked("weight", packed, host, rows, rowBytes)) ==
        chunked);
  LoadStatsSnapshot delta = runtime->stats().snapshot() - start;
  CHECK(rowMajor != chunked);
  CHECK(slot->has("weight"));
  CHECK(slot->has("weight@k16-rows8"));
  CHECK(WeightSlot::packedPart("weight", packed) == "weight@k16-rows8");
  const uint64_t packedBytes = packed.packedBytes(rows, rowBytes);
  CHECK(packedBytes == 24 * 64); // the last group padded to 8 rows
  CHECK(delta.bytesPacked == packedBytes);
  CHECK(delta.packMs >= 0);
  CHECK(delta.bytesUploaded == host.size() + packedBytes);
  std::string printed;
  llvm::raw_string_ostream os(printed);
  delta.print(os);
  CHECK_THAT(printed, Catch::StartsWith("uploaded 2.8 KB (packed 1.5 KB in "));

  std::vector<uint8_t> onDevice(packedBytes);
  REQUIRE(message(device->copyToHost(onDevice.data(), chunked, packedBytes, {})) == "");
  CHECK(onDevice == llvm::cantFail(packWeight(packed, host, rows, rowBytes)));
  CHECK_THAT(message(slot->uploadPacked("bias", packed, std::vector<uint8_t>(20), 1, 20)
                         .takeError()),
             Catch::Contains("packing 'bias' of weight slot 'in_proj': weight layout "
                             "k16-rows8: rows of 20 bytes are not whole 16-byte chunks"));
}

TEST_CASE("a kernel's weight layouts are part of its cache key", "[runtime][weights]") {
  auto compiler = std::make_shared<FakeCompiler>();
  FakeDevice *device = nullptr;
  auto runtime = fakeRuntime(compiler, optionsFor(""), device);
  std::string ir = fakeIR("gemv", ptrAndCount());
  Kernel rowMajor(*runtime, specFor("gemv", ir));
  KernelSpec packedSpec = specFor("gemv", ir);
  packedSpec.options.weightLayouts = formatWeightLayouts({{"x", WeightLayout{16}}});
  CHECK(packedSpec.options.canonical() == "O3;layouts=x=k16-rows16");
  Kernel packed(*runtime, std::move(packedSpec));
  REQUIRE(message(rowMajor.compile()) == "");
  REQUIRE(message(packed.compile()) == "");
  // The same IR, two modules: one is only valid on packed weights.
  CHECK(rowMajor.diskKey() != packed.diskKey());
  CHECK(packed.origin() == CompileOrigin::Compiler);
}
