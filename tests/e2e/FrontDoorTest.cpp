// The three front doors to a model step (`tilejit run`, the embedding API, the
// Python package) plan the same step the same way: for GB10 (sm_121a) and the
// H200 (sm_90a), on the interpreter planning for that arch and on a
// compile-only runtime of that arch (a fake device: tuned constants from the
// database, as on a GPU), at B = 1 and 64 and for a prefill batch, the text of
// each door's plan (models::describePlan) must be equal. A tuning database
// entry for this build makes the plans differ from the defaults, so a door
// that planned without the database or the arch would be caught.
#include "ModelTestSupport.h"

#include "tilejit/embed/Embed.h"
#include "tilejit/jit/JitCompiler.h"
#include "tilejit/models/session/Session.h"
#include "tilejit/runtime/FakeDevice.h"
#include "tilejit/tuning/TunedLookup.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"

#include <catch2/catch.hpp>

using namespace tilejit;

namespace {

struct Case {
  const char *arch;
  bool compileOnly;
  int64_t rows; ///< decode rows; 0: the prefill batch
  int64_t slots;
};

constexpr int64_t kPrefillTokens = 1000;

/// A scratch directory, removed at the end.
struct TempDir {
  llvm::SmallString<128> path;
  TempDir() { REQUIRE(!llvm::sys::fs::createUniqueDirectory("tilejit-frontdoor", path)); }
  ~TempDir() { llvm::sys::fs::remove_directories(path); }
  std::string sub(llvm::StringRef name) const { return (path + "/" + name).str(); }
};

/// Runs `program` with `args` under `environment`; its standard output.
std::string capture(llvm::StringRef program, std::vector<std::string> args,
                    const std::vector<std::string> &environment, const TempDir &dir) {
  const std::string out = dir.sub("stdout.txt"), err = dir.sub("stderr.txt");
  // ExecuteAndWait's redirects do not truncate.
  llvm::sys::fs::remove(out);
  llvm::sys::fs::remove(err);
  std::vector<llvm::StringRef> argv = {program};
  for (const std::string &a : args)
    argv.push_back(a);
  std::vector<llvm::StringRef> env;
  for (const std::string &e : environment)
    env.push_back(e);
  std::optional<llvm::StringRef> redirects[] = {std::nullopt, llvm::StringRef(out),
                                                llvm::StringRef(err)};
  std::string message;
  int rc = llvm::sys::ExecuteAndWait(program, argv, env, redirects, 600, 0, &message);
  auto errText = llvm::MemoryBuffer::getFile(err);
  INFO(program.str() << " " << llvm::join(args, " ") << ": " << message << "\n"
                     << (errText ? (*errText)->getBuffer().str() : ""));
  REQUIRE(rc == 0);
  auto text = llvm::MemoryBuffer::getFile(out);
  REQUIRE(bool(text));
  return (*text)->getBuffer().str();
}

/// What follows the line starting with `marker` in `text`.
std::string after(const std::string &text, llvm::StringRef marker) {
  size_t at = text.find(marker.str());
  REQUIRE(at != std::string::npos);
  return text.substr(text.find('\n', at) + 1);
}

/// The CLI's plan: `tilejit run --dry-run`.
std::string cliPlan(const Case &c, const std::vector<std::string> &env,
                    const TempDir &dir) {
  std::vector<std::string> args = {
      "run",         "--dry-run", "--layers", "1",
      "--plan-arch", c.arch,      "--slots",  std::to_string(c.slots)};
  args.push_back("--backend");
  args.push_back(c.compileOnly ? "compile-only" : "interp");
  if (c.rows) {
    args.push_back("--batch");
    args.push_back(std::to_string(c.rows));
  } else {
    args.insert(args.end(),
                {"--mode", "prefill", "--tokens", std::to_string(kPrefillTokens)});
  }
  return after(capture(TILEJIT_CLI, args, env, dir), "plan: ");
}

/// The embedding API's plan: Session::describeDecode / describePrefill.
std::string embedPlan(const Case &c, const std::string &tuneDb) {
  embed::EngineOptions options;
  options.backend =
      c.compileOnly ? embed::Backend::CompileOnly : embed::Backend::Interpreter;
  options.planArch = c.arch;
  options.tuneDatabase = tuneDb;
  auto engine = embed::Engine::open(options);
  REQUIRE(engine.ok());
  static auto model = embed::Model::load({"", 1});
  REQUIRE(model.ok());
  auto session = embed::Session::create(*engine, *model, {c.slots});
  REQUIRE(session.ok());
  auto text = c.rows ? session->describeDecode(c.rows)
                     : session->describePrefill({{kPrefillTokens, 0, false}});
  INFO(text.status().describe());
  REQUIRE(text.ok());
  return *text;
}

/// The Python package's plans for every case, in order: one interpreter.
/// None when the build has no Python package (TILEJIT_PYTHON off).
std::vector<std::string> pythonPlans(const std::vector<Case> &cases,
                                     const std::vector<std::string> &env,
                                     const TempDir &dir) {
#ifndef TILEJIT_PYTHON
  WARN("SKIP the Python door: this build has no Python package (TILEJIT_PYTHON=OFF)");
  return {};
#else
  std::string script = "import tilejit\nplans = []\n";
  for (const Case &c : cases) {
    std::string runtime =
        c.compileOnly
            ? llvm::formatv("tilejit.Runtime('compile-only', arch='{0}')", c.arch).str()
            : "None";
    script += llvm::formatv(
        "plans.append(tilejit.mamba2.describe_plan(layers=1, rows={0}, slots={1}, "
        "prefill={2}, runtime={3}, plan_arch='{4}'))\n",
        c.rows ? c.rows : 1, c.slots,
        c.rows ? "None" : llvm::formatv("[({0}, 0, False)]", kPrefillTokens).str(),
        runtime, c.compileOnly ? "" : c.arch);
  }
  script += "print('\\n=====\\n'.join(plans), end='')\n";
  std::string text = capture(TILEJIT_PYTHON, {"-c", script}, env, dir);
  std::vector<std::string> plans;
  for (size_t at = 0;;) {
    size_t next = text.find("\n=====\n", at);
    plans.push_back(text.substr(at, next == std::string::npos ? next : next - at));
    if (next == std::string::npos)
      break;
    at = next + 7;
  }
  return plans;
#endif
}

/// A database entry for in_proj_conv at one row on sm_90a's device, as
/// `tilejit tune` records it for this build, with non-default constants.
void writeTuneDb(const std::string &path) {
  auto kernels = models::modelKernels();
  REQUIRE(bool(kernels));
  models::BackendOptions options;
  options.kind = models::BackendKind::Interpreter;
  options.planArch = *Arch::parse("sm_90a");
  auto backend = models::Backend::open(std::move(options));
  REQUIRE(bool(backend));
  // The plan's in_proj_conv geometry on the full synthetic model.
  models::ModelSource one;
  one.layers = 1;
  auto loaded = models::loadModel(one);
  REQUIRE(bool(loaded));
  auto session = models::ModelSession::create(*backend, *loaded, {8});
  REQUIRE(bool(session));
  auto plan = (*session)->planDecode(1);
  REQUIRE(bool(plan));
  const models::PlannedLaunch *inProj = nullptr;
  for (const models::PlannedLaunch &l : plan->launches)
    if (l.kernel == "in_proj_conv")
      inProj = &l;
  REQUIRE(inProj);
  const KernelDef *def = kernels->find("in_proj_conv");
  auto base = tuning::tuningBase(*def, inProj->spec.values());
  REQUIRE(bool(base));
  auto runtimeOptions = runtime::RuntimeOptions::fromEnvironment(true);
  REQUIRE(bool(runtimeOptions));
  runtimeOptions->useDiskCache = false;
  runtimeOptions->archOverride = *Arch::parse("sm_90a");
  auto jit = runtime::JitRuntime::create(std::make_unique<runtime::FakeDevice>(),
                                         JitCompiler::fromEnvironment(), *runtimeOptions);
  REQUIRE(bool(jit));
  REQUIRE(!models::testing::saveInProjConvEntry(**jit, *def, *base, path));
}

} // namespace

TEST_CASE("front doors: tilejit run, the embedding API and Python plan the same step",
          "[e2e][frontdoor]") {
  TempDir dir;
  const std::string tuneDb = dir.sub("tune.json");
  writeTuneDb(tuneDb);
  std::vector<std::string> env = {"TILEJIT_TUNE_DB=" + tuneDb,
                                  "TILEJIT_CACHE_DIR=" + dir.sub("cache"),
                                  "TILEJIT_NO_CACHE=1", "HOME=" + dir.path.str().str()};
#ifdef TILEJIT_PYTHON
  env.push_back("PYTHONPATH=" TILEJIT_PYTHON_DIR);
#endif
  std::vector<Case> cases;
  for (const char *arch : {"sm_90a", "sm_121a"})
    for (bool compileOnly : {false, true}) {
      cases.push_back({arch, compileOnly, 1, 8});
      cases.push_back({arch, compileOnly, 64, 66});
      cases.push_back({arch, compileOnly, 0, 8});
    }
  std::vector<std::string> python = pythonPlans(cases, env, dir);
  REQUIRE((python.empty() || python.size() == cases.size()));
  bool sawTuned = false;
  std::map<std::string, std::string> byCase;
  for (size_t i = 0; i < cases.size(); ++i) {
    const Case &c = cases[i];
    INFO(c.arch << (c.compileOnly ? " compile-only" : " interpreter") << ", "
                << (c.rows ? "decode B=" + std::to_string(c.rows) : "prefill"));
    const std::string cli = cliPlan(c, env, dir);
    CHECK(cli == embedPlan(c, tuneDb));
    if (!python.empty())
      CHECK(cli == python[i]);
    byCase[llvm::formatv("{0} {1} {2}", c.arch, int(c.compileOnly), c.rows).str()] = cli;
    // The entry applies where a runtime looks it up: sm_90a's device at B = 1.
    const bool tuned = cli.find("block_n=32") != std::string::npos;
    CHECK(tuned == (c.compileOnly && c.rows == 1 && llvm::StringRef(c.arch) == "sm_90a"));
    sawTuned |= tuned;
  }
  CHECK(sawTuned);
  // The arch shapes the plans (sm_90a decodes 64 rows on the Hopper GEMM,
  // its prefill GEMMs take other tiles): a door that dropped the arch would
  // not be hidden by equal defaults.
  REQUIRE(byCase.size() == cases.size());
  CHECK(byCase.at("sm_90a 0 64") != byCase.at("sm_121a 0 64"));
  CHECK(byCase.at("sm_90a 1 0") != byCase.at("sm_121a 1 0"));
}
