// R1 (FP8 W8A8) and R1b (bf16) linear layers in f64. e4m3 x e4m3 products are
// multiples of 2^-18 below 2^18, so the f64 sum of up to 2^17 of them is exact.
#include "Checks.h"
#include "tilejit/models/reference/Reference.h"

#include "llvm/Support/Parallel.h"

#include <array>
#include <cmath>

namespace tilejit::models::ref {
namespace {

/// Checks x [M, K] against weight [N, K] and returns {M, N, K}.
template <typename W>
llvm::Expected<std::array<int64_t, 3>>
linearDims(llvm::StringRef op, const Tensor<uint16_t> &x, const Tensor<W> &weight) {
  if (auto err = detail::expectRank(op, "x", x, 2))
    return std::move(err);
  if (auto err = detail::expectRank(op, "weight", weight, 2))
    return std::move(err);
  if (weight.dim(1) != x.dim(1))
    return detail::shapeError(op, "weight", weight.shape, {weight.dim(0), x.dim(1)});
  return std::array<int64_t, 3>{x.dim(0), weight.dim(0), x.dim(1)};
}

} // namespace

llvm::Expected<Tensor<double>> linearFP8(const Tensor<uint16_t> &x,
                                         const Tensor<uint8_t> &weight, float weightScale,
                                         float inputScale) {
  auto dims = linearDims("linearFP8", x, weight);
  if (!dims)
    return dims.takeError();
  auto [M, N, K] = *dims;
  if (!(inputScale > 0.0f) || !std::isfinite(inputScale) || !(weightScale > 0.0f) ||
      !std::isfinite(weightScale))
    return llvm::createStringError("linearFP8: scales must be positive and finite, got "
                                   "weight scale %g, input scale %g",
                                   double(weightScale), double(inputScale));
  // The static activation scale from the checkpoint, never recomputed.
  std::vector<double> quantized(size_t(M * K));
  for (int64_t i = 0; i < M * K; ++i)
    quantized[i] = e4m3Value(e4m3Code(bf16Value(x.data[i]) / double(inputScale)));
  std::vector<double> weights(size_t(N * K));
  for (int64_t i = 0; i < N * K; ++i)
    weights[i] = e4m3Value(weight.data[i]);

  double scale = double(inputScale) * double(weightScale);
  Tensor<double> y({M, N});
  // Rows are independent: the reference of a large batch uses every core.
  llvm::parallelFor(0, size_t(M), [&](size_t m) {
    for (int64_t n = 0; n < N; ++n) {
      const double *a = &quantized[m * K], *w = &weights[n * K];
      double acc = 0.0;
      for (int64_t k = 0; k < K; ++k)
        acc += a[k] * w[k];
      y(int64_t(m), n) = scale * acc;
    }
  });
  return y;
}

llvm::Expected<Tensor<double>> linearBF16(const Tensor<uint16_t> &x,
                                          const Tensor<uint16_t> &weight) {
  auto dims = linearDims("linearBF16", x, weight);
  if (!dims)
    return dims.takeError();
  auto [M, N, K] = *dims;
  Tensor<double> xs = fromBF16(x), ws = fromBF16(weight);
  Tensor<double> y({M, N});
  llvm::parallelFor(0, size_t(M), [&](size_t m) {
    for (int64_t n = 0; n < N; ++n) {
      const double *a = &xs.data[m * K], *w = &ws.data[n * K];
      double acc = 0.0;
      for (int64_t k = 0; k < K; ++k)
        acc += a[k] * w[k];
      y(int64_t(m), n) = acc;
    }
  });
  return y;
}

llvm::Expected<Tensor<double>> linear(const Tensor<uint16_t> &x,
                                      const Projection &projection) {
  if (projection.isFP8)
    return linearFP8(x, projection.fp8Weight, projection.weightScale,
                     projection.inputScale);
  return linearBF16(x, projection.bf16Weight);
}

} // namespace tilejit::models::ref
