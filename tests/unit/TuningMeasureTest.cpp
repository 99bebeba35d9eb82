// measureCandidates without a GPU: on the FakeDevice no kernel writes its output,
// so every compiled candidate must come back `wrong` (the check sees the poison),
// a compiler failure `compile-failed` and a pruned one `pruned`: results, no crash,
// no winner, no database entry.
#include "../../tuning/lib/Harness.h"
#include "runtime/RuntimeTestSupport.h"
#include "tilejit/jit/JitCompiler.h"
#include "tilejit/models/TuneProblems.h"
#include "tilejit/models/mamba2/Kernels.h"
#include "tilejit/tuning/Tuner.h"

#include <catch2/catch.hpp>

using namespace tilejit;
using namespace tilejit::tuning;
using runtime::testing::TempDir;

namespace {

/// JitCompiler that fails its `failAt`-th compile (1-based).
class FailingCompiler : public runtime::KernelCompiler {
public:
  explicit FailingCompiler(int failAt) : failAt(failAt) {}
  runtime::CompilerIdentity identity() const override { return inner.identity(); }
  llvm::Expected<runtime::CompiledKernel>
  compile(const runtime::KernelRequest &r) override {
    if (++count == failAt)
      return llvm::createStringError("injected compiler failure");
    return inner.compile(r);
  }

private:
  JitCompiler inner;
  int failAt;
  int count = 0;
};

} // namespace

TEST_CASE("measureCandidates records every failure as a result", "[tuning]") {
  KernelRegistry registry;
  llvm::cantFail(models::registerExampleKernels(registry));
  const KernelDef *add = registry.find("vector_add");
  REQUIRE(add);
  TuneProblem problem;
  problem.kernel = "vector_add";
  problem.shape = {{"n", 4096}};
  problem.checkShape = {{"n", 1000}};
  problem.args = [](const Specialization &, const NamedValues &shape) {
    int64_t n = shape.at("n");
    return std::vector<TuneArg>{TuneArg::input(DType::F32, n),
                                TuneArg::input(DType::F32, n),
                                TuneArg::output(DType::F32, n), TuneArg::integer(n)};
  };
  problem.grid = [](const Specialization &s, const NamedValues &shape) {
    return std::array<int64_t, 3>{(shape.at("n") + s.get("block") - 1) / s.get("block"),
                                  1, 1};
  };
  TuneTarget target{add, &problem, llvm::cantFail(add->specialize({})), problem.shape};

  std::vector<Candidate> candidates = enumerateCandidates(*add, target.base);
  REQUIRE(candidates.size() == 12);
  candidates.resize(3);
  candidates[2].pruned = "pruned by the test";

  TempDir dir;
  auto jit = llvm::cantFail(runtime::JitRuntime::create(
      std::make_unique<runtime::FakeDevice>(), std::make_shared<FailingCompiler>(2),
      runtime::testing::optionsFor(dir.sub("cache"))));
  TuneOptions options;
  options.threads = 1;
  options.samples = 3;
  std::vector<std::string> phases;
  auto report =
      measureCandidates(*jit, target, candidates, options, [&](const TuneProgress &p) {
        phases.push_back(p.phase.str() + " " + std::to_string(p.done) + "/" +
                         std::to_string(p.total));
      });
  REQUIRE(bool(report));
  REQUIRE(report->results.size() == 3);
  const CandidateResult &first = report->results[0];
  CHECK(first.status == CandidateResult::Status::Wrong);
  CHECK(first.checked == 1000);
  CHECK(first.mismatches == 1000);
  CHECK(llvm::StringRef(first.detail).starts_with("1000 of 1000 elements outside"));
  CHECK(report->results[1].status == CandidateResult::Status::CompileFailed);
  CHECK(llvm::StringRef(report->results[1].detail).contains("injected compiler failure"));
  CHECK(report->results[2].status == CandidateResult::Status::Pruned);
  CHECK(report->results[2].detail == "pruned by the test");
  CHECK_FALSE(report->winner);
  CHECK_FALSE(report->entry);
  CHECK(report->defaultIndex == std::optional<size_t>(0));
  CHECK(phases == std::vector<std::string>{"compile 1/2", "compile 2/2", "measure 1/2",
                                           "measure 2/2"});
  llvm::json::Value json = report->toJSON();
  CHECK(json.getAsObject()->getArray("candidates")->size() == 3);
}

TEST_CASE("launch sizes from the command line or a database are checked before anything "
          "is allocated",
          "[tuning]") {
  KernelRegistry registry;
  llvm::cantFail(models::registerExampleKernels(registry));
  TuneProblemRegistry problems;
  llvm::cantFail(models::registerExampleTuneProblems(problems));
  auto targetAt = [&](int64_t m) {
    return makeTuneTarget(registry, problems, "gemm_bf16", {}, {{"m", m}});
  };
  // A negative size made a negative buffer (an allocation that ended the
  // process); one past i32 reached the kernel's i32 argument truncated.
  for (int64_t m : {int64_t(-5), int64_t(0), int64_t(1) << 31}) {
    auto target = targetAt(m);
    REQUIRE_FALSE(bool(target));
    CHECK(llvm::toString(target.takeError()) ==
          "kernel 'gemm_bf16': launch size 'm' is " + std::to_string(m) +
              "; it must be in [1, 2147483647] (kernels take their sizes as i32)");
  }

  // In range, but its buffers (m x k bf16 in, m x n bf16 out) exceed any host.
  auto target = targetAt(2147483647);
  REQUIRE(bool(target));
  TempDir dir;
  auto jit = llvm::cantFail(runtime::JitRuntime::create(
      std::make_unique<runtime::FakeDevice>(), std::make_shared<JitCompiler>(),
      runtime::testing::optionsFor(dir.sub("cache"))));
  auto session = MeasureSession::create(*jit, *target, TuneOptions());
  REQUIRE_FALSE(bool(session));
  std::string message = llvm::toString(session.takeError());
  CHECK_THAT(message,
             Catch::StartsWith("gemm_bf16 at m=2147483647: its arguments need "));
  CHECK_THAT(message,
             Catch::Contains("TB of host memory (the largest, argument 0, 17.6 TB)"));
  CHECK_THAT(message, Catch::EndsWith("available: tune at smaller launch sizes"));
}

TEST_CASE("timed launches rotate copies of their buffers past twice the L2", "[tuning]") {
  const uint64_t l2 = 50ull << 20;
  CHECK(rotationCopies(28'000'000, l2) == 4); // in_proj's weight: 112 MB over 4
  CHECK(rotationCopies(200'000'000, l2) == 1);
  CHECK(rotationCopies(1000, l2) == kMaxRotationCopies);
  CHECK(rotationCopies(28'000'000, 0) == 1); // L2 unknown
  CHECK(rotationCopies(0, l2) == 1);

  using namespace runtime;
  auto compiler = std::make_shared<testing::FakeCompiler>();
  FakeDevice *device = nullptr;
  auto jit = testing::fakeRuntime(compiler, testing::optionsFor(""), device);
  Stream stream = llvm::cantFail(Stream::create(*device));
  runtime::Kernel kernel(
      *jit, testing::specFor("k", testing::fakeIR("k", testing::ptrAndCount())));
  REQUIRE(testing::message(kernel.prepare()) == "");
  std::vector<DeviceBuffer> copies;
  std::vector<std::vector<KernelArg>> sets;
  for (int c = 0; c < 3; ++c) {
    copies.push_back(llvm::cantFail(jit->allocate(64)));
    sets.push_back({KernelArg::pointer(copies.back().address()), KernelArg::i32(16)});
  }
  TuneOptions options;
  options.warmup = 2;
  options.samples = 2;
  llvm::Expected<Timing> timing =
      timeLaunches(*jit, kernel, stream, {1, 1, 1}, sets, options, 60);
  if (!timing)
    FAIL(llvm::toString(timing.takeError()));
  CHECK(timing->copies == 3);
  REQUIRE(timing->launchesPerSample % 3 == 0);
  // Every launch, warm-up and graph replays alike, takes the next copy in turn.
  std::vector<FakeLaunch> launches = device->launches();
  REQUIRE(launches.size() == 2 + 3 * size_t(timing->launchesPerSample));
  for (size_t i = 0; i < launches.size(); ++i) {
    size_t set = i < 2 ? i : (i - 2) % timing->launchesPerSample % 3;
    INFO("launch " << i);
    CHECK(launches[i].args[0].pattern() == copies[set].address());
  }
}
