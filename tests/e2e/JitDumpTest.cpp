// TILEJIT_DUMP_DIR that cannot be written (a file, a path under a file, a full
// disk): the kernel still compiles and loads, and the failure is one warning
// through the runtime's diagnostics handler. At 13c8ee2 the process ended in
// "LLVM ERROR: IO failure on output stream".
#include "tilejit/jit/JitCompiler.h"
#include "tilejit/models/examples/ExampleKernels.h"
#include "tilejit/runtime/FakeDevice.h"
#include "tilejit/runtime/Jit.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/raw_ostream.h"

#include <catch2/catch.hpp>

using namespace tilejit;
using namespace tilejit::runtime;

namespace {

/// vector_add through a runtime whose compiler dumps into `dumpDir`; returns
/// the warnings it reported.
std::vector<std::string> compileWithDump(const std::string &dumpDir) {
  KernelRegistry kernels;
  llvm::cantFail(models::registerExampleKernels(kernels));
  const KernelDef *def = kernels.find("vector_add");
  REQUIRE(def);
  std::vector<std::string> warnings;
  RuntimeOptions options;
  options.useDiskCache = false;
  options.diagnostics = [&](llvm::StringRef m) { warnings.push_back(m.str()); };
  auto jit =
      JitRuntime::create(std::make_unique<FakeDevice>(),
                         std::make_shared<JitCompiler>(dumpDir), std::move(options));
  REQUIRE(bool(jit));
  runtime::Kernel kernel(**jit,
                         makeKernelSpec(*def, llvm::cantFail(def->specialize({}))));
  llvm::Error err = kernel.prepare();
  INFO((err ? llvm::toString(std::move(err)) : ""));
  CHECK(!err);
  return warnings;
}

} // namespace

TEST_CASE("a TILEJIT_DUMP_DIR that cannot be written is a warning; the kernel compiles",
          "[jit][badinput]") {
  llvm::SmallString<128> file;
  REQUIRE(!llvm::sys::fs::createTemporaryFile("tilejit-dump", "txt", file));
  const std::string path(file);
  // A file where the directory should be: each stage's write fails.
  std::vector<std::string> warnings = compileWithDump(path);
  REQUIRE(warnings.size() == 1);
  CHECK_THAT(warnings[0], Catch::StartsWith("cannot write TILEJIT_DUMP_DIR stage '" +
                                            path + "/vector_add-") &&
                              Catch::EndsWith("': Not a directory; the rest of this dump "
                                              "is skipped"));
  // A directory below a file cannot be created.
  warnings = compileWithDump(path + "/dumps");
  REQUIRE(warnings.size() == 1);
  CHECK_THAT(warnings[0], Catch::StartsWith("TILEJIT_DUMP_DIR: cannot create '" + path +
                                            "/dumps': ") &&
                              Catch::EndsWith("kernel 'vector_add' is compiled without "
                                              "its dump"));
  // A directory the process can list but not write into: /proc.
  warnings = compileWithDump("/proc");
  REQUIRE(warnings.size() == 1);
  CHECK_THAT(warnings[0], Catch::StartsWith("cannot write TILEJIT_DUMP_DIR stage '/proc/"
                                            "vector_add-") &&
                              Catch::EndsWith("; the rest of this dump is skipped"));
  llvm::sys::fs::remove(path);
}
