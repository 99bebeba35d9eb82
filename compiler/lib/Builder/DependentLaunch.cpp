// Builder: programmatic dependent launch (the grid dependency waits and
// signals) and the L2 prefetch a kernel issues before it waits.
#include "BuilderInternal.h"

using namespace mlir;

namespace tilejit {
using namespace detail;

void waitForPredecessors(SrcLoc loc) {
  if (Kernel *k = Kernel::current())
    tile::GridDepWaitOp::create(k->builder(), k->location(loc));
}

void launchDependents(SrcLoc loc) {
  if (Kernel *k = Kernel::current())
    tile::GridDepLaunchOp::create(k->builder(), k->location(loc));
}

void prefetchL2(const Operand &ptr, const Operand &bytes) {
  Kernel *k = kernelOf({&ptr, &bytes});
  if (!k)
    return;
  if (ptr.number || ptr.value.isTile() || !ptr.value.isPointer()) {
    k->fail(ptr.loc,
            "prefetchL2 needs a scalar pointer, got " +
                (ptr.number ? std::string("a number") : describe(ptr.value.raw())));
    return;
  }
  // An i32 byte count, never a truncated wider one.
  if (!bytes.number && (bytes.value.isTile() || bytes.value.dtype() != DType::I32)) {
    k->fail(bytes.loc, "prefetchL2 needs an i32 scalar byte count, got " +
                           describe(bytes.value.raw()));
    return;
  }
  Type i32 = k->builder().getI32Type();
  if (bytes.number)
    (void)exactInteger(*k, bytes, i32);
  tile::PrefetchL2Op::create(k->builder(), k->location(ptr.loc), ptr.value.raw(),
                             materialize(*k, bytes, i32));
}

} // namespace tilejit
