// Per-output bands of a projection (R1, R1h, R1b in docs/numerics.md) from the
// codes the backend actually fed it, and the share of outputs each band rejects
// under the defects it must separate (Check.h).
#include "tilejit/models/nemotron_h/Check.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Parallel.h"

#include <cmath>

namespace tilejit::models {
namespace {

/// One bf16 ulp at |v| (the spacing of bf16 values around it).
double bf16Ulp(double v) {
  int exponent = 0;
  std::frexp(std::abs(v), &exponent); // |v| = f * 2^exponent, f in [0.5, 1)
  return std::ldexp(1.0, std::max(exponent - 1, -126) - 7);
}

/// The activation and weight values of one linear, widened once.
struct Widened {
  int64_t m = 0, n = 0, k = 0;
  std::vector<float> a, alternative, w; ///< [M, K], [M, K] or empty, [N, K]
  double scale = 1;
};

Widened widen(const LinearOperands &ops) {
  Widened out;
  const Projection &p = *ops.projection;
  out.k = p.isFP8 ? p.fp8Weight.dim(1) : p.bf16Weight.dim(1);
  out.n = p.isFP8 ? p.fp8Weight.dim(0) : p.bf16Weight.dim(0);
  out.m = p.isFP8 ? ops.codes.dim(0) : ops.bf16.dim(0);
  out.a.resize(size_t(out.m * out.k));
  out.w.resize(size_t(out.n * out.k));
  for (size_t i = 0; i < out.a.size(); ++i)
    out.a[i] = float(p.isFP8 ? ref::e4m3Value(ops.codes.data[i])
                             : ref::bf16Value(ops.bf16.data[i]));
  for (size_t i = 0; i < out.w.size(); ++i)
    out.w[i] = float(p.isFP8 ? ref::e4m3Value(p.fp8Weight.data[i])
                             : ref::bf16Value(p.bf16Weight.data[i]));
  if (p.isFP8 && !ops.alternative.data.empty()) {
    out.alternative.resize(out.a.size());
    for (size_t i = 0; i < out.a.size(); ++i)
      out.alternative[i] = float(ref::e4m3Value(ops.alternative.data[i]));
  }
  out.scale = p.isFP8 ? double(p.inputScale) * double(p.weightScale) : 1.0;
  return out;
}

/// The K step a "dropped K step" defect drops: 32 columns, as a kernel's
/// smallest K tile.
constexpr int64_t kDroppedK = 32;

/// sum_k a_k w_k, sum_k |a_k w_k| and sum_k |a'_k - a_k| |w_k| over K, and the
/// largest |sum| of a_k w_k over one aligned K step of kDroppedK: the step
/// whose loss moves the output most. Its sum is at least |sum_k a_k w_k| /
/// (K / kDroppedK), so the dropped-K-step defect is as visible as the output
/// allows on any input, never hidden by a step that happens to be small.
struct Sums {
  double exact = 0, magnitude = 0, alternative = 0, largestStep = 0;
};
Sums dotSums(const Widened &v, int64_t row, int64_t column) {
  const float *a = &v.a[row * v.k], *w = &v.w[column * v.k];
  const float *alt = v.alternative.empty() ? nullptr : &v.alternative[row * v.k];
  Sums s;
  double step = 0;
  for (int64_t k = 0; k < v.k; ++k) {
    double product = double(a[k]) * double(w[k]); // exact: e4m3 or bf16 squared
    s.exact += product;
    step += product;
    s.magnitude += std::abs(product);
    if (alt && alt[k] != a[k])
      s.alternative += std::abs(double(alt[k]) - double(a[k])) * std::abs(double(w[k]));
    if ((k + 1) % kDroppedK == 0 || k + 1 == v.k) {
      if (std::abs(step) > std::abs(s.largestStep))
        s.largestStep = step;
      step = 0;
    }
  }
  return s;
}

/// The band of one output: one bf16 ulp of the f64 result, the sum's own
/// error bound, and what the other quant code may move.
double band(double want, const Sums &s, double scale, int64_t k,
            runtime::SumPrecision sums) {
  double accumulation =
      sums == runtime::SumPrecision::Reduced ? std::ldexp(1.0, -8) : double(k) * 0x1p-24;
  return bf16Ulp(want) + scale * (s.magnitude * accumulation + s.alternative);
}

} // namespace

bool ProjectionCheck::separates() const {
  auto meets = [](double share, double floor) { return share < 0 || share >= floor; };
  const Floors &f = floors();
  return sampled > 0 && meets(droppedKStep, f.droppedKStep) &&
         meets(scaledColumn, f.scaledColumn) &&
         meets(droppedInputScale, f.droppedInputScale);
}

void ProjectionCheck::print(llvm::raw_ostream &os) const {
  auto share = [](double s) {
    return s < 0 ? std::string("n/a") : llvm::formatv("{0:f1} %", 100 * s).str();
  };
  os << llvm::formatv(
      "  {0}: {1} sums, band 1 ulp + {2}: {3} outputs, {4} outside (worst "
      "{5:f2} of the band)\n",
      what, runtime::sumPrecisionName(sums),
      sums == runtime::SumPrecision::Reduced ? "2^-8 s sum|a w| (R1h)"
                                             : "K 2^-24 s sum|a w| (R1)",
      checked, outside, worst);
  const Floors &f = floors();
  os << llvm::formatv(
      "    the band rejects, of {0} sampled outputs: a dropped K step {1} "
      "(needs {2:f0} %), a weight column scaled by 1 + 1/8 {3} (needs {4:f0} "
      "%), a dropped input_scale {5} (needs {6:f0} %){7}\n",
      sampled, share(droppedKStep), 100 * f.droppedKStep, share(scaledColumn),
      100 * f.scaledColumn, share(droppedInputScale), 100 * f.droppedInputScale,
      separates() ? "" : ": TOO WEAK");
}

ProjectionCheck checkProjection(std::string what, const LinearOperands &ops,
                                llvm::ArrayRef<int64_t> columns,
                                const Tensor<uint16_t> &got,
                                const std::vector<bool> &skipRow,
                                runtime::SumPrecision sums) {
  ProjectionCheck check;
  check.what = std::move(what);
  check.sums = sums;
  const Widened v = widen(ops);
  std::vector<int64_t> cols(columns.begin(), columns.end());
  if (cols.empty())
    for (int64_t n = 0; n < v.n; ++n)
      cols.push_back(n);
  const int64_t width = int64_t(cols.size());

  // Every output: rows in parallel, each row's counts kept apart.
  std::vector<int64_t> checked(v.m), outside(v.m);
  std::vector<double> worst(v.m);
  llvm::parallelFor(0, size_t(v.m), [&](size_t m) {
    if (m < skipRow.size() && skipRow[m])
      return;
    for (int64_t c = 0; c < width; ++c) {
      Sums s = dotSums(v, int64_t(m), cols[c]);
      double want = v.scale * s.exact;
      double error = std::abs(ref::bf16Value(got.data[m * width + c]) - want);
      double b = band(want, s, v.scale, v.k, sums);
      ++checked[m];
      if (!(error <= b))
        ++outside[m];
      worst[m] = std::max(worst[m], std::isnan(error) ? INFINITY : error / b);
    }
  });
  for (int64_t m = 0; m < v.m; ++m) {
    check.checked += checked[m];
    check.outside += outside[m];
    check.worst = std::max(check.worst, worst[m]);
  }

  // The separations, on the first few live rows: each defect's bf16 output
  // against the same band.
  constexpr int64_t kSampleRows = 4;
  const Projection &p = *ops.projection;
  const bool inputScale = p.isFP8 && !ops.unquantized.data.empty();
  int64_t rejectedK = 0, rejectedColumn = 0, rejectedScale = 0, sampled = 0,
          scaleSampled = 0;
  for (int64_t m = 0, rows = 0; m < v.m && rows < kSampleRows; ++m) {
    if (m < int64_t(skipRow.size()) && skipRow[m])
      continue;
    ++rows;
    std::vector<float> unscaled; // e4m3(x), the quant with input_scale dropped
    // Where s_x is a power of two, e4m3(x) = s_x e4m3(x / s_x) short of
    // saturation: the defect moves no value of such a row, on any band, so
    // the row is left out of its sample rather than counted as missed.
    bool scaleMoves = false;
    if (inputScale)
      for (int64_t k = 0; k < v.k; ++k) {
        unscaled.push_back(float(ref::e4m3Value(
            ref::e4m3Code(ref::bf16Value(ops.unquantized.data[m * v.k + k])))));
        scaleMoves |= double(unscaled.back()) != double(v.a[m * v.k + k]) * p.inputScale;
      }
    for (int64_t c = 0; c < width; ++c) {
      const int64_t n = cols[c];
      Sums s = dotSums(v, m, n);
      double want = v.scale * s.exact, b = band(want, s, v.scale, v.k, sums);
      auto rejects = [&](double defective) {
        return std::abs(ref::bf16Value(ref::bf16Bits(defective)) - want) > b;
      };
      ++sampled;
      rejectedK += rejects(v.scale * (s.exact - s.largestStep));
      rejectedColumn += rejects(want * 9 / 8);
      if (scaleMoves) {
        double acc = 0;
        for (int64_t k = 0; k < v.k; ++k)
          acc += double(unscaled[k]) * v.w[n * v.k + k];
        rejectedScale += rejects(double(p.weightScale) * acc);
        ++scaleSampled;
      }
    }
  }
  check.sampled = sampled;
  if (sampled) {
    check.droppedKStep = double(rejectedK) / sampled;
    check.scaledColumn = double(rejectedColumn) / sampled;
    if (scaleSampled)
      check.droppedInputScale = double(rejectedScale) / scaleSampled;
  }
  return check;
}

} // namespace tilejit::models
