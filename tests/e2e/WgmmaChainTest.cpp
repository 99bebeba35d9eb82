// Chained dots on wgmma with A from registers (issue 31 part 1), without a
// GPU: the chained kernel on the interpreter against its f64 reference, and
// its sm_90a compile, whose PTX must issue the second dot's wgmma on A
// registers with no shared-memory traffic between the dots, assembled by
// ptxas without spills.
#include "tilejit/Interpreter/Interpreter.h"
#include "tilejit/Pipeline/Pipeline.h"
#include "tilejit/jit/JitCompiler.h"

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

Specialization chainSpec(int64_t qInLoop, int64_t producer = 0, int64_t vMnMajor = 0) {
  return llvm::cantFail(testing::wgmmaChainDef().specialize({{"q_in_loop", qInLoop},
                                                             {"producer", producer},
                                                             {"t", kT},
                                                             {"v_mn_major", vMnMajor}}));
}

} // namespace

TEST_CASE("wgmma_chain on the interpreter against f64, q staged and q in registers, "
          "v read transposed and as it is",
          "[e2e][interp][wgmma]") {
  std::mt19937 rng(31);
  std::vector<uint16_t> q = testing::randomBF16(kM * kD, rng),
                        k = testing::randomBF16(kT * kD, rng),
                        vt = testing::randomBF16(kD * kT, rng);
  const testing::WgmmaChainReference ref =
      testing::wgmmaChainReference(q, k, vt, kM, kT, kScale);
  auto outside = [&](auto value, size_t count) {
    int64_t n = 0;
    for (size_t i = 0; i < count; ++i)
      n += !(std::abs(value(i) - ref.o[i]) <= ref.band[i]);
    return n;
  };
  // A dropped key (the last of 200) leaves the band on most outputs.
  std::vector<double> dropped =
      testing::wgmmaChainReference(q, k, vt, kM, kT, kScale, kT - 1).o;
  CHECK(outside([&](size_t i) { return dropped[i]; }, dropped.size()) > kM * kD * 3 / 4);
  // v_mn_major reads v [t, 64] itself; v^T read as v leaves the band.
  const std::vector<uint16_t> v = testing::transposed(vt, kD, kT);
  std::vector<double> misread = testing::wgmmaChainReference(q, k, v, kM, kT, kScale).o;
  CHECK(outside([&](size_t i) { return misread[i]; }, misread.size()) > kM * kD * 3 / 4);
  for (auto [qInLoop, vMnMajor] : {std::pair{0, 0}, {1, 0}, {1, 1}}) {
    mlir::DialectRegistry dialects;
    registerCompilerDialects(dialects);
    mlir::MLIRContext ctx(dialects);
    auto module = testing::wgmmaChainDef().build(ctx, chainSpec(qInLoop, 0, vMnMajor));
    REQUIRE(bool(module));
    auto kernel = *(*module)->getOps<tile::KernelOp>().begin();
    std::vector<float> o(kM * kD, NAN);
    llvm::Error err = interp::run(kernel, {2, 1, 1},
                                  {Arg::readOnlyBuffer(q), Arg::readOnlyBuffer(k),
                                   Arg::readOnlyBuffer(vMnMajor ? v : vt), Arg::buffer(o),
                                   Arg::intScalar(kM), Arg::floatScalar(kScale)});
    INFO("q_in_loop = " << qInLoop << ", v_mn_major = " << vMnMajor);
    INFO(llvm::toString(std::move(err)));
    CHECK(outside([&](size_t i) { return double(o[i]); }, o.size()) == 0);
  }
}

TEST_CASE("wgmma_chain compiles for sm_90a with its chained dot on A registers, "
          "warp-specialized or not, v K- or MN-major, and assembles without spills",
          "[e2e][wgmma][ptxas]") {
  // The second dot takes A as four .b32 registers; with q staged the first
  // reads A through a descriptor, with q in registers it takes registers too.
  llvm::Regex registerA("wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16[^;]*\\}, "
                        "\\{%r[0-9]+, %r[0-9]+, %r[0-9]+, %r[0-9]+\\}, %rd[0-9]+");
  llvm::Regex descriptorA("wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16[^;]*\\}, "
                          "%rd[0-9]+, %rd[0-9]+");
  // B MN-major: the last transpose immediate (tnspB) is 1.
  llvm::Regex mnMajorB("wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16.*, 1;");
  auto ptxas = testing::findPtxas();
  JitCompiler compiler;
  Arch arch = llvm::cantFail(Arch::parse("sm_90a"));
  for (const testing::WgmmaChainCase &c : testing::kWgmmaChainCases) {
    auto [qInLoop, producer, vMnMajor] = c;
    INFO("q_in_loop = " << qInLoop << ", producer = " << producer
                        << ", v_mn_major = " << vMnMajor);
    auto ir = buildCanonicalIR(testing::wgmmaChainDef(),
                               chainSpec(qInLoop, producer, vMnMajor));
    REQUIRE(bool(ir));
    auto compiled = compiler.compile({"wgmma_chain", *ir, arch, {}});
    INFO((compiled ? "" : llvm::toString(compiled.takeError())));
    REQUIRE(bool(compiled));
    int64_t withRegisters = 0, withDescriptor = 0, withMnMajorB = 0;
    llvm::SmallVector<llvm::StringRef> lines;
    llvm::StringRef(compiled->ptx).split(lines, '\n');
    for (llvm::StringRef line : lines) {
      withRegisters += registerA.match(line);
      withDescriptor += descriptorA.match(line);
      withMnMajorB += mnMajorB.match(line);
    }
    // Four K steps of 16 per dot, one 64-row block each.
    CHECK(withRegisters == (qInLoop ? 4 : 8));
    CHECK(withDescriptor == (qInLoop ? 4 : 0));
    // The second dot's four, when v is read [t, 64].
    CHECK(withMnMajorB == (vMnMajor ? 4 : 0));
    if (!ptxas) {
      WARN("SKIP: ptxas not found (install the CUDA 13 toolkit)");
      continue;
    }
    testing::PtxasResult assembled =
        testing::runPtxas(*ptxas, compiled->ptx, "sm_90a", /*verbose=*/true);
    INFO(assembled.output);
    REQUIRE(assembled.ok());
    llvm::outs() << "wgmma_chain q_in_loop=" << qInLoop << " producer=" << producer
                 << " v_mn_major=" << vMnMajor << " sm_90a ptxas:\n"
                 << assembled.output << "\n";
    CHECK(testing::spillBytes(assembled.output) == 0);
    // ptxas serializes wgmma whose registers it cannot prove are left alone
    // while in flight: the chain would lose its overlap.
    CHECK(assembled.output.find("serialized") == std::string::npos);
    // Nor does it insert fences (C7519, "warpgroup.arrive is injected"): A's
    // registers are all written before the dot's wgmma.fence.
    CHECK(assembled.output.find("C7519") == std::string::npos);
  }
}
