// Operand checks shared by the reference ops: a shape mismatch is an llvm::Error
// naming the op, the operand and both shapes, never an abort.
#ifndef TILEJIT_MODELS_REFERENCE_CHECKS_H
#define TILEJIT_MODELS_REFERENCE_CHECKS_H

#include "tilejit/models/reference/HostTensor.h"

#include "llvm/Support/Error.h"

namespace tilejit::models::ref::detail {

/// "OP: OPERAND has shape [got], expected [want]".
llvm::Error shapeError(llvm::StringRef op, llvm::StringRef operand,
                       llvm::ArrayRef<int64_t> got, llvm::ArrayRef<int64_t> want);

/// Fails unless `t` has exactly the shape `want`.
template <typename T>
llvm::Error expectShape(llvm::StringRef op, llvm::StringRef operand, const Tensor<T> &t,
                        llvm::ArrayRef<int64_t> want) {
  if (llvm::ArrayRef<int64_t>(t.shape) == want)
    return llvm::Error::success();
  return shapeError(op, operand, t.shape, want);
}

/// Fails unless `t` has rank `rank`: "OP: OPERAND must have rank R, got [shape]".
template <typename T>
llvm::Error expectRank(llvm::StringRef op, llvm::StringRef operand, const Tensor<T> &t,
                       int64_t rank) {
  if (t.rank() == rank)
    return llvm::Error::success();
  return llvm::createStringError("%s: %s must have rank %lld, got shape %s",
                                 op.str().c_str(), operand.str().c_str(), (long long)rank,
                                 formatShape(t.shape).c_str());
}

} // namespace tilejit::models::ref::detail

#endif // TILEJIT_MODELS_REFERENCE_CHECKS_H
