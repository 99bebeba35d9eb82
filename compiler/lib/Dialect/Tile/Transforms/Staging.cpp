// The staging conditions of tile-pipeline-dots (see Staging.h).
#include "Staging.h"

#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

using namespace mlir;

namespace tilejit::tile {
namespace {

std::optional<int64_t> constantInt(Value v) {
  APInt value;
  if (matchPattern(v, m_ConstantInt(&value)))
    return value.getSExtValue();
  return std::nullopt;
}

/// True when the i32 value `v` is provably a multiple of `m`.
bool isMultipleOf(Value v, int64_t m, scf::ForOp loop) {
  if (auto c = constantInt(v))
    return *c % m == 0;
  if (v == loop.getInductionVar())
    return isMultipleOf(loop.getLowerBound(), m, loop) &&
           isMultipleOf(loop.getStep(), m, loop);
  Operation *def = v.getDefiningOp();
  if (isa_and_nonnull<arith::MulIOp>(def))
    return isMultipleOf(def->getOperand(0), m, loop) ||
           isMultipleOf(def->getOperand(1), m, loop);
  if (isa_and_nonnull<arith::AddIOp, arith::SubIOp>(def))
    return isMultipleOf(def->getOperand(0), m, loop) &&
           isMultipleOf(def->getOperand(1), m, loop);
  return false;
}

} // namespace

bool isRecomputable(Value v, scf::ForOp loop) {
  if (v == loop.getInductionVar() || !loop->isAncestor(v.getParentBlock()->getParentOp()))
    return true;
  Operation *def = v.getDefiningOp();
  return def && def->getBlock() == loop.getBody() && isPure(def) &&
         def->getNumRegions() == 0 &&
         llvm::all_of(def->getOperands(), [&](Value o) { return isRecomputable(o, loop); });
}

bool isStageableLoad(LoadOp load, unsigned opIdx, bool transposed, scf::ForOp loop) {
  if (load->getBlock() != loop.getBody() || !load->hasOneUse() ||
      !loop.getInductionVar().getType().isInteger(32))
    return false;
  if (auto pad = load.getPaddingAttr()) {
    auto f = dyn_cast<FloatAttr>(pad);
    if (!f || !f.getValue().isPosZero())
      return false;
  }
  ViewType view = load.getView().getType();
  Type element = view.getElementType();
  if (!element.isIntOrFloat())
    return false;
  int64_t bits = element.getIntOrFloatBitWidth(), vec = 128 / bits;
  if (view.getRank() != 2 || view.getContiguousDim() != 1u || (bits != 8 && bits != 16))
    return false;
  int64_t size = view.getShape()[1], stride = view.getStrides()[0];
  if (size == ShapedType::kDynamic || size % vec || stride == ShapedType::kDynamic ||
      stride % vec)
    return false;
  // ldmatrix reads 16-byte rows along K, or (.trans) along N of a 16-bit B.
  bool kContiguous = (opIdx == 0) != transposed;
  auto tile = load.getResult().getType();
  if ((!kContiguous && bits != 16) || tile.getDimSize(1) % vec)
    return false;
  return isMultipleOf(load.getOffsets()[1], vec, loop) &&
         isRecomputable(load.getView(), loop) &&
         llvm::all_of(load.getOffsets(), [&](Value o) { return isRecomputable(o, loop); });
}

bool fitsWgmma(DotOp dot, int64_t numWarps) {
  auto loop = dyn_cast<scf::ForOp>(dot->getParentOp());
  auto aType = dot.getA().getType();
  Type element = aType.getElementType();
  if (!loop || !(element.isBF16() || element.isF16() || isa<Float8E4M3FNType>(element)))
    return false;
  int64_t m = aType.getDimSize(0), n = dot.getB().getType().getDimSize(1);
  int64_t rowBytes = aType.getDimSize(1) * element.getIntOrFloatBitWidth() / 8;
  if (numWarps % 4 || m % (16 * numWarps) || n % 8 || n > 256 ||
      (rowBytes != 32 && rowBytes != 64 && rowBytes != 128))
    return false;
  auto aLoad = dot.getA().getDefiningOp<LoadOp>();
  auto bTranspose = dot.getB().getDefiningOp<TransposeOp>();
  if (!aLoad || !bTranspose || !bTranspose->hasOneUse() ||
      bTranspose.getOrder() != ArrayRef<int32_t>{1, 0})
    return false;
  auto bLoad = bTranspose.getSrc().getDefiningOp<LoadOp>();
  return bLoad && isStageableLoad(aLoad, 0, false, loop) &&
         isStageableLoad(bLoad, 1, true, loop);
}

} // namespace tilejit::tile
