// R6: the gated group RMSNorm (norm_before_gate = False) in f64, with both
// rounding points of vLLM's native path and HF: bf16(w * bf16(v * r)).
#include "Checks.h"
#include "tilejit/models/reference/Reference.h"

#include <cmath>

namespace tilejit::models::ref {

llvm::Expected<Tensor<double>> gatedRmsNorm(const Tensor<uint16_t> &y,
                                            const Tensor<uint16_t> &z,
                                            const Tensor<uint16_t> &weight,
                                            int64_t groupSize, double eps) {
  if (auto err = detail::expectRank("gatedRmsNorm", "y", y, 2))
    return std::move(err);
  const int64_t rows = y.dim(0), width = y.dim(1);
  if (auto err = detail::expectShape("gatedRmsNorm", "z", z, {rows, width}))
    return std::move(err);
  if (auto err = detail::expectShape("gatedRmsNorm", "weight", weight, {width}))
    return std::move(err);
  if (groupSize < 1 || width % groupSize != 0)
    return llvm::createStringError(
        "gatedRmsNorm: group size %lld does not divide the row width %lld",
        (long long)groupSize, (long long)width);

  Tensor<double> out({rows, width});
  std::vector<double> gated(static_cast<size_t>(groupSize));
  for (int64_t t = 0; t < rows; ++t)
    for (int64_t begin = 0; begin < width; begin += groupSize) {
      double sumSquares = 0.0;
      for (int64_t i = 0; i < groupSize; ++i) {
        double v = bf16Value(y(t, begin + i)) * silu(bf16Value(z(t, begin + i)));
        gated[i] = v;
        sumSquares += v * v;
      }
      const double r = 1.0 / std::sqrt(sumSquares / double(groupSize) + eps);
      for (int64_t i = 0; i < groupSize; ++i)
        out(t, begin + i) =
            bf16Value(weight(begin + i)) * bf16Value(bf16Bits(gated[i] * r));
    }
  return out;
}

} // namespace tilejit::models::ref
