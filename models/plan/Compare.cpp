// One buffer compared between two backends, and the model-free helpers of the
// step checks (Compare.h).
#include "tilejit/models/plan/Compare.h"
#include "tilejit/models/reference/HostTensor.h"
#include "tilejit/support/FloatFormats.h"

#include <cmath>
#include <cstring>

namespace tilejit::models {
namespace {

template <typename T> T element(const std::vector<uint8_t> &bytes, size_t i) {
  T v;
  std::memcpy(&v, &bytes[i * sizeof(T)], sizeof(T));
  return v;
}

} // namespace

void countInBand(double got, double want, double atol, double rtol, int64_t &checked,
                 int64_t &outside, double &worst) {
  double band = atol + rtol * std::abs(want), error = std::abs(got - want);
  ++checked;
  if (!(error <= band))
    ++outside;
  worst = std::max(worst, std::isnan(error) ? INFINITY : error / band);
}

BufferAgreement compareBuffer(const PlanBuffer &buffer, const std::vector<uint8_t> &a,
                              const std::vector<uint8_t> &b) {
  BufferAgreement result;
  result.type = tensorTypeName(buffer.type).str();
  switch (buffer.type) {
  case DType::F32:
    for (size_t i = 0; i < a.size() / 4; ++i) {
      float x = element<float>(a, i), y = element<float>(b, i);
      countInBand(x, y, kF32Atol, kF32Rtol, result.elements, result.outside,
                  result.maxError);
      result.identical += std::memcmp(&x, &y, 4) == 0;
    }
    break;
  case DType::F8E4M3:
    for (size_t i = 0; i < a.size(); ++i) {
      // Codes of one sign are ordered like their values: one code apart is one
      // quantization step.
      int d = std::abs(int(a[i] & 0x7f) - int(b[i] & 0x7f));
      bool sameSign = (a[i] & 0x80) == (b[i] & 0x80);
      ++result.elements;
      result.identical += a[i] == b[i];
      result.outside += !(sameSign ? d <= 1 : (a[i] & 0x7f) + (b[i] & 0x7f) <= 1);
      result.maxError = std::max(result.maxError, double(d));
    }
    break;
  case DType::BF16:
  case DType::F16: { // f16: a 16-bit SSM page (R8s), in the state's band
    const bool bf16 = buffer.type == DType::BF16;
    for (size_t i = 0; i < a.size() / 2; ++i) {
      uint16_t x = element<uint16_t>(a, i), y = element<uint16_t>(b, i);
      auto value = [&](uint16_t bits) { return bf16 ? bf16ToF32(bits) : f16ToF32(bits); };
      countInBand(value(x), value(y), bf16 ? kBF16Atol : kF32Atol,
                  bf16 ? kBF16Rtol : kF32Rtol, result.elements, result.outside,
                  result.maxError);
      result.identical += x == y;
    }
    break;
  }
  default: // integers: equal bytes
    const size_t width = dtypeBytes(buffer.type);
    for (size_t i = 0; i + width <= a.size(); i += width) {
      ++result.elements;
      bool same = std::memcmp(&a[i], &b[i], width) == 0;
      result.identical += same;
      result.outside += !same;
    }
    break;
  }
  return result;
}

LaunchSums launchSumsOf(const GpuRunner &runner) {
  LaunchSums sums;
  for (size_t i = 0; i < runner.plan().launches.size(); ++i)
    sums.push_back(runner.launchSums(i));
  return sums;
}

StepFn hostRoundTrip(GpuRunner &runner) {
  return [&runner](HostBuffers &b) -> llvm::Error {
    if (llvm::Error err = runner.upload(b))
      return err;
    if (llvm::Error err = runner.step())
      return err;
    return runner.download(b);
  };
}

std::vector<int32_t> randomDecodeSlots(int64_t rows, int64_t numSlots, uint64_t seed,
                                       bool padding) {
  std::vector<int32_t> all(numSlots);
  for (int64_t i = 0; i < numSlots; ++i)
    all[i] = int32_t(i);
  Rng rng(seed);
  for (int64_t i = numSlots - 1; i > 0; --i) // Fisher-Yates
    std::swap(all[i], all[rng.next() % uint64_t(i + 1)]);
  std::vector<int32_t> slots(all.begin(), all.begin() + rows);
  if (rows > 1 && padding)
    for (int64_t r = 1; r < rows; r += 3)
      slots[r] = -1;
  return slots;
}

} // namespace tilejit::models
