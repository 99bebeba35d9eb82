// The PTX target: LLVM-dialect kernels to PTX for every arch, checked for their
// directives and, when ptxas is on PATH, assembled by it; errors and timing.
#include "tilejit/Target/PTX/PTXTarget.h"
#include "tilejit/support/Timing.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "llvm/Support/raw_ostream.h"

#include "../support/Ptxas.h"

#include <catch2/catch.hpp>

#include <string>
#include <thread>
#include <vector>

using namespace tilejit;

namespace {

/// c[i] = (a[i] + b[i]) + the same sum of the xor-1 neighbour lane. Loads are
/// clamped rather than guarded so that every lane reaches the full-mask shuffle.
const char *kVectorAdd = R"mlir(
llvm.func @vector_add(%a: !llvm.ptr<1>, %b: !llvm.ptr<1>, %c: !llvm.ptr<1>, %n: i32)
    attributes {nvvm.kernel} {
  %one = llvm.mlir.constant(1 : i32) : i32
  %full = llvm.mlir.constant(-1 : i32) : i32
  %clamp = llvm.mlir.constant(31 : i32) : i32
  %tid = nvvm.read.ptx.sreg.tid.x : i32
  %ctaid = nvvm.read.ptx.sreg.ctaid.x : i32
  %ntid = nvvm.read.ptx.sreg.ntid.x : i32
  %base = llvm.mul %ctaid, %ntid : i32
  %i = llvm.add %base, %tid : i32
  %inBounds = llvm.icmp "slt" %i, %n : i32
  %last = llvm.sub %n, %one : i32
  %j = llvm.select %inBounds, %i, %last : i1, i32
  %idx = llvm.sext %j : i32 to i64
  %pa = llvm.getelementptr %a[%idx] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, f32
  %pb = llvm.getelementptr %b[%idx] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, f32
  %x = llvm.load %pa : !llvm.ptr<1> -> f32
  %y = llvm.load %pb : !llvm.ptr<1> -> f32
  %sum = llvm.fadd %x, %y : f32
  %neighbour = nvvm.shfl.sync bfly %full, %sum, %one, %clamp : f32 -> f32
  %pair = llvm.fadd %sum, %neighbour : f32
  llvm.cond_br %inBounds, ^store, ^exit
^store:
  %pc = llvm.getelementptr %c[%idx] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, f32
  llvm.store %pair, %pc : f32, !llvm.ptr<1>
  llvm.br ^exit
^exit:
  llvm.return
}
)mlir";

/// One minimal kernel per capability, to check that each `true` entry of the
/// table is something LLVM can select and ptxas accepts on that arch.
struct CapabilityProbe {
  const char *name;
  bool ArchCapabilities::*enabled;
  const char *body;
};

const CapabilityProbe kProbes[] = {
    {"mmaSyncBf16", &ArchCapabilities::mmaSyncBf16, R"mlir(
llvm.func @probe(%out: !llvm.ptr<1>, %a: i32) attributes {nvvm.kernel} {
  %zero = llvm.mlir.constant(0.0 : f32) : f32
  %d = nvvm.mma.sync A[%a, %a, %a, %a] B[%a, %a] C[%zero, %zero, %zero, %zero]
      {layoutA = #nvvm.mma_layout<row>, layoutB = #nvvm.mma_layout<col>,
       multiplicandAPtxType = #nvvm.mma_type<bf16>,
       multiplicandBPtxType = #nvvm.mma_type<bf16>,
       shape = #nvvm.shape<m = 16, n = 8, k = 16>}
      : (i32, i32, f32) -> !llvm.struct<(f32, f32, f32, f32)>
  %x = llvm.extractvalue %d[0] : !llvm.struct<(f32, f32, f32, f32)>
  llvm.store %x, %out : f32, !llvm.ptr<1>
  llvm.return
})mlir"},
    // MLIR 22's nvvm.mma.sync has no dense e4m3 form: call the intrinsic.
    {"mmaSyncE4m3", &ArchCapabilities::mmaSyncE4m3, R"mlir(
llvm.func @probe(%out: !llvm.ptr<1>, %a: i32) attributes {nvvm.kernel} {
  %z = llvm.mlir.constant(0.0 : f32) : f32
  %d = llvm.call_intrinsic "llvm.nvvm.mma.m16n8k32.row.col.f32.e4m3.e4m3.f32"(
      %a, %a, %a, %a, %a, %a, %z, %z, %z, %z)
      : (i32, i32, i32, i32, i32, i32, f32, f32, f32, f32)
      -> !llvm.struct<(f32, f32, f32, f32)>
  %x = llvm.extractvalue %d[0] : !llvm.struct<(f32, f32, f32, f32)>
  llvm.store %x, %out : f32, !llvm.ptr<1>
  llvm.return
})mlir"},
    // The two entries some arch lacks are probed as PTX text (inline asm), so
    // that on that arch ptxas refuses them rather than LLVM's instruction
    // selection aborting the process.
    {"wgmma", &ArchCapabilities::wgmma, R"mlir(
llvm.func @probe() attributes {nvvm.kernel} {
  llvm.inline_asm has_side_effects "wgmma.fence.sync.aligned;\nwgmma.commit_group.sync.aligned;\nwgmma.wait_group.sync.aligned 0;", "" : () -> ()
  llvm.return
})mlir"},
    // The TMA producer pipeline's instructions as tile-warp-specialize's
    // lowering writes them (AsyncEmitters.cpp): the 2-D copy, the barriers'
    // transaction bytes and the parity wait.
    {"tma", &ArchCapabilities::tma, R"mlir(
llvm.func @probe(%dst: i32, %desc: i64, %mbar: i32, %x: i32) attributes {nvvm.kernel} {
  llvm.inline_asm has_side_effects "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [$0], [$1, {$2, $3}], [$4];", "r,l,r,r,r" %dst, %desc, %x, %x, %mbar : (i32, i64, i32, i32, i32) -> ()
  llvm.inline_asm has_side_effects "mbarrier.arrive.expect_tx.shared::cta.b64 _, [$0], 128;", "r" %mbar : (i32) -> ()
  llvm.inline_asm has_side_effects "{\n.reg .pred done;\nmbarrier.try_wait.parity.shared::cta.b64 done, [$0], $1;\n}", "r,r" %mbar, %x : (i32, i32) -> ()
  llvm.return
})mlir"},
    {"setmaxnreg", &ArchCapabilities::setmaxnreg, R"mlir(
llvm.func @probe() attributes {nvvm.kernel, nvvm.reqntid = array<i32: 256, 1, 1>} {
  llvm.inline_asm has_side_effects "setmaxnreg.inc.sync.aligned.u32 232;", "" : () -> ()
  llvm.return
})mlir"},
    // tile.grid_dep_wait / grid_dep_launch / prefetch_l2 as AsyncEmitters.cpp
    // lowers them.
    {"gridDependency", &ArchCapabilities::gridDependency, R"mlir(
llvm.func @probe(%src: !llvm.ptr<1>, %n: i32) attributes {nvvm.kernel} {
  nvvm.cp.async.bulk.prefetch %src, %n : !llvm.ptr<1>
  nvvm.griddepcontrol wait
  nvvm.griddepcontrol launch_dependents
  llvm.return
})mlir"},
    {"cpAsync", &ArchCapabilities::cpAsync, R"mlir(
llvm.func @probe(%dst: !llvm.ptr<3>, %src: !llvm.ptr<1>) attributes {nvvm.kernel} {
  nvvm.cp.async.shared.global %dst, %src, 16, cache = cg : !llvm.ptr<3>, !llvm.ptr<1>
  nvvm.cp.async.commit.group
  nvvm.cp.async.wait.group 0
  llvm.return
})mlir"},
};

/// A context that can parse and translate LLVM + NVVM dialect modules.
std::unique_ptr<mlir::MLIRContext> makeContext() {
  mlir::DialectRegistry registry;
  registry.insert<mlir::LLVM::LLVMDialect, mlir::NVVM::NVVMDialect>();
  registerPTXTargetTranslations(registry);
  return std::make_unique<mlir::MLIRContext>(registry);
}

mlir::OwningOpRef<mlir::ModuleOp> parse(mlir::MLIRContext &context, const char *text) {
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::parseSourceString<mlir::ModuleOp>(text, &context);
  REQUIRE(module);
  return module;
}

Arch arch(llvm::StringRef name) {
  llvm::Expected<Arch> parsed = Arch::parse(name);
  REQUIRE(static_cast<bool>(parsed));
  return *parsed;
}

std::string emitOrFail(mlir::ModuleOp module, const Arch &target,
                       PTXTimings *timings = nullptr) {
  llvm::Expected<std::string> ptx = emitPTX(module, target, {}, timings);
  if (!ptx)
    FAIL(target.name().str() << ": " << llvm::toString(ptx.takeError()));
  return *ptx;
}

/// Assembles `ptx` with `ptxas -arch=<arch>`. Returns "" on success, else
/// ptxas's diagnostics. Without ptxas, warns and returns "".
std::string assembleWithPtxas(const std::string &ptx, const Arch &target) {
  auto ptxas = testing::findPtxas();
  if (!ptxas) {
    WARN("ptxas not found: PTX for " << target.name().str() << " not assembled");
    return "";
  }
  testing::PtxasResult result = testing::runPtxas(*ptxas, ptx, target.name());
  if (result.ok())
    return "";
  return "ptxas -arch=" + target.name().str() + " exited with " +
         std::to_string(result.exitCode) + ": " + result.output;
}

std::string describe(const PTXTimings &timings) {
  std::string text;
  llvm::raw_string_ostream os(text);
  timings.print(os);
  return text;
}

} // namespace

TEST_CASE("emitPTX compiles a vector add for every arch", "[ptx]") {
  auto context = makeContext();
  auto module = parse(*context, kVectorAdd);
  for (const Arch &target : Arch::all()) {
    INFO(target.name().str());
    std::string ptx = emitOrFail(*module, target);
    CHECK_THAT(ptx, Catch::Contains("\n.version " + target.ptxVersionString() + "\n"));
    CHECK_THAT(ptx, Catch::Contains("\n.target " + target.name().str() + "\n"));
    CHECK_THAT(ptx, Catch::Contains(".entry vector_add("));
    CHECK_THAT(ptx, Catch::Contains("shfl.sync.bfly"));
    CHECK_THAT(ptx, Catch::Contains("ld.global"));
    CHECK(assembleWithPtxas(ptx, target) == "");
  }
}

TEST_CASE("The capability table is what ptxas assembles, entry by entry", "[ptx]") {
  // Each true entry's probe compiles and assembles on its arch; each false
  // one's does not (LLVM refuses to select it, or ptxas rejects the PTX): the
  // table claims neither more nor less than the ISA gives (Arch.cpp).
  const bool havePtxas = testing::findPtxas().has_value();
  for (const CapabilityProbe &probe : kProbes) {
    auto context = makeContext();
    auto module = parse(*context, probe.body);
    for (const Arch &target : Arch::all()) {
      INFO(probe.name << " on " << target.name().str());
      if (target.capabilities().*probe.enabled) {
        std::string ptx = emitOrFail(*module, target);
        CHECK_THAT(ptx, Catch::Contains(".entry probe("));
        CHECK(assembleWithPtxas(ptx, target) == "");
        continue;
      }
      llvm::Expected<std::string> ptx = emitPTX(*module, target, {}, nullptr);
      if (!ptx) {
        llvm::consumeError(ptx.takeError());
        continue;
      }
      if (havePtxas)
        CHECK(assembleWithPtxas(*ptx, target) != "");
    }
  }
}

TEST_CASE("translateToLLVMIR sets the NVPTX triple and layout", "[ptx]") {
  auto context = makeContext();
  auto module = parse(*context, kVectorAdd);
  llvm::Expected<std::string> ir = translateToLLVMIR(*module, arch("sm_90a"));
  REQUIRE(static_cast<bool>(ir));
  CHECK_THAT(*ir, Catch::Contains("target triple = \"nvptx64-nvidia-cuda\""));
  CHECK_THAT(*ir, Catch::Contains("target datalayout = \"e-"));
  CHECK_THAT(*ir, Catch::Contains("define ptx_kernel void @vector_add("));
}

TEST_CASE("Failures are errors, not aborts", "[ptx]") {
  auto context = makeContext();
  context->allowUnregisteredDialects();
  auto module = parse(*context, R"mlir(
llvm.func @kernel() attributes {nvvm.kernel} {
  "mystery.op"() : () -> ()
  llvm.return
})mlir");
  llvm::Expected<std::string> ptx = emitPTX(*module, arch("sm_90"));
  REQUIRE_FALSE(static_cast<bool>(ptx));
  std::string message = llvm::toString(ptx.takeError());
  CHECK_THAT(message, Catch::Contains("translation to LLVM IR failed"));
  CHECK_THAT(message, Catch::Contains("mystery.op"));

  auto valid = parse(*context, kVectorAdd);
  PTXOptions outOfRange;
  outOfRange.optLevel = 7;
  llvm::Expected<std::string> badLevel = emitPTX(*valid, arch("sm_90"), outOfRange);
  REQUIRE_FALSE(static_cast<bool>(badLevel));
  CHECK_THAT(llvm::toString(badLevel.takeError()),
             Catch::Contains("optimization level 7 is out of range 0..3"));
}

TEST_CASE("emitPTX runs concurrently on separate contexts", "[ptx]") {
  std::vector<std::string> results(Arch::all().size());
  std::vector<std::thread> threads;
  for (size_t i = 0; i < results.size(); ++i)
    threads.emplace_back([i, &results] {
      auto context = makeContext();
      auto module = mlir::parseSourceString<mlir::ModuleOp>(kVectorAdd, context.get());
      llvm::Expected<std::string> ptx = emitPTX(*module, Arch::all()[i]);
      results[i] = ptx ? *ptx : "error: " + llvm::toString(ptx.takeError());
    });
  for (std::thread &thread : threads)
    thread.join();
  for (size_t i = 0; i < results.size(); ++i)
    CHECK_THAT(results[i], Catch::Contains(".target " + Arch::all()[i].name().str()));
}

TEST_CASE("emitPTX of a small kernel is fast once warm", "[ptx][time]") {
  auto context = makeContext();
  auto module = parse(*context, kVectorAdd);
  Arch target = arch("sm_90a");
  PTXTimings first;
  emitOrFail(*module, target, &first);

  const int runs = 20;
  std::vector<double> totals;
  PTXTimings last;
  for (int run = 0; run < runs; ++run) {
    auto start = std::chrono::steady_clock::now();
    emitOrFail(*module, target, &last);
    totals.push_back(support::msSince(start));
  }
  support::SampleSummary warm = support::summarize(totals);
  WARN("emitPTX vector_add sm_90a: first call "
       << describe(first) << "; warm, n=" << warm.n << ": median " << warm.median
       << " ms, min " << warm.min << " ms, max " << warm.max << " ms; last "
       << describe(last));
  CHECK(warm.median < 100.0);
}
