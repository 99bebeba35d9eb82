// Host tensor helpers and the splitmix64 generator shared by the reference, the
// synthetic weights and the tests.
#include "tilejit/models/reference/HostTensor.h"

#include "tilejit/support/FloatFormats.h"

namespace tilejit::models {

int64_t numElements(llvm::ArrayRef<int64_t> shape) {
  int64_t count = 1;
  for (int64_t d : shape)
    count *= d;
  return count;
}

std::string formatShape(llvm::ArrayRef<int64_t> shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + "]";
}

uint64_t Rng::next() {
  uint64_t z = (state += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

double Rng::uniform(double lo, double hi) {
  double unit = double(next() >> 11) * 0x1.0p-53; // 53 random bits in [0, 1)
  return lo + (hi - lo) * unit;
}

Tensor<uint16_t> randomBF16(std::vector<int64_t> shape, Rng &rng, double lo, double hi) {
  Tensor<uint16_t> t(std::move(shape));
  for (uint16_t &v : t.data)
    v = f32ToBF16(float(rng.uniform(lo, hi)));
  return t;
}

Tensor<float> randomF32(std::vector<int64_t> shape, Rng &rng, double lo, double hi) {
  Tensor<float> t(std::move(shape));
  for (float &v : t.data)
    v = float(rng.uniform(lo, hi));
  return t;
}

} // namespace tilejit::models
