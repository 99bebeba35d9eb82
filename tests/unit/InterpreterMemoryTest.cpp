// The interpreter's memory ops (views masked by bounds, pointer loads and
// stores under masks), its errors (out-of-bounds accesses, argument checks,
// unsupported ops) and the speed of an e4m3 GEMV at NemotronH's in_proj shape.
#include "InterpreterTestUtil.h"

#include "tilejit/support/FloatFormats.h"
#include "tilejit/support/Timing.h"

#include <cmath>

using namespace tilejit;
using namespace tilejit::testing;
using Catch::Matchers::Contains;
using interp::Arg;

namespace {

/// "name":line: of the first line of `text` containing `needle` (1-based),
/// as MLIR prints locations.
std::string locationOf(const std::string &text, const std::string &needle,
                       const std::string &fileName) {
  size_t at = text.find(needle);
  REQUIRE(at != std::string::npos);
  int line = 1 + int(std::count(text.begin(), text.begin() + at, '\n'));
  return "\"" + fileName + "\":" + std::to_string(line) + ":";
}

} // namespace

TEST_CASE("interpreter: view loads and stores mask partial tiles", "[interp]") {
  const char *text = R"(
tile.kernel @tiles(%in: !tile.ptr<f32>, %out: !tile.ptr<f32>, %dump: !tile.ptr<f32>, %m: i32, %n: i32, %ld: i64) {
  %p0 = tile.program_id 0 : i32
  %p1 = tile.program_id 1 : i32
  %c16 = arith.constant 16 : i32
  %col = arith.muli %p0, %c16 : i32
  %row = arith.muli %p1, %c16 : i32
  %vin = tile.make_view %in sizes(%m, %n) strides(%ld) : !tile.ptr<f32> -> !tile.view<?x?xf32, strides = [?, 1]>
  %vout = tile.make_view %out sizes(%m, %n) strides(%ld) : !tile.ptr<f32> -> !tile.view<?x?xf32, strides = [?, 1]>
  %t = tile.load %vin[%row, %col] padding(7.0 : f32) : !tile.view<?x?xf32, strides = [?, 1]> -> tensor<16x16xf32>
  %two = arith.constant dense<2.0> : tensor<16x16xf32>
  %one = arith.constant dense<1.0> : tensor<16x16xf32>
  %u = arith.mulf %t, %two : tensor<16x16xf32>
  %w = arith.addf %u, %one : tensor<16x16xf32>
  tile.store %w, %vout[%row, %col] : tensor<16x16xf32>, !tile.view<?x?xf32, strides = [?, 1]>
  %vd = tile.make_view %dump : !tile.ptr<f32> -> !tile.view<48x64xf32, strides = [64, 1]>
  tile.store %t, %vd[%row, %col] : tensor<16x16xf32>, !tile.view<48x64xf32, strides = [64, 1]>
  tile.return
}
)";
  ParsedKernel k = parseKernel(text);
  const int m = 37, n = 53, ld = 60;
  std::mt19937 rng(21);
  std::vector<float> in = randomFloats(rng, m * ld), out(m * ld, -777.0f),
                     dump(48 * 64, -1.0f);
  runOrFail(k, {4, 3, 1},
            {Arg::buffer(in), Arg::buffer(out), Arg::buffer(dump), Arg::intScalar(m),
             Arg::intScalar(n), Arg::intScalar(ld)});
  int checked = 0;
  for (int r = 0; r < m; ++r)
    for (int c = 0; c < ld; ++c, ++checked) {
      INFO("row " << r << ", column " << c);
      CHECK(out[r * ld + c] == (c < n ? 2 * in[r * ld + c] + 1 : -777.0f));
    }
  for (int r = 0; r < 48; ++r)
    for (int c = 0; c < 64; ++c, ++checked) {
      INFO("tile row " << r << ", column " << c);
      CHECK(dump[r * 64 + c] == (r < m && c < n ? in[r * ld + c] : 7.0f));
    }
  CHECK(checked == m * ld + 48 * 64);
}

TEST_CASE("interpreter: negative view offsets, integer padding, narrow types",
          "[interp]") {
  const char *text = R"(
tile.kernel @edges(%b: !tile.ptr<bf16>, %i: !tile.ptr<i32>, %q: !tile.ptr<f8E4M3FN>) {
  %cm3 = arith.constant -3 : i32
  %c5 = arith.constant 5 : i32
  %vb = tile.make_view %b sizes(%c5) : !tile.ptr<bf16> -> !tile.view<?xbf16, strides = [1]>
  %tb = tile.load %vb[%cm3] padding(1.5 : bf16) : !tile.view<?xbf16, strides = [1]> -> tensor<8xbf16>
  %tr = tile.transpose %tb [0] : tensor<8xbf16> -> tensor<8xbf16>
  %c2 = arith.constant 2 : i32
  tile.store %tr, %vb[%c2] : tensor<8xbf16>, !tile.view<?xbf16, strides = [1]>
  %vi = tile.make_view %i : !tile.ptr<i32> -> !tile.view<2x3xi32, strides = [3, 1]>
  %c0 = arith.constant 0 : i32
  %ti = tile.load %vi[%cm3, %c0] padding(-9 : i32) : !tile.view<2x3xi32, strides = [3, 1]> -> tensor<4x4xi32>
  %vo = tile.make_view %i : !tile.ptr<i32> -> !tile.view<4x4xi32, strides = [4, 1]>
  %c1 = arith.constant 1 : i32
  tile.store %ti, %vo[%c1, %c0] : tensor<4x4xi32>, !tile.view<4x4xi32, strides = [4, 1]>
  %vq = tile.make_view %q : !tile.ptr<f8E4M3FN> -> !tile.view<4xf8E4M3FN, strides = [1]>
  %tq = tile.load %vq[%c0] : !tile.view<4xf8E4M3FN, strides = [1]> -> tensor<4xf8E4M3FN>
  %fq = tile.convert %tq : tensor<4xf8E4M3FN> -> tensor<4xf32>
  %big = arith.constant dense<100.0> : tensor<4xf32>
  %sq = arith.mulf %fq, %big : tensor<4xf32>
  %rq = tile.convert %sq rounding rne saturate : tensor<4xf32> -> tensor<4xf8E4M3FN>
  tile.store %rq, %vq[%c0] : tensor<4xf8E4M3FN>, !tile.view<4xf8E4M3FN, strides = [1]>
  tile.return
}
)";
  ParsedKernel k = parseKernel(text);
  std::vector<uint16_t> b = {f32ToBF16(1), f32ToBF16(2), f32ToBF16(3), f32ToBF16(4),
                             f32ToBF16(5)};
  std::vector<int32_t> i = {1, 2, 3, 4, 5, 6, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
  std::vector<uint8_t> q = {f32ToE4M3(5.0f), f32ToE4M3(-2.0f), f32ToE4M3(0.25f), 0x7F};
  runOrFail(k, {1, 1, 1}, {Arg::buffer(b), Arg::buffer(i), Arg::buffer(q)});
  // Loaded [1.5, 1.5, 1.5, 1, 2, 3, 4, 5]; stored at 2: only indices 2..4 exist.
  std::vector<float> wantB = {1, 2, 1.5f, 1.5f, 1.5f};
  for (int e = 0; e < 5; ++e)
    CHECK(bf16ToF32(b[e]) == wantB[e]);
  // Rows -3..0 of the 2x3 view: only row 0 (tile row 3) is inside; columns
  // 0..2 inside, column 3 padded. Stored as rows 1..4 of a 4x4 view (rows
  // 1..3 exist), so the tile's row 3 is dropped and rows 1..3 get padding.
  // The 4x4 view's row 0 overlaps the 2x3 input and keeps its values.
  std::vector<int32_t> wantI = {1,  2,  3,  4,  -9, -9, -9, -9,
                                -9, -9, -9, -9, -9, -9, -9, -9};
  CHECK(i == wantI);
  CHECK(q[0] == 0x7E); // 500 saturates to 448
  CHECK(q[1] == 0xF4); // -200: tie of -192 (even) and -208
  CHECK(e4m3ToF32(q[1]) == -192.0f);
  CHECK(q[2] == f32ToE4M3(25.0f));
  CHECK(q[3] == 0x7F); // NaN * 100 stays NaN
}

TEST_CASE("interpreter: pointer loads and stores under masks", "[interp]") {
  const char *text = R"(
tile.kernel @ptrs(%p: !tile.ptr<i32>, %q: !tile.ptr<f32>, %flag: i1) {
  %c2 = arith.constant 2 : i32
  %p2 = tile.addptr %p, %c2 : !tile.ptr<i32>, i32
  %v = tile.ptr_load %p2 : !tile.ptr<i32>
  %other = arith.constant -5 : i32
  %w = tile.ptr_load %p mask %flag other %other : !tile.ptr<i32>
  %s = arith.addi %v, %w : i32
  tile.ptr_store %p, %s : !tile.ptr<i32>
  %r = tile.arange 0 to 8 : tensor<8xi32>
  %c3 = arith.constant dense<3> : tensor<8xi32>
  %in = arith.cmpi slt, %r, %c3 : tensor<8xi32>
  %far = arith.constant dense<1000000000> : tensor<8xi32>
  %offs = arith.select %in, %r, %far : tensor<8xi1>, tensor<8xi32>
  %qs = tile.splat %q : tensor<8x!tile.ptr<f32>>
  %qp = tile.addptr %qs, %offs : tensor<8x!tile.ptr<f32>>, tensor<8xi32>
  %fill = arith.constant dense<-1.0> : tensor<8xf32>
  %x = tile.ptr_load %qp mask %in other %fill : tensor<8x!tile.ptr<f32>>
  %ten = arith.constant dense<10.0> : tensor<8xf32>
  %y = arith.addf %x, %ten : tensor<8xf32>
  %c4 = arith.constant dense<4> : tensor<8xi32>
  %shifted = tile.addptr %qs, %c4 : tensor<8x!tile.ptr<f32>>, tensor<8xi32>
  %dst = tile.addptr %shifted, %r : tensor<8x!tile.ptr<f32>>, tensor<8xi32>
  %c6 = arith.constant dense<6> : tensor<8xi32>
  %fits = arith.cmpi slt, %r, %c6 : tensor<8xi32>
  tile.ptr_store %dst, %y mask %fits : tensor<8x!tile.ptr<f32>>
  tile.return
}
)";
  ParsedKernel k = parseKernel(text);
  for (bool flag : {false, true}) {
    INFO("flag " << flag);
    std::vector<int32_t> p = {11, 22, 33};
    std::vector<float> q = {1, 2, 3, 4, -7, -7, -7, -7, -7, -7};
    runOrFail(k, {1, 1, 1}, {Arg::buffer(p), Arg::buffer(q), Arg::intScalar(flag)});
    CHECK(p[0] == 33 + (flag ? 11 : -5));
    // Lanes 0..2 load q[0..2]; lanes 3..7 (far out of bounds) are masked and
    // take -1. Lanes 0..5 store to q[4..9].
    std::vector<float> want = {1, 2, 3, 4, 11, 12, 13, 9, 9, 9};
    CHECK(q == want);
  }
}

TEST_CASE("interpreter: an unmasked out-of-bounds access is an error with its location",
          "[interp]") {
  const std::string text = R"(
tile.kernel @oob(%p: !tile.ptr<f32>, %out: !tile.ptr<f32>) {
  %r = tile.arange 0 to 16 : tensor<16xi32>
  %ps = tile.splat %p : tensor<16x!tile.ptr<f32>>
  %pp = tile.addptr %ps, %r : tensor<16x!tile.ptr<f32>>, tensor<16xi32>
  %x = tile.ptr_load %pp : tensor<16x!tile.ptr<f32>>
  %ov = tile.make_view %out : !tile.ptr<f32> -> !tile.view<16xf32, strides = [1]>
  %c0 = arith.constant 0 : i32
  tile.store %x, %ov[%c0] : tensor<16xf32>, !tile.view<16xf32, strides = [1]>
  tile.return
}
)";
  ParsedKernel k = parseKernel(text, "oob.mlir");
  std::vector<float> in(12, 1.0f), out(16, 0.0f), big(16, 1.0f);
  std::string error = runKernel(k, {1, 1, 1}, {Arg::buffer(in), Arg::buffer(out)});
  CHECK_THAT(error, Contains("'tile.ptr_load' at loc(" +
                             locationOf(text, "tile.ptr_load", "oob.mlir")));
  CHECK_THAT(error, Contains("element 12 reads 4 byte(s) at address 0x"));
  CHECK_THAT(error, Contains("nearest: argument 0 of 48 bytes, at byte offset 48"));
  CHECK_THAT(error, Contains("program (0, 0, 0)"));

  // The view store of 16 elements into a 10-element buffer names the store.
  std::vector<float> small(10, 0.0f);
  error = runKernel(k, {1, 1, 1}, {Arg::buffer(big), Arg::buffer(small)});
  CHECK_THAT(error, Contains("'tile.store' at loc(" +
                             locationOf(text, "tile.store", "oob.mlir")));
  CHECK_THAT(error, Contains("writes 4 byte(s)"));

  // A read-only buffer may be read but not written.
  error = runKernel(k, {1, 1, 1}, {Arg::buffer(big), Arg::readOnlyBuffer(out)});
  CHECK_THAT(error, Contains("inside read-only argument 1"));
  CHECK(runKernel(k, {1, 1, 1}, {Arg::readOnlyBuffer(big), Arg::buffer(out)}).empty());
}

TEST_CASE("interpreter: argument and grid checks", "[interp]") {
  const char *text = R"(
tile.kernel @args(%p: !tile.ptr<f32>, %n: i32, %s: f32) {
  tile.return
}
)";
  ParsedKernel k = parseKernel(text);
  std::vector<float> buf(4);
  CHECK_THAT(runKernel(k, {1, 1, 1}, {Arg::buffer(buf), Arg::intScalar(3)}),
             Contains("kernel @args: takes 3 argument(s), got 2"));
  CHECK_THAT(
      runKernel(k, {1, 1, 1},
                {Arg::intScalar(1), Arg::intScalar(3), Arg::floatScalar(1)}),
      Contains("argument 0 (!tile.ptr<f32>) needs a buffer, got an integer scalar"));
  CHECK_THAT(
      runKernel(
          k, {1, 1, 1},
          {Arg::buffer(buf), Arg::intScalar(int64_t(1) << 32), Arg::floatScalar(1)}),
      Contains("argument 1 (i32) = 4294967296 is outside [-2147483648, 2147483647]"));
  // 2^32 - 1 is not -1: the GPU launch path refuses it too.
  CHECK_THAT(
      runKernel(k, {1, 1, 1},
                {Arg::buffer(buf), Arg::intScalar((int64_t(1) << 32) - 1),
                 Arg::floatScalar(1)}),
      Contains("argument 1 (i32) = 4294967295 is outside [-2147483648, 2147483647]"));
  CHECK(runKernel(k, {1, 1, 1},
                  {Arg::buffer(buf), Arg::intScalar(INT32_MIN), Arg::floatScalar(1)})
            .empty());
  CHECK_THAT(runKernel(k, {1, 1, 1},
                       {Arg::buffer(buf), Arg::floatScalar(2), Arg::floatScalar(1)}),
             Contains("argument 1 (i32) needs an integer scalar, got a float scalar"));
  CHECK_THAT(
      runKernel(k, {-1, 1, 1},
                {Arg::buffer(buf), Arg::intScalar(3), Arg::floatScalar(1)}),
      Contains("grid (-1, 1, 1): axis x must be in [0, 2147483647] (CUDA's limit)"));
  CHECK_THAT(runKernel(k, {1, 65536, 1},
                       {Arg::buffer(buf), Arg::intScalar(3), Arg::floatScalar(1)}),
             Contains("grid (1, 65536, 1): axis y must be in [0, 65535] (CUDA's limit)"));
  // 2^40 programs pass CUDA's limits but would run for days, one after another.
  CHECK_THAT(
      runKernel(k, {int64_t(1) << 28, 4096, 1},
                {Arg::buffer(buf), Arg::intScalar(3), Arg::floatScalar(1)}),
      Contains("grid (268435456, 4096, 1) has more than 16777216 programs, the most "
               "the interpreter runs (one after another) in one launch"));
  CHECK_THAT(runKernel(k, {4097, 4096, 1},
                       {Arg::buffer(buf), Arg::intScalar(3), Arg::floatScalar(1)}),
             Contains("has more than 16777216 programs"));
  CHECK(runKernel(k, {4096, 16, 1},
                  {Arg::buffer(buf), Arg::intScalar(3), Arg::floatScalar(1)})
            .empty());
  CHECK(
      runKernel(k, {0, 1, 1}, {Arg::buffer(buf), Arg::intScalar(3), Arg::floatScalar(1)})
          .empty());
}

TEST_CASE("interpreter: unsupported ops and run-time faults are errors", "[interp]") {
  const std::string unsupported = R"(
tile.kernel @atan(%s: f32) {
  %a = math.atan %s : f32
  tile.return
}
)";
  llvm::Expected<interp::CompiledKernel> compiled =
      interp::CompiledKernel::compile(parseKernel(unsupported, "unsup.mlir").kernel);
  REQUIRE(!compiled);
  CHECK_THAT(llvm::toString(compiled.takeError()),
             Contains("'math.atan' at loc(\"unsup.mlir\":3:") &&
                 Contains("is not supported by the interpreter"));

  // IR that no longer verifies (edited after parsing) is refused, not run.
  const char *reduce = R"(
tile.kernel @bad(%s: f32) {
  %t = tile.splat %s : tensor<4xf32>
  %r = tile.reduce sum %t axis 0 : tensor<4xf32> -> f32
  tile.return
}
)";
  ParsedKernel bad = parseKernel(reduce);
  bad.kernel.walk([](tile::ReduceOp op) {
    op->setAttr("axis",
                mlir::IntegerAttr::get(mlir::IntegerType::get(op->getContext(), 32), 3));
  });
  compiled = interp::CompiledKernel::compile(bad.kernel);
  REQUIRE(!compiled);
  CHECK_THAT(llvm::toString(compiled.takeError()),
             Contains("kernel @bad: does not verify:") &&
                 Contains("axis 3 out of range"));

  const char *e4m3Math = R"(
tile.kernel @f8(%p: !tile.ptr<f8E4M3FN>) {
  %c0 = arith.constant 0 : i32
  %v = tile.make_view %p : !tile.ptr<f8E4M3FN> -> !tile.view<4xf8E4M3FN, strides = [1]>
  %t = tile.load %v[%c0] : !tile.view<4xf8E4M3FN, strides = [1]> -> tensor<4xf8E4M3FN>
  %s = arith.addf %t, %t : tensor<4xf8E4M3FN>
  tile.return
}
)";
  compiled = interp::CompiledKernel::compile(parseKernel(e4m3Math).kernel);
  REQUIRE(!compiled);
  CHECK_THAT(llvm::toString(compiled.takeError()),
             Contains("'arith.addf'") && Contains("convert to f32 first"));

  const std::string zeroStep = R"(
tile.kernel @loop(%step: i32) {
  %c0 = arith.constant 0 : i32
  %c9 = arith.constant 9 : i32
  %pid = tile.program_id 0 : i32
  %s = arith.subi %step, %pid : i32
  scf.for %i = %c0 to %c9 step %s : i32 {
  }
  tile.return
}
)";
  ParsedKernel loop = parseKernel(zeroStep, "loop.mlir");
  CHECK_THAT(
      runKernel(loop, {3, 1, 1}, {Arg::intScalar(2)}),
      Contains("program (2, 0, 0)") &&
          Contains("'scf.for' at loc(" + locationOf(zeroStep, "scf.for", "loop.mlir")) &&
          Contains("step must be positive, got 0"));
}

TEST_CASE("interpreter: e4m3 GEMV at the in_proj shape (10304 x 2688)",
          "[interp][perf]") {
  const char *text = R"(
tile.kernel @gemv(%w: !tile.ptr<f8E4M3FN>, %x: !tile.ptr<bf16>, %y: !tile.ptr<f32>, %n: i32, %k: i32) {
  %pid = tile.program_id 0 : i32
  %c64 = arith.constant 64 : i32
  %row = arith.muli %pid, %c64 : i32
  %c0 = arith.constant 0 : i32
  %c128 = arith.constant 128 : i32
  %ld = arith.extsi %k : i32 to i64
  %vw = tile.make_view %w sizes(%n, %k) strides(%ld) : !tile.ptr<f8E4M3FN> -> !tile.view<?x?xf8E4M3FN, strides = [?, 1]>
  %vx = tile.make_view %x sizes(%k) : !tile.ptr<bf16> -> !tile.view<?xbf16, strides = [1]>
  %zero = arith.constant dense<0.0> : tensor<64x128xf32>
  %acc = scf.for %kk = %c0 to %k step %c128 iter_args(%a = %zero) -> (tensor<64x128xf32>) : i32 {
    %wt = tile.load %vw[%row, %kk] : !tile.view<?x?xf8E4M3FN, strides = [?, 1]> -> tensor<64x128xf8E4M3FN>
    %wf = tile.convert %wt : tensor<64x128xf8E4M3FN> -> tensor<64x128xf32>
    %xt = tile.load %vx[%kk] : !tile.view<?xbf16, strides = [1]> -> tensor<128xbf16>
    %xf = tile.convert %xt : tensor<128xbf16> -> tensor<128xf32>
    %xe = tile.expand_dims %xf axis 0 : tensor<128xf32> -> tensor<1x128xf32>
    %xb = tile.broadcast %xe : tensor<1x128xf32> -> tensor<64x128xf32>
    %p = arith.mulf %wf, %xb : tensor<64x128xf32>
    %s = arith.addf %a, %p : tensor<64x128xf32>
    scf.yield %s : tensor<64x128xf32>
  }
  %r = tile.reduce sum %acc axis 1 : tensor<64x128xf32> -> tensor<64xf32>
  %vy = tile.make_view %y sizes(%n) : !tile.ptr<f32> -> !tile.view<?xf32, strides = [1]>
  tile.store %r, %vy[%row] : tensor<64xf32>, !tile.view<?xf32, strides = [1]>
  tile.return
}
)";
  const int n = 10304, kk = 2688;
  std::mt19937 rng(31);
  std::uniform_int_distribution<int> code(0, 255);
  std::vector<uint8_t> w(size_t(n) * kk);
  for (uint8_t &v : w)
    v = uint8_t(code(rng));
  for (uint8_t &v : w)
    v = (v & 0x7F) == 0x7F ? 0 : v; // no NaN weights
  std::vector<uint16_t> x(kk);
  for (uint16_t &v : x)
    v = f32ToBF16(randomFloats(rng, 1, -1.0f, 1.0f)[0]);
  std::vector<float> y(n, NAN);

  // The module is destroyed before the run: the compiled kernel keeps no IR.
  interp::CompiledKernel compiled = compileOrFail(parseKernel(text).kernel);
  auto start = std::chrono::steady_clock::now();
  llvm::Error err = compiled.run({n / 64, 1, 1},
                                 {Arg::readOnlyBuffer(w), Arg::readOnlyBuffer(x),
                                  Arg::buffer(y), Arg::intScalar(n), Arg::intScalar(kk)});
  double seconds = support::msSince(start) / 1e3;
  INFO(llvm::toString(std::move(err)));
  REQUIRE(!err);
  INFO("GEMV 10304x2688 e4m3 took " << seconds << " s");
  CHECK(seconds < 5.0);
  WARN("e4m3 GEMV 10304x2688 on the interpreter: " << seconds << " s");

  int compared = 0;
  for (int row = 0; row < n; ++row) {
    double want = 0, magnitude = 0;
    for (int j = 0; j < kk; ++j) {
      double term = double(e4m3ToF32(w[size_t(row) * kk + j])) * bf16ToF32(x[j]);
      want += term, magnitude += std::fabs(term);
    }
    if (std::fabs(y[row] - want) <= 1e-5 * magnitude + 1e-6)
      ++compared;
    else
      FAIL_CHECK("row " << row << ": got " << y[row] << ", want " << want);
  }
  CHECK(compared == n);
}

TEST_CASE("interpreter: dependent launch ops run, prefetches are checked", "[interp]") {
  // The wait and the signal need no work (launches run one after another);
  // the kernel's result is as without them. A prefetch reads nothing, but
  // the GPU faults on a range outside the buffer or off 16 bytes: refused.
  const char *text = R"(
tile.kernel @dependent(%w: !tile.ptr<f32> {tile.invariant}, %out: !tile.ptr<f32>, %off: i32, %bytes: i32) {
  %c0 = arith.constant 0 : i32
  %p = tile.addptr %w, %off : !tile.ptr<f32>, i32
  tile.prefetch_l2 %p, %bytes : !tile.ptr<f32>
  %wv = tile.make_view %w : !tile.ptr<f32> -> !tile.view<64xf32, strides = [1]>
  %t = tile.load %wv[%c0] : !tile.view<64xf32, strides = [1]> -> tensor<64xf32>
  tile.grid_dep_wait
  tile.grid_dep_launch
  %ov = tile.make_view %out : !tile.ptr<f32> -> !tile.view<64xf32, strides = [1]>
  tile.store %t, %ov[%c0] : tensor<64xf32>, !tile.view<64xf32, strides = [1]>
  tile.return
}
)";
  ParsedKernel k = parseKernel(text);
  std::vector<float> w(64), out(64, -1.0f);
  for (int i = 0; i < 64; ++i)
    w[i] = float(i) * 0.5f;
  auto run = [&](int64_t off, int64_t bytes) {
    return runKernel(
        k, {2, 1, 1},
        {Arg::buffer(w), Arg::buffer(out), Arg::intScalar(off), Arg::intScalar(bytes)});
  };
  REQUIRE(run(0, 256) == "");
  CHECK(out == w);
  CHECK(run(4, 240) == "");
  CHECK_THAT(run(0, 24), Contains("prefetches 24 bytes: a positive multiple of 16"));
  CHECK_THAT(run(0, 0), Contains("prefetches 0 bytes: a positive multiple of 16"));
  CHECK_THAT(run(8, 256), Contains("prefetches 256 bytes outside every buffer"));
  CHECK_THAT(run(2, 16),
             Contains("prefetches from byte 8 of its buffer: a multiple of 16"));
}
