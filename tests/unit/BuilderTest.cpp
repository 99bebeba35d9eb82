// The C++ builder API: the Mamba2 kernels build and verify, mistakes become
// diagnostics at the user's line (never an abort), specialization works.
#include "tilejit/Builder/KernelRegistry.h"
#include "tilejit/Interpreter/Interpreter.h"
#include "tilejit/Pipeline/Pipeline.h"
#include "tilejit/models/mamba2/Kernels.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include <catch2/catch.hpp>

using namespace tilejit;

namespace {

struct Fixture {
  Fixture() {
    registerCompilerDialects(registry);
    ctx = std::make_unique<mlir::MLIRContext>(registry);
  }
  mlir::DialectRegistry registry;
  std::unique_ptr<mlir::MLIRContext> ctx;
};

std::string print(mlir::ModuleOp module) {
  std::string text;
  llvm::raw_string_ostream os(text);
  module.print(os);
  return text;
}

std::string errorText(llvm::Error err) { return llvm::toString(std::move(err)); }

/// Prints `module`, parses it back and prints again: both texts must agree.
void requireRoundTrip(Fixture &f, mlir::ModuleOp module) {
  std::string first = print(module);
  auto reparsed = mlir::parseSourceString<mlir::ModuleOp>(first, f.ctx.get());
  REQUIRE(reparsed);
  REQUIRE(print(*reparsed) == first);
}

} // namespace

TEST_CASE("gated RMSNorm (R6) builds, verifies and round-trips", "[builder]") {
  Fixture f;
  KernelDef def{
      "gated_rmsnorm",
      "",
      {{"width", 4096, ""},         {"group_size", 512, ""}, {"fp8_out", 0, ""},
       {"z_stride", 0, ""},         {"y_stride", 0, ""},     {"gate", 1, ""},
       {"norm_before_gate", 0, ""}, {"layer_norm", 0, ""},   {"bias", 0, ""},
       {"rows_per_program", 1, ""}, {"warps", 0, ""},        {"param_rows", 1, ""},
       {"quant_fma", 0, ""},        {"fast_silu", 0, ""},    {"y_type", 0, ""},
       {"z_type", 0, ""},           {"weight_type", 0, ""},  {"bias_type", 0, ""},
       {"out_type", 0, ""},         {"dependent", 1, ""}},
      models::buildGatedRmsNorm};
  auto spec = def.specialize({});
  REQUIRE(bool(spec));
  auto module = def.build(*f.ctx, *spec);
  REQUIRE(bool(module));
  std::string text = print(**module);
  INFO(text);
  CHECK(text.find("tile.reduce sum") != std::string::npos);
  CHECK(text.find("math.rsqrt") != std::string::npos);
  CHECK(text.find("tensor<1x512xbf16>") != std::string::npos);
  CHECK(text.find("tile.grid_dep_wait") != std::string::npos);
  requireRoundTrip(f, **module);
}

TEST_CASE("conv update (R3d) builds, verifies and round-trips", "[builder]") {
  Fixture f;
  // The registered constants: the body reads every one the kernel declares.
  KernelRegistry registry;
  llvm::cantFail(models::registerModelKernels(registry));
  const KernelDef *def = registry.find("conv_update");
  REQUIRE(def);
  auto module = def->build(*f.ctx, cantFail(def->specialize({{"block", 128}})));
  REQUIRE(bool(module));
  std::string text = print(**module);
  INFO(text);
  CHECK(text.find("tensor<128x!tile.ptr<bf16>>") != std::string::npos);
  CHECK(text.find("tile.ptr_store") != std::string::npos);
  requireRoundTrip(f, **module);
}

TEST_CASE("a shape mismatch names the C++ file, line and both shapes", "[builder]") {
  Fixture f;
  Kernel k(*f.ctx, "mismatch");
  Value a = zeros({128}, DType::F32);
  Value b = zeros({64}, DType::F32);
  const int line = __LINE__ + 1;
  Value c = a + b;
  CHECK_FALSE(c.valid());
  // Later uses of the invalid value are silent: one mistake, one diagnostic.
  Value d = c * 2.0;
  CHECK_FALSE(d.valid());
  auto module = k.finish();
  REQUIRE_FALSE(bool(module));
  std::string msg = errorText(module.takeError());
  INFO(msg);
  CHECK(msg.find("BuilderTest.cpp:" + std::to_string(line) + ":") != std::string::npos);
  CHECK(msg.find("tile<128xf32>") != std::string::npos);
  CHECK(msg.find("tile<64xf32>") != std::string::npos);
  CHECK(msg.find("has 1 error(s)") != std::string::npos);
}

TEST_CASE("every mistake is reported, each at its own line", "[builder]") {
  Fixture f;
  Kernel k(*f.ctx, "mistakes");
  Value x = zeros({16, 32}, DType::BF16);
  Value y = zeros({16, 32}, DType::F32);
  const int dtypeLine = __LINE__ + 1;
  Value s = x + y;
  const int axisLine = __LINE__ + 1;
  Value r = sum(y, 2);
  const int mathLine = __LINE__ + 1;
  Value e = exp(arange(0, 16));
  CHECK_FALSE(s.valid());
  CHECK_FALSE(r.valid());
  CHECK_FALSE(e.valid());
  std::string msg = errorText(k.finish().takeError());
  INFO(msg);
  CHECK(msg.find("has 3 error(s)") != std::string::npos);
  CHECK(msg.find(":" + std::to_string(dtypeLine) + ":") != std::string::npos);
  CHECK(msg.find("dtype mismatch in '+': tile<16x32xbf16> vs tile<16x32xf32>") !=
        std::string::npos);
  CHECK(msg.find(":" + std::to_string(axisLine) + ":") != std::string::npos);
  CHECK(msg.find("axis 2 out of range [0, 2)") != std::string::npos);
  CHECK(msg.find(":" + std::to_string(mathLine) + ":") != std::string::npos);
  CHECK(msg.find("exp needs a float tile or scalar, got tile<16xi32>") !=
        std::string::npos);
}

TEST_CASE("verifier errors carry the builder call site", "[builder]") {
  Fixture f;
  Kernel k(*f.ctx, "bad_dot");
  Value a = zeros({16, 32}, DType::BF16);
  Value b = zeros({16, 32}, DType::BF16);
  Value acc = zeros({16, 32}, DType::F32);
  const int line = __LINE__ + 1;
  dot(a, b, acc);
  std::string msg = errorText(k.finish().takeError());
  INFO(msg);
  CHECK(msg.find("BuilderTest.cpp:" + std::to_string(line) + ":") != std::string::npos);
  CHECK(msg.find("inner dimensions differ") != std::string::npos);
}

TEST_CASE("numbers adopt the other operand's dtype and broadcasting follows numpy",
          "[builder]") {
  Fixture f;
  Kernel k(*f.ctx, "broadcast");
  Value p = k.ptrParam("p", DType::F32);
  Value col = arange(0, 8);                // [8]
  Value row = expandDims(arange(0, 4), 1); // [4, 1]
  Value idx = row * 8 + col;               // [4, 8]
  CHECK(idx.shape() == Shape{4, 8});
  CHECK(idx.dtype() == DType::I32);
  Value v = load(p + idx, idx < 30, 0.0f);
  CHECK(v.shape() == Shape{4, 8});
  CHECK(v.dtype() == DType::F32);
  Value h = (v * 0.5).to(DType::BF16);
  CHECK(h.dtype() == DType::BF16);
  Value q = (v / 2.0f).to(DType::F8E4M3);
  store(p + idx, q.to(DType::F32) + h.to(DType::F32), idx < 30);
  auto module = k.finish();
  REQUIRE(bool(module));
  std::string text = print(**module);
  INFO(text);
  CHECK(text.find("rounding rne saturate : tensor<4x8xf32> -> tensor<4x8xf8E4M3FN>") !=
        std::string::npos);
}

TEST_CASE("bit operations: xor, logical shifts and bitcast", "[builder]") {
  Fixture f;
  Kernel k(*f.ctx, "bits");
  Value p = k.ptrParam("p", DType::F32);
  Value v = load(p + arange(0, 8));
  Value bits = bitcast(v, DType::I32);
  Value mixed = shl(shr(bits ^ 0x5bd1e995, 16), 16);
  CHECK(mixed.dtype() == DType::I32);
  store(p + arange(0, 8), bitcast(mixed, DType::F32));
  // Shifts and xor are integer operations; a bitcast keeps the element width.
  (void)(v ^ 1);
  (void)shr(v, 2);
  (void)bitcast(v, DType::I64);
  auto module = k.finish();
  REQUIRE(!module);
  std::string error = errorText(module.takeError());
  INFO(error);
  CHECK_THAT(error, Catch::Contains("'^' needs integer or i1 operands"));
  CHECK_THAT(error, Catch::Contains("'shr' needs integer or i1 operands"));
  CHECK_THAT(error, Catch::Contains("bitcast() needs a tile whose elements are as wide "
                                    "as i64, got tile<8xf32>"));

  Kernel ok(*f.ctx, "bits_ok");
  Value q = ok.ptrParam("q", DType::F32);
  Value w = bitcast(load(q + arange(0, 8)), DType::I32);
  store(q + arange(0, 8), bitcast(shl(shr(w ^ 7, 16), 16), DType::F32));
  auto built = ok.finish();
  REQUIRE(bool(built));
  std::string text = print(**built);
  for (const char *op : {"arith.xori", "arith.shrui", "arith.shli", "arith.bitcast"})
    CHECK(text.find(op) != std::string::npos);
}

TEST_CASE("fma broadcasts numbers and tiles and rejects what it cannot fuse",
          "[builder]") {
  Fixture f;
  {
    Kernel k(*f.ctx, "fma_ok");
    Value p = k.ptrParam("p", DType::F32);
    Value x = load(p + arange(0, 8));         // [8]
    Value y = fma(x, 2.0f, expandDims(x, 1)); // [8] * 2 + [8, 1] -> [8, 8]
    CHECK(y.shape() == Shape{8, 8});
    Value h = fma(x.to(DType::BF16), x.to(DType::BF16), 1.0f);
    CHECK(h.dtype() == DType::BF16);
    store(p + arange(0, 8), sum(y, 1) + h.to(DType::F32));
    auto module = k.finish();
    REQUIRE(bool(module));
    std::string text = print(**module);
    INFO(text);
    CHECK(text.find("math.fma") != std::string::npos);
    CHECK(text.find("tensor<8x8xf32>") != std::string::npos);
  }
  Kernel k(*f.ctx, "fma_bad");
  Value x = zeros({16}, DType::F32);
  const int dtypeLine = __LINE__ + 1;
  Value a = fma(x, zeros({16}, DType::BF16), 1.0f);
  const int intLine = __LINE__ + 1;
  Value b = fma(arange(0, 16), 2, 3);
  const int shapeLine = __LINE__ + 1;
  Value c = fma(x, zeros({4}, DType::F32), x);
  CHECK_FALSE(a.valid());
  CHECK_FALSE(b.valid());
  CHECK_FALSE(c.valid());
  std::string msg = errorText(k.finish().takeError());
  INFO(msg);
  for (int line : {dtypeLine, intLine, shapeLine})
    CHECK(msg.find(":" + std::to_string(line) + ":") != std::string::npos);
  CHECK(msg.find("dtype mismatch in fma(): tile<16xf32> vs tile<16xbf16>") !=
        std::string::npos);
  CHECK(msg.find("fma() needs f32, bf16 or f16 operands, got tile<16xi32>") !=
        std::string::npos);
  CHECK(msg.find("shapes do not broadcast in fma(): tile<16xf32> vs tile<4xf32>") !=
        std::string::npos);
}

TEST_CASE("loops carry values and check their types", "[builder]") {
  Fixture f;
  {
    Kernel k(*f.ctx, "loop");
    Value out = k.ptrParam("out", DType::F32);
    auto result = forRange(0, 4, 1, {zeros({16}, DType::F32)},
                           [&](Value i, std::vector<Value> acc) -> std::vector<Value> {
                             return {acc[0] + i.to(DType::F32)};
                           });
    REQUIRE(result.size() == 1);
    store(out + arange(0, 16), result[0]);
    REQUIRE(bool(k.finish()));
  }
  {
    Kernel k(*f.ctx, "bad_loop");
    forRange(0, 4, 1, {zeros({16}, DType::F32)},
             [&](Value, std::vector<Value>) -> std::vector<Value> {
               return {zeros({8}, DType::F32)};
             });
    std::string msg = errorText(k.finish().takeError());
    CHECK(msg.find("loop-carried value 0 changes type: tile<16xf32> -> tile<8xf32>") !=
          std::string::npos);
  }
}

TEST_CASE("ifElse runs only the taken arm and checks the arms' types", "[builder]") {
  Fixture f;
  {
    // Even programs take the then arm (the program id as a tile), odd ones
    // the else arm (its negation); the store after the branch sees which.
    Kernel k(*f.ctx, "branch");
    Value out = k.ptrParam("out", DType::F32);
    Value pid = programId(0);
    std::vector<Value> picked = ifElse(
        pid % 2 == 0,
        [&] {
          return std::vector<Value>{full({16}, 1.0, DType::F32) * pid.to(DType::F32)};
        },
        [&] {
          return std::vector<Value>{full({16}, -1.0, DType::F32) * pid.to(DType::F32)};
        });
    REQUIRE(picked.size() == 1);
    store(out + pid * 16 + arange(0, 16), picked[0]);
    auto module = k.finish();
    REQUIRE(bool(module));
    requireRoundTrip(f, **module);
    auto kernel = *(*module)->getOps<tile::KernelOp>().begin();
    std::vector<float> got(4 * 16, NAN);
    llvm::Error err = interp::run(kernel, {4, 1, 1}, {interp::Arg::buffer(got)});
    INFO(llvm::toString(std::move(err)));
    for (int p = 0; p < 4; ++p)
      for (int i = 0; i < 16; ++i)
        CHECK(got[p * 16 + i] == float(p % 2 == 0 ? p : -p));
  }
  {
    Kernel k(*f.ctx, "bad_branch");
    ifElse(
        programId(0) == 0, [&] { return std::vector<Value>{zeros({16}, DType::F32)}; },
        [&] { return std::vector<Value>{zeros({8}, DType::F32)}; });
    std::string msg = errorText(k.finish().takeError());
    CHECK(
        msg.find("ifElse result 0 differs between arms: tile<16xf32> and tile<8xf32>") !=
        std::string::npos);
  }
}

TEST_CASE("specialization rejects unknown constants", "[builder]") {
  KernelDef def{"k", "", {{"block", 128, ""}}, [](Kernel &, const Specialization &) {}};
  CHECK(cantFail(def.specialize({{"block", 64}})).get("block") == 64);
  CHECK(cantFail(def.specialize({})).values() == ConstantValues{{"block", 128}});
  CHECK(errorText(def.specialize({{"blok", 64}}).takeError()) ==
        "kernel 'k' has no constant 'blok' (it has: block)");
}

TEST_CASE("the text form of a constant setting is read by one parser", "[builder]") {
  ConstantSetting plain = cantFail(parseConstantSetting("block=64"));
  CHECK(plain.kernel.empty());
  CHECK(plain.name == "block");
  CHECK(plain.value == 64);
  CHECK(formatConstantSetting(plain) == "block=64");
  CHECK(cantFail(parseConstantSetting(" block = -8 ")).value == -8);
  ConstantSetting named = cantFail(parseConstantSetting("ssm_update.block_p=16", true));
  CHECK(named.kernel == "ssm_update");
  CHECK(named.name == "block_p");
  CHECK(named.value == 16);
  CHECK(formatConstantSetting(named) == "ssm_update.block_p=16");
  CHECK(errorText(parseConstantSetting("block=x").takeError()) ==
        "constant 'block' needs an integer, got 'x'");
  CHECK(errorText(parseConstantSetting("block").takeError()) ==
        "expected name=value, got 'block'");
  CHECK(errorText(parseConstantSetting("block_p=16", true).takeError()) ==
        "expected KERNEL.CONSTANT=VALUE");
  CHECK(errorText(parseConstantSetting("ssm_update.block_p", true).takeError()) ==
        "expected KERNEL.CONSTANT=VALUE");
  CHECK(errorText(parseConstantSetting("ssm_update.block_p=x", true).takeError()) ==
        "constant 'block_p' needs an integer, got 'x'");
  CHECK(formatConstants({{"b", 2}, {"a", 1}}) == "a=1,b=2");
}

TEST_CASE("the registry refuses duplicate names", "[builder]") {
  KernelRegistry registry;
  REQUIRE(errorText(models::registerModelKernels(registry)).empty());
  CHECK(registry.find("gated_rmsnorm") != nullptr);
  // 4 decode kernels, conv_update, quantize_e4m3, split_k_sum, conv_prefill,
  // the four SSD kernels, check_varlen and varlen_pieces (the model kernels)
  CHECK(registry.all().size() == 14);
  CHECK(errorText(models::registerModelKernels(registry)) ==
        "kernel 'gated_rmsnorm' is registered twice");
}

TEST_CASE("an invalid config is a diagnostic at the caller's line, not an abort",
          "[builder]") {
  Fixture f;
  Kernel k(*f.ctx, "bad_config");
  Value out = k.ptrParam("out", DType::F32);
  k.setConfig({{128}, /*warps=*/3});
  store(out + arange(0, 128), zeros({128}, DType::F32));
  std::string msg = errorText(k.finish().takeError());
  INFO(msg);
  CHECK(msg.find("BuilderTest.cpp:") != std::string::npos);
  CHECK(msg.find("warps") != std::string::npos);
}

TEST_CASE("dependent launch: weights before the wait, everything else after it",
          "[builder]") {
  Fixture f;
  {
    // A decode GEMV's start: prefetch and load the invariant weight, wait,
    // signal, then read the activation. Compiles to PTX that waits.
    Kernel k(*f.ctx, "dependent_gemv");
    Value w = k.ptrParam("w", DType::BF16);
    Value x = k.ptrParam("x", DType::BF16);
    Value out = k.ptrParam("out", DType::F32);
    k.markInvariant(w);
    k.setConfig({{128}, 4});
    Value offs = arange(0, 128);
    prefetchL2(w, 256);
    Value wt = load(w + offs).to(DType::F32);
    waitForPredecessors();
    launchDependents();
    store(out + offs, wt * load(x + offs).to(DType::F32));
    auto module = k.finish();
    if (!module)
      FAIL(errorText(module.takeError()));
    std::string text = print(**module);
    CHECK(text.find("tile.invariant") != std::string::npos);
    requireRoundTrip(f, **module);
    auto arch = Arch::parse("sm_90a");
    REQUIRE(bool(arch));
    auto compiled = compileToPTX(**module, *arch);
    if (!compiled)
      FAIL(errorText(compiled.takeError()));
    CHECK(compiled->waitsForPredecessors);
    CHECK(compiled->ptx.find("griddepcontrol.wait") != std::string::npos);
    CHECK(compiled->ptx.find("griddepcontrol.launch_dependents") != std::string::npos);
    CHECK(compiled->ptx.find("cp.async.bulk.prefetch.L2") != std::string::npos);
  }
  {
    // Reading the activation before the wait is refused at the read's line.
    Kernel k(*f.ctx, "early_read");
    Value w = k.ptrParam("w", DType::BF16);
    Value x = k.ptrParam("x", DType::BF16);
    k.markInvariant(w);
    Value offs = arange(0, 128);
    const int line = __LINE__ + 1;
    Value xt = load(x + offs);
    waitForPredecessors();
    store(w + offs, xt);
    std::string msg = errorText(k.finish().takeError());
    INFO(msg);
    CHECK(msg.find("BuilderTest.cpp:" + std::to_string(line) + ":") != std::string::npos);
    CHECK(msg.find("through parameter 'x', which is not marked tile.invariant") !=
          std::string::npos);
  }
  {
    Kernel k(*f.ctx, "bad_prefetch");
    Value w = k.ptrParam("w", DType::BF16);
    k.markInvariant(arange(0, 4));
    prefetchL2(w + arange(0, 4), 16);
    prefetchL2(w, constant(16, DType::I64));
    std::string msg = errorText(k.finish().takeError());
    INFO(msg);
    CHECK(msg.find("markInvariant needs a pointer parameter of this kernel") !=
          std::string::npos);
    CHECK(msg.find("prefetchL2 needs a scalar pointer") != std::string::npos);
    CHECK(msg.find("prefetchL2 needs an i32 scalar byte count") != std::string::npos);
  }
}
