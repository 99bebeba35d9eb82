// Kernel constants are checked before a kernel builds (KernelRegistry.h): every
// registered constant declares its range, a value outside it or a broken rule
// is an error naming the kernel, the constant, its value and the rule, and the
// builder's own integer arithmetic never truncates a C++ number silently.
#include "KernelRefusal.h"
#include "tilejit/Builder/KernelRegistry.h"
#include "tilejit/Pipeline/Pipeline.h"
#include "tilejit/models/examples/ExampleKernels.h"
#include "tilejit/models/mamba2/Kernels.h"

#include "mlir/IR/MLIRContext.h"

#include <catch2/catch.hpp>

using namespace tilejit;

namespace {

const KernelRegistry &kernels() { return testing::registeredKernels(); }
using testing::refusal;

std::string buildError(const std::function<void(Kernel &)> &body) {
  mlir::DialectRegistry dialects;
  registerCompilerDialects(dialects);
  mlir::MLIRContext ctx(dialects);
  Kernel k(ctx, "k");
  body(k);
  auto module = k.finish();
  REQUIRE(!module);
  return llvm::toString(module.takeError());
}

} // namespace

TEST_CASE("every registered constant declares a range its default and candidates lie in",
          "[builder][badinput]") {
  for (const KernelDef *def : kernels().all())
    for (const KernelConstant &c : def->constants) {
      INFO(def->name << "." << c.name);
      CHECK(c.range.declared());
      CHECK(c.range.contains(c.defaultValue));
    }
  KernelRegistry registry;
  CHECK(llvm::toString(registry.add({"k", "", {{"block", 128, ""}}, nullptr})) ==
        "kernel 'k': constant 'block' declares no range");
  CHECK(
      llvm::toString(
          registry.add({"k",
                        "",
                        {{"block", 128, "", {100}, ConstantRange::powersOfTwo(1, 1024)}},
                        nullptr})) ==
      "kernel 'k': candidate 100 of constant 'block' is not a power of two in [1, 1024]");
  CHECK(
      llvm::toString(registry.add({"k",
                                   "",
                                   {{"a", 3, "", {}, ConstantRange::between(1, 8)},
                                    {"b", 8, "", {}, ConstantRange::between(1, 8)}},
                                   nullptr,
                                   {divides("a", "b")}})) ==
      "kernel 'k': its defaults are invalid: kernel 'k': a = 3, b = 8 breaks the rule a "
      "divides b");
}

TEST_CASE("a constant outside its range is refused with the constant, value and rule",
          "[builder][badinput]") {
  // Each was a crash, a hang or a wrong kernel at 13c8ee2 (issue #23).
  CHECK(refusal("gemm_bf16", {{"k", -64}}) ==
        "kernel 'gemm_bf16': constant 'k' is -64; it must be in [1, 1048576]");
  CHECK(refusal("in_proj_conv", {{"loads_in_flight", 0}}) ==
        "kernel 'in_proj_conv': constant 'loads_in_flight' is 0; it must be in [1, 64]");
  CHECK(refusal("ssm_update", {{"block_p", 0}}) ==
        "kernel 'ssm_update': constant 'block_p' is 0; it must be a power of two in [1, "
        "4096]");
  CHECK(
      refusal("vector_add", {{"block", 4294967312}}) ==
      "kernel 'vector_add': constant 'block' is 4294967312; it must be a power of two in "
      "[1, 65536]");
  CHECK(refusal("in_proj_conv", {{"fp8", 2}}) ==
        "kernel 'in_proj_conv': constant 'fp8' is 2; it must be in [0, 1]");
  CHECK(refusal("conv_prefill", {{"block_t", 48}}) ==
        "kernel 'conv_prefill': constant 'block_t' is 48; it must be a power of two in "
        "[4, 1024]");
}

TEST_CASE("a broken relation between constants is refused naming the rule",
          "[builder][badinput]") {
  // A last group narrower than group_size would be normalized wrongly.
  CHECK(
      refusal("gated_rmsnorm", {{"width", 1000}}) ==
      "kernel 'gated_rmsnorm': group_size = 512, width = 1000 breaks the rule group_size "
      "divides width");
  CHECK(refusal("gated_rmsnorm", {{"z_stride", 100}}) ==
        "kernel 'gated_rmsnorm': z_stride = 100, width = 4096 breaks the rule z_stride "
        "is 0 "
        "or at least width");
  // g = h / (heads / groups) needs whole groups of heads.
  CHECK(
      refusal("ssm_update", {{"groups", 3}}) ==
      "kernel 'ssm_update': groups = 3, heads = 64 breaks the rule groups divides heads");
  CHECK(
      refusal("ssd_prefill",
              {{"heads", 1024}, {"head_dim", 1024}, {"state", 4096}, {"groups", 8}}) ==
      "kernel 'ssd_prefill': heads = 1024, head_dim = 1024, state = 4096 breaks the rule "
      "heads * head_dim * state <= 2147483647 (i32 page offsets)");
  CHECK(refusal("ssd_prefill", {{"dt_col", 10300}}) ==
        "kernel 'ssd_prefill': dt_col = 10300, heads = 64, dt_stride = 10304 breaks the "
        "rule "
        "dt_col + heads <= dt_stride");
  const std::string blockMRule =
      "breaks the rule block_m is 1 (GEMV), at most 16 (chunked GEMV), at least 8 "
      "(skinny) or at least 16 (tensor cores)";
  CHECK(refusal("in_proj_conv", {{"block_m", 8}}) ==
        "kernel 'in_proj_conv': block_m = 8, chunked = 0, skinny = 0 " + blockMRule);
  CHECK(refusal("out_proj", {{"block_m", 32}, {"chunked", 1}}) ==
        "kernel 'out_proj': block_m = 32, chunked = 1, skinny = 0 " + blockMRule);
  CHECK(refusal("out_proj", {{"block_m", 4}, {"skinny", 1}}) ==
        "kernel 'out_proj': block_m = 4, chunked = 0, skinny = 1 " + blockMRule);
  CHECK(refusal("in_proj_conv", {{"quantized_input", 1}}) ==
        "kernel 'in_proj_conv': quantized_input = 1, fp8 = 1, skinny = 0 breaks the rule "
        "quantized_input = 1 takes fp8 = 1 and skinny = 1");
  CHECK(
      refusal("in_proj_conv", {{"chunked", 1}, {"hidden", 200}}) ==
      "kernel 'in_proj_conv': chunked = 1, direct = 0, hidden = 200, block_k = 128, fp8 "
      "= 1 breaks the rule with chunked=1: direct is 0, and rows of hidden elements and "
      "block_k are whole 16-byte chunks");
  CHECK(refusal("in_proj_conv", {{"hidden", 1048576}, {"block_k", 64}}) ==
        "kernel 'in_proj_conv': hidden = 1048576, block_k = 64 breaks the rule hidden / "
        "block_k <= 256 (GEMV K steps, unrolled)");
  CHECK(refusal("conv_prefill", {{"rows_per_step", 3}}) ==
        "kernel 'conv_prefill': rows_per_step = 3, block_t = 64 breaks the rule "
        "rows_per_step "
        "divides block_t");
  // The streaming forms (bench/prefill/stream_gpu.py): a piece of a chunk holds
  // whole steps, warps lay out as powers of two, a tile of rows stays in
  // registers, and the flat quant's stream is of 16-byte vectors.
  CHECK(refusal("conv_prefill", {{"splits", 32}}) ==
        "kernel 'conv_prefill': rows_per_step = 8, block_t = 64, splits = 32 breaks the "
        "rule rows_per_step divides block_t / splits");
  CHECK(refusal("gated_rmsnorm", {{"warps", 3}}) ==
        "kernel 'gated_rmsnorm': warps = 3 breaks the rule warps is 0 or a power of two");
  CHECK(refusal("gated_rmsnorm", {{"rows_per_program", 64}}) ==
        "kernel 'gated_rmsnorm': rows_per_program = 64, group_size = 512 breaks the rule "
        "rows_per_program * group_size <= 16384 (a program's tile of rows stays in "
        "registers)");
  CHECK(
      refusal("quantize_e4m3", {{"flat", 1}, {"width", 12}}) ==
      "kernel 'quantize_e4m3': flat = 1, width = 12, block = 1024 breaks the rule flat = "
      "0, or width % 8 == 0 and block >= 8 (16-byte vectors of the stream)");
}

TEST_CASE("build() checks constants too, so a tuner's candidate cannot skip them",
          "[builder][badinput]") {
  const KernelDef *def = kernels().find("read_bytes");
  REQUIRE(def);
  Specialization spec = llvm::cantFail(def->specialize({}));
  spec.set("steps", 0);
  mlir::DialectRegistry dialects;
  registerCompilerDialects(dialects);
  mlir::MLIRContext ctx(dialects);
  auto module = def->build(ctx, spec);
  REQUIRE(!module);
  CHECK(llvm::toString(module.takeError()) ==
        "kernel 'read_bytes': constant 'steps' is 0; it must be in [1, 64]");
}

TEST_CASE("the builder refuses numbers and shapes it cannot represent exactly",
          "[builder][badinput]") {
  // 2^32 + 16 as an i32 operand was truncated to 16.
  CHECK_THAT(buildError([](Kernel &) {
               Value start = programId(0) * int64_t(4294967312);
               (void)start;
             }),
             Catch::Contains("error: the number 4294967312 does not fit i32, the type it "
                             "takes here"));
  CHECK_THAT(buildError([](Kernel &) { (void)arange(0, int64_t(1) << 32); }),
             Catch::Contains("arange bounds must fit i32, got 0 to 4294967296"));
  CHECK_THAT(buildError([](Kernel &) { (void)zeros({128, -4}, DType::F32); }),
             Catch::Contains("full: tile dimensions must be positive, got [128x-4]"));
  CHECK_THAT(
      buildError([](Kernel &) { (void)zeros({1 << 16, 1 << 16}, DType::F32); }),
      Catch::Contains("full: a tile of shape [65536x65536] holds more than 1048576 "
                      "elements"));
  // A negative view size asserted inside MLIR's type uniquer.
  CHECK_THAT(buildError([](Kernel &k) {
               Value p = k.ptrParam("p", DType::F32);
               (void)makeView(p, {int64_t(-64)}, {1});
             }),
             Catch::Contains("view size must be non-negative, got -64"));
  CHECK_THAT(buildError([](Kernel &) { (void)constant(2.5, DType::I32); }),
             Catch::Contains("the number 2.500000 does not fit i32 (not an integer)"));
}
