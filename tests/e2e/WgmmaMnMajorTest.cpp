// wgmma with an MN-major B (issue 31 part 1), without a GPU: the chained
// kernel with v read [t, 64] on the interpreter against its f64 reference,
// and sm_90a compiles of it and of gemm_bf16 (B [K, N]) whose PTX issues
// every product as wgmma with the transpose immediate tnspB = 1, assembled by
// ptxas without spills.
#include "tilejit/Builder/KernelRegistry.h"
#include "tilejit/Interpreter/Interpreter.h"
#include "tilejit/Pipeline/Pipeline.h"
#include "tilejit/jit/JitCompiler.h"
#include "tilejit/models/examples/ExampleKernels.h"

#include "../support/Ptxas.h"
#include "WgmmaChainKernel.h"

#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/Regex.h"

#include <catch2/catch.hpp>

using namespace tilejit;
using interp::Arg;

namespace {

constexpr int64_t kM = 100, kT = 200, kD = 64; // partial tiles in M and t
constexpr float kScale = 0.125f;

Specialization chainSpec(int64_t qInLoop, int64_t producer) {
  return llvm::cantFail(testing::wgmmaChainDef().specialize(
      {{"q_in_loop", qInLoop}, {"producer", producer}, {"t", kT}, {"v_mn_major", 1}}));
}

/// The wgmma instructions of `ptx` whose B is MN-major (the last immediate
/// 1) and all of them.
std::pair<int64_t, int64_t> countWgmma(llvm::StringRef ptx) {
  llvm::Regex mnMajor("wgmma.mma_async.sync.aligned.m64n[0-9]+k16.f32.bf16.bf16.*, 1;");
  llvm::SmallVector<llvm::StringRef> lines;
  ptx.split(lines, '\n');
  int64_t mn = 0, all = 0;
  for (llvm::StringRef line : lines) {
    all += line.contains("wgmma.mma_async");
    mn += mnMajor.match(line);
  }
  return {mn, all};
}

/// Assembles `ptx` for sm_90a: no spills, no serialized wgmma.
void checkAssembles(const std::string &ptx, llvm::StringRef what) {
  auto ptxas = testing::findPtxas();
  if (!ptxas) {
    WARN("SKIP: ptxas not found (install the CUDA 13 toolkit)");
    return;
  }
  testing::PtxasResult assembled = testing::runPtxas(*ptxas, ptx, "sm_90a", true);
  INFO(assembled.output);
  REQUIRE(assembled.ok());
  llvm::outs() << what << " sm_90a ptxas:\n" << assembled.output << "\n";
  CHECK(testing::spillBytes(assembled.output) == 0);
  CHECK(assembled.output.find("serialized") == std::string::npos);
  CHECK(assembled.output.find("C7519") == std::string::npos);
}

} // namespace

TEST_CASE("wgmma_chain with v MN-major on the interpreter against f64",
          "[e2e][interp][wgmma]") {
  std::mt19937 rng(32);
  std::vector<uint16_t> q = testing::randomBF16(kM * kD, rng),
                        k = testing::randomBF16(kT * kD, rng),
                        v = testing::randomBF16(kT * kD, rng);
  const testing::WgmmaChainReference ref =
      testing::wgmmaChainReference(q, k, testing::transposed(v, kT, kD), kM, kT, kScale);
  // v read as v^T (the K-major kernel's operand) leaves the band.
  const testing::WgmmaChainReference misread =
      testing::wgmmaChainReference(q, k, v, kM, kT, kScale);
  auto outside = [&](auto value) {
    int64_t n = 0;
    for (size_t i = 0; i < ref.o.size(); ++i)
      n += !(std::abs(value(i) - ref.o[i]) <= ref.band[i]);
    return n;
  };
  CHECK(outside([&](size_t i) { return misread.o[i]; }) > kM * kD * 3 / 4);
  mlir::DialectRegistry dialects;
  registerCompilerDialects(dialects);
  mlir::MLIRContext ctx(dialects);
  auto module = testing::wgmmaChainDef().build(ctx, chainSpec(1, 0));
  REQUIRE(bool(module));
  auto kernel = *(*module)->getOps<tile::KernelOp>().begin();
  std::vector<float> o(kM * kD, NAN);
  llvm::Error err =
      interp::run(kernel, {2, 1, 1},
                  {Arg::readOnlyBuffer(q), Arg::readOnlyBuffer(k), Arg::readOnlyBuffer(v),
                   Arg::buffer(o), Arg::intScalar(kM), Arg::floatScalar(kScale)});
  INFO(llvm::toString(std::move(err)));
  CHECK(outside([&](size_t i) { return double(o[i]); }) == 0);
}

TEST_CASE("wgmma_chain with v MN-major and gemm_bf16 compile for sm_90a with tnspB = 1 "
          "and assemble without spills",
          "[e2e][wgmma][ptxas]") {
  JitCompiler compiler;
  Arch arch = llvm::cantFail(Arch::parse("sm_90a"));
  for (auto [qInLoop, producer] : {std::pair{0, 0}, {1, 0}, {1, 1}}) {
    INFO("q_in_loop = " << qInLoop << ", producer = " << producer);
    auto ir = buildCanonicalIR(testing::wgmmaChainDef(), chainSpec(qInLoop, producer));
    REQUIRE(bool(ir));
    auto compiled = compiler.compile({"wgmma_chain", *ir, arch, {}});
    INFO((compiled ? "" : llvm::toString(compiled.takeError())));
    REQUIRE(bool(compiled));
    // Four K steps of 16 per dot: the second dot's are MN-major.
    CHECK(countWgmma(compiled->ptx) == std::pair<int64_t, int64_t>{4, 8});
    checkAssembles(compiled->ptx,
                   "wgmma_chain v_mn_major=1 q_in_loop=" + std::to_string(qInLoop) +
                       " producer=" + std::to_string(producer));
  }
  // gemm_bf16's B is [K, N]: every product is an MN-major wgmma, with
  // 64-column tiles (128-byte rows, one atom) and with 128 (two column
  // blocks of atoms).
  KernelRegistry examples;
  llvm::cantFail(models::registerExampleKernels(examples));
  const KernelDef *gemm = examples.find("gemm_bf16");
  REQUIRE(gemm);
  for (int64_t blockN : {64, 128}) {
    INFO("block_n = " << blockN);
    auto ir = buildCanonicalIR(
        *gemm, llvm::cantFail(gemm->specialize(
                   {{"n", 2688}, {"k", 1024}, {"block_n", blockN}, {"block_k", 64}})));
    REQUIRE(bool(ir));
    auto compiled = compiler.compile({"gemm_bf16", *ir, arch, {}});
    REQUIRE(bool(compiled));
    auto [mn, all] = countWgmma(compiled->ptx);
    // Two 64-row blocks of four K steps.
    CHECK(mn == all);
    CHECK(all == 8);
    checkAssembles(compiled->ptx,
                   "gemm_bf16 block_n=" + std::to_string(blockN) + " block_k=64");
  }
}
