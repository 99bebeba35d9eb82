// Arch parsing, error texts, the command-line parser of an arch option, the
// capability table (docs/design.md#the-capability-table) and the PTX feature
// level chosen per arch.
#include "tilejit/support/Arch.h"
#include "tilejit/support/ArchOption.h"

#include <catch2/catch.hpp>

#include <string>

using tilejit::Arch;

namespace {

Arch parseOrFail(llvm::StringRef name) {
  llvm::Expected<Arch> arch = Arch::parse(name);
  if (!arch)
    FAIL(llvm::toString(arch.takeError()));
  return *arch;
}

std::string parseError(llvm::StringRef name) {
  llvm::Expected<Arch> arch = Arch::parse(name);
  if (arch)
    FAIL("'" << name.str() << "' parsed as " << arch->name().str());
  return llvm::toString(arch.takeError());
}

} // namespace

TEST_CASE("Arch::parse accepts exactly the four known names", "[arch]") {
  const char *names[] = {"sm_90", "sm_90a", "sm_110a", "sm_121a"};
  REQUIRE(Arch::all().size() == 4);
  for (size_t i = 0; i < 4; ++i) {
    Arch arch = parseOrFail(names[i]);
    CHECK(arch.name() == names[i]);
    CHECK(arch.llvmCPU() == names[i]);
    CHECK(Arch::all()[i] == arch);
  }
  CHECK(parseOrFail("sm_90").smVersion() == 90);
  CHECK(parseOrFail("sm_90a").smVersion() == 90);
  CHECK(parseOrFail("sm_110a").smVersion() == 110);
  CHECK(parseOrFail("sm_121a").smVersion() == 121);
  CHECK_FALSE(parseOrFail("sm_90").isArchSpecific());
  CHECK(parseOrFail("sm_90a").isArchSpecific());
  CHECK(parseOrFail("sm_110a").isArchSpecific());
  CHECK(parseOrFail("sm_121a").isArchSpecific());
  // The suffix is part of the identity (and so of every cache key).
  CHECK(parseOrFail("sm_90") != parseOrFail("sm_90a"));
}

TEST_CASE("Arch::parse rejects unknown names and lists the known ones", "[arch]") {
  for (const char *name : {"sm_80", "sm_100a", "SM_90A", "sm_90 ", "", "sm_121f"}) {
    INFO("name '" << name << "'");
    std::string message = parseError(name);
    CHECK_THAT(message, Catch::Contains("unknown arch '" + std::string(name) + "'"));
    CHECK_THAT(message, Catch::Contains("known arches: sm_90, sm_90a, sm_110a, sm_121a"));
  }
}

TEST_CASE("Arch::parse names the `a` target for a suffix-less name", "[arch]") {
  std::string message = parseError("sm_110");
  CHECK_THAT(message, Catch::Contains("arch 'sm_110' is not supported"));
  CHECK_THAT(message, Catch::Contains("'sm_110a'"));
  CHECK_THAT(message, Catch::Contains("known arches: sm_90, sm_90a, sm_110a, sm_121a"));
  CHECK_THAT(parseError("sm_121"), Catch::Contains("'sm_121a'"));
}

TEST_CASE("an arch option holds the Arch its name parses to", "[arch]") {
  // Static: llvm::cl keeps every option it has seen registered.
  static llvm::cl::opt<std::optional<Arch>> option("arch-option-test",
                                                   llvm::cl::ReallyHidden);
  auto &parser = option.getParser();
  std::optional<Arch> value;
  CHECK_FALSE(parser.parse(option, "arch", "sm_121a", value));
  REQUIRE(value);
  CHECK(*value == parseOrFail("sm_121a"));
  // Empty is no arch; the printed form parses back.
  CHECK_FALSE(parser.parse(option, "arch", "", value));
  CHECK_FALSE(value);
  std::string printed;
  llvm::raw_string_ostream os(printed);
  parser.print(os, parseOrFail("sm_90a"));
  parser.print(os, std::nullopt);
  CHECK(printed == "sm_90a");
  // An unknown name is the option's error (the lit tests check its text).
  CHECK(parser.parse(option, "arch", "sm_80", value));
}

// One row per arch, as docs/design.md's table and the PTX ISA 9.0 target notes
// give it (the sections are cited in Arch.cpp; tests/unit/PTXTargetTest.cpp
// holds each entry to what ptxas assembles):
// - mma.sync bf16 m16n8k16 (sm_80+) and e4m3 m16n8k32 (sm_89+): all four;
// - wgmma ("Asynchronous Warpgroup Level Matrix Multiply-Accumulate"): sm_90a;
// - TMA (cp.async.bulk.tensor, mbarrier expect_tx / try_wait.parity): sm_90+;
// - setmaxnreg: the arch-specific targets only (not plain sm_90);
// - cp.async: sm_80+;
// - griddepcontrol and cp.async.bulk.prefetch.L2: sm_90+.
TEST_CASE("Capability table matches the PTX ISA's target notes", "[arch]") {
  struct Row {
    const char *name;
    bool mmaSyncBf16, mmaSyncE4m3, wgmma, tma, setmaxnreg, cpAsync, gridDependency;
  };
  const Row rows[] = {
      {"sm_90", true, true, false, true, false, true, true},
      {"sm_90a", true, true, true, true, true, true, true},
      {"sm_110a", true, true, false, true, true, true, true},
      {"sm_121a", true, true, false, true, true, true, true},
  };
  for (const Row &row : rows) {
    INFO(row.name);
    tilejit::ArchCapabilities caps = parseOrFail(row.name).capabilities();
    CHECK(caps.mmaSyncBf16 == row.mmaSyncBf16);
    CHECK(caps.mmaSyncE4m3 == row.mmaSyncE4m3);
    CHECK(caps.wgmma == row.wgmma);
    CHECK(caps.tma == row.tma);
    CHECK(caps.setmaxnreg == row.setmaxnreg);
    CHECK(caps.cpAsync == row.cpAsync);
    CHECK(caps.gridDependency == row.gridDependency);
  }
}

TEST_CASE("Each arch sizes its plans for its device", "[arch]") {
  struct Row {
    const char *name, *device;
    int64_t sms, sharedBytes;
    double gbps;
  };
  const Row rows[] = {
      {"sm_90", "NVIDIA H200", 132, 227 * 1024, 4800},
      {"sm_90a", "NVIDIA H200", 132, 227 * 1024, 4800},
      {"sm_110a", "Jetson AGX Thor", 20, 227 * 1024, 273},
      {"sm_121a", "NVIDIA GB10", 48, 99 * 1024, 273},
  };
  for (const Row &row : rows) {
    INFO(row.name);
    const tilejit::DeviceProfile &p = parseOrFail(row.name).profile();
    CHECK(p.device == row.device);
    CHECK(p.smCount == row.sms);
    CHECK(p.sharedBytesPerBlock == row.sharedBytes);
    CHECK(p.registersPerSM == 65536);
    CHECK(p.memoryGBps == row.gbps);
  }
}

TEST_CASE("PTX feature level per arch", "[arch]") {
  struct Row {
    const char *name, *feature;
    unsigned version;
    const char *versionString;
  };
  // sm_110a exists only from PTX 9.0; the others share 8.8 (see Arch.cpp).
  const Row rows[] = {
      {"sm_90", "+ptx88", 88, "8.8"},
      {"sm_90a", "+ptx88", 88, "8.8"},
      {"sm_110a", "+ptx90", 90, "9.0"},
      {"sm_121a", "+ptx88", 88, "8.8"},
  };
  for (const Row &row : rows) {
    INFO(row.name);
    Arch arch = parseOrFail(row.name);
    CHECK(arch.ptxFeature() == row.feature);
    CHECK(arch.ptxVersion() == row.version);
    CHECK(arch.ptxVersionString() == row.versionString);
    // LLVM 22 emits PTX 9.0 at most.
    CHECK(arch.ptxVersion() <= 90);
  }
}

TEST_CASE("Arch::forComputeCapability picks the `a` target", "[arch]") {
  auto pick = [](unsigned major, unsigned minor) -> std::string {
    llvm::Expected<Arch> arch = Arch::forComputeCapability(major, minor);
    if (!arch)
      return "error: " + llvm::toString(arch.takeError());
    return arch->name().str();
  };
  CHECK(pick(9, 0) == "sm_90a");
  CHECK(pick(11, 0) == "sm_110a");
  CHECK(pick(12, 1) == "sm_121a");

  std::string unsupported = pick(8, 0);
  CHECK_THAT(unsupported, Catch::StartsWith("error: "));
  CHECK_THAT(unsupported, Catch::Contains("compute capability 8.0"));
  CHECK_THAT(unsupported,
             Catch::Contains("9.0 -> sm_90a, 11.0 -> sm_110a, 12.1 -> sm_121a"));
  CHECK_THAT(pick(12, 0), Catch::Contains("compute capability 12.0"));
}
