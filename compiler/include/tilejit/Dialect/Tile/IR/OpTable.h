// Functions by op class, the dispatch of the GPU emitter and of the interpreter
// over the ops a tile kernel may contain (tile, arith, math, scf). An op is
// registered by its C++ class, `table.add<arith::AddFOp>(fn)`, never by name:
// an op that is renamed or removed upstream is a compile error here, not a
// "has no lowering" at run time.
#ifndef TILEJIT_DIALECT_TILE_IR_OPTABLE_H
#define TILEJIT_DIALECT_TILE_IR_OPTABLE_H

#include "mlir/IR/Operation.h"
#include "mlir/Support/TypeID.h"
#include "llvm/ADT/DenseMap.h"

#include <cassert>

namespace tilejit::tile {

/// A table of `Fn` keyed by op class (its TypeID).
template <typename Fn> class OpTable {
public:
  /// Registers `fn` for each of `OpTys`. Registering an op twice is a bug in
  /// the table's populate functions.
  template <typename... OpTys> void add(const Fn &fn) {
    (insert(mlir::TypeID::get<OpTys>(), fn), ...);
  }

  /// The function registered for the class of `op`; null when there is none
  /// (an op of another dialect, or one without a registered class).
  const Fn *lookup(mlir::Operation *op) const {
    auto it = fns.find(op->getName().getTypeID());
    return it == fns.end() ? nullptr : &it->second;
  }

  size_t size() const { return fns.size(); }

private:
  void insert(mlir::TypeID id, const Fn &fn) {
    [[maybe_unused]] bool inserted = fns.try_emplace(id, fn).second;
    assert(inserted && "an op is registered twice");
  }

  llvm::DenseMap<mlir::TypeID, Fn> fns;
};

} // namespace tilejit::tile

#endif // TILEJIT_DIALECT_TILE_IR_OPTABLE_H
