// Bad input at launch and at compile (docs/hardening.md): arguments of the
// wrong count, kind or width, null and misaligned pointers, and a kernel that
// fails to compile each give their own error, and leave the device, the
// buffers and both caches as they were.
#include "RuntimeTestSupport.h"

#include "tilejit/runtime/DiskCache.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/MemoryBuffer.h"

#include <catch2/catch.hpp>

#include <map>
#include <numeric>

using namespace tilejit::runtime;
using namespace tilejit::runtime::testing;

namespace {

/// Every file under `dir` (recursively) with its bytes.
std::map<std::string, std::string> snapshotFiles(const std::string &dir) {
  std::map<std::string, std::string> files;
  std::error_code ec;
  for (llvm::sys::fs::recursive_directory_iterator it(dir, ec), end; !ec && it != end;
       it.increment(ec)) {
    if (it->type() != llvm::sys::fs::file_type::regular_file)
      continue;
    auto buffer = llvm::MemoryBuffer::getFile(it->path());
    REQUIRE(bool(buffer));
    files[it->path()] = (*buffer)->getBuffer().str();
  }
  REQUIRE(!ec);
  return files;
}

} // namespace

TEST_CASE("a launch with bad arguments is refused before the device sees it",
          "[runtime][badinput]") {
  auto compiler = std::make_shared<FakeCompiler>();
  FakeDevice *device = nullptr;
  auto runtime = fakeRuntime(compiler, optionsFor(""), device);
  Stream stream = llvm::cantFail(Stream::create(*device));
  DeviceBuffer x = llvm::cantFail(runtime->allocate(64));
  std::vector<uint8_t> data(64), back(64);
  std::iota(data.begin(), data.end(), uint8_t(1));
  REQUIRE(message(x.upload(data)) == "");
  Kernel kernel(*runtime, specFor("scale", fakeIR("scale", ptrAndCount())));
  REQUIRE(message(kernel.prepare()) == "");
  LoadStatsSnapshot before = runtime->stats().snapshot();

  const DevicePtr base = x.address();
  REQUIRE(base % 16 == 0); // allocations are 256-byte aligned, as cuMemAlloc's
  struct Bad {
    const char *what;
    std::vector<KernelArg> args;
    std::string error;
  };
  const std::vector<Bad> bads = {
      {"too few",
       {KernelArg::pointer(base)},
       "kernel 'scale' takes 2 arguments (x: ptr, n: i32), got 1"},
      {"too many",
       {KernelArg::pointer(base), KernelArg::i32(4), KernelArg::i32(5)},
       "kernel 'scale' takes 2 arguments (x: ptr, n: i32), got 3"},
      {"wrong dtype",
       {KernelArg::pointer(base), KernelArg::f32(4)},
       "kernel 'scale': argument 1 ('n') expects i32 (4 bytes), got f32 (4 bytes)"},
      {"wrong width",
       {KernelArg::pointer(base), KernelArg::i64(4)},
       "kernel 'scale': argument 1 ('n') expects i32 (4 bytes), got i64 (8 bytes)"},
      {"integer for a pointer",
       {KernelArg::i64(int64_t(base)), KernelArg::i32(4)},
       "kernel 'scale': argument 0 ('x') expects ptr (8 bytes), got i64 (8 bytes)"},
      {"null pointer",
       {KernelArg::pointer(0), KernelArg::i32(4)},
       "kernel 'scale': argument 0 ('x') is a null pointer"},
      {"misaligned pointer",
       {KernelArg::pointer(base + 4), KernelArg::i32(4)},
       "kernel 'scale': argument 0 ('x') is 0x" + llvm::utohexstr(base + 4, true) +
           ", not 16-byte aligned"},
      {"pointer 8 bytes in",
       {KernelArg::pointer(base + 8), KernelArg::i32(4)},
       "kernel 'scale': argument 0 ('x') is 0x" + llvm::utohexstr(base + 8, true) +
           ", not 16-byte aligned"},
  };
  for (const Bad &bad : bads) {
    INFO(bad.what);
    CHECK(message(kernel.launch(stream, {1, 1, 1}, bad.args)) == bad.error);
  }

  // Nothing reached the device; the buffer, the module and the counters are
  // as they were, and a correct launch still works.
  CHECK(device->launches().empty());
  REQUIRE(message(x.download(back)) == "");
  CHECK(back == data);
  LoadStatsSnapshot delta = runtime->stats().snapshot() - before;
  CHECK(delta.modulesCompiled == 0);
  CHECK(delta.modulesLoaded == 0);
  CHECK(device->modulesUnloaded() == 0);
  REQUIRE(message(kernel.launch(stream, {1, 1, 1},
                                {KernelArg::pointer(base + 16), KernelArg::i32(4)})) ==
          "");
  REQUIRE(device->launches().size() == 1);
  CHECK(device->launches()[0].args[0].pattern() == base + 16);
}

TEST_CASE("a kernel that fails to compile leaves both caches as they were",
          "[runtime][badinput]") {
  TempDir dir;
  auto compiler = std::make_shared<FakeCompiler>();
  FakeDevice *device = nullptr;
  std::vector<std::string> warnings;
  auto runtime = fakeRuntime(compiler, optionsFor(dir.path(), &warnings), device);
  Kernel good(*runtime, specFor("good", fakeIR("good", ptrAndCount())));
  REQUIRE(message(good.prepare()) == "");
  const auto files = snapshotFiles(dir.path());
  REQUIRE(files.size() == 2); // the entry and the lock file
  const uint64_t loaded = device->modulesLoaded();

  for (int attempt = 0; attempt < 2; ++attempt) {
    Kernel bad(*runtime, specFor("bad", fakeIR("bad", ptrAndCount(), 128, 0, "FAIL")));
    CHECK(message(bad.prepare()) ==
          "compiling kernel 'bad' for sm_90a: fake.tile:3:1: error: the body asked to "
          "fail");
    CHECK(bad.compiled() == nullptr);
  }
  // Not cached as a failure either: each attempt reached the compiler.
  CHECK(compiler->compiles == 3);
  CHECK(snapshotFiles(dir.path()) == files);
  CHECK(device->modulesLoaded() == loaded);
  CHECK(warnings.empty());
  // The good kernel is still served from memory.
  Kernel again(*runtime, specFor("good", fakeIR("good", ptrAndCount())));
  REQUIRE(message(again.prepare()) == "");
  CHECK(again.origin() == CompileOrigin::Memory);
}
