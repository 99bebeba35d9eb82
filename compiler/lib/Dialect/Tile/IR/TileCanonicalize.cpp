// Folders and canonicalization patterns of the `tile` ops: shape ops of splats
// become splats, chains of shape ops collapse, identities disappear.
#include "tilejit/Dialect/Tile/IR/TileOps.h"

#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"

using namespace mlir;
using namespace tilejit::tile;

/// A shape op applied to a splat constant is a splat constant of the new shape.
static Attribute foldSplatConstant(Attribute operand, Type resultType) {
  if (auto splat = dyn_cast_or_null<SplatElementsAttr>(operand))
    return SplatElementsAttr::get(cast<ShapedType>(resultType),
                                  splat.getSplatValue<Attribute>());
  return {};
}

OpFoldResult SplatOp::fold(FoldAdaptor adaptor) {
  if (auto value = dyn_cast_or_null<TypedAttr>(adaptor.getSrc()))
    if (isa<IntegerAttr, FloatAttr>(value))
      return SplatElementsAttr::get(getResult().getType(), value);
  return {};
}

OpFoldResult BroadcastOp::fold(FoldAdaptor adaptor) {
  if (getSrc().getType() == getResult().getType())
    return getSrc();
  return foldSplatConstant(adaptor.getSrc(), getResult().getType());
}

OpFoldResult ExpandDimsOp::fold(FoldAdaptor adaptor) {
  return foldSplatConstant(adaptor.getSrc(), getResult().getType());
}

OpFoldResult ReshapeOp::fold(FoldAdaptor adaptor) {
  if (getSrc().getType() == getResult().getType())
    return getSrc();
  if (auto inner = getSrc().getDefiningOp<ReshapeOp>()) {
    getSrcMutable().assign(inner.getSrc());
    return getResult();
  }
  return foldSplatConstant(adaptor.getSrc(), getResult().getType());
}

OpFoldResult TransposeOp::fold(FoldAdaptor adaptor) {
  ArrayRef<int32_t> order = getOrder();
  auto isIdentity = [](ArrayRef<int32_t> perm) {
    for (auto [i, o] : llvm::enumerate(perm))
      if ((int32_t)i != o)
        return false;
    return true;
  };
  if (isIdentity(order))
    return getSrc();
  if (auto inner = getSrc().getDefiningOp<TransposeOp>()) {
    SmallVector<int32_t> composed;
    for (int32_t o : order)
      composed.push_back(inner.getOrder()[o]);
    if (isIdentity(composed))
      return inner.getSrc();
    getSrcMutable().assign(inner.getSrc());
    setOrder(composed);
    return getResult();
  }
  return foldSplatConstant(adaptor.getSrc(), getResult().getType());
}

OpFoldResult ConvertLayoutOp::fold(FoldAdaptor adaptor) {
  if (getSrc().getType() == getResult().getType())
    return getSrc();
  if (auto inner = getSrc().getDefiningOp<ConvertLayoutOp>()) {
    getSrcMutable().assign(inner.getSrc());
    return getResult();
  }
  return foldSplatConstant(adaptor.getSrc(), getResult().getType());
}

OpFoldResult ConvertOp::fold(FoldAdaptor) {
  if (getSrc().getType() == getResult().getType())
    return getSrc();
  return {};
}

OpFoldResult AddPtrOp::fold(FoldAdaptor adaptor) {
  if (matchPattern(adaptor.getOffset(), m_Zero()))
    return getPtr();
  return {};
}

namespace {

/// shape_op(splat %s) -> splat %s of the result shape.
template <typename ShapeOp> struct ShapeOfSplat : OpRewritePattern<ShapeOp> {
  using OpRewritePattern<ShapeOp>::OpRewritePattern;
  LogicalResult matchAndRewrite(ShapeOp op, PatternRewriter &rewriter) const override {
    auto splat = op.getSrc().template getDefiningOp<SplatOp>();
    if (!splat)
      return failure();
    rewriter.replaceOpWithNewOp<SplatOp>(op, op.getResult().getType(), splat.getSrc());
    return success();
  }
};

/// broadcast(broadcast %x) -> broadcast %x.
struct BroadcastOfBroadcast : OpRewritePattern<BroadcastOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(BroadcastOp op,
                                PatternRewriter &rewriter) const override {
    auto inner = op.getSrc().getDefiningOp<BroadcastOp>();
    if (!inner)
      return failure();
    rewriter.modifyOpInPlace(op, [&] { op.getSrcMutable().assign(inner.getSrc()); });
    return success();
  }
};

} // namespace

void BroadcastOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                              MLIRContext *context) {
  results.add<ShapeOfSplat<BroadcastOp>, BroadcastOfBroadcast>(context);
}

void ExpandDimsOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                               MLIRContext *context) {
  results.add<ShapeOfSplat<ExpandDimsOp>>(context);
}

void ReshapeOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                            MLIRContext *context) {
  results.add<ShapeOfSplat<ReshapeOp>>(context);
}
