// R4 (discretization), R5 (the sequential SSM recurrence, never chunked), R5d
// (one decode step on a stored f32 state) in f64, sharing one step function, and
// R5p-m's yardstick (the chunked algorithm with bf16 operands).
#include "Checks.h"
#include "tilejit/models/reference/Reference.h"

#include <algorithm>
#include <cmath>

namespace tilejit::models::ref {
namespace {

struct SsmDims {
  int64_t rows, heads, headDim, groups, stateSize;
};

/// Checks x [R, H, P], dt [R, H], B and C [R, G, N] and the [H] parameters.
llvm::Expected<SsmDims> ssmDims(llvm::StringRef op, const Tensor<uint16_t> &x,
                                const Tensor<uint16_t> &dt, const Tensor<uint16_t> &B,
                                const Tensor<uint16_t> &C, const SsmParams &params) {
  if (auto err = detail::expectRank(op, "x", x, 3))
    return std::move(err);
  if (auto err = detail::expectRank(op, "B", B, 3))
    return std::move(err);
  SsmDims d{x.dim(0), x.dim(1), x.dim(2), B.dim(1), B.dim(2)};
  if (d.heads < 1 || d.headDim < 1 || d.stateSize < 1)
    return llvm::createStringError("%s: empty head or state dimension: x %s, B %s",
                                   op.str().c_str(), formatShape(x.shape).c_str(),
                                   formatShape(B.shape).c_str());
  if (d.groups < 1 || d.heads % d.groups != 0)
    return llvm::createStringError("%s: %lld heads cannot share %lld groups evenly",
                                   op.str().c_str(), (long long)d.heads,
                                   (long long)d.groups);
  if (auto err = detail::expectShape(op, "dt", dt, {d.rows, d.heads}))
    return std::move(err);
  if (auto err = detail::expectShape(op, "B", B, {d.rows, d.groups, d.stateSize}))
    return std::move(err);
  if (auto err = detail::expectShape(op, "C", C, {d.rows, d.groups, d.stateSize}))
    return std::move(err);
  if (auto err = detail::expectShape(op, "A_log", params.aLog, {d.heads}))
    return std::move(err);
  if (auto err = detail::expectShape(op, "dt_bias", params.dtBias, {d.heads}))
    return std::move(err);
  if (auto err = detail::expectShape(op, "D", params.d, {d.heads}))
    return std::move(err);
  return d;
}

/// One R5 step of head h on row r: S <- a S + dt' B x^T, y = S C + D x.
/// `state` points at the head's [P, N] state, `y` at its [P] output.
void ssmStep(const SsmDims &d, const SsmParams &params, const Tensor<uint16_t> &x,
             const Tensor<uint16_t> &dt, const Tensor<uint16_t> &B,
             const Tensor<uint16_t> &C, int64_t r, int64_t h, double *state, double *y) {
  const int64_t g = h / (d.heads / d.groups);
  const double step =
      timeStep(bf16Value(dt(r, h)), params.dtBias(h), params.dtMin, params.dtMax);
  const double decay = std::exp(decayRate(params.aLog(h)) * step);
  for (int64_t p = 0; p < d.headDim; ++p) {
    const double xp = bf16Value(x(r, h, p));
    double *row = state + p * d.stateSize;
    double acc = 0.0;
    for (int64_t n = 0; n < d.stateSize; ++n) {
      row[n] = decay * row[n] + step * bf16Value(B(r, g, n)) * xp;
      acc += row[n] * bf16Value(C(r, g, n));
    }
    y[p] = acc + double(params.d(h)) * xp;
  }
}

/// R5p-m's yardstick over one chunk [t0, t0 + len) of head h: y's rows of the
/// chunk, then the carried state `S` [P, N] moved past the chunk.
void yardstickChunk(const SsmDims &d, const SsmParams &params, const Tensor<uint16_t> &x,
                    const Tensor<uint16_t> &dt, const Tensor<uint16_t> &B,
                    const Tensor<uint16_t> &C, int64_t h, int64_t t0, int64_t len,
                    Rounding stateRounding, std::vector<double> &S, Tensor<double> &y) {
  const int64_t g = h / (d.heads / d.groups), P = d.headDim, N = d.stateSize;
  auto rnd = [](double v) { return double(roundToBF16(float(v))); };
  const double a = decayRate(params.aLog(h));
  std::vector<double> step(len), lam(len);
  double sum = 0;
  for (int64_t i = 0; i < len; ++i) {
    step[i] =
        timeStep(bf16Value(dt(t0 + i, h)), params.dtBias(h), params.dtMin, params.dtMax);
    lam[i] = (sum += step[i] * a);
  }
  auto xv = [&](int64_t i, int64_t p) { return bf16Value(x(t0 + i, h, p)); };
  auto bv = [&](int64_t i, int64_t n) { return bf16Value(B(t0 + i, g, n)); };
  auto cv = [&](int64_t i, int64_t n) { return bf16Value(C(t0 + i, g, n)); };
  // The products' bf16 operands: the decayed CB mix [i, j <= i] and the
  // carried state entering C S_in.
  std::vector<double> mix(len * len, 0.0), carried(P * N);
  for (int64_t i = 0; i < len; ++i)
    for (int64_t j = 0; j <= i; ++j) {
      double cb = 0;
      for (int64_t n = 0; n < N; ++n)
        cb += cv(i, n) * bv(j, n);
      mix[i * len + j] = rnd(cb * std::exp(std::min(lam[i] - lam[j], 0.0)) * step[j]);
    }
  for (int64_t i = 0; i < P * N; ++i)
    carried[i] = double(roundToBF16(float(S[i]), stateRounding));
  for (int64_t i = 0; i < len; ++i)
    for (int64_t p = 0; p < P; ++p) {
      double acc = 0, carry = 0;
      for (int64_t j = 0; j <= i; ++j)
        acc += mix[i * len + j] * xv(j, p);
      for (int64_t n = 0; n < N; ++n)
        carry += cv(i, n) * carried[p * N + n];
      y(t0 + i, h, p) = acc + std::exp(lam[i]) * carry + double(params.d(h)) * xv(i, p);
    }
  // The chunk's state contribution, its decayed dt' x rounded to bf16.
  std::vector<double> xdt(len);
  for (int64_t p = 0; p < P; ++p) {
    for (int64_t j = 0; j < len; ++j)
      xdt[j] = rnd(xv(j, p) * std::exp(std::min(sum - lam[j], 0.0)) * step[j]);
    for (int64_t n = 0; n < N; ++n) {
      double next = S[p * N + n] * std::exp(sum);
      for (int64_t j = 0; j < len; ++j)
        next += xdt[j] * bv(j, n);
      S[p * N + n] = stateRounding == Rounding::NearestEven
                         ? next
                         : double(roundToBF16(float(next), stateRounding));
    }
  }
}

} // namespace

SsmParams SsmParams::of(const NemotronHConfig &config, const MambaLayerWeights &weights) {
  return {weights.aLog, weights.dtBias, weights.d, config.dtMin, config.dtMax};
}

double decayRate(float aLog) { return -std::exp(double(aLog)); }

double timeStep(double dt, double dtBias, double dtMin, double dtMax) {
  return std::clamp(softplus(dt + dtBias), dtMin, dtMax);
}

llvm::Expected<SsmScanResult> ssmScan(const Tensor<uint16_t> &x,
                                      const Tensor<uint16_t> &dt,
                                      const Tensor<uint16_t> &B,
                                      const Tensor<uint16_t> &C, const SsmParams &params,
                                      const Tensor<float> *initialState) {
  auto dims = ssmDims("ssmScan", x, dt, B, C, params);
  if (!dims)
    return dims.takeError();
  const SsmDims &d = *dims;
  if (initialState)
    if (auto err = detail::expectShape("ssmScan", "initialState", *initialState,
                                       {d.heads, d.headDim, d.stateSize}))
      return std::move(err);

  SsmScanResult result{Tensor<double>({d.rows, d.heads, d.headDim}),
                       Tensor<double>({d.heads, d.headDim, d.stateSize})};
  if (initialState)
    result.state.data.assign(initialState->data.begin(), initialState->data.end());
  const int64_t headState = d.headDim * d.stateSize;
  for (int64_t h = 0; h < d.heads; ++h)
    for (int64_t t = 0; t < d.rows; ++t)
      ssmStep(d, params, x, dt, B, C, t, h, &result.state.data[h * headState],
              &result.y(t, h, 0));
  return result;
}

llvm::Expected<SsmScanResult>
ssdYardstick(const Tensor<uint16_t> &x, const Tensor<uint16_t> &dt,
             const Tensor<uint16_t> &B, const Tensor<uint16_t> &C,
             const SsmParams &params, const Tensor<float> *initialState, int64_t chunk,
             Rounding stateRounding) {
  auto dims = ssmDims("ssdYardstick", x, dt, B, C, params);
  if (!dims)
    return dims.takeError();
  const SsmDims &d = *dims;
  if (chunk < 1)
    return llvm::createStringError("ssdYardstick: chunk %lld is not positive",
                                   (long long)chunk);
  if (initialState)
    if (auto err = detail::expectShape("ssdYardstick", "initialState", *initialState,
                                       {d.heads, d.headDim, d.stateSize}))
      return std::move(err);
  SsmScanResult result{Tensor<double>({d.rows, d.heads, d.headDim}),
                       Tensor<double>({d.heads, d.headDim, d.stateSize})};
  const int64_t headState = d.headDim * d.stateSize;
  std::vector<double> S(headState);
  for (int64_t h = 0; h < d.heads; ++h) {
    for (int64_t i = 0; i < headState; ++i)
      S[i] = initialState ? double(initialState->data[h * headState + i]) : 0.0;
    for (int64_t t0 = 0; t0 < d.rows; t0 += chunk)
      yardstickChunk(d, params, x, dt, B, C, h, t0, std::min(chunk, d.rows - t0),
                     stateRounding, S, result.y);
    std::copy(S.begin(), S.end(), result.state.data.begin() + h * headState);
  }
  return result;
}

llvm::Expected<Tensor<double>> ssmUpdate(const Tensor<uint16_t> &x,
                                         const Tensor<uint16_t> &dt,
                                         const Tensor<uint16_t> &B,
                                         const Tensor<uint16_t> &C,
                                         const SsmParams &params, Tensor<float> &state) {
  auto dims = ssmDims("ssmUpdate", x, dt, B, C, params);
  if (!dims)
    return dims.takeError();
  const SsmDims &d = *dims;
  if (auto err = detail::expectShape("ssmUpdate", "state", state,
                                     {d.rows, d.heads, d.headDim, d.stateSize}))
    return std::move(err);

  Tensor<double> y({d.rows, d.heads, d.headDim});
  const int64_t headState = d.headDim * d.stateSize;
  std::vector<double> work(static_cast<size_t>(headState));
  for (int64_t r = 0; r < d.rows; ++r)
    for (int64_t h = 0; h < d.heads; ++h) {
      float *stored = &state(r, h, 0, 0);
      work.assign(stored, stored + headState);
      ssmStep(d, params, x, dt, B, C, r, h, work.data(), &y(r, h, 0));
      for (int64_t i = 0; i < headState; ++i) // the f32 store of the new state
        stored[i] = float(work[i]);
    }
  return y;
}

} // namespace tilejit::models::ref
