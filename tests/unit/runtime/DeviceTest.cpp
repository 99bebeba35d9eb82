// The device layer without a GPU: the CUDA driver's absence is a clean error value,
// arch selection per compute capability, argument checks, and the fake device's
// stricter-than-the-driver checks that the other runtime tests rely on.
#include "RuntimeTestSupport.h"

#include "tilejit/runtime/CudaDevice.h"
#include "tilejit/runtime/DeviceMemory.h"

#include <catch2/catch.hpp>

using namespace tilejit;
using namespace tilejit::runtime;
using namespace tilejit::runtime::testing;

TEST_CASE("a machine without a CUDA driver or GPU gets a clean error",
          "[runtime][device]") {
  llvm::Expected<std::unique_ptr<DeviceApi>> device = openCudaDevice(0);
  if (device) {
    // A GPU host: the query must make sense.
    CHECK_FALSE((*device)->info().name.empty());
    CHECK((*device)->info().ccMajor >= 7);
    return;
  }
  std::string error = llvm::toString(device.takeError());
  INFO(error);
  bool noDriver =
      llvm::StringRef(error).starts_with("no CUDA driver found (libcuda.so.1): ") ||
      llvm::StringRef(error).starts_with("no CUDA driver support: ");
  bool noDevice = llvm::StringRef(error).starts_with("cuInit: ") ||
                  llvm::StringRef(error).starts_with("no CUDA device 0");
  CHECK((noDriver || noDevice));
  // The same answer every time, and from the device count.
  CHECK(message(openCudaDevice(0).takeError()) == error);
  llvm::Expected<int> count = cudaDeviceCount();
  if (!count)
    CHECK(llvm::StringRef(llvm::toString(count.takeError())).take_front(20) ==
          llvm::StringRef(error).take_front(20));
}

TEST_CASE("a device's arch: `a` targets only on their own SM", "[runtime][device]") {
  DeviceInfo h200 = FakeDevice::h200();
  CHECK(llvm::cantFail(nativeArch(h200)).name() == "sm_90a");
  CHECK(hasArchSpecificTarget(h200));
  CHECK(canRun(h200, llvm::cantFail(Arch::parse("sm_90a"))));
  CHECK(canRun(h200, llvm::cantFail(Arch::parse("sm_90"))));
  CHECK_FALSE(canRun(h200, llvm::cantFail(Arch::parse("sm_121a"))));

  DeviceInfo gb10 = FakeDevice::withComputeCapability(12, 1);
  CHECK(llvm::cantFail(nativeArch(gb10)).name() == "sm_121a");
  CHECK(canRun(gb10, llvm::cantFail(Arch::parse("sm_90")))); // PTX JIT forward
  CHECK_FALSE(canRun(gb10, llvm::cantFail(Arch::parse("sm_90a"))));

  DeviceInfo a100 = FakeDevice::withComputeCapability(8, 0);
  CHECK_FALSE(hasArchSpecificTarget(a100));
  CHECK_THAT(message(nativeArch(a100).takeError()),
             Catch::Contains("no tilejit arch for a device of compute capability 8.0"));

  std::string text;
  llvm::raw_string_ostream os(text);
  printDeviceInfo(os, h200);
  CHECK(text == "device 0 (Fake NVIDIA H200, compute capability 9.0, 132 SMs, 139.7 GiB, "
                "sm_90a)");
}

TEST_CASE("launch arguments are checked against the kernel's signature",
          "[runtime][device]") {
  std::vector<KernelParam> params = {{"x", ParamKind::Pointer, 8},
                                     {"n", ParamKind::I32, 4},
                                     {"scale", ParamKind::F32, 4}};
  CHECK(formatSignature(params) == "(x: ptr, n: i32, scale: f32)");
  CHECK(message(checkArguments(
            "scale", params,
            {KernelArg::pointer(16), KernelArg::i32(3), KernelArg::f32(0.5f)})) == "");
  CHECK(message(checkArguments("scale", params,
                               {KernelArg::pointer(16), KernelArg::i32(3)})) ==
        "kernel 'scale' takes 3 arguments (x: ptr, n: i32, scale: f32), got 2");
  CHECK(message(checkArguments(
            "scale", params,
            {KernelArg::pointer(16), KernelArg::f32(3), KernelArg::f32(0.5f)})) ==
        "kernel 'scale': argument 1 ('n') expects i32 (4 bytes), got f32 (4 bytes)");
  CHECK(message(checkArguments(
            "scale", params,
            {KernelArg::pointer(16), KernelArg::i64(3), KernelArg::f32(0.5f)})) ==
        "kernel 'scale': argument 1 ('n') expects i32 (4 bytes), got i64 (8 bytes)");
  CHECK(KernelArg::bits(ParamKind::BF16, 0x13f80).pattern() == 0x3f80);
  CHECK(KernelArg::i32(-1).pattern() == 0xffffffffu);
}

TEST_CASE("the fake device copies device to device inside live allocations and counts "
          "every copy",
          "[runtime][device]") {
  FakeDevice device;
  StreamHandle stream = llvm::cantFail(device.createStream());
  DeviceBuffer a = llvm::cantFail(DeviceBuffer::allocate(device, 64));
  DeviceBuffer b = llvm::cantFail(DeviceBuffer::allocate(device, 64));
  std::vector<uint8_t> data(64), back(64, 0);
  for (size_t i = 0; i < data.size(); ++i)
    data[i] = uint8_t(3 * i + 1);
  REQUIRE(message(a.upload(data)) == "");
  REQUIRE(message(device.copyOnDevice(b.address() + 16, a.address(), 48, stream)) == "");
  REQUIRE(message(b.download(back)) == "");
  CHECK(std::equal(back.begin() + 16, back.end(), data.begin()));
  CHECK(device.copiedBytes().toDevice == 64);
  CHECK(device.copiedBytes().toHost == 64);
  CHECK(device.copiedBytes().onDevice == 48);
  // One byte past either allocation is refused, and nothing is copied.
  CHECK_THAT(message(device.copyOnDevice(b.address() + 17, a.address(), 48, stream)),
             Catch::Contains("cuMemcpyDtoDAsync_v2: CUDA_ERROR_INVALID_VALUE"));
  CHECK_THAT(message(device.copyOnDevice(b.address(), a.address() + 17, 48, stream)),
             Catch::Contains("is not inside a live allocation"));
  CHECK(device.copiedBytes().onDevice == 48);
  // Graphs here record launches only, so a copy during capture is refused
  // rather than run at capture time.
  REQUIRE(message(device.beginCapture(stream)) == "");
  CHECK_THAT(message(device.copyOnDevice(b.address(), a.address(), 8, stream)),
             Catch::Contains("CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED"));
  REQUIRE(bool(device.endCapture(stream)));
}

TEST_CASE("the fake device refuses what would fault on a GPU", "[runtime][device]") {
  FakeDevice device;
  StreamHandle stream = llvm::cantFail(device.createStream());
  DeviceBuffer buffer = llvm::cantFail(DeviceBuffer::allocate(device, 64));
  std::vector<uint8_t> data(64, 7), back(64, 0);
  REQUIRE(message(buffer.upload(data)) == "");
  REQUIRE(message(buffer.download(back)) == "");
  CHECK(back == data);
  CHECK(device.isLive(buffer.address() + 63));
  CHECK_FALSE(device.isLive(buffer.address() + 64));

  KernelRequest request{"k", fakeIR("k", ptrAndCount()), archNamed("sm_90a"), {}};
  CompiledKernel kernel = llvm::cantFail(FakeCompiler().compile(request));
  ModuleHandle module = llvm::cantFail(device.loadModule(kernel.ptx));
  FunctionHandle function = llvm::cantFail(device.getFunction(module, "k"));
  LaunchConfig config{{1, 1, 1}, {128, 1, 1}, 0, stream};
  CHECK(message(device.launch(
            function, config,
            {KernelArg::pointer(buffer.address()), KernelArg::i32(64)})) == "");
  CHECK_THAT(
      message(device.launch(function, config, {KernelArg::pointer(buffer.address())})),
      Catch::Contains("'k' takes 2 parameters, got 1"));
  config.dynamicSharedBytes = 64 * 1024;
  CHECK_THAT(
      message(device.launch(function, config,
                            {KernelArg::pointer(buffer.address()), KernelArg::i32(64)})),
      Catch::Contains("exceed the function's limit of 49152"));
  config.dynamicSharedBytes = 0;

  DevicePtr stale = buffer.address();
  REQUIRE(message(buffer.release()) == "");
  CHECK_THAT(message(device.launch(function, config,
                                   {KernelArg::pointer(stale), KernelArg::i32(64)})),
             Catch::Contains("CUDA_ERROR_ILLEGAL_ADDRESS"));
  // Addresses are never handed out again.
  DeviceBuffer next = llvm::cantFail(DeviceBuffer::allocate(device, 64));
  CHECK(next.address() != stale);

  REQUIRE(message(device.unloadModule(module)) == "");
  CHECK_THAT(
      message(device.launch(function, config,
                            {KernelArg::pointer(next.address()), KernelArg::i32(1)})),
      Catch::Contains("module 1 was unloaded"));

  // PTX for another GPU's `a` target does not load, as with the driver's JIT.
  request.arch = archNamed("sm_121a");
  CompiledKernel foreign = llvm::cantFail(FakeCompiler().compile(request));
  CHECK_THAT(message(device.loadModule(foreign.ptx).takeError()),
             Catch::Contains("cuModuleLoadDataEx: CUDA_ERROR_INVALID_PTX"));
}
