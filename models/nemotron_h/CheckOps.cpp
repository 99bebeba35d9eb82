// The per-op checks of one NemotronH layer after a checked step (CheckOps.h).
#include "CheckOps.h"

#include "tilejit/support/FloatFormats.h"

#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <cmath>

namespace tilejit::models::detail {
namespace {

/// The spacing of e4m3 values at |v| (subnormals below 2^-6 are 2^-9 apart).
double e4m3Step(double v) {
  int exponent = 0;
  std::frexp(std::abs(v), &exponent);
  return std::ldexp(1.0, std::max(exponent - 1, -6) - 3);
}

/// The sum precision of layer `layer`'s launch in role `role`.
runtime::SumPrecision sumsOf(const StepPlan &plan, const LaunchSums &sums, int64_t layer,
                             llvm::StringRef role) {
  for (size_t i = 0; i < plan.launches.size() && i < sums.size(); ++i)
    if (plan.launches[i].layer == layer && plan.launches[i].role == role)
      return sums[i];
  return runtime::SumPrecision::Exact;
}

/// e4m3(x / s) the way a kernel that multiplies by the f32 reciprocal rounds it.
uint8_t reciprocalCode(uint16_t x, float scale) {
  float product = float(ref::bf16Value(x)) * (1.0f / scale);
  return ref::e4m3Code(double(product));
}

} // namespace

const std::vector<uint8_t> &layerIntermediate(const HostBuffers &buffers,
                                              const MambaLayerWeights &w,
                                              llvm::StringRef name) {
  return buffers.at(StepPlan::layerBuffer(w.layer, name));
}

Tensor<uint16_t> checkNorm(const NemotronHConfig &c, const MambaLayerWeights &w,
                           const Tensor<uint16_t> &y, const Tensor<uint16_t> &z,
                           const std::vector<uint8_t> &normed,
                           const std::vector<bool> &skip, StepCheck &check) {
  Tensor<double> want =
      cantFail(ref::gatedRmsNorm(y, z, w.normWeight, c.normGroupSize(), c.eps));
  NormCheck n;
  n.layer = w.layer;
  n.e4m3 = w.outProj.isFP8;
  n.scaleShows = !n.e4m3 || StepCheck::scaleShows(w.outProj.inputScale);
  const int64_t width = c.intermediate();
  for (int64_t r = 0; r < y.dim(0); ++r) {
    if (skip[r])
      continue;
    for (int64_t i = r * width; i < (r + 1) * width; ++i) {
      double reference = want.data[i], got, extra = 0;
      if (n.e4m3) {
        // A code from a value that moved within R6's band may lie as many
        // codes away as that span: compare decoded values, one step more.
        // The quant saturates at +-448 (R1), as the reference's does.
        const double s = w.outProj.inputScale;
        reference = std::clamp(reference, -448 * s, 448 * s);
        got = ref::e4m3Value(normed[i]) * s;
        extra = e4m3Step(reference / s) * s;
        const double dropped =
            ref::e4m3Value(ref::e4m3Code(std::clamp(want.data[i], -448.0, 448.0))) * s;
        n.droppedScale +=
            !(std::abs(dropped - reference) <=
              StepCheck::kOutAtol + extra + StepCheck::kOutRtol * std::abs(reference));
      } else {
        uint16_t bits;
        std::memcpy(&bits, &normed[2 * i], 2);
        got = ref::bf16Value(bits);
      }
      countInBand(got, reference, StepCheck::kOutAtol + extra, StepCheck::kOutRtol,
                  n.checked, n.outside, n.worst);
    }
  }
  check.norms.push_back(n);
  return ref::toBF16(want);
}

/// A reduced band (R1h) cannot see a dropped input scale (the codes keep their
/// relative precision at any scale short of saturation, and the output scale
/// drops it again): that defect is left to the norm's quant check, as the
/// activation quant's is for in_proj.
void checkOutProj(const NemotronHConfig &c, const MambaLayerWeights &w,
                  const StepPlan &plan, const LaunchSums &sums,
                  const std::vector<uint8_t> &normed, Tensor<uint16_t> unquantized,
                  const std::vector<uint8_t> &out, const std::vector<bool> &skip,
                  StepCheck &check) {
  const int64_t rows = int64_t(skip.size()), I = c.intermediate();
  LinearOperands ops;
  ops.projection = &w.outProj;
  const runtime::SumPrecision precision = sumsOf(plan, sums, w.layer, "out_proj");
  if (w.outProj.isFP8) {
    ops.codes = Tensor<uint8_t>({rows, I});
    std::memcpy(ops.codes.data.data(), normed.data(), ops.codes.data.size());
    if (precision == runtime::SumPrecision::Exact)
      ops.unquantized = std::move(unquantized);
  } else {
    ops.bf16 = tensorOf<uint16_t>(normed, {rows, I});
  }
  check.projections.push_back(
      checkProjection(llvm::formatv("layer {0} out_proj", w.layer).str(), ops, {},
                      tensorOf<uint16_t>(out, {rows, c.hiddenSize}), skip, precision));
}

Tensor<uint16_t> checkInProjGemm(const NemotronHConfig &c, const MambaLayerWeights &w,
                                 const StepPlan &plan, const LaunchSums &sums,
                                 const HostBuffers &b, const Tensor<uint16_t> &x,
                                 StepCheck &check) {
  LinearOperands ops;
  ops.projection = &w.inProj;
  if (w.inProj.isFP8) {
    const std::vector<uint8_t> &q = layerIntermediate(b, w, "act_q");
    ops.codes = Tensor<uint8_t>(x.shape);
    std::memcpy(ops.codes.data.data(), q.data(), ops.codes.data.size());
    check.quantScaleShows &= StepCheck::scaleShows(w.inProj.inputScale);
    for (size_t i = 0; i < x.data.size(); ++i) {
      const uint8_t want = ref::e4m3Code(ref::bf16Value(x.data[i]) / w.inProj.inputScale),
                    alternative = reciprocalCode(x.data[i], w.inProj.inputScale),
                    unscaled = ref::e4m3Code(ref::bf16Value(x.data[i]));
      ++check.quantChecked;
      check.quantBad += q[i] != want && q[i] != alternative;
      check.quantDroppedScale += unscaled != want && unscaled != alternative;
    }
    // The GEMM reads the codes checked here, so a dropped input_scale can
    // only act in this quant: the code check above is its guard, not the
    // GEMM's band (which, reduced, cannot see a rescaled quant: e4m3 keeps
    // its relative precision at any scale short of saturation).
  } else {
    ops.bf16 = x;
  }
  Tensor<uint16_t> zxbcdt =
      tensorOf<uint16_t>(layerIntermediate(b, w, "zxbcdt"), {x.shape[0], c.inProjRows()});
  check.projections.push_back(checkProjection(
      llvm::formatv("layer {0} in_proj", w.layer).str(), ops, {}, zxbcdt,
      std::vector<bool>(x.shape[0], false), sumsOf(plan, sums, w.layer, "in_proj")));
  return zxbcdt;
}

Tensor<uint16_t> checkFusedInProj(const NemotronHConfig &c, const MambaLayerWeights &w,
                                  const StepPlan &plan, const LaunchSums &sums,
                                  const HostBuffers &b, const Tensor<uint16_t> &x,
                                  const std::vector<bool> &skip, StepCheck &check) {
  const int64_t rows = x.dim(0), I = c.intermediate(), Cd = c.convChannels();
  const int64_t H = c.numHeads;
  // The kernel quantizes x by the reciprocal.
  LinearOperands ops;
  ops.projection = &w.inProj;
  if (w.inProj.isFP8) {
    ops.codes = Tensor<uint8_t>(x.shape);
    ops.alternative = Tensor<uint8_t>(x.shape);
    for (size_t i = 0; i < x.data.size(); ++i) {
      ops.codes.data[i] = ref::e4m3Code(ref::bf16Value(x.data[i]) / w.inProj.inputScale);
      ops.alternative.data[i] = reciprocalCode(x.data[i], w.inProj.inputScale);
    }
    ops.unquantized = x;
  } else {
    ops.bf16 = x;
  }
  std::vector<int64_t> columns;
  for (int64_t n = 0; n < I; ++n)
    columns.push_back(n);
  for (int64_t n = I + Cd; n < I + Cd + H; ++n)
    columns.push_back(n);
  Tensor<uint16_t> z = tensorOf<uint16_t>(layerIntermediate(b, w, "z"), {rows, I});
  Tensor<uint16_t> dt = tensorOf<uint16_t>(layerIntermediate(b, w, "dt"), {rows, H});
  Tensor<uint16_t> zdt({rows, I + H});
  for (int64_t r = 0; r < rows; ++r) {
    std::copy_n(&z.data[r * I], I, &zdt.data[r * (I + H)]);
    std::copy_n(&dt.data[r * H], H, &zdt.data[r * (I + H) + I]);
  }
  check.projections.push_back(
      checkProjection(llvm::formatv("layer {0} in_proj (z, dt)", w.layer).str(), ops,
                      columns, zdt, skip, sumsOf(plan, sums, w.layer, "in_proj")));
  return z;
}

void checkSsd(const NemotronHConfig &c, const MambaLayerWeights &w,
              const ref::PrefillBatch &batch, int64_t chunk, SsdPrecision precision,
              const HostBuffers &b, const std::vector<float> &ssmBefore,
              StepCheck &check) {
  const int64_t tokens = batch.cuSeqlens.back(), I = c.intermediate();
  const int64_t Cd = c.convChannels(), H = c.numHeads, P = c.headDim;
  const int64_t G = c.numGroups, N = c.stateSize, page = H * P * N;
  const Tensor<uint16_t> xBC =
      tensorOf<uint16_t>(layerIntermediate(b, w, "xbc"), {tokens, Cd});
  const Tensor<uint16_t> dt = sliceColumns(
      tensorOf<uint16_t>(layerIntermediate(b, w, "zxbcdt"), {tokens, c.inProjRows()}),
      I + Cd, I + Cd + H);
  const Tensor<uint16_t> y =
      tensorOf<uint16_t>(layerIntermediate(b, w, "y"), {tokens, I});
  const ref::SsmParams params = ref::SsmParams::of(c, w);
  const bool reduced = precision != SsdPrecision::Exact;
  SsdCheck ssd;
  ssd.layer = w.layer;
  ssd.precision = precision;
  int64_t yardChecked = 0;
  for (size_t s = 0; s + 1 < batch.cuSeqlens.size(); ++s) {
    const int64_t begin = batch.cuSeqlens[s], end = batch.cuSeqlens[s + 1];
    if (batch.slots[s] < 0)
      continue;
    const Tensor<uint16_t> rows = sliceRows(xBC, begin, end);
    const int64_t len = end - begin;
    Tensor<float> initial({H, P, N});
    std::copy_n(ssmBefore.begin() + batch.slots[s] * page, page, initial.data.begin());
    const Tensor<float> *from = batch.continueFromSlot[s] ? &initial : nullptr;
    const Tensor<uint16_t> x = sliceColumns(rows, 0, I).reshaped({len, H, P});
    const Tensor<uint16_t> B = sliceColumns(rows, I, I + G * N).reshaped({len, G, N});
    const Tensor<uint16_t> C = sliceColumns(rows, I + G * N, Cd).reshaped({len, G, N});
    const Tensor<uint16_t> dts = sliceRows(dt, begin, end);
    const Tensor<double> want = cantFail(ref::ssmScan(x, dts, B, C, params, from)).y;
    const bool shortSeq = len <= SsdCheck::kShortTokens;
    const double atol = shortSeq ? SsdCheck::kShortAtol : SsdCheck::kLongAtol;
    const double rtol = shortSeq ? SsdCheck::kShortRtol : SsdCheck::kLongRtol;
    for (int64_t i = 0; i < len * I; ++i)
      countInBand(ref::bf16Value(y.data[begin * I + i]), want.data[i], atol, rtol,
                  ssd.checked, ssd.outside, ssd.worst);
    if (!reduced)
      continue;
    const Tensor<uint16_t> yard =
        ref::toBF16(cantFail(ref::ssdYardstick(x, dts, B, C, params, from, chunk)).y);
    for (int64_t i = 0; i < len * I; ++i)
      countInBand(ref::bf16Value(yard.data[i]), want.data[i], atol, rtol, yardChecked,
                  ssd.yardOutside, ssd.yardWorst);
  }
  check.ssds.push_back(ssd);
}

} // namespace tilejit::models::detail

namespace tilejit::models {

bool SsdCheck::ok() const {
  if (checked == 0)
    return false;
  if (precision == SsdPrecision::Exact)
    return outside == 0;
  return outside <= yardOutside && worst <= kMaxWorstRatio * yardWorst;
}

void SsdCheck::print(llvm::raw_ostream &os) const {
  os << llvm::formatv("  layer {0} ssd y: {1} elements against the f64 R5, band {2}/{3} "
                      "(up to {4} tokens a sequence), {5}/{6} beyond: ",
                      layer, checked, kShortAtol, kShortRtol, kShortTokens, kLongAtol,
                      kLongRtol);
  if (precision == SsdPrecision::Exact) {
    os << llvm::formatv("exact operands, R5p: {0} outside (needs 0), worst {1:f2} of the "
                        "band\n",
                        outside, worst);
    return;
  }
  os << llvm::formatv(
      "{0} operands, R5p-m against the bf16 yardstick on the same inputs: {1} "
      "outside, yardstick {2} (needs <= {2}); worst {3:f2} of the band, yardstick "
      "{4:f2} (needs <= {5:f2})\n",
      precision == SsdPrecision::UpstreamBF16 ? "upstream (single bf16)" : "split state",
      outside, yardOutside, worst, yardWorst, kMaxWorstRatio * yardWorst);
}

} // namespace tilejit::models
