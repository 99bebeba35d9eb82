// R8: the paged recurrent state. Rows name their slot; a negative slot is a
// padding row (output zero, nothing touched) and duplicate slots are an error
// reported before anything is written.
#include "Checks.h"
#include "tilejit/models/reference/Reference.h"

#include "llvm/ADT/DenseMap.h"

namespace tilejit::models::ref {
namespace {

/// The rows `index` of `t` (along its first dimension), stacked.
template <typename T>
Tensor<T> gatherRows(const Tensor<T> &t, llvm::ArrayRef<int64_t> index) {
  Tensor<T> result;
  result.shape = t.shape;
  result.shape[0] = int64_t(index.size());
  for (int64_t i : index) {
    Tensor<T> row = sliceRows(t, i, i + 1);
    result.data.insert(result.data.end(), row.data.begin(), row.data.end());
  }
  return result;
}

/// Writes row k of `rows` to row index[k] of `t`.
template <typename T>
void scatterRows(Tensor<T> &t, llvm::ArrayRef<int64_t> index, const Tensor<T> &rows) {
  for (size_t k = 0; k < index.size(); ++k)
    assignRows(t, index[k], sliceRows(rows, int64_t(k), int64_t(k) + 1));
}

/// The batch rows that are not padding, and their slots.
struct ActiveRows {
  std::vector<int64_t> rows, slots;
};

llvm::Expected<ActiveRows> activeRows(llvm::StringRef op, llvm::ArrayRef<int64_t> slots,
                                      int64_t batchRows, int64_t numSlots) {
  if (int64_t(slots.size()) != batchRows)
    return llvm::createStringError("%s: %zu slot indices for %lld rows", op.str().c_str(),
                                   slots.size(), (long long)batchRows);
  if (auto err = checkSlots(slots, numSlots))
    return std::move(err);
  ActiveRows active;
  for (size_t r = 0; r < slots.size(); ++r)
    if (slots[r] >= 0) {
      active.rows.push_back(int64_t(r));
      active.slots.push_back(slots[r]);
    }
  return active;
}

} // namespace

PagedState PagedState::zeros(const NemotronHConfig &config, int64_t slots) {
  return {Tensor<uint16_t>({slots, config.convChannels(), config.convKernel - 1}),
          Tensor<float>({slots, config.numHeads, config.headDim, config.stateSize})};
}

llvm::Error checkSlots(llvm::ArrayRef<int64_t> slots, int64_t numSlots,
                       llvm::StringRef entry) {
  llvm::DenseMap<int64_t, size_t> firstUse;
  for (size_t r = 0; r < slots.size(); ++r) {
    if (slots[r] < 0)
      continue;
    if (slots[r] >= numSlots)
      return llvm::createStringError("%s %zu uses slot %lld, outside [0, %lld)",
                                     entry.str().c_str(), r, (long long)slots[r],
                                     (long long)numSlots);
    auto [it, inserted] = firstUse.try_emplace(slots[r], r);
    if (!inserted)
      return llvm::createStringError("%ss %zu and %zu both use slot %lld in one batch",
                                     entry.str().c_str(), it->second, r,
                                     (long long)slots[r]);
  }
  return llvm::Error::success();
}

llvm::Expected<Tensor<double>> convUpdatePaged(const Tensor<uint16_t> &xt,
                                               const Tensor<uint16_t> &weight,
                                               const Tensor<uint16_t> &bias,
                                               llvm::ArrayRef<int64_t> slots,
                                               Tensor<uint16_t> &convPage) {
  const char *op = "convUpdatePaged";
  if (auto err = detail::expectRank(op, "xt", xt, 2))
    return std::move(err);
  if (auto err = detail::expectRank(op, "weight", weight, 2))
    return std::move(err);
  if (auto err = detail::expectRank(op, "convPage", convPage, 3))
    return std::move(err);
  if (auto err = detail::expectShape(op, "convPage", convPage,
                                     {convPage.dim(0), weight.dim(0), weight.dim(1) - 1}))
    return std::move(err);
  auto active = activeRows(op, slots, xt.dim(0), convPage.dim(0));
  if (!active)
    return active.takeError();

  Tensor<uint16_t> state = gatherRows(convPage, active->slots);
  auto out = convUpdate(gatherRows(xt, active->rows), weight, bias, state);
  if (!out)
    return out.takeError();
  scatterRows(convPage, active->slots, state);
  Tensor<double> result(xt.shape);
  scatterRows(result, active->rows, *out);
  return result;
}

llvm::Expected<Tensor<double>>
ssmUpdatePaged(const Tensor<uint16_t> &x, const Tensor<uint16_t> &dt,
               const Tensor<uint16_t> &B, const Tensor<uint16_t> &C,
               const SsmParams &params, llvm::ArrayRef<int64_t> slots,
               Tensor<float> &ssmPage) {
  const char *op = "ssmUpdatePaged";
  if (auto err = detail::expectRank(op, "x", x, 3))
    return std::move(err);
  if (auto err = detail::expectRank(op, "ssmPage", ssmPage, 4))
    return std::move(err);
  auto active = activeRows(op, slots, x.dim(0), ssmPage.dim(0));
  if (!active)
    return active.takeError();
  for (const Tensor<uint16_t> *operand : {&dt, &B, &C})
    if (operand->rank() < 1 || operand->dim(0) != x.dim(0))
      return llvm::createStringError(
          "%s: operand of shape %s does not have the %lld rows of x", op,
          formatShape(operand->shape).c_str(), (long long)x.dim(0));

  Tensor<float> state = gatherRows(ssmPage, active->slots);
  auto y =
      ssmUpdate(gatherRows(x, active->rows), gatherRows(dt, active->rows),
                gatherRows(B, active->rows), gatherRows(C, active->rows), params, state);
  if (!y)
    return y.takeError();
  scatterRows(ssmPage, active->slots, state);
  Tensor<double> result(x.shape);
  scatterRows(result, active->rows, *y);
  return result;
}

} // namespace tilejit::models::ref
