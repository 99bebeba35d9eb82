// The interpreter's tile-level ops on random inputs against plain C++ loops:
// shape ops, reduce, scan, dot, register layouts and structured control flow.
#include "InterpreterTestUtil.h"

#include "tilejit/support/FloatFormats.h"

using namespace tilejit;
using namespace tilejit::testing;
using interp::Arg;

namespace {

std::string replaceAll(std::string text, const std::string &from, const std::string &to) {
  for (size_t at = text.find(from); at != std::string::npos;
       at = text.find(from, at + to.size()))
    text.replace(at, from.size(), to);
  return text;
}

} // namespace

TEST_CASE("interpreter: shape ops", "[interp]") {
  // in: 4x8 row-major; out: six 32-element results side by side.
  const char *text = R"(
tile.kernel @shapes(%in: !tile.ptr<f32>, %out: !tile.ptr<f32>) {
  %v = tile.make_view %in : !tile.ptr<f32> -> !tile.view<4x8xf32, strides = [8, 1]>
  %ov = tile.make_view %out : !tile.ptr<f32> -> !tile.view<192xf32, strides = [1]>
  %c0 = arith.constant 0 : i32
  %t = tile.load %v[%c0, %c0] : !tile.view<4x8xf32, strides = [8, 1]> -> tensor<4x8xf32>
  %tt = tile.transpose %t [1, 0] : tensor<4x8xf32> -> tensor<8x4xf32>
  %f0 = tile.reshape %tt : tensor<8x4xf32> -> tensor<32xf32>
  tile.store %f0, %ov[%c0] : tensor<32xf32>, !tile.view<192xf32, strides = [1]>
  %row = tile.load %v[%c0, %c0] : !tile.view<4x8xf32, strides = [8, 1]> -> tensor<1x8xf32>
  %bc = tile.broadcast %row : tensor<1x8xf32> -> tensor<4x8xf32>
  %a = tile.arange 0 to 4 : tensor<4xi32>
  %af = arith.sitofp %a : tensor<4xi32> to tensor<4xf32>
  %ae = tile.expand_dims %af axis 1 : tensor<4xf32> -> tensor<4x1xf32>
  %ab = tile.broadcast %ae : tensor<4x1xf32> -> tensor<4x8xf32>
  %sum = arith.addf %bc, %ab : tensor<4x8xf32>
  %f1 = tile.reshape %sum : tensor<4x8xf32> -> tensor<32xf32>
  %c32 = arith.constant 32 : i32
  tile.store %f1, %ov[%c32] : tensor<32xf32>, !tile.view<192xf32, strides = [1]>
  %t3 = tile.reshape %t : tensor<4x8xf32> -> tensor<2x2x8xf32>
  %p3 = tile.transpose %t3 [2, 0, 1] : tensor<2x2x8xf32> -> tensor<8x2x2xf32>
  %f2 = tile.reshape %p3 : tensor<8x2x2xf32> -> tensor<32xf32>
  %c64 = arith.constant 64 : i32
  tile.store %f2, %ov[%c64] : tensor<32xf32>, !tile.view<192xf32, strides = [1]>
  %s = arith.constant 2.5 : f32
  %sp = tile.splat %s : tensor<32xf32>
  %c96 = arith.constant 96 : i32
  tile.store %sp, %ov[%c96] : tensor<32xf32>, !tile.view<192xf32, strides = [1]>
  %dense = arith.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
  %db = tile.expand_dims %dense axis 0 : tensor<2x2xf32> -> tensor<1x2x2xf32>
  %dbb = tile.broadcast %db : tensor<1x2x2xf32> -> tensor<8x2x2xf32>
  %f4 = tile.reshape %dbb : tensor<8x2x2xf32> -> tensor<32xf32>
  %c128 = arith.constant 128 : i32
  tile.store %f4, %ov[%c128] : tensor<32xf32>, !tile.view<192xf32, strides = [1]>
  %pid = tile.program_id 0 : i32
  %np = tile.num_programs 0 : i32
  %pf = arith.sitofp %pid : i32 to f32
  %nf = arith.sitofp %np : i32 to f32
  %q = arith.addf %pf, %nf : f32
  %qs = tile.splat %q : tensor<32xf32>
  %c160 = arith.constant 160 : i32
  tile.store %qs, %ov[%c160] : tensor<32xf32>, !tile.view<192xf32, strides = [1]>
  tile.return
}
)";
  ParsedKernel k = parseKernel(text);
  std::mt19937 rng(12);
  std::vector<float> in = randomFloats(rng, 32), out(192, -777.0f);
  runOrFail(k, {1, 1, 1}, {Arg::buffer(in), Arg::buffer(out)});
  for (int i = 0; i < 8; ++i)
    for (int j = 0; j < 4; ++j)
      CHECK(out[i * 4 + j] == in[j * 8 + i]);
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 8; ++j)
      CHECK(out[32 + i * 8 + j] == in[j] + float(i));
  // p3[i][a][b] = t3[a][b][i] = in[(a * 2 + b) * 8 + i]
  for (int i = 0; i < 8; ++i)
    for (int a = 0; a < 2; ++a)
      for (int b = 0; b < 2; ++b)
        CHECK(out[64 + i * 4 + a * 2 + b] == in[(a * 2 + b) * 8 + i]);
  for (int i = 0; i < 32; ++i) {
    CHECK(out[96 + i] == 2.5f);
    CHECK(out[128 + i] == float(i % 4 + 1));
    CHECK(out[160 + i] == 1.0f); // program 0 of 1
  }
}

TEST_CASE("interpreter: reduce and scan along each axis", "[interp]") {
  const char *text = R"(
tile.kernel @reduce(%in: !tile.ptr<f32>, %iin: !tile.ptr<i32>, %out: !tile.ptr<f32>, %iout: !tile.ptr<i32>) {
  %c0 = arith.constant 0 : i32
  %v = tile.make_view %in : !tile.ptr<f32> -> !tile.view<16x32xf32, strides = [32, 1]>
  %x = tile.load %v[%c0, %c0] : !tile.view<16x32xf32, strides = [32, 1]> -> tensor<16x32xf32>
  %ov = tile.make_view %out : !tile.ptr<f32> -> !tile.view<2000xf32, strides = [1]>
  %s0 = tile.reduce sum %x axis 0 : tensor<16x32xf32> -> tensor<32xf32>
  tile.store %s0, %ov[%c0] : tensor<32xf32>, !tile.view<2000xf32, strides = [1]>
  %s1 = tile.reduce sum %x axis 1 : tensor<16x32xf32> -> tensor<16xf32>
  %c32 = arith.constant 32 : i32
  tile.store %s1, %ov[%c32] : tensor<16xf32>, !tile.view<2000xf32, strides = [1]>
  %m1 = tile.reduce max %x axis 1 : tensor<16x32xf32> -> tensor<16xf32>
  %c48 = arith.constant 48 : i32
  tile.store %m1, %ov[%c48] : tensor<16xf32>, !tile.view<2000xf32, strides = [1]>
  %n0 = tile.reduce min %x axis 0 : tensor<16x32xf32> -> tensor<32xf32>
  %c64 = arith.constant 64 : i32
  tile.store %n0, %ov[%c64] : tensor<32xf32>, !tile.view<2000xf32, strides = [1]>
  %all = tile.reduce sum %s1 axis 0 : tensor<16xf32> -> f32
  %c96 = arith.constant 96 : i32
  %pa = tile.addptr %out, %c96 : !tile.ptr<f32>, i32
  tile.ptr_store %pa, %all : !tile.ptr<f32>
  %sc1 = tile.scan sum %x axis 1 : tensor<16x32xf32>
  %f1 = tile.reshape %sc1 : tensor<16x32xf32> -> tensor<512xf32>
  %c100 = arith.constant 100 : i32
  tile.store %f1, %ov[%c100] : tensor<512xf32>, !tile.view<2000xf32, strides = [1]>
  %sc0 = tile.scan max %x axis 0 : tensor<16x32xf32>
  %f0 = tile.reshape %sc0 : tensor<16x32xf32> -> tensor<512xf32>
  %c612 = arith.constant 612 : i32
  tile.store %f0, %ov[%c612] : tensor<512xf32>, !tile.view<2000xf32, strides = [1]>
  %iv = tile.make_view %iin : !tile.ptr<i32> -> !tile.view<16x32xi32, strides = [32, 1]>
  %ix = tile.load %iv[%c0, %c0] : !tile.view<16x32xi32, strides = [32, 1]> -> tensor<16x32xi32>
  %is = tile.reduce sum %ix axis 1 : tensor<16x32xi32> -> tensor<16xi32>
  %im = tile.reduce min %ix axis 1 : tensor<16x32xi32> -> tensor<16xi32>
  %iov = tile.make_view %iout : !tile.ptr<i32> -> !tile.view<32xi32, strides = [1]>
  tile.store %is, %iov[%c0] : tensor<16xi32>, !tile.view<32xi32, strides = [1]>
  %c16 = arith.constant 16 : i32
  tile.store %im, %iov[%c16] : tensor<16xi32>, !tile.view<32xi32, strides = [1]>
  tile.return
}
)";
  ParsedKernel k = parseKernel(text);
  std::mt19937 rng(13);
  std::vector<float> in = randomFloats(rng, 512), out(2000, -777.0f);
  std::uniform_int_distribution<int32_t> any(INT32_MIN, INT32_MAX);
  std::vector<int32_t> iin(512), iout(32);
  for (int32_t &v : iin)
    v = any(rng);
  runOrFail(k, {1, 1, 1},
            {Arg::buffer(in), Arg::buffer(iin), Arg::buffer(out), Arg::buffer(iout)});
  auto at = [&](int r, int c) { return in[r * 32 + c]; };
  float total = 0;
  for (int r = 0; r < 16; ++r) {
    float s = at(r, 0), m = at(r, 0), run = at(r, 0);
    CHECK(out[100 + r * 32] == run);
    for (int c = 1; c < 32; ++c) {
      s += at(r, c), m = std::max(m, at(r, c)), run += at(r, c);
      CHECK(out[100 + r * 32 + c] == run);
    }
    CHECK(out[32 + r] == s);
    CHECK(out[48 + r] == m);
    total = r ? total + s : s;
    uint32_t is = 0;
    int32_t im = INT32_MAX;
    for (int c = 0; c < 32; ++c)
      is += uint32_t(iin[r * 32 + c]), im = std::min(im, iin[r * 32 + c]);
    CHECK(iout[r] == int32_t(is)); // wraps
    CHECK(iout[16 + r] == im);
  }
  CHECK(out[96] == total);
  for (int c = 0; c < 32; ++c) {
    float s = at(0, c), m = at(0, c), run = at(0, c);
    CHECK(out[612 + c] == run);
    for (int r = 1; r < 16; ++r) {
      s += at(r, c), m = std::min(m, at(r, c)), run = std::max(run, at(r, c));
      CHECK(out[612 + r * 32 + c] == run);
    }
    CHECK(out[c] == s);
    CHECK(out[64 + c] == m);
  }
}

TEST_CASE("interpreter: dot accumulates exact products in f32", "[interp]") {
  for (const char *type : {"bf16", "f8E4M3FN", "f32"}) {
    std::string t = type;
    std::string text = R"(
tile.kernel @dot(%a: !tile.ptr<ELT>, %b: !tile.ptr<ELT>, %acc: !tile.ptr<f32>, %out: !tile.ptr<f32>) {
  %c0 = arith.constant 0 : i32
  %va = tile.make_view %a : !tile.ptr<ELT> -> !tile.view<16x32xELT, strides = [32, 1]>
  %vb = tile.make_view %b : !tile.ptr<ELT> -> !tile.view<32x8xELT, strides = [8, 1]>
  %vc = tile.make_view %acc : !tile.ptr<f32> -> !tile.view<16x8xf32, strides = [8, 1]>
  %vo = tile.make_view %out : !tile.ptr<f32> -> !tile.view<16x8xf32, strides = [8, 1]>
  %x = tile.load %va[%c0, %c0] : !tile.view<16x32xELT, strides = [32, 1]> -> tensor<16x32xELT>
  %y = tile.load %vb[%c0, %c0] : !tile.view<32x8xELT, strides = [8, 1]> -> tensor<32x8xELT>
  %z = tile.load %vc[%c0, %c0] : !tile.view<16x8xf32, strides = [8, 1]> -> tensor<16x8xf32>
  %d = tile.dot %x, %y, %z : tensor<16x32xELT>, tensor<32x8xELT> -> tensor<16x8xf32>
  tile.store %d, %vo[%c0, %c0] : tensor<16x8xf32>, !tile.view<16x8xf32, strides = [8, 1]>
  tile.return
}
)";
    INFO("element type " << t);
    ParsedKernel k = parseKernel(replaceAll(text, "ELT", t));
    std::mt19937 rng(14);
    std::vector<float> fa = randomFloats(rng, 512), fb = randomFloats(rng, 256),
                       acc = randomFloats(rng, 128), out(128, -777.0f);
    std::vector<uint16_t> ha(512), hb(256);
    std::vector<uint8_t> qa(512), qb(256);
    for (int i = 0; i < 512; ++i) {
      ha[i] = f32ToBF16(fa[i]), qa[i] = f32ToE4M3(fa[i]);
      fa[i] = t == "bf16" ? bf16ToF32(ha[i]) : t == "f32" ? fa[i] : e4m3ToF32(qa[i]);
    }
    for (int i = 0; i < 256; ++i) {
      hb[i] = f32ToBF16(fb[i]), qb[i] = f32ToE4M3(fb[i]);
      fb[i] = t == "bf16" ? bf16ToF32(hb[i]) : t == "f32" ? fb[i] : e4m3ToF32(qb[i]);
    }
    Arg a = t == "bf16"  ? Arg::buffer(ha)
            : t == "f32" ? Arg::buffer(fa)
                         : Arg::buffer(qa);
    Arg b = t == "bf16"  ? Arg::buffer(hb)
            : t == "f32" ? Arg::buffer(fb)
                         : Arg::buffer(qb);
    runOrFail(k, {1, 1, 1}, {a, b, Arg::buffer(acc), Arg::buffer(out)});
    for (int m = 0; m < 16; ++m)
      for (int n = 0; n < 8; ++n) {
        float s = acc[m * 8 + n];
        for (int kk = 0; kk < 32; ++kk)
          s += fa[m * 32 + kk] * fb[kk * 8 + n];
        CHECK(out[m * 8 + n] == s);
      }
  }
}

TEST_CASE("interpreter: scf.for with iter_args and scf.if with results", "[interp]") {
  const char *text = R"(
tile.kernel @flow(%in: !tile.ptr<f32>, %out: !tile.ptr<f32>, %steps: i32) {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %v = tile.make_view %in : !tile.ptr<f32> -> !tile.view<4xf32, strides = [1]>
  %x = tile.load %v[%c0] : !tile.view<4xf32, strides = [1]> -> tensor<4xf32>
  %ones = arith.constant dense<1.0> : tensor<4xf32>
  %fib:2 = scf.for %i = %c0 to %steps step %c1 iter_args(%a = %ones, %b = %x) -> (tensor<4xf32>, tensor<4xf32>) : i32 {
    %s = arith.addf %a, %b : tensor<4xf32>
    scf.yield %b, %s : tensor<4xf32>, tensor<4xf32>
  }
  %swap:2 = scf.for %i = %c0 to %steps step %c1 iter_args(%a = %ones, %b = %x) -> (tensor<4xf32>, tensor<4xf32>) : i32 {
    scf.yield %b, %a : tensor<4xf32>, tensor<4xf32>
  }
  %i0 = arith.constant 0 : index
  %i3 = arith.constant 3 : index
  %i1 = arith.constant 1 : index
  %ivs = scf.for %j = %i0 to %i3 step %i1 iter_args(%acc = %x) -> (tensor<4xf32>) {
    %j32 = arith.index_cast %j : index to i32
    %jf = arith.sitofp %j32 : i32 to f32
    %js = tile.splat %jf : tensor<4xf32>
    %n = arith.mulf %acc, %js : tensor<4xf32>
    %n2 = arith.addf %n, %ones : tensor<4xf32>
    scf.yield %n2 : tensor<4xf32>
  }
  %pid = tile.program_id 0 : i32
  %isz = arith.cmpi eq, %steps, %c0 : i32
  %pick = scf.if %isz -> (tensor<4xf32>) {
    scf.yield %ones : tensor<4xf32>
  } else {
    %neg = arith.negf %x : tensor<4xf32>
    scf.yield %neg : tensor<4xf32>
  }
  %ov = tile.make_view %out : !tile.ptr<f32> -> !tile.view<24xf32, strides = [1]>
  tile.store %fib#0, %ov[%c0] : tensor<4xf32>, !tile.view<24xf32, strides = [1]>
  %c4 = arith.constant 4 : i32
  tile.store %fib#1, %ov[%c4] : tensor<4xf32>, !tile.view<24xf32, strides = [1]>
  %c8 = arith.constant 8 : i32
  tile.store %ivs, %ov[%c8] : tensor<4xf32>, !tile.view<24xf32, strides = [1]>
  %c12 = arith.constant 12 : i32
  tile.store %pick, %ov[%c12] : tensor<4xf32>, !tile.view<24xf32, strides = [1]>
  %c20 = arith.constant 20 : i32
  tile.store %swap#1, %ov[%c20] : tensor<4xf32>, !tile.view<24xf32, strides = [1]>
  scf.if %isz {
    %c16 = arith.constant 16 : i32
    tile.store %x, %ov[%c16] : tensor<4xf32>, !tile.view<24xf32, strides = [1]>
  }
  tile.return
}
)";
  ParsedKernel k = parseKernel(text);
  std::vector<float> in = {0.5f, 2.0f, -1.0f, 3.0f};
  for (int steps : {0, 1, 7}) {
    INFO("steps " << steps);
    std::vector<float> out(24, -777.0f);
    runOrFail(k, {1, 1, 1}, {Arg::buffer(in), Arg::buffer(out), Arg::intScalar(steps)});
    for (int e = 0; e < 4; ++e) {
      float a = 1.0f, b = in[e];
      for (int s = 0; s < steps; ++s) {
        float next = a + b;
        a = b, b = next;
      }
      CHECK(out[e] == a);
      CHECK(out[4 + e] == b);
      float acc = in[e];
      for (int j = 0; j < 3; ++j)
        acc = acc * float(j) + 1.0f;
      CHECK(out[8 + e] == acc);
      CHECK(out[12 + e] == (steps == 0 ? 1.0f : -in[e]));
      CHECK(out[16 + e] == (steps == 0 ? in[e] : -777.0f));
      CHECK(out[20 + e] == (steps % 2 ? 1.0f : in[e])); // swapped `steps` times
    }
  }
}

TEST_CASE("interpreter: register layouts do not change values", "[interp]") {
  // One warp: the verifier holds layouts to the kernel's warps.
  const char *text = R"(
tile.kernel @layouts(%in: !tile.ptr<f32>, %out: !tile.ptr<f32>) attributes {config = #tile.config<tile = [4, 8], warps = 1>} {
  %c0 = arith.constant 0 : i32
  %v = tile.make_view %in : !tile.ptr<f32> -> !tile.view<4x8xf32, strides = [8, 1]>
  %o = tile.make_view %out : !tile.ptr<f32> -> !tile.view<4x8xf32, strides = [8, 1]>
  %t = tile.load %v[%c0, %c0] : !tile.view<4x8xf32, strides = [8, 1]> -> tensor<4x8xf32>
  %b = tile.convert_layout %t : tensor<4x8xf32> -> tensor<4x8xf32, #tile.blocked<spt = [1, 1], tpw = [4, 8], wpc = [1, 1], order = [1, 0]>>
  %s = arith.addf %b, %b : tensor<4x8xf32, #tile.blocked<spt = [1, 1], tpw = [4, 8], wpc = [1, 1], order = [1, 0]>>
  %r = tile.convert_layout %s : tensor<4x8xf32, #tile.blocked<spt = [1, 1], tpw = [4, 8], wpc = [1, 1], order = [1, 0]>> -> tensor<4x8xf32>
  tile.store %r, %o[%c0, %c0] : tensor<4x8xf32>, !tile.view<4x8xf32, strides = [8, 1]>
  tile.return
}
)";
  ParsedKernel k = parseKernel(text);
  std::mt19937 rng(15);
  std::vector<float> in = randomFloats(rng, 32), out(32, -777.0f);
  runOrFail(k, {1, 1, 1}, {Arg::buffer(in), Arg::buffer(out)});
  for (int i = 0; i < 32; ++i)
    CHECK(out[i] == 2 * in[i]);
}
