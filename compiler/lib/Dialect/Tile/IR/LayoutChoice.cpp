// The layouts the passes choose for a tile (coalescing blocked, mma
// accumulator, dot operand, swizzled shared), the layout attributes'
// verifiers, and the check of a tile's layout against its kernel's warps.
#include "tilejit/Dialect/Tile/IR/Layouts.h"

#include "tilejit/Dialect/Tile/IR/TileOps.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;

namespace tilejit::tile {

/// One candidate blocked layout; `replicated` counts warps left idle.
static BlockedLayoutAttr blockedWithVector(MLIRContext *ctx, ArrayRef<int64_t> shape,
                                           int64_t numWarps, int64_t vector,
                                           int64_t &replicated) {
  int64_t rank = shape.size();
  SmallVector<int64_t> spt(rank, 1), tpw(rank, 1), wpc(rank, 1), order;
  for (int64_t d = rank - 1; d >= 0; --d)
    order.push_back(d);
  spt[rank - 1] = std::max<int64_t>(1, std::min<int64_t>(vector, shape[rank - 1]));
  int64_t lanes = 32, warps = numWarps;
  for (int64_t d : order) {
    int64_t room = std::max<int64_t>(1, shape[d] / spt[d]);
    tpw[d] = std::min<int64_t>(lanes, (int64_t)llvm::bit_floor(uint64_t(room)));
    lanes /= tpw[d];
  }
  tpw[order.back()] *= lanes; // leftover lanes replicate along the slowest dimension
  for (int64_t d = 0; d < rank; ++d) { // warps fill the slowest dimensions first
    int64_t room = std::max<int64_t>(1, shape[d] / (spt[d] * tpw[d]));
    wpc[d] = std::min<int64_t>(warps, (int64_t)llvm::bit_floor(uint64_t(room)));
    warps /= wpc[d];
  }
  wpc[0] *= warps;
  replicated = warps * lanes;
  return BlockedLayoutAttr::get(ctx, spt, tpw, wpc, order);
}

Attribute defaultBlockedLayout(MLIRContext *ctx, ArrayRef<int64_t> shape,
                               int64_t numWarps, int64_t vector) {
  // Narrow the vector while that puts idle (replicated) threads to work.
  int64_t replicated;
  BlockedLayoutAttr best = blockedWithVector(ctx, shape, numWarps, vector, replicated);
  for (int64_t v = vector / 2; v >= 1 && replicated > 1; v /= 2) {
    int64_t r;
    BlockedLayoutAttr candidate = blockedWithVector(ctx, shape, numWarps, v, r);
    if (r < replicated) {
      best = candidate;
      replicated = r;
    }
  }
  return best;
}

Attribute mmaLayoutFor(MLIRContext *ctx, int64_t m, int64_t n, int64_t numWarps) {
  // Each warp's accumulator block as square as the tile allows: operand
  // fragments are read once per warp, so a square block reads the fewest
  // bytes of shared memory per mma. Ties split N first.
  int64_t wm = 1, wn = 1;
  while (wm * wn < numWarps) {
    bool mFits = m % (16 * wm * 2) == 0, nFits = n % (8 * wn * 2) == 0;
    bool splitM = mFits && (!nFits || m / wm > n / wn);
    if (!mFits && !nFits)
      splitM = m / (16 * wm) >= n / (8 * wn);
    (splitM ? wm : wn) *= 2;
  }
  return MmaLayoutAttr::get(ctx, {wm, wn});
}

Attribute dotOperandLayoutFor(MmaLayoutAttr parent, unsigned opIdx, Type element,
                              bool kContig) {
  int64_t bits = element.getIntOrFloatBitWidth();
  return DotOperandLayoutAttr::get(parent.getContext(), opIdx, parent,
                                   std::max<int64_t>(1, 32 / bits), kContig);
}

SharedLayoutAttr sharedLayoutFor(MLIRContext *ctx, int64_t cols, Type element) {
  int64_t bytes = std::max<int64_t>(1, element.getIntOrFloatBitWidth() / 8);
  int64_t vec = 16 / bytes, rowBytes = cols * bytes;
  // 8 rows of 16-byte chunks read at one column must land on 8 distinct
  // chunks of a 128-byte line: rows narrower than a line share a phase.
  int64_t perPhase = std::max<int64_t>(1, 128 / rowBytes);
  int64_t maxPhase = std::min<int64_t>(8 / perPhase, cols / vec);
  return SharedLayoutAttr::get(ctx, vec, perPhase, std::max<int64_t>(1, maxPhase));
}

LogicalResult MmaLayoutAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                    ArrayRef<int64_t> wpc, int64_t wpk) {
  if (wpc.size() != 2)
    return emitError() << "mma wpc must have two entries, got " << wpc.size();
  for (int64_t w : wpc)
    if (w < 1 || !llvm::isPowerOf2_64(w))
      return emitError() << "mma wpc entries must be powers of two, got " << w;
  if (wpk < 1 || !llvm::isPowerOf2_64(wpk))
    return emitError() << "mma wpk must be a power of two, got " << wpk;
  return success();
}

LogicalResult DotOperandLayoutAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                           int64_t opIdx, MmaLayoutAttr parent,
                                           int64_t kWidth, bool kContig) {
  if (opIdx != 0 && opIdx != 1)
    return emitError() << "dot_operand opIdx must be 0 (A) or 1 (B), got " << opIdx;
  if (kWidth != 1 && kWidth != 2 && kWidth != 4)
    return emitError() << "dot_operand kWidth must be 1, 2 or 4, got " << kWidth;
  if (kContig && kWidth == 1)
    return emitError() << "dot_operand kContig needs kWidth 2 (16-bit) or 4 (8-bit)";
  if (parent && parent.getWpk() > 1 && !kContig)
    return emitError() << "dot_operand of a split-K parent (wpk = " << parent.getWpk()
                       << ") must be kContig";
  return success();
}

LogicalResult WgmmaOperandLayoutAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                             int64_t opIdx) {
  if (opIdx != 0 && opIdx != 1)
    return emitError() << "wgmma_operand opIdx must be 0 (A) or 1 (B), got " << opIdx;
  return success();
}

LogicalResult SharedLayoutAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                       int64_t vec, int64_t perPhase, int64_t maxPhase) {
  for (auto [name, v] : {std::pair<const char *, int64_t>{"vec", vec},
                         {"perPhase", perPhase},
                         {"maxPhase", maxPhase}})
    if (v < 1 || !llvm::isPowerOf2_64(v))
      return emitError() << "shared layout " << name << " must be a power of two, got "
                         << v;
  return success();
}

namespace {

/// The rank a register layout describes tiles of, and the warps it spreads
/// them over; std::nullopt for an attribute that is no register layout.
struct LayoutShape {
  int64_t rank, warps;
};

/// The product of a warp grid; 0 unless every entry is a power of two in
/// [1, 32] (the mma attributes leave that to their users: distribute() would
/// loop on a negative entry).
int64_t warpsOf(ArrayRef<int64_t> wpc) {
  int64_t product = 1;
  for (int64_t w : wpc) {
    if (w < 1 || w > 32 || !llvm::isPowerOf2_64(w))
      return 0;
    product *= w;
  }
  return product;
}

std::optional<LayoutShape> shapeOfLayout(Attribute encoding) {
  if (auto blocked = dyn_cast<BlockedLayoutAttr>(encoding))
    return LayoutShape{int64_t(blocked.getSpt().size()), warpsOf(blocked.getWpc())};
  // An mma layout's split-K groups (wpk) are warps too.
  auto mmaWarps = [](MmaLayoutAttr mma) {
    return warpsOf(mma.getWpc()) * warpsOf({mma.getWpk()});
  };
  if (auto mma = dyn_cast<MmaLayoutAttr>(encoding))
    return LayoutShape{int64_t(mma.getWpc().size()), mmaWarps(mma)};
  if (auto operand = dyn_cast<DotOperandLayoutAttr>(encoding))
    return LayoutShape{int64_t(operand.getParent().getWpc().size()),
                       mmaWarps(operand.getParent())};
  if (auto slice = dyn_cast<SliceLayoutAttr>(encoding)) {
    auto parent = shapeOfLayout(slice.getParent());
    if (!parent || slice.getDim() < 0 || slice.getDim() >= parent->rank)
      return std::nullopt;
    return LayoutShape{parent->rank - 1, parent->warps};
  }
  return std::nullopt;
}

} // namespace

LogicalResult verifyLayout(RankedTensorType type, int64_t numWarps,
                           function_ref<InFlightDiagnostic()> emitError) {
  Attribute encoding = type.getEncoding();
  if (!encoding)
    return success();
  if (isa<WgmmaOperandLayoutAttr>(encoding)) {
    if (type.getRank() != 2)
      return emitError() << describeType(type)
                         << " has a wgmma operand layout, which needs "
                         << "a 2-D tile";
    return success();
  }
  std::optional<LayoutShape> layout = shapeOfLayout(encoding);
  if (!layout)
    return emitError() << describeType(type) << " has encoding " << encoding
                       << ", which is not a register layout (or a slice of a dimension "
                          "its parent lacks)";
  if (layout->rank != type.getRank())
    return emitError() << describeType(type) << " is rank " << type.getRank()
                       << " but its layout " << encoding << " is rank " << layout->rank;
  if (layout->warps == 0)
    return emitError() << describeType(type) << " has layout " << encoding
                       << ", whose warp grid entries must be powers of two in [1, 32]";
  if (layout->warps != numWarps)
    return emitError() << describeType(type) << " has layout " << encoding << " over "
                       << layout->warps << " warps, but the kernel runs " << numWarps;
  if (!type.hasStaticShape() ||
      !llvm::all_of(type.getShape(), [](int64_t d) { return llvm::isPowerOf2_64(d); }))
    return emitError() << describeType(type)
                       << " has a layout but a dimension that is not a power of two";
  if (failed(distribute(type, numWarps)))
    return emitError() << describeType(type) << " cannot be spread over " << numWarps
                       << " warps in layout " << encoding << " (at most "
                       << kMaxRegistersPerThread << " elements a thread)";
  return success();
}

int64_t getNumWarps(Operation *kernel) {
  if (auto k = dyn_cast<KernelOp>(kernel))
    if (auto config = k.getConfigAttr())
      return config.getWarps();
  return 4;
}

} // namespace tilejit::tile
