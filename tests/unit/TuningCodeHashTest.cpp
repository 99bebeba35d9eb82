// The code hash of a tuned entry: runtime::codeFingerprint, the tuning database's
// stamp, and the lookup that lets another compiler build use an entry only when it
// compiles the entry's winner to the code that was measured.
#include "runtime/RuntimeTestSupport.h"
#include "tilejit/jit/JitCompiler.h"
#include "tilejit/models/TuneProblems.h"
#include "tilejit/models/mamba2/Kernels.h"
#include "tilejit/tuning/Record.h"
#include "tilejit/tuning/TunedLookup.h"

#include <catch2/catch.hpp>

using namespace tilejit;
using namespace tilejit::tuning;
using namespace tilejit::runtime::testing;

namespace {

/// The real compiler under another build id: a rebuilt tilejit whose code
/// generation for these kernels did not change.
class RenamedCompiler : public runtime::KernelCompiler {
public:
  RenamedCompiler(std::shared_ptr<runtime::KernelCompiler> inner, std::string buildId)
      : inner(std::move(inner)), buildId(std::move(buildId)) {}
  runtime::CompilerIdentity identity() const override {
    return {buildId, inner->identity().llvmVersion};
  }
  llvm::Expected<runtime::CompiledKernel>
  compile(const runtime::KernelRequest &request) override {
    return inner->compile(request);
  }

private:
  std::shared_ptr<runtime::KernelCompiler> inner;
  std::string buildId;
};

std::unique_ptr<runtime::JitRuntime>
compileOnlyRuntime(std::shared_ptr<runtime::KernelCompiler> compiler,
                   const runtime::RuntimeOptions &options) {
  Arch arch = llvm::cantFail(Arch::parse("sm_90a"));
  runtime::RuntimeOptions here = options;
  here.archOverride = arch;
  return llvm::cantFail(runtime::JitRuntime::create(
      std::make_unique<runtime::FakeDevice>(runtime::compileOnlyInfo(arch)),
      std::move(compiler), std::move(here)));
}

} // namespace

TEST_CASE("codeFingerprint: what the device is handed, not how long it took",
          "[tuning]") {
  runtime::CompiledKernel a;
  a.ptx = ".version 8.8\n.target sm_90a\n.entry k()\n{ ret; }\n";
  a.entryName = "k";
  a.params.push_back({"x", ParamKind::Pointer, 8});
  std::string base = runtime::codeFingerprint(a);
  CHECK(base.size() == 64);
  runtime::CompiledKernel b = a;
  b.timings.push_back({"llvm", 12.5});
  b.warnings.push_back("could not write a dump");
  CHECK(runtime::codeFingerprint(b) == base);
  b = a;
  b.ptx += "\n";
  CHECK(runtime::codeFingerprint(b) != base);
  b = a;
  b.launch.threadsPerBlock = 256;
  CHECK(runtime::codeFingerprint(b) != base);
  b = a;
  b.launch.dynamicSharedBytes = 1024;
  CHECK(runtime::codeFingerprint(b) != base);
  b = a;
  b.params[0].name = "y";
  CHECK(runtime::codeFingerprint(b) != base);
}

TEST_CASE("code hashes: stamped by the build that measured, trusted by a build that "
          "compiles the winner alike",
          "[tuning]") {
  TempDir dir;
  runtime::RuntimeOptions options = optionsFor("");
  options.tuneDbPath = dir.sub("tune.json");
  std::shared_ptr<runtime::KernelCompiler> compiler = JitCompiler::fromEnvironment();
  KernelRegistry kernels;
  llvm::cantFail(models::registerExampleKernels(kernels));
  TuneProblemRegistry problems;
  llvm::cantFail(models::registerExampleTuneProblems(problems));
  const KernelDef *def = kernels.find("vector_add");
  REQUIRE(def);

  // An entry this build measured before code hashes existed.
  auto measuring = compileOnlyRuntime(compiler, options);
  TuneTarget target =
      llvm::cantFail(makeTuneTarget(kernels, problems, "vector_add", {}, {{"n", 3000}}));
  TuneEntry entry;
  entry.key = llvm::cantFail(tuneKeyFor(*measuring, target));
  entry.shape = target.shape;
  entry.config = {{"block", 512}};
  entry.medianMs = 0.004;
  entry.defaultMedianMs = 0.005;
  entry.provenance = {"2026-12-08T00:00:00Z", "NVIDIA H100 80GB HBM3", 13000, "sm"};
  TuneEntry other = entry;
  other.key.version = "another-build/llvm-22";
  other.key.shapeBucket = "n<=8192";
  TuneDb db;
  db.record(entry);
  db.record(other);

  StampReport report = stampCodeHashes(db, kernels, problems, *measuring);
  CHECK(report.stamped == 1);
  REQUIRE(report.skipped.size() == 1);
  CHECK_THAT(report.skipped[0], Catch::Contains("measured by tilejit another-build"));
  std::string winner =
      llvm::cantFail(winnerFingerprint(*measuring, *def, target.base, {{"block", 512}}));
  std::string fallback =
      llvm::cantFail(winnerFingerprint(*measuring, *def, target.base, {{"block", 1024}}));
  REQUIRE(winner != fallback);
  CHECK(db.entries()[0].codeHash == winner);
  CHECK(db.entries()[1].codeHash.empty());
  // The hash survives the file.
  REQUIRE(!db.save(options.tuneDbPath));
  CHECK(llvm::cantFail(TuneDb::load(options.tuneDbPath)).entries()[0].codeHash == winner);

  // A rebuilt tilejit looks the entry up.
  auto rebuilt = compileOnlyRuntime(
      std::make_shared<RenamedCompiler>(compiler, "rebuilt-build"), options);
  auto lookup = [&](const std::string &codeHash) {
    TuneDb one;
    TuneEntry e = entry;
    e.codeHash = codeHash;
    one.record(e);
    return lookupTuned(*rebuilt, one, *def, target.base, {{"n", 3000}});
  };
  SECTION("the same code: used, and said so") {
    TunedChoice choice = lookup(winner);
    CHECK(choice.match == TuneMatch::OtherVersion);
    CHECK(choice.sameCode);
    CHECK(choice.config == ConstantValues{{"block", 512}});
    CHECK_THAT(choice.message, Catch::Contains("uses block=512"));
    CHECK_THAT(choice.message, Catch::Contains("whose code for it this build generates "
                                               "unchanged"));
  }
  SECTION("other code (here: the hash of another configuration): not used") {
    TunedChoice choice = lookup(fallback);
    CHECK_FALSE(choice.sameCode);
    CHECK(choice.config.empty());
    CHECK_THAT(choice.message, Catch::Contains("which compiled it to other code"));
  }
  SECTION("no code hash: not used until re-validated, as before") {
    TunedChoice choice = lookup("");
    CHECK(choice.config.empty());
    CHECK_THAT(choice.message, Catch::Contains("until it is re-validated"));
  }
}

TEST_CASE("code hashes: a malformed one is refused when the file is read", "[tuning]") {
  TuneEntry e;
  e.key = {"k", std::string(64, 'a'), "", "sm_90a", 132, "v"};
  e.codeHash = "not-a-hash";
  TuneDb db;
  db.record(e);
  CHECK_THAT(toString(TuneDb::fromJSON(db.toJSON()).takeError()),
             Catch::Contains("'code_hash' must be 64 lowercase hex digits"));
}
