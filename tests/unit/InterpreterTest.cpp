// The interpreter's elementwise ops on random inputs against plain C++ loops:
// arith and math on f32, bf16 and integers, and casts. Tile-level ops are
// tested in InterpreterTileOpsTest.cpp, memory and errors in
// InterpreterMemoryTest.cpp.
#include "InterpreterTestUtil.h"

#include "tilejit/support/FloatFormats.h"

#include <cmath>
#include <functional>
#include <sstream>

using namespace tilejit;
using namespace tilejit::testing;
using interp::Arg;

namespace {

constexpr int kTile = 64;

/// A kernel over 1-D tiles of 64: loads x and y (element type `in`) at the
/// program's indices masked by `n`, runs `body` (which reads %vx, %vy and
/// defines %r0 .. %r<results-1> of element type `out`) and stores each %rK
/// to out[K * n + i].
std::string mapKernel(const std::string &in, const std::string &out,
                      const std::string &body, int results) {
  std::string pin = "tensor<64x!tile.ptr<" + in + ">>",
              pout = "tensor<64x!tile.ptr<" + out + ">>";
  std::ostringstream s;
  s << "tile.kernel @map(%x: !tile.ptr<" << in << ">, %y: !tile.ptr<" << in
    << ">, %out: !tile.ptr<" << out << ">, %n: i32) {\n"
    << "  %pid = tile.program_id 0 : i32\n"
    << "  %c64 = arith.constant 64 : i32\n"
    << "  %base = arith.muli %pid, %c64 : i32\n"
    << "  %r = tile.arange 0 to 64 : tensor<64xi32>\n"
    << "  %b = tile.splat %base : tensor<64xi32>\n"
    << "  %idx = arith.addi %r, %b : tensor<64xi32>\n"
    << "  %nn = tile.splat %n : tensor<64xi32>\n"
    << "  %m = arith.cmpi slt, %idx, %nn : tensor<64xi32>\n";
  for (const char *v : {"x", "y"})
    s << "  %p" << v << " = tile.splat %" << v << " : " << pin << "\n"
      << "  %a" << v << " = tile.addptr %p" << v << ", %idx : " << pin
      << ", tensor<64xi32>\n"
      << "  %v" << v << " = tile.ptr_load %a" << v << " mask %m : " << pin << "\n";
  s << body;
  for (int k = 0; k < results; ++k)
    s << "  %kc" << k << " = arith.constant " << k << " : i32\n"
      << "  %kn" << k << " = arith.muli %n, %kc" << k << " : i32\n"
      << "  %ks" << k << " = tile.splat %kn" << k << " : tensor<64xi32>\n"
      << "  %ki" << k << " = arith.addi %idx, %ks" << k << " : tensor<64xi32>\n"
      << "  %po" << k << " = tile.splat %out : " << pout << "\n"
      << "  %ao" << k << " = tile.addptr %po" << k << ", %ki" << k << " : " << pout
      << ", tensor<64xi32>\n"
      << "  tile.ptr_store %ao" << k << ", %r" << k << " mask %m : " << pout << "\n";
  s << "  tile.return\n}\n";
  return s.str();
}

/// Runs a map kernel over n elements (a partial last tile) and returns out.
template <typename In, typename Out>
std::vector<Out> runMap(const std::string &text, std::vector<In> &x, std::vector<In> &y,
                        int results, Out poison) {
  ParsedKernel k = parseKernel(text);
  int n = int(x.size());
  std::vector<Out> out(size_t(results) * n + kTile, poison);
  runOrFail(k, {(n + kTile - 1) / kTile, 1, 1},
            {Arg::buffer(x), Arg::buffer(y), Arg::buffer(out), Arg::intScalar(n)});
  for (size_t i = size_t(results) * n; i < out.size(); ++i)
    REQUIRE(out[i] == poison); // masked lanes past n wrote nothing
  return out;
}

void checkFloats(const std::vector<float> &out, int n,
                 const std::vector<std::function<float(int)>> &want) {
  for (size_t k = 0; k < want.size(); ++k)
    for (int i = 0; i < n; ++i) {
      INFO("result " << k << ", element " << i);
      float w = want[k](i), g = out[k * n + i];
      if (std::isnan(w))
        CHECK(std::isnan(g));
      else
        CHECK(g == w);
    }
}

} // namespace

TEST_CASE("interpreter: f32 arith ops", "[interp]") {
  std::mt19937 rng(7);
  const int n = 150;
  std::vector<float> x = randomFloats(rng, n), y = randomFloats(rng, n);
  y[3] = x[3]; // equal operands
  x[5] = NAN;  // NaN propagation vs NaN-ignoring max/min
  std::string body = R"(
  %r0 = arith.addf %vx, %vy : tensor<64xf32>
  %r1 = arith.subf %vx, %vy : tensor<64xf32>
  %r2 = arith.mulf %vx, %vy : tensor<64xf32>
  %r3 = arith.divf %vx, %vy : tensor<64xf32>
  %r4 = arith.remf %vx, %vy : tensor<64xf32>
  %r5 = arith.maximumf %vx, %vy : tensor<64xf32>
  %r6 = arith.minnumf %vx, %vy : tensor<64xf32>
  %r7 = arith.negf %vx : tensor<64xf32>
  %t8 = arith.mulf %vx, %vy : tensor<64xf32>
  %r8 = arith.addf %t8, %vx : tensor<64xf32>
  %c9 = arith.cmpf olt, %vx, %vy : tensor<64xf32>
  %r9 = arith.select %c9, %vx, %vy : tensor<64xi1>, tensor<64xf32>
  %c10 = arith.cmpf une, %vx, %vy : tensor<64xf32>
  %z10 = arith.constant dense<0.0> : tensor<64xf32>
  %o10 = arith.constant dense<1.0> : tensor<64xf32>
  %r10 = arith.select %c10, %o10, %z10 : tensor<64xi1>, tensor<64xf32>
  %r11 = math.fma %vx, %vy, %vx : tensor<64xf32>
)";
  std::vector<float> out = runMap(mapKernel("f32", "f32", body, 12), x, y, 12, -777.0f);
  auto X = [&](int i) { return x[i]; };
  auto Y = [&](int i) { return y[i]; };
  checkFloats(out, n,
              {[&](int i) { return X(i) + Y(i); }, [&](int i) { return X(i) - Y(i); },
               [&](int i) { return X(i) * Y(i); }, [&](int i) { return X(i) / Y(i); },
               [&](int i) { return std::fmod(X(i), Y(i)); },
               [&](int i) { return std::isnan(X(i)) ? NAN : std::max(X(i), Y(i)); },
               [&](int i) { return std::isnan(X(i)) ? Y(i) : std::min(X(i), Y(i)); },
               [&](int i) { return -X(i); },
               [&](int i) {
                 float p = X(i) * Y(i); // rounded before the add: no contraction
                 return p + X(i);
               },
               [&](int i) { return X(i) < Y(i) ? X(i) : Y(i); },
               [&](int i) { return X(i) != Y(i) ? 1.0f : 0.0f; },
               [&](int i) { return std::fma(X(i), Y(i), X(i)); }});
}

TEST_CASE("interpreter: math functions", "[interp]") {
  std::mt19937 rng(8);
  const int n = 100;
  std::vector<float> x = randomFloats(rng, n, 0.01f, 6.0f), y = randomFloats(rng, n);
  std::string body;
  const char *ops[] = {"exp",  "exp2", "log",   "log1p", "sqrt", "rsqrt",
                       "absf", "tanh", "floor", "ceil",  "erf"};
  for (int k = 0; k < 11; ++k)
    body += "  %r" + std::to_string(k) + " = math." + ops[k] + " %v" +
            (k == 6 || k >= 8 ? "y" : "x") + " : tensor<64xf32>\n";
  std::vector<float> out = runMap(mapKernel("f32", "f32", body, 11), x, y, 11, -777.0f);
  auto viaDouble = [](double (*f)(double), float v) { return float(f(double(v))); };
  checkFloats(out, n,
              {[&](int i) { return viaDouble(std::exp, x[i]); },
               [&](int i) { return viaDouble(std::exp2, x[i]); },
               [&](int i) { return viaDouble(std::log, x[i]); },
               [&](int i) { return viaDouble(std::log1p, x[i]); },
               [&](int i) { return viaDouble(std::sqrt, x[i]); },
               [&](int i) { return float(1.0 / std::sqrt(double(x[i]))); },
               [&](int i) { return std::fabs(y[i]); },
               [&](int i) { return viaDouble(std::tanh, x[i]); },
               [&](int i) { return std::floor(y[i]); },
               [&](int i) { return std::ceil(y[i]); },
               [&](int i) { return viaDouble(std::erf, y[i]); }});
  // Relative to the exact function these are within an ulp.
  for (int i = 0; i < n; ++i)
    CHECK(std::fabs(out[i] - std::exp(double(x[i]))) <= std::exp(double(x[i])) * 0x1p-23);
}

TEST_CASE("interpreter: bf16 arithmetic rounds every result to bf16", "[interp]") {
  std::mt19937 rng(9);
  const int n = 130;
  std::vector<uint16_t> x(n), y(n);
  for (int i = 0; i < n; ++i) {
    x[i] = f32ToBF16(randomFloats(rng, 1)[0]);
    y[i] = f32ToBF16(randomFloats(rng, 1, 0.5f, 3.0f)[0]);
  }
  std::string body = R"(
  %r0 = arith.addf %vx, %vy : tensor<64xbf16>
  %r1 = arith.mulf %vx, %vy : tensor<64xbf16>
  %r2 = arith.divf %vx, %vy : tensor<64xbf16>
  %t3 = arith.mulf %vx, %vy : tensor<64xbf16>
  %r3 = arith.subf %t3, %vx : tensor<64xbf16>
  %r4 = math.exp %vy : tensor<64xbf16>
)";
  std::vector<uint16_t> out =
      runMap(mapKernel("bf16", "bf16", body, 5), x, y, 5, uint16_t(0xDEAD));
  int inexact = 0;
  for (int i = 0; i < n; ++i) {
    float a = bf16ToF32(x[i]), b = bf16ToF32(y[i]);
    float want[] = {a + b, a * b, a / b, roundToBF16(a * b) - a,
                    float(std::exp(double(b)))};
    for (int k = 0; k < 5; ++k) {
      INFO("result " << k << ", element " << i);
      CHECK(out[k * n + i] == f32ToBF16(want[k]));
      inexact += roundToBF16(want[k]) != want[k];
    }
  }
  CHECK(inexact > n); // the inputs do exercise rounding
}

TEST_CASE("interpreter: i32 arith wraps and compares like two's complement", "[interp]") {
  std::mt19937 rng(10);
  const int n = 140;
  std::uniform_int_distribution<int32_t> any(INT32_MIN, INT32_MAX), small(-1000, 1000);
  std::vector<int32_t> x(n), y(n);
  for (int i = 0; i < n; ++i) {
    x[i] = i % 3 ? any(rng) : small(rng);
    y[i] = i % 2 ? any(rng) : small(rng);
  }
  x[0] = INT32_MIN, y[0] = -1;
  std::string body = R"(
  %c31 = arith.constant dense<31> : tensor<64xi32>
  %one = arith.constant dense<1> : tensor<64xi32>
  %sh = arith.andi %vy, %c31 : tensor<64xi32>
  %nz = arith.ori %vy, %one : tensor<64xi32>
  %r0 = arith.addi %vx, %vy : tensor<64xi32>
  %r1 = arith.muli %vx, %vy : tensor<64xi32>
  %r2 = arith.divsi %vx, %nz : tensor<64xi32>
  %r3 = arith.remsi %vx, %nz : tensor<64xi32>
  %r4 = arith.divui %vx, %nz : tensor<64xi32>
  %r5 = arith.shli %vx, %sh : tensor<64xi32>
  %r6 = arith.shrsi %vx, %sh : tensor<64xi32>
  %r7 = arith.shrui %vx, %sh : tensor<64xi32>
  %r8 = arith.xori %vx, %vy : tensor<64xi32>
  %r9 = arith.minui %vx, %vy : tensor<64xi32>
  %c10 = arith.cmpi ult, %vx, %vy : tensor<64xi32>
  %r10 = arith.select %c10, %vx, %vy : tensor<64xi1>, tensor<64xi32>
  %r11 = arith.floordivsi %vx, %nz : tensor<64xi32>
  %t12 = arith.trunci %vx : tensor<64xi32> to tensor<64xi8>
  %r12 = arith.extsi %t12 : tensor<64xi8> to tensor<64xi32>
  %r13 = arith.extui %t12 : tensor<64xi8> to tensor<64xi32>
  %r14 = arith.subi %vx, %vy : tensor<64xi32>
)";
  std::vector<int32_t> out =
      runMap(mapKernel("i32", "i32", body, 15), x, y, 15, int32_t(-12345));
  for (int i = 0; i < n; ++i) {
    uint32_t a = uint32_t(x[i]), b = uint32_t(y[i]);
    int32_t nz = y[i] | 1;
    unsigned sh = b & 31;
    int64_t q = int64_t(x[i]) / nz; // in 64 bits: INT32_MIN / -1 does not trap
    int64_t floorq = (int64_t(x[i]) % nz != 0 && ((x[i] < 0) != (nz < 0))) ? q - 1 : q;
    int32_t want[] = {int32_t(a + b),
                      int32_t(a * b),
                      int32_t(uint32_t(q)),
                      int32_t(int64_t(x[i]) % nz),
                      int32_t(a / uint32_t(nz)),
                      int32_t(a << sh),
                      x[i] >> sh,
                      int32_t(a >> sh),
                      int32_t(a ^ b),
                      int32_t(std::min(a, b)),
                      a < b ? x[i] : y[i],
                      int32_t(uint32_t(floorq)),
                      int32_t(int8_t(a & 0xFF)),
                      int32_t(a & 0xFF),
                      int32_t(a - b)};
    for (int k = 0; k < 15; ++k) {
      INFO("result " << k << ", x " << x[i] << ", y " << y[i]);
      CHECK(out[k * n + i] == want[k]);
    }
  }
}

TEST_CASE("interpreter: casts and tile.convert", "[interp]") {
  std::mt19937 rng(11);
  const int n = 100;
  std::vector<float> x = randomFloats(rng, n, -600.0f, 600.0f), y = randomFloats(rng, n);
  x[1] = 3e9f, x[2] = -3e9f, x[3] = NAN, x[4] = 464.0f, x[5] = 1e-3f;
  std::string body = R"(
  %i0 = arith.fptosi %vx : tensor<64xf32> to tensor<64xi32>
  %r0 = arith.sitofp %i0 : tensor<64xi32> to tensor<64xf32>
  %b1 = tile.convert %vx rounding rne : tensor<64xf32> -> tensor<64xbf16>
  %r1 = tile.convert %b1 : tensor<64xbf16> -> tensor<64xf32>
  %b2 = tile.convert %vx rounding rtz : tensor<64xf32> -> tensor<64xbf16>
  %r2 = arith.extf %b2 : tensor<64xbf16> to tensor<64xf32>
  %q3 = tile.convert %vx rounding rne saturate : tensor<64xf32> -> tensor<64xf8E4M3FN>
  %r3 = tile.convert %q3 : tensor<64xf8E4M3FN> -> tensor<64xf32>
  %h4 = arith.truncf %vx : tensor<64xf32> to tensor<64xf16>
  %r4 = arith.extf %h4 : tensor<64xf16> to tensor<64xf32>
  %w5 = tile.convert %q3 : tensor<64xf8E4M3FN> -> tensor<64xbf16>
  %r5 = tile.convert %w5 : tensor<64xbf16> -> tensor<64xf32>
  %u6 = arith.fptoui %vy : tensor<64xf32> to tensor<64xi8>
  %r6 = arith.uitofp %u6 : tensor<64xi8> to tensor<64xf32>
  %bc7 = arith.bitcast %vx : tensor<64xf32> to tensor<64xi32>
  %r7 = arith.sitofp %bc7 : tensor<64xi32> to tensor<64xf32>
)";
  std::vector<float> out = runMap(mapKernel("f32", "f32", body, 8), x, y, 8, -777.0f);
  auto fptosi = [](float v) -> float {
    if (std::isnan(v))
      return 0;
    double t = std::trunc(double(v));
    return float(int32_t(std::clamp(t, double(INT32_MIN), double(INT32_MAX))));
  };
  checkFloats(
      out, n,
      {[&](int i) { return fptosi(x[i]); }, [&](int i) { return roundToBF16(x[i]); },
       [&](int i) { return roundToBF16(x[i], Rounding::TowardZero); },
       [&](int i) { return roundToE4M3(x[i]); }, [&](int i) { return roundToF16(x[i]); },
       [&](int i) { return roundToE4M3(x[i]); },
       [&](int i) { return float(std::clamp(std::trunc(y[i]), 0.0f, 255.0f)); },
       [&](int i) { return float(std::bit_cast<int32_t>(x[i])); }});
  CHECK(out[1] == 2147483648.0f); // saturated to INT32_MAX, which rounds up in f32
  CHECK(out[3 * n + 4] == 448.0f);
}
