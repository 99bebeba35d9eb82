// R3 (causal depthwise conv1d + SiLU over a sequence) and R3d (the decode update)
// in f64. The conv state holds raw bf16 inputs, so storing it is exact.
#include "Checks.h"
#include "tilejit/models/reference/Reference.h"

namespace tilejit::models::ref {
namespace {

/// Checks weight [C, K] and bias [C]; returns {C, K}.
llvm::Expected<std::pair<int64_t, int64_t>> convDims(llvm::StringRef op,
                                                     const Tensor<uint16_t> &weight,
                                                     const Tensor<uint16_t> &bias) {
  if (auto err = detail::expectRank(op, "weight", weight, 2))
    return std::move(err);
  if (weight.dim(1) < 1)
    return detail::shapeError(op, "weight", weight.shape, {weight.dim(0), 1});
  if (auto err = detail::expectShape(op, "bias", bias, {weight.dim(0)}))
    return std::move(err);
  return std::make_pair(weight.dim(0), weight.dim(1));
}

} // namespace

llvm::Expected<ConvPrefillResult> convPrefill(const Tensor<uint16_t> &xBC,
                                              const Tensor<uint16_t> &weight,
                                              const Tensor<uint16_t> &bias,
                                              const Tensor<uint16_t> *initialState) {
  auto dims = convDims("convPrefill", weight, bias);
  if (!dims)
    return dims.takeError();
  auto [C, K] = *dims;
  if (auto err = detail::expectRank("convPrefill", "xBC", xBC, 2))
    return std::move(err);
  const int64_t L = xBC.dim(0), past = K - 1;
  if (auto err = detail::expectShape("convPrefill", "xBC", xBC, {L, C}))
    return std::move(err);
  if (initialState)
    if (auto err =
            detail::expectShape("convPrefill", "initialState", *initialState, {C, past}))
      return std::move(err);

  // u(tau) for tau in [-past, L): the initial state (or zeros), then the tokens.
  auto input = [&](int64_t c, int64_t tau) -> uint16_t {
    if (tau >= 0)
      return xBC(tau, c);
    return initialState ? (*initialState)(c, past + tau) : uint16_t(0);
  };
  ConvPrefillResult result{Tensor<double>({L, C}), Tensor<uint16_t>({C, past})};
  for (int64_t c = 0; c < C; ++c) {
    for (int64_t t = 0; t < L; ++t) {
      double pre = bf16Value(bias(c));
      for (int64_t j = 0; j < K; ++j)
        pre += bf16Value(weight(c, j)) * bf16Value(input(c, t - past + j));
      result.out(t, c) = silu(pre);
    }
    for (int64_t j = 0; j < past; ++j)
      result.state(c, j) = input(c, L - past + j);
  }
  return result;
}

llvm::Expected<Tensor<double>> convUpdate(const Tensor<uint16_t> &xt,
                                          const Tensor<uint16_t> &weight,
                                          const Tensor<uint16_t> &bias,
                                          Tensor<uint16_t> &state) {
  auto dims = convDims("convUpdate", weight, bias);
  if (!dims)
    return dims.takeError();
  auto [C, K] = *dims;
  if (auto err = detail::expectRank("convUpdate", "xt", xt, 2))
    return std::move(err);
  const int64_t rows = xt.dim(0), past = K - 1;
  if (auto err = detail::expectShape("convUpdate", "xt", xt, {rows, C}))
    return std::move(err);
  if (auto err = detail::expectShape("convUpdate", "state", state, {rows, C, past}))
    return std::move(err);

  Tensor<double> out({rows, C});
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < C; ++c) {
      // Same summation order as convPrefill, oldest tap first.
      double pre = bf16Value(bias(c));
      for (int64_t j = 0; j < past; ++j)
        pre += bf16Value(weight(c, j)) * bf16Value(state(r, c, j));
      pre += bf16Value(weight(c, past)) * bf16Value(xt(r, c));
      out(r, c) = silu(pre);
      for (int64_t j = 0; j + 1 < past; ++j)
        state(r, c, j) = state(r, c, j + 1);
      if (past > 0)
        state(r, c, past - 1) = xt(r, c);
    }
  return out;
}

} // namespace tilejit::models::ref
