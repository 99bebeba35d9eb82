// Candidate enumeration and static pruning (tilejit tune): the product of the
// candidate lists, the default first, and each pruning rule on the example kernels.
#include "tilejit/models/mamba2/Kernels.h"
#include "tilejit/tuning/Candidates.h"

#include <catch2/catch.hpp>

#include <set>

using namespace tilejit;
using namespace tilejit::tuning;

namespace {

/// The example kernels in a registry of the test's own.
const KernelRegistry &examples() {
  static KernelRegistry registry = [] {
    KernelRegistry r;
    llvm::cantFail(models::registerExampleKernels(r));
    return r;
  }();
  return registry;
}

const KernelDef &def(llvm::StringRef name) {
  const KernelDef *d = examples().find(name);
  REQUIRE(d);
  return *d;
}

Candidate candidateFor(const KernelDef &d, const ConstantValues &overrides) {
  Candidate c;
  c.spec = llvm::cantFail(d.specialize(overrides));
  for (const KernelConstant &k : d.constants)
    if (k.isTunable())
      c.config[k.name] = c.spec.get(k.name);
  return c;
}

/// A kernel with one fixed and two tunable constants; its body is never built.
KernelDef toyKernel() {
  return {"toy",
          "enumeration only",
          {{"n", 256, "size"},
           {"block", 64, "tile", {32, 128}},
           {"warps", 4, "warps", {2, 4, 8}}},
          [](Kernel &, const Specialization &) {}};
}

} // namespace

TEST_CASE("enumeration is the product of the lists, default first", "[tuning]") {
  KernelDef toy = toyKernel();
  Specialization base = llvm::cantFail(toy.specialize({}));
  std::vector<Candidate> all = enumerateCandidates(toy, base);
  // block: 64, 32, 128; warps: 4, 2, 8 (the listed 4 is the default, not repeated).
  REQUIRE(all.size() == 9);
  CHECK(all[0].isDefault);
  CHECK(all[0].config == NamedValues{{"block", 64}, {"warps", 4}});
  std::set<NamedValues> distinct;
  for (size_t i = 0; i < all.size(); ++i) {
    distinct.insert(all[i].config);
    CHECK(all[i].isDefault == (i == 0));
    CHECK(all[i].spec.get("n") == 256);
    CHECK(all[i].spec.get("block") == all[i].config.at("block"));
    CHECK(all[i].config.count("n") == 0);
  }
  CHECK(distinct.size() == 9);
  CHECK(all[0].label() == "block=64,warps=4 (default)");
}

TEST_CASE("a --set constant is fixed, not enumerated", "[tuning]") {
  KernelDef toy = toyKernel();
  Specialization base = llvm::cantFail(toy.specialize({{"block", 128}}));
  std::vector<Candidate> all = enumerateCandidates(toy, base, {"block"});
  REQUIRE(all.size() == 3);
  for (const Candidate &c : all) {
    CHECK(c.config.at("block") == 128);
    CHECK_FALSE(c.isDefault);
  }
}

TEST_CASE("the registered GEMM enumerates its full product", "[tuning]") {
  const KernelDef &gemm = def("gemm_bf16");
  std::vector<Candidate> all =
      enumerateCandidates(gemm, llvm::cantFail(gemm.specialize({})));
  // block_m 3 x block_n 3 x block_k 2 x warps 2 x stages 3.
  CHECK(all.size() == 108);
  CHECK(all[0].isDefault);
  CHECK(all[0].config.at("block_k") == 32);
}

TEST_CASE("shape constraints: divides and covers", "[tuning]") {
  TuneProblem p;
  p.divides = {{"block_k", "k"}};
  p.covers = {{"block", "cols"}};
  Specialization s;
  s.set("block_k", 64);
  s.set("k", 4000);
  s.set("block", 1024);
  CHECK(checkShapeConstraints(p, s, {{"cols", 1000}}) ==
        "block_k=64 does not divide k=4000");
  s.set("k", 4096);
  CHECK(checkShapeConstraints(p, s, {{"cols", 1000}}).empty());
  CHECK(checkShapeConstraints(p, s, {{"cols", 1025}}) ==
        "block=1024 is less than cols=1025");
  CHECK(checkShapeConstraints(p, s, {}) ==
        "the constraint names 'cols', which is neither a constant nor a launch size");
}

TEST_CASE("static analysis: shared memory of the pipelined GEMMs", "[tuning]") {
  Arch sm90a = llvm::cantFail(Arch::parse("sm_90a"));
  StaticLimits limits = limitsForArch(sm90a);
  CHECK(limits.maxSharedBytes == 227 * 1024);
  // Measured by the compiler's own launch metadata (docs/BENCHMARKS.md): 64 KiB
  // (4 stages of 128x32 + 32x128 bf16) and 96 KiB (3 stages of 2 x 128x128 e4m3).
  Candidate bf16 = candidateFor(def("gemm_bf16"), {});
  pruneCandidate(def("gemm_bf16"), nullptr, {}, limits, sm90a, bf16);
  CHECK(bf16.pruned.empty());
  CHECK(bf16.sharedBytes == 64 * 1024);
  CHECK(bf16.threads == 128);
  // The 128x128 f32 accumulator over 128 threads.
  CHECK(bf16.tileWordsPerThread == 128);
  Candidate e4m3 = candidateFor(def("gemm_e4m3"), {});
  pruneCandidate(def("gemm_e4m3"), nullptr, {}, limits, sm90a, e4m3);
  CHECK(e4m3.pruned.empty());
  CHECK(e4m3.sharedBytes == 96 * 1024);

  limits.maxSharedBytes = 60000;
  Candidate tight = candidateFor(def("gemm_bf16"), {});
  pruneCandidate(def("gemm_bf16"), nullptr, {}, limits, sm90a, tight);
  CHECK(tight.pruned == "65536 bytes of shared memory; the limit is 60000");
  // One stage fewer fits.
  Candidate fewer = candidateFor(def("gemm_bf16"), {{"stages", 3}});
  pruneCandidate(def("gemm_bf16"), nullptr, {}, limits, sm90a, fewer);
  CHECK(fewer.pruned.empty());
  CHECK(fewer.sharedBytes == 48 * 1024);
}

TEST_CASE("static analysis: registers, threads, capabilities", "[tuning]") {
  Arch sm90a = llvm::cantFail(Arch::parse("sm_90a"));
  StaticLimits limits = limitsForArch(sm90a);
  const KernelDef &gemm = def("gemm_bf16");
  Candidate big = candidateFor(gemm, {{"block_m", 256}, {"block_n", 256}, {"stages", 2}});
  pruneCandidate(gemm, nullptr, {}, limits, sm90a, big);
  // 256 x 256 f32 over 4 warps: 512 registers per thread.
  CHECK(big.pruned == "a tile value takes 512 registers per thread; the budget is 128");
  Candidate wide = candidateFor(
      gemm, {{"block_m", 256}, {"block_n", 256}, {"stages", 2}, {"warps", 8}});
  pruneCandidate(gemm, nullptr, {}, limits, sm90a, wide);
  CHECK(wide.pruned == "a tile value takes 256 registers per thread; the budget is 128");

  StaticLimits fewThreads = limits;
  fewThreads.maxThreadsPerBlock = 128;
  Candidate eight = candidateFor(gemm, {{"warps", 8}});
  pruneCandidate(gemm, nullptr, {}, fewThreads, sm90a, eight);
  CHECK(eight.pruned == "256 threads per program; the limit is 128");

  StaticLimits noBf16 = limits;
  noBf16.caps.mmaSyncBf16 = false;
  Candidate c = candidateFor(gemm, {});
  pruneCandidate(gemm, nullptr, {}, noBf16, sm90a, c);
  CHECK(c.pruned == "sm_90a has no bf16 mma.sync");
  // The e4m3 GEMM needs the other path only.
  Candidate e = candidateFor(def("gemm_e4m3"), {});
  pruneCandidate(def("gemm_e4m3"), nullptr, {}, noBf16, sm90a, e);
  CHECK(e.pruned.empty());

  StaticLimits noAsync = limits;
  noAsync.caps.cpAsync = false;
  Candidate staged = candidateFor(gemm, {});
  pruneCandidate(gemm, nullptr, {}, noAsync, sm90a, staged);
  CHECK(staged.pruned == "stages=4 needs cp.async, which sm_90a lacks");
}

TEST_CASE("pruning applies the problem's constraints first", "[tuning]") {
  Arch sm121a = llvm::cantFail(Arch::parse("sm_121a"));
  StaticLimits limits = limitsForArch(sm121a);
  CHECK(limits.maxSharedBytes == 99 * 1024);
  TuneProblem p;
  p.covers = {{"block", "cols"}};
  const KernelDef &softmax = def("softmax");
  Candidate narrow = candidateFor(softmax, {});
  pruneCandidate(softmax, &p, {{"cols", 2000}}, limits, sm121a, narrow);
  CHECK(narrow.pruned == "block=1024 is less than cols=2000");
  CHECK(narrow.threads == 0);
  Candidate wide = candidateFor(softmax, {{"block", 2048}});
  pruneCandidate(softmax, &p, {{"cols", 2000}}, limits, sm121a, wide);
  CHECK(wide.pruned.empty());
  // A [1, 2048] f32 row over 4 warps: 16 registers per thread.
  CHECK(wide.tileWordsPerThread == 16);
  llvm::json::Value json = wide.toJSON();
  CHECK(json.getAsObject()->getString("status") == "kept");
  CHECK(json.getAsObject()->getObject("config")->getInteger("block") == 2048);
}
