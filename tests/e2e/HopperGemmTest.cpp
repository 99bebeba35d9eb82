// The Hopper GEMM pipeline through the runtime (issue 20): on the FakeDevice,
// what the launcher supplies (a persistent kernel's grid, the TMA tensor maps,
// built once per base and extents, kept in disk cache entries); on the GPU,
// the e4m3 and bf16 GEMMs fed by a TMA producer warpgroup to wgmma (sm_90a)
// and by a producer warp to mma.sync (sm_90, issue 35), with and without
// persistent tiles, against the f64 product, with partial tiles in M, N and K.
#include "GpuTestSupport.h"
#include "tilejit/runtime/FakeDevice.h"
#include "tilejit/support/FloatFormats.h"

#include "llvm/Support/FormatVariadic.h"

#include <cmath>
#include <random>

using tilejit::bf16ToF32;
using tilejit::ConstantValues;
using tilejit::e4m3ToF32;
using tilejit::f32ToBF16;
using tilejit::KernelDef;
using tilejit::makeKernelSpec;
using namespace tilejit::gputest;

namespace {

Kernel gemmKernel(JitRuntime &jit, llvm::StringRef name,
                  const ConstantValues &overrides) {
  const KernelDef *def = registry().find(name);
  REQUIRE(def);
  auto spec = def->specialize(overrides);
  if (!spec)
    FAIL(llvm::toString(spec.takeError()));
  return Kernel(jit, makeKernelSpec(*def, std::move(*spec)));
}

std::string messageOf(llvm::Error err) {
  return err ? llvm::toString(std::move(err)) : std::string();
}

uint64_t fieldAt(const KernelArg &arg, unsigned offset) {
  uint64_t v;
  std::memcpy(&v, static_cast<const uint8_t *>(arg.data()) + offset, 8);
  return v;
}

// M, N, K: none a multiple of its block, so the last tile of each is partial.
constexpr int32_t kM = 200, kN = 300, kK = 320;

// block_n 128 and 256: the accumulator stored as whole rows through shared
// memory (128) or, where the ring leaves no room for that, directly (256).
ConstantValues e4m3Constants(bool persistent, int blockN = 128, int producer = 1) {
  ConstantValues c = {
      {"n", 300},       {"k", 320},   {"block_m", 128}, {"block_n", blockN},
      {"block_k", 128}, {"warps", 8}, {"stages", 4},    {"producer", producer}};
  if (persistent)
    c["persistent"] = 8;
  return c;
}

} // namespace

TEST_CASE("the launcher supplies a persistent kernel's grid and its TMA tensor maps, "
          "each built once per base and extents",
          "[jit][hopper]") {
  std::string cacheDir = freshCacheDirectory();
  auto device = std::make_unique<FakeDevice>();
  FakeDevice &fake = *device;
  auto jit = makeRuntime(std::move(device), cacheDir);
  REQUIRE(jit->targetArch().name() == "sm_90a");
  Kernel gemm = gemmKernel(*jit, "gemm_e4m3", e4m3Constants(/*persistent=*/true));
  DeviceBuffer a = allocateOrFail(*jit, kM * kK), w = allocateOrFail(*jit, kN * kK),
               c = allocateOrFail(*jit, kM * kN * 2), a2 = allocateOrFail(*jit, kM * kK);
  auto stream = Stream::create(jit->device());
  REQUIRE(!!stream);
  auto args = [&](DeviceBuffer &in, int32_t m) {
    return std::vector<KernelArg>{
        KernelArg::pointer(in.address()), KernelArg::pointer(w.address()),
        KernelArg::pointer(c.address()), KernelArg::i32(m), KernelArg::f32(0.5f)};
  };
  // The caller's grid: 2 x 3 tiles of 128 x 128.
  requireOk(gemm.launch(*stream, {2, 3, 1}, args(a, kM)));
  CHECK(formatSignature(gemm.compiled()->params) ==
        "(a: ptr, w: ptr, c: ptr, m: i32, scale: f32)");
  std::vector<FakeLaunch> launches = fake.launches();
  REQUIRE(launches.size() == 1);
  const FakeLaunch &first = launches[0];
  CHECK(first.config.grid.x == 6); // min(tiles, multiprocessors)
  CHECK(first.config.grid.y == 1);
  CHECK(first.config.block.x == 384); // 8 consumer warps + a producer warpgroup
  REQUIRE(first.args.size() == 9);
  CHECK(first.args[5].pattern() == 2); // grid_x
  CHECK(first.args[6].pattern() == 3); // grid_y
  REQUIRE(first.args[7].kind() == ParamKind::TensorMap);
  REQUIRE(first.args[8].kind() == ParamKind::TensorMap);
  CHECK(fieldAt(first.args[7], 0) == a.address());
  CHECK(fieldAt(first.args[7], 8) == uint64_t(kM)); // rows from the m argument
  CHECK(fieldAt(first.args[7], 16) == uint64_t(kK));
  CHECK(fieldAt(first.args[8], 0) == w.address());
  CHECK(fieldAt(first.args[8], 8) == uint64_t(kN));
  CHECK(fake.tensorMapsEncoded() == 2);

  // The same views again: no new descriptor; a new activation: one.
  requireOk(gemm.launch(*stream, {2, 3, 1}, args(a, kM)));
  CHECK(fake.tensorMapsEncoded() == 2);
  requireOk(gemm.launch(*stream, {2, 3, 1}, args(a2, kM)));
  CHECK(fake.tensorMapsEncoded() == 3);
  // A view of no rows has no descriptor: the launch says which and why.
  std::string empty = messageOf(gemm.launch(*stream, {1, 3, 1}, args(a, 0)));
  CHECK_THAT(empty, Catch::Contains("kernel 'gemm_e4m3': the tensor map of 'a.tensormap' "
                                    "(0 x 320 at "));
  CHECK_THAT(empty, Catch::Contains("global extents 0 x 320 outside [1, 2^32]"));
  CHECK(fake.launches().size() == 3);
  // A grid of more than two axes is not a grid of tiles.
  CHECK_THAT(messageOf(gemm.launch(*stream, {2, 3, 2}, args(a, kM))),
             Catch::Contains("walks a 2-D grid of tiles, got 2 x 3 x 2"));

  // A second process finds the entry on disk with what the launcher supplies.
  auto again = makeRuntime(std::make_unique<FakeDevice>(), cacheDir);
  Kernel cached = gemmKernel(*again, "gemm_e4m3", e4m3Constants(/*persistent=*/true));
  requireOk(cached.compile());
  CHECK(cached.origin() == CompileOrigin::Disk);
  CHECK(cached.compiled()->params == gemm.compiled()->params);
  REQUIRE(cached.compiled()->params.size() == 9);
  CHECK(cached.compiled()->params[5].gridAxis == std::optional<uint8_t>(0));
  CHECK(cached.compiled()->params[8].tensorMap->box == std::array<uint32_t, 2>{128, 128});
}

TEST_CASE("each launch passes its own tensor maps when it sees more views than the "
          "launcher keeps",
          "[jit][hopper]") {
  // Decode's portable plan launches one GEMM over 23 layers' weights and
  // activations (92 views); the launcher's cache of built maps evicted an
  // entry that the same launch's arguments still pointed at, and the GPU
  // stopped on a garbage descriptor (CUDA_ERROR_ILLEGAL_INSTRUCTION). Each
  // launch now copies its maps; the FakeDevice copies them at launch as the
  // driver does (under ASan the old pointer was a use after free).
  auto device = std::make_unique<FakeDevice>();
  FakeDevice &fake = *device;
  auto jit = makeRuntime(std::move(device), freshCacheDirectory());
  Kernel gemm = gemmKernel(*jit, "gemm_e4m3", e4m3Constants(/*persistent=*/true));
  constexpr int kViews = 300, kWeights = 7, kStep = 64;
  DeviceBuffer a = allocateOrFail(*jit, size_t(kM) * kK + kStep * kViews),
               w = allocateOrFail(*jit, size_t(kN) * kK + kStep * kWeights),
               c = allocateOrFail(*jit, size_t(kM) * kN * 2);
  auto stream = Stream::create(jit->device());
  REQUIRE(!!stream);
  // Views at distinct bases: new activations beside weights seen before, and
  // seen activations beside new weights, past the cache's 256 entries.
  std::vector<std::pair<uint64_t, uint64_t>> bases;
  for (int i = 0; i < 2 * kViews; ++i) {
    bases.emplace_back(a.address() + kStep * uint64_t((i * 37) % kViews),
                       w.address() + kStep * uint64_t(i % kWeights));
    requireOk(gemm.launch(
        *stream, {2, 3, 1},
        {KernelArg::pointer(bases.back().first), KernelArg::pointer(bases.back().second),
         KernelArg::pointer(c.address()), KernelArg::i32(kM), KernelArg::f32(0.5f)}));
  }
  std::vector<FakeLaunch> launches = fake.launches();
  REQUIRE(launches.size() == bases.size());
  int wrong = 0;
  for (size_t i = 0; i < launches.size(); ++i)
    wrong += fieldAt(launches[i].args[7], 0) != bases[i].first ||
             fieldAt(launches[i].args[8], 0) != bases[i].second;
  CHECK(wrong == 0);
  CHECK(fake.tensorMapsEncoded() > 256); // the cache evicted entries
}

namespace {

/// One GEMM on the GPU: y[m, n] = bf16(scale * sum_k a[m, k] w[n, k]) (no
/// scale: bf16 operands); outputs start as NaN, so an unwritten one fails.
std::vector<uint16_t> runGemm(JitRuntime &jit, Kernel &kernel, bool mMajorGrid,
                              const std::vector<uint8_t> &a,
                              const std::vector<uint8_t> &w, std::optional<float> scale) {
  DeviceBuffer da = allocateOrFail(jit, a.size()), dw = allocateOrFail(jit, w.size()),
               dc = allocateOrFail(jit, size_t(kM) * kN * 2);
  requireOk(da.upload(a));
  requireOk(dw.upload(w));
  requireOk(dc.upload(std::vector<uint8_t>(size_t(kM) * kN * 2, 0xFF)));
  auto stream = Stream::create(jit.device());
  REQUIRE(!!stream);
  std::vector<KernelArg> args = {KernelArg::pointer(da.address()),
                                 KernelArg::pointer(dw.address()),
                                 KernelArg::pointer(dc.address()), KernelArg::i32(kM)};
  if (scale)
    args.push_back(KernelArg::f32(*scale));
  uint32_t gm = (kM + 127) / 128, gn = (kN + 127) / 128;
  requireOk(kernel.launch(*stream, mMajorGrid ? Dim3{gm, gn, 1} : Dim3{gn, gm, 1}, args));
  requireOk(stream->synchronize());
  return download<uint16_t>(dc, size_t(kM) * kN);
}

/// The f64 product of a [kM, kK] and w [kN, kK] (decoded by `value`), times
/// `scale`: each output, its sum|a*w|, and the sum without the last 32 K
/// columns (a dropped K step).
struct Products {
  std::vector<double> ref, absum, dropped;
};
template <typename T, typename Value>
Products products(const std::vector<T> &a, const std::vector<T> &w, Value value,
                  double scale) {
  Products p{std::vector<double>(size_t(kM) * kN), std::vector<double>(size_t(kM) * kN),
             std::vector<double>(size_t(kM) * kN)};
  for (int32_t m = 0; m < kM; ++m)
    for (int32_t n = 0; n < kN; ++n) {
      double sum = 0, abs = 0, lastStep = 0;
      for (int32_t k = 0; k < kK; ++k) {
        double x = double(value(a[m * kK + k])) * value(w[n * kK + k]);
        sum += x;
        abs += std::abs(x);
        lastStep += k >= kK - 32 ? x : 0;
      }
      p.ref[m * kN + n] = scale * sum;
      p.absum[m * kN + n] = scale * abs;
      p.dropped[m * kN + n] = scale * (sum - lastStep);
    }
  return p;
}

/// Outputs outside |y - ref| <= ulp(ref) + sumBand * sum|a*w| (and NaN).
int64_t outsideBand(const std::vector<uint16_t> &y, const std::vector<double> &ref,
                    const std::vector<double> &absum, double sumBand) {
  int64_t outside = 0;
  for (size_t i = 0; i < y.size(); ++i) {
    double ulp = std::ldexp(1.0, std::ilogb(std::max(std::abs(ref[i]), 0x1p-126)) - 7);
    double err = std::abs(double(bf16ToF32(y[i])) - ref[i]);
    outside += !(err <= ulp + sumBand * absum[i]);
  }
  return outside;
}

} // namespace

TEST_CASE("GPU: e4m3 and bf16 GEMMs fed by a TMA producer warpgroup, persistent or not, "
          "against f64 with partial tiles in M, N and K",
          "[gpu][hopper]") {
  auto device = openGpuOrSkip();
  if (!device)
    return;
  auto jit = makeRuntime(std::move(device), freshCacheDirectory());
  if (jit->targetArch().name() != "sm_90a") {
    WARN("skipped: the TMA pipeline is sm_90a's, the GPU is "
         << jit->targetArch().name().str());
    return;
  }
  std::mt19937 rng(20);
  // e4m3: every finite code with a random sign (the full range R1h covers).
  std::uniform_int_distribution<int> code(0, 0x7E), sign(0, 1);
  auto e4m3Codes = [&](size_t count) {
    std::vector<uint8_t> v(count);
    for (uint8_t &x : v)
      x = uint8_t(code(rng) | (sign(rng) << 7));
    return v;
  };
  std::vector<uint8_t> a = e4m3Codes(size_t(kM) * kK), w = e4m3Codes(size_t(kN) * kK);
  const float scale = 1e-3f;
  const Products e4m3 = products(a, w, e4m3ToF32, scale);
  const std::vector<double> &ref = e4m3.ref, &absum = e4m3.absum, &dropped = e4m3.dropped;
  // R1h's band (the e4m3 wgmma sums with fewer bits) rejects a dropped K step.
  const double r1h = std::ldexp(1.0, -8);
  std::vector<uint16_t> droppedBf16(dropped.size());
  for (size_t i = 0; i < dropped.size(); ++i)
    droppedBf16[i] = f32ToBF16(float(dropped[i]));
  int64_t separated = outsideBand(droppedBf16, ref, absum, r1h);
  INFO("a dropped K step (32 columns) is outside the band on " << separated << " of "
                                                               << ref.size());
  CHECK(separated > int64_t(ref.size()) / 2);
  for (int blockN : {128, 256})
    for (bool persistent : {false, true}) {
      Kernel gemm = gemmKernel(*jit, "gemm_e4m3", e4m3Constants(persistent, blockN));
      std::vector<uint16_t> y = runGemm(*jit, gemm, true, a, w, scale);
      REQUIRE(gemm.compiled()->sums == SumPrecision::Reduced);
      int64_t outside = outsideBand(y, ref, absum, r1h);
      llvm::outs() << llvm::formatv(
          "gemm_e4m3 TMA producer{0}, 128x{1} tiles, {2}x{3}x{4}: "
          "{5} of {6} outside R1h's band\n",
          persistent ? ", persistent" : "", blockN, kM, kN, kK, outside, y.size());
      CHECK(outside == 0);
    }

  // bf16 (R1b, exact products, f32 sums in any order: K * 2^-24 of sum|a*w|),
  // the out_proj kernel the prefill plan runs, its wgmma kept in flight.
  std::normal_distribution<float> normal(0.0f, 2.0f);
  auto bf16Values = [&](size_t count) {
    std::vector<uint16_t> v(count);
    for (uint16_t &x : v)
      x = f32ToBF16(normal(rng));
    return v;
  };
  std::vector<uint16_t> ab = bf16Values(size_t(kM) * kK),
                        wb = bf16Values(size_t(kN) * kK);
  const Products bf16 = products(ab, wb, bf16ToF32, 1.0);
  for (bool persistent : {false, true}) {
    ConstantValues constants = {{"inner", 320},   {"hidden", 300},  {"fp8", 0},
                                {"block_m", 128}, {"block_n", 128}, {"block_k", 64},
                                {"warps", 8},     {"stages", 4},    {"producer", 1}};
    if (persistent)
      constants["persistent"] = 8;
    Kernel gemm = gemmKernel(*jit, "out_proj", constants);
    std::vector<uint16_t> y =
        runGemm(*jit, gemm, false, asBytes(ab), asBytes(wb), std::nullopt);
    int64_t outside = outsideBand(y, bf16.ref, bf16.absum, kK * std::ldexp(1.0, -24));
    llvm::outs() << llvm::formatv(
        "out_proj bf16 TMA producer{0}, {1}x{2}x{3}: {4} of {5} "
        "outside the f32 band\n",
        persistent ? ", persistent" : "", kM, kN, kK, outside, y.size());
    CHECK(outside == 0);
  }
}

TEST_CASE("GPU: GEMMs fed by TMA to mma.sync consumers (the portable sm_90 target), "
          "from a producer warp or from a consumer thread, against f64, with partial "
          "tiles in M, N and K",
          "[gpu][hopper]") {
  // The pipeline sm_90, sm_110a and sm_121a run (issue 35): TMA copies issued
  // by one producer warp (producer = 1) or by thread 0 of the consumers, stages
  // - 1 steps ahead (producer = 2), slots read by ldmatrix and released per
  // warp, exact sums (R1's and R1b's f32 bands, never R1h's), compiled for the
  // portable sm_90 target, which this GPU runs as it runs sm_90a.
  auto device = openGpuOrSkip();
  if (!device)
    return;
  auto jit = makeRuntime(std::move(device), freshCacheDirectory(), "sm_90");
  std::mt19937 rng(35);
  std::uniform_int_distribution<int> code(0, 0x7E), sign(0, 1);
  std::vector<uint8_t> a(size_t(kM) * kK), w(size_t(kN) * kK);
  for (auto *v : {&a, &w})
    for (uint8_t &x : *v)
      x = uint8_t(code(rng) | (sign(rng) << 7));
  const float scale = 1e-3f;
  const Products e4m3 = products(a, w, e4m3ToF32, scale);
  const double exact = kK * std::ldexp(1.0, -24);
  // The exact band rejects a dropped K step on most outputs.
  std::vector<uint16_t> droppedBf16(e4m3.dropped.size());
  for (size_t i = 0; i < droppedBf16.size(); ++i)
    droppedBf16[i] = f32ToBF16(float(e4m3.dropped[i]));
  CHECK(outsideBand(droppedBf16, e4m3.ref, e4m3.absum, exact) >
        int64_t(e4m3.ref.size()) / 2);
  for (int producer : {1, 2})
    for (bool persistent : {false, true}) {
      Kernel gemm =
          gemmKernel(*jit, "gemm_e4m3", e4m3Constants(persistent, 128, producer));
      std::vector<uint16_t> y = runGemm(*jit, gemm, true, a, w, scale);
      const std::string &ptx = gemm.compiled()->ptx;
      CHECK(ptx.find("cp.async.bulk.tensor") != std::string::npos);
      CHECK(ptx.find("mma.sync") != std::string::npos);
      CHECK(ptx.find("wgmma") == std::string::npos);
      // A producer warp beside the 8 consumer warps, or none.
      CHECK(gemm.compiled()->launch.threadsPerBlock == (producer == 1 ? 288u : 256u));
      CHECK(gemm.compiled()->sums == SumPrecision::Exact);
      int64_t outside = outsideBand(y, e4m3.ref, e4m3.absum, exact);
      llvm::outs() << llvm::formatv("gemm_e4m3 sm_90 TMA producer={0}, mma.sync{1}: {2} "
                                    "of {3} outside R1's band\n",
                                    producer, persistent ? ", persistent" : "", outside,
                                    y.size());
      CHECK(outside == 0);
    }
  std::normal_distribution<float> normal(0.0f, 2.0f);
  std::vector<uint16_t> ab(size_t(kM) * kK), wb(size_t(kN) * kK);
  for (auto *v : {&ab, &wb})
    for (uint16_t &x : *v)
      x = f32ToBF16(normal(rng));
  const Products bf16 = products(ab, wb, bf16ToF32, 1.0);
  // producer = 2 also at the portable plan's 128 x 256 tiles (64 x 64 per
  // warp, which only the consumers' whole register file holds) and with more
  // K steps than slots of a 2-slot ring.
  struct Variant {
    int producer;
    bool persistent;
    int64_t blockN, stages;
  };
  for (Variant v :
       {Variant{1, false, 128, 4}, Variant{1, true, 128, 4}, Variant{2, false, 128, 4},
        Variant{2, true, 256, 3}, Variant{2, false, 256, 2}}) {
    ConstantValues constants = {
        {"inner", 320},   {"hidden", 300},       {"fp8", 0},
        {"block_m", 128}, {"block_n", v.blockN}, {"block_k", 64},
        {"warps", 8},     {"stages", v.stages},  {"producer", v.producer}};
    if (v.persistent)
      constants["persistent"] = 8;
    Kernel gemm = gemmKernel(*jit, "out_proj", constants);
    std::vector<uint16_t> y =
        runGemm(*jit, gemm, false, asBytes(ab), asBytes(wb), std::nullopt);
    CHECK(gemm.compiled()->ptx.find("wgmma") == std::string::npos);
    int64_t outside = outsideBand(y, bf16.ref, bf16.absum, exact);
    llvm::outs() << llvm::formatv("out_proj bf16 sm_90 TMA producer {0}, block_n {1}, "
                                  "stages {2}, mma.sync{3}: {4} of {5} outside the "
                                  "f32 band\n",
                                  v.producer, v.blockN, v.stages,
                                  v.persistent ? ", persistent" : "", outside, y.size());
    CHECK(outside == 0);
  }
}
