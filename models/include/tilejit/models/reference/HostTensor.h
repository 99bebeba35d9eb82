// Dense row-major host tensors and a seeded generator: the plain arrays the f64
// reference, the checkpoint loader and the tests exchange. bf16 values travel as
// their bit patterns (uint16_t), e4m3 values as their codes (uint8_t).
#ifndef TILEJIT_MODELS_HOSTTENSOR_H
#define TILEJIT_MODELS_HOSTTENSOR_H

#include "llvm/ADT/ArrayRef.h"

#include <algorithm>
#include <cassert>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace tilejit::models {

/// A copy of `values`' bytes, as plan buffers and checkpoint blobs hold them.
template <typename T> std::vector<uint8_t> bytesOf(const std::vector<T> &values) {
  std::vector<uint8_t> bytes(values.size() * sizeof(T));
  if (!bytes.empty())
    std::memcpy(bytes.data(), values.data(), bytes.size());
  return bytes;
}

/// The number of elements of an array of shape `shape` (1 for a scalar).
int64_t numElements(llvm::ArrayRef<int64_t> shape);
/// `shape` as text, e.g. "[64, 64, 128]": the form every shape error prints.
std::string formatShape(llvm::ArrayRef<int64_t> shape);

/// A dense row-major array on the host that owns its elements.
template <typename T> struct Tensor {
  std::vector<int64_t> shape;
  std::vector<T> data;

  Tensor() = default;
  explicit Tensor(std::vector<int64_t> dims, T fill = T())
      : shape(std::move(dims)), data(size_t(numElements(shape)), fill) {}

  int64_t rank() const { return int64_t(shape.size()); }
  int64_t dim(int64_t d) const { return shape[size_t(d)]; }
  int64_t size() const { return int64_t(data.size()); }

  /// The element at a full multi-index; the index must be in bounds.
  template <typename... I> T &operator()(I... index) {
    return data[size_t(offsetOf({int64_t(index)...}))];
  }
  template <typename... I> const T &operator()(I... index) const {
    return data[size_t(offsetOf({int64_t(index)...}))];
  }

  /// The row-major offset of a full multi-index.
  int64_t offsetOf(std::initializer_list<int64_t> index) const {
    assert(index.size() == shape.size() && "index rank differs from tensor rank");
    int64_t offset = 0;
    size_t d = 0;
    for (int64_t i : index) {
      assert(i >= 0 && i < shape[d] && "index out of bounds");
      offset = offset * shape[d++] + i;
    }
    return offset;
  }

  /// The same elements under another shape of equal element count.
  Tensor reshaped(std::vector<int64_t> dims) const {
    assert(numElements(dims) == size() && "reshape changes the element count");
    Tensor result;
    result.shape = std::move(dims);
    result.data = data;
    return result;
  }

  bool operator==(const Tensor &other) const = default;
};

/// An exact copy of columns [begin, end) of the 2-D tensor `t` (the splits of
/// docs/numerics.md#r2-splits).
template <typename T>
Tensor<T> sliceColumns(const Tensor<T> &t, int64_t begin, int64_t end) {
  assert(t.rank() == 2 && 0 <= begin && begin <= end && end <= t.dim(1));
  Tensor<T> result({t.dim(0), end - begin});
  for (int64_t r = 0; r < t.dim(0); ++r)
    for (int64_t c = begin; c < end; ++c)
      result(r, c - begin) = t(r, c);
  return result;
}

/// An exact copy of rows [begin, end) of `t` along its first dimension.
template <typename T>
Tensor<T> sliceRows(const Tensor<T> &t, int64_t begin, int64_t end) {
  assert(t.rank() >= 1 && 0 <= begin && begin <= end && end <= t.dim(0));
  std::vector<int64_t> dims = t.shape;
  dims[0] = end - begin;
  int64_t rowSize = t.dim(0) ? t.size() / t.dim(0) : 0;
  Tensor<T> result;
  result.shape = dims;
  result.data.assign(t.data.begin() + begin * rowSize, t.data.begin() + end * rowSize);
  return result;
}

/// Copies `rows` into `t` starting at row `begin` of its first dimension.
template <typename T>
void assignRows(Tensor<T> &t, int64_t begin, const Tensor<T> &rows) {
  int64_t rowSize = t.dim(0) ? t.size() / t.dim(0) : 0;
  assert(begin >= 0 && begin * rowSize + rows.size() <= t.size());
  std::copy(rows.data.begin(), rows.data.end(), t.data.begin() + begin * rowSize);
}

/// A small deterministic generator (splitmix64): the same seed gives the same
/// stream on every platform and standard library, unlike <random>'s
/// distributions.
class Rng {
public:
  explicit Rng(uint64_t seed) : state(seed) {}
  /// The next 64 random bits.
  uint64_t next();
  /// A uniform double in [lo, hi).
  double uniform(double lo, double hi);

private:
  uint64_t state;
};

/// A tensor of bf16 values drawn uniformly from [lo, hi) and rounded (RNE).
Tensor<uint16_t> randomBF16(std::vector<int64_t> shape, Rng &rng, double lo, double hi);
/// A tensor of f32 values drawn uniformly from [lo, hi).
Tensor<float> randomF32(std::vector<int64_t> shape, Rng &rng, double lo, double hi);

} // namespace tilejit::models

#endif // TILEJIT_MODELS_HOSTTENSOR_H
