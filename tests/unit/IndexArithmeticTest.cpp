// The builder's index arithmetic (docs/hardening.md, issue #23): sizes,
// offsets, strides and byte offsets are exact or refused with the value that
// does not fit, never truncated to 32 bits or wrapped past 64; the rules
// between constants are overflow-checked.
#include "tilejit/Builder/KernelRegistry.h"
#include "tilejit/Pipeline/Pipeline.h"

#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/raw_ostream.h"

#include <catch2/catch.hpp>

using namespace tilejit;

namespace {

/// The module `body` builds, or its error text (`ok` says which).
std::string build(const std::function<void(Kernel &)> &body, bool &ok) {
  mlir::DialectRegistry dialects;
  registerCompilerDialects(dialects);
  mlir::MLIRContext ctx(dialects);
  Kernel k(ctx, "k");
  body(k);
  auto module = k.finish();
  ok = bool(module);
  if (!module)
    return llvm::toString(module.takeError());
  std::string text;
  llvm::raw_string_ostream os(text);
  (*module)->print(os);
  return text;
}

std::string buildError(const std::function<void(Kernel &)> &body) {
  bool ok;
  std::string text = build(body, ok);
  REQUIRE(!ok);
  return text;
}

} // namespace

TEST_CASE("view sizes past i32 and extents past 2^63 bytes are refused",
          "[builder][badinput]") {
  // The lowering compared indices with the size truncated to i32: 2^32 + 16
  // rows bounded the view at 16.
  CHECK_THAT(buildError([](Kernel &k) {
               Value p = k.ptrParam("p", DType::F32);
               (void)makeView(p, {int64_t(4294967312)}, {1});
             }),
             Catch::Contains("view size 4294967312 does not fit i32 (at most "
                             "2147483647)"));
  // (4 - 1) * 2^61 elements of 4 bytes wraps the i64 address arithmetic.
  CHECK_THAT(buildError([](Kernel &k) {
               Value p = k.ptrParam("p", DType::F32);
               (void)makeView(p, {8, 4}, {1, int64_t(1) << 61});
             }),
             Catch::Contains("view dimension 1 (size 4, stride 2305843009213693952) "
                             "reaches past 2^63 bytes from the base"));
}

TEST_CASE("an i64 Value is never truncated to an i32 offset, size or loop bound",
          "[builder][badinput]") {
  CHECK_THAT(buildError([](Kernel &k) {
               Value p = k.ptrParam("p", DType::F32);
               Value n = k.scalarParam("n", DType::I64);
               (void)load(makeView(p, {64}, {1}), {n}, {16});
             }),
             Catch::Contains("an offset is i64, wider than the i32 it takes (convert it "
                             "with .to(DType::I32) where it is known to fit)"));
  CHECK_THAT(buildError([](Kernel &k) {
               Value p = k.ptrParam("p", DType::F32);
               Value n = k.scalarParam("n", DType::I64);
               (void)makeView(p, {Dim(n)}, {1});
             }),
             Catch::Contains("a view size must be an integer or an integer scalar Value "
                             "of at most 32 bits (view sizes are i32)"));
  CHECK_THAT(buildError([](Kernel &k) {
               Value n = k.scalarParam("n", DType::I64);
               forRange(0, n, 1, {},
                        [](Value, std::vector<Value>) { return std::vector<Value>{}; });
             }),
             Catch::Contains("a loop bound or step is i64, wider than the i32 it takes"));
  // A zero step looped forever.
  CHECK_THAT(buildError([](Kernel &) {
               forRange(0, 16, 0, {},
                        [](Value, std::vector<Value>) { return std::vector<Value>{}; });
             }),
             Catch::Contains("forRange needs a positive step, got 0"));
  // Narrowing said where it is known to fit: builds.
  bool ok;
  build(
      [](Kernel &k) {
        Value p = k.ptrParam("p", DType::F32);
        Value n = k.scalarParam("n", DType::I64);
        View v = makeView(p, {Dim(n.to(DType::I32))}, {1});
        store(v, {n.to(DType::I32)}, zeros({16}, DType::F32));
      },
      ok);
  CHECK(ok);
}

TEST_CASE("a C++ pointer offset past i32 is an exact i64 offset", "[builder]") {
  bool ok;
  std::string ir = build(
      [](Kernel &k) {
        Value p = k.ptrParam("p", DType::BF16);
        store(p + (int64_t(1) << 33), constant(1.0, DType::BF16));
      },
      ok);
  INFO(ir);
  REQUIRE(ok);
  CHECK_THAT(ir, Catch::Contains("arith.constant 8589934592 : i64"));
  CHECK_THAT(ir, Catch::Contains("tile.addptr"));
}

TEST_CASE("rules between constants are overflow-checked", "[builder][badinput]") {
  using R = ConstantRange;
  KernelDef def{"k",
                "",
                {{"a", 1, "", {}, R::between(1, INT64_MAX)},
                 {"b", 1, "", {}, R::between(1, INT64_MAX)},
                 {"d", 1, "", {}, R::between(-1, 4)},
                 {"m", 8, "", {}, R::between(INT64_MIN, INT64_MAX)}},
                [](Kernel &, const Specialization &) {},
                {productAtMost({"a", "b"}, INT32_MAX, "i32 offsets"), divides("d", "m")}};
  auto refusal = [&](const ConstantValues &overrides) {
    auto spec = def.specialize(overrides);
    REQUIRE(!spec);
    return llvm::toString(spec.takeError());
  };
  // 2^40 * 2^40 wrapped to 0, under the limit.
  CHECK(refusal({{"a", 1099511627776}, {"b", 1099511627776}}) ==
        "kernel 'k': a = 1099511627776, b = 1099511627776 breaks the rule a * b <= "
        "2147483647 (i32 offsets)");
  // INT64_MIN % -1 overflows (SIGFPE on x86); a divisor must be positive.
  CHECK(refusal({{"d", -1}, {"m", INT64_MIN}}) ==
        "kernel 'k': d = -1, m = -9223372036854775808 breaks the rule d divides m");
  CHECK(bool(def.specialize({{"a", 65536}, {"b", 32767}, {"d", 4}, {"m", -8}})));
}
