// Dot chains for tile-assign-layouts: values that will share one layout are
// grouped (union-find over the ops that give operands and results one
// layout), and a group that feeds a dot's A operand and holds another dot's
// accumulator marks both dots and every dot accumulating into either group.
#include "DotChains.h"
#include "LayoutQueries.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "llvm/ADT/DenseMap.h"

using namespace mlir;

namespace tilejit::tile {

bool sharesOperandLayout(Operation *op) {
  return op->getNumOperands() > 0 &&
         (isa<ScanOp, AddPtrOp, PtrLoadOp, ConvertOp>(op) ||
          isa<arith::ArithDialect, math::MathDialect>(op->getDialect()));
}

namespace {

/// Groups of tiles that end up in one layout.
class LayoutGroups {
public:
  Value find(Value v) {
    auto it = parent.find(v);
    if (it == parent.end() || it->second == v)
      return v;
    Value root = find(it->second);
    parent[v] = root;
    return root;
  }
  void join(Value a, Value b) {
    Value ra = find(a), rb = find(b);
    if (ra != rb)
      parent[ra] = rb;
  }

private:
  llvm::DenseMap<Value, Value> parent;
};

} // namespace

llvm::DenseSet<Operation *> chainedDots(KernelOp kernel) {
  LayoutGroups groups;
  SmallVector<DotOp> dots;
  // Splats and constants are rebuilt in any layout: they join no group (a
  // zero accumulator shared by unrelated dots would merge them all).
  auto joinAll = [&](ValueRange values) {
    Value first;
    for (Value v : values) {
      if (!tileType(v) || isRematerializable(v))
        continue;
      if (first)
        groups.join(first, v);
      else
        first = v;
    }
  };
  kernel.walk([&](Operation *op) {
    if (auto dot = dyn_cast<DotOp>(op)) {
      dots.push_back(dot);
      joinAll({dot.getAcc(), dot.getResult()});
    } else if (sharesOperandLayout(op)) {
      SmallVector<Value> values(op->getOperands());
      values.append(op->result_begin(), op->result_end());
      joinAll(values);
    }
  });
  llvm::DenseSet<Value> accumulators, chained;
  for (DotOp dot : dots)
    accumulators.insert(groups.find(dot.getResult()));
  for (DotOp dot : dots)
    if (Value a = groups.find(dot.getA()); accumulators.contains(a)) {
      chained.insert(a);
      chained.insert(groups.find(dot.getResult()));
    }
  llvm::DenseSet<Operation *> out;
  for (DotOp dot : dots)
    if (chained.contains(groups.find(dot.getResult())))
      out.insert(dot);
  return out;
}

} // namespace tilejit::tile
