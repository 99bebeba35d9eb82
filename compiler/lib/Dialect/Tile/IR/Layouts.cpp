// Blocked, slice and mma layouts turned into register/lane/warp bases.
#include "tilejit/Dialect/Tile/IR/Layouts.h"

#include "tilejit/Dialect/Tile/IR/TileOps.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;

namespace tilejit::tile {

static Index unit(size_t rank, unsigned dim, int64_t value) {
  Index v(rank, 0);
  v[dim] = value;
  return v;
}

/// Registers enumerated as all subsets of `bases` (bit i of r selects base i).
static SmallVector<Index> subsetSums(ArrayRef<Index> bases, size_t rank) {
  SmallVector<Index> regs;
  for (uint64_t r = 0; r < (1ull << bases.size()); ++r) {
    Index idx(rank, 0);
    for (size_t b = 0; b < bases.size(); ++b)
      if (r >> b & 1)
        for (size_t d = 0; d < rank; ++d)
          idx[d] += bases[b][d];
    regs.push_back(idx);
  }
  return regs;
}

static FailureOr<Distributed> distributeBlocked(BlockedLayoutAttr layout,
                                                ArrayRef<int64_t> shape, int64_t numWarps) {
  size_t rank = shape.size();
  if (layout.getSpt().size() != rank)
    return failure();
  Distributed out;
  out.shape.assign(shape.begin(), shape.end());
  SmallVector<Index> regBases, repBases;
  // Lane and warp bits are handed out fastest dimension first.
  for (int64_t d : layout.getOrder()) {
    int64_t size = shape[d], covered = 1;
    auto take = [&](int64_t count, SmallVector<Index> *target, bool replicate) {
      for (int64_t i = 1; i < count; i *= 2) {
        bool inside = covered < size;
        if (target)
          target->push_back(unit(rank, d, inside ? covered : 0));
        else if (inside && !replicate)
          regBases.push_back(unit(rank, d, covered));
        if (inside)
          covered *= 2;
      }
    };
    // Registers beyond the tile are dropped, not replicated.
    take(layout.getSpt()[d], nullptr, false);
    take(layout.getTpw()[d], &out.lanes, true);
    take(layout.getWpc()[d], &out.warps, true);
    for (; covered < size; covered *= 2)
      repBases.push_back(unit(rank, d, covered));
  }
  if (out.lanes.size() != 5 || (1ll << out.warps.size()) != numWarps)
    return failure();
  regBases.append(repBases.begin(), repBases.end());
  out.regs = subsetSums(regBases, rank);
  return out;
}

static FailureOr<Distributed> distributeMma(MmaLayoutAttr layout, ArrayRef<int64_t> shape,
                                            int64_t numWarps) {
  ArrayRef<int64_t> wpc = layout.getWpc();
  if (shape.size() != 2 || wpc.size() != 2 || wpc[0] * wpc[1] != numWarps)
    return failure();
  int64_t m = shape[0], n = shape[1];
  // A 1-row or 1-column tile (a broadcast source) holds one slot of the grid.
  bool rowsReal = m > 1, colsReal = n > 1;
  if ((rowsReal && m % (16 * wpc[0])) || (colsReal && n % (8 * wpc[1])))
    return failure();
  Distributed out;
  out.shape = {m, n};
  auto row = [&](int64_t v) { return Index{rowsReal ? v : 0, 0}; };
  auto col = [&](int64_t v) { return Index{0, colsReal ? v : 0}; };
  // Lane = 4 * groupID + threadInGroup: c[i] sits at row groupID + 8*(i>>1),
  // column 2*threadInGroup + (i&1) (PTX ISA, mma.m16n8 accumulator fragment).
  out.lanes = {col(2), col(4), row(1), row(2), row(4)};
  for (int64_t i = 1; i < wpc[1]; i *= 2)
    out.warps.push_back(col(8 * i));
  for (int64_t i = 1; i < wpc[0]; i *= 2)
    out.warps.push_back(row(16 * i));
  SmallVector<Index> regBases;
  if (colsReal)
    regBases.push_back(col(1));
  if (rowsReal)
    regBases.push_back(row(8));
  for (int64_t i = 8 * wpc[1]; colsReal && i < n; i *= 2)
    regBases.push_back(col(i));
  for (int64_t i = 16 * wpc[0]; rowsReal && i < m; i *= 2)
    regBases.push_back(row(i));
  out.regs = subsetSums(regBases, 2);
  return out;
}

FailureOr<Distributed> distribute(Attribute encoding, ArrayRef<int64_t> shape,
                                  int64_t numWarps) {
  if (auto blocked = dyn_cast_or_null<BlockedLayoutAttr>(encoding))
    return distributeBlocked(blocked, shape, numWarps);
  if (auto mma = dyn_cast_or_null<MmaLayoutAttr>(encoding))
    return distributeMma(mma, shape, numWarps);
  auto slice = dyn_cast_or_null<SliceLayoutAttr>(encoding);
  if (!slice || slice.getDim() < 0 || slice.getDim() > (int64_t)shape.size())
    return failure();
  int64_t dim = slice.getDim();
  Index parentShape(shape.begin(), shape.end());
  parentShape.insert(parentShape.begin() + dim, 1);
  auto parent = distribute(slice.getParent(), parentShape, numWarps);
  if (failed(parent))
    return failure();
  auto drop = [&](Index v) {
    v.erase(v.begin() + dim);
    return v;
  };
  Distributed out;
  out.shape.assign(shape.begin(), shape.end());
  for (Index &l : parent->lanes)
    out.lanes.push_back(drop(l));
  for (Index &w : parent->warps)
    out.warps.push_back(drop(w));
  for (Index &r : parent->regs) {
    Index v = drop(r);
    if (!llvm::is_contained(out.regs, v))
      out.regs.push_back(v);
  }
  return out;
}

FailureOr<Distributed> distribute(RankedTensorType type, int64_t numWarps) {
  return distribute(type.getEncoding(), type.getShape(), numWarps);
}

static unsigned zeroMask(ArrayRef<Index> bases) {
  unsigned mask = 0;
  for (auto [b, v] : llvm::enumerate(bases))
    if (llvm::all_of(v, [](int64_t x) { return x == 0; }))
      mask |= 1u << b;
  return mask;
}

unsigned Distributed::laneReplicationMask() const { return zeroMask(lanes); }
unsigned Distributed::warpReplicationMask() const { return zeroMask(warps); }

bool Distributed::isDuplicateRegister(unsigned r) const {
  for (unsigned i = 0; i < r; ++i)
    if (regs[i] == regs[r])
      return true;
  return false;
}

unsigned Distributed::contiguousRegisters(unsigned dim, unsigned max) const {
  unsigned width = 1;
  while (width * 2 <= max && width * 2 <= regs.size()) {
    unsigned w = width * 2;
    bool ok = true;
    for (unsigned r = 0; r < regs.size() && ok; ++r) {
      Index expect = regs[r - r % w];
      expect[dim] += r % w;
      ok = regs[r] == expect;
    }
    if (!ok)
      break;
    width = w;
  }
  return width;
}

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

Attribute defaultBlockedLayout(MLIRContext *ctx, ArrayRef<int64_t> shape, int64_t numWarps,
                               int64_t vector) {
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
  // Prefer more warps along M (16-row tiles) while they still divide the tile.
  int64_t wm = numWarps, wn = 1;
  while (wm > 1 && m % (16 * wm) != 0) {
    wm /= 2;
    wn *= 2;
  }
  return MmaLayoutAttr::get(ctx, {wm, wn});
}

int64_t getNumWarps(Operation *kernel) {
  if (auto k = dyn_cast<KernelOp>(kernel))
    if (auto config = k.getConfigAttr())
      return config.getWarps();
  return 4;
}

} // namespace tilejit::tile
