// Blocked, slice and mma layouts turned into register/lane/warp bases
// (LayoutChoice.cpp picks and checks the layouts themselves).
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
/// The caller has checked that there are at most kMaxRegistersPerThread.
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

/// At most kMaxRegistersPerThread registers: a larger tile (or one replicated
/// onto every thread) is refused before its registers are enumerated.
static bool fitsRegisters(ArrayRef<Index> bases) {
  return (int64_t(1) << std::min<size_t>(bases.size(), 62)) <= kMaxRegistersPerThread;
}

static FailureOr<Distributed>
distributeBlocked(BlockedLayoutAttr layout, ArrayRef<int64_t> shape, int64_t numWarps) {
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
  if (!fitsRegisters(regBases))
    return failure();
  out.regs = subsetSums(regBases, rank);
  return out;
}

static FailureOr<Distributed> distributeMma(MmaLayoutAttr layout, ArrayRef<int64_t> shape,
                                            int64_t numWarps) {
  ArrayRef<int64_t> wpc = layout.getWpc();
  const int64_t wpk = layout.getWpk();
  if (shape.size() != 2 || wpc.size() != 2 || wpc[0] * wpc[1] * wpk != numWarps)
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
  // Split-K groups hold the same elements (each its own partial sum).
  for (int64_t i = 1; i < wpk; i *= 2)
    out.warps.push_back(Index{0, 0});
  SmallVector<Index> regBases;
  if (colsReal)
    regBases.push_back(col(1));
  if (rowsReal)
    regBases.push_back(row(8));
  for (int64_t i = 8 * wpc[1]; colsReal && i < n; i *= 2)
    regBases.push_back(col(i));
  for (int64_t i = 16 * wpc[0]; rowsReal && i < m; i *= 2)
    regBases.push_back(row(i));
  if (!fitsRegisters(regBases))
    return failure();
  out.regs = subsetSums(regBases, 2);
  return out;
}

/// The K elements one mma step (standard) or step pair (kContig) takes from
/// one thread's lane group: the granule split-K groups split K at.
static int64_t kGranule(DotOperandLayoutAttr layout) {
  return (layout.getKContig() ? 16 : 8) * layout.getKWidth();
}

static FailureOr<Distributed> distributeDotOperand(DotOperandLayoutAttr layout,
                                                   ArrayRef<int64_t> shape,
                                                   int64_t numWarps) {
  ArrayRef<int64_t> wpc = layout.getParent().getWpc();
  const int64_t wpk = layout.getParent().getWpk();
  int64_t kw = layout.getKWidth();
  bool isA = layout.getOpIdx() == 0, contig = layout.getKContig();
  if (shape.size() != 2 || wpc.size() != 2 || wpc[0] * wpc[1] * wpk != numWarps)
    return failure();
  // A is MxK (K = dim 1), B is KxN (K = dim 0); the other dim is "outer".
  unsigned kDim = isA ? 1 : 0, outerDim = isA ? 0 : 1;
  int64_t kSize = shape[kDim], outer = shape[outerDim];
  int64_t outerTile = isA ? 16 : 8, outerWarps = wpc[outerDim];
  const int64_t granule = kGranule(layout);
  if (kSize % (granule * wpk) || outer % (outerTile * outerWarps))
    return failure();
  auto k = [&](int64_t v) { return unit(2, kDim, v); };
  auto o = [&](int64_t v) { return unit(2, outerDim, v); };
  Distributed out;
  out.shape.assign(shape.begin(), shape.end());
  // Lane = 4 * groupID + threadInGroup: threadInGroup picks K groups (of
  // kWidth elements, or with kContig of 16 bytes), groupID the row (A) or
  // column (B) (PTX ISA, mma.m16n8k16/k32 A and B fragments).
  const int64_t laneK = contig ? 4 * kw : kw;
  out.lanes = {k(laneK), k(2 * laneK), o(1), o(2), o(4)};
  // Warp bits: the parent's column bits first, then its row bits (the ones
  // along the other operand's dimension replicate), then the split-K groups,
  // each a granule of K further (all groups' loads of one step are adjacent).
  for (int64_t i = 1; i < wpc[1]; i *= 2)
    out.warps.push_back(isA ? Index{0, 0} : o(8 * i));
  for (int64_t i = 1; i < wpc[0]; i *= 2)
    out.warps.push_back(isA ? o(16 * i) : Index{0, 0});
  for (int64_t i = 1; i < wpk; i *= 2)
    out.warps.push_back(k(granule * i));
  // Register bases in the order fragmentRegister() reads them.
  SmallVector<Index> regBases;
  if (contig) {
    for (int64_t i = 1; i < laneK; i *= 2) // 16 bytes along K: pack, half, step
      regBases.push_back(k(i));
    if (isA) // a0/a1: rows groupID and groupID + 8
      regBases.push_back(o(8));
  } else {
    for (int64_t i = 1; i < kw; i *= 2) // the elements packed in one register
      regBases.push_back(k(i));
    if (isA)
      regBases.push_back(o(8));
    regBases.push_back(k(4 * kw)); // a0,a1 / a2,a3 (b0 / b1): the two K halves
  }
  for (int64_t i = granule * wpk; i < kSize; i *= 2)
    regBases.push_back(k(i));
  for (int64_t i = outerTile * outerWarps; i < outer; i *= 2)
    regBases.push_back(o(i));
  if (!fitsRegisters(regBases))
    return failure();
  out.regs = subsetSums(regBases, 2);
  return out;
}

int64_t fragmentRegister(DotOperandLayoutAttr layout, int64_t kSteps, int64_t tile,
                         int64_t step, int64_t word, int64_t pack) {
  const int64_t kw = layout.getKWidth();
  const bool isA = layout.getOpIdx() == 0;
  const int64_t words = isA ? 4 : 2;
  if (!layout.getKContig())
    return pack + kw * (word + words * (step + kSteps * tile));
  // 16 bytes of K per row: pack, half (word bit 1 for A, the word for B) and
  // the step within its pair, then A's row bit (word bit 0), then the pairs.
  const int64_t half = isA ? word >> 1 : word, row = isA ? word & 1 : 0;
  const int64_t run = 4 * kw, rows = isA ? 2 : 1;
  return pack + kw * (half + 2 * (step & 1)) +
         run * (row + rows * ((step >> 1) + (kSteps / 2) * tile));
}

FailureOr<Distributed> partialSums(RankedTensorType type, int64_t numWarps) {
  auto mma = dyn_cast<MmaLayoutAttr>(type.getEncoding());
  if (!mma)
    return failure();
  auto d = distributeMma(mma, type.getShape(), numWarps);
  if (failed(d))
    return failure();
  // The same distribution over [wpk, M, N]: the split-K warp bits select the
  // leading index (the last log2(wpk) warp bases).
  Distributed out;
  out.shape = {mma.getWpk(), type.getDimSize(0), type.getDimSize(1)};
  auto lift = [](const Index &i) { return Index{0, i[0], i[1]}; };
  for (const Index &r : d->regs)
    out.regs.push_back(lift(r));
  for (const Index &l : d->lanes)
    out.lanes.push_back(lift(l));
  const size_t groupBits = llvm::Log2_64(mma.getWpk());
  for (size_t b = 0; b < d->warps.size(); ++b) {
    const size_t first = d->warps.size() - groupBits;
    out.warps.push_back(b < first ? lift(d->warps[b])
                                  : Index{int64_t(1) << (b - first), 0, 0});
  }
  return out;
}

FailureOr<Distributed> distribute(Attribute encoding, ArrayRef<int64_t> shape,
                                  int64_t numWarps) {
  // Registers are the subset sums of power-of-two bases: a dimension of
  // another size would get registers outside the tile.
  if (!llvm::all_of(shape, [](int64_t d) { return llvm::isPowerOf2_64(d); }))
    return failure();
  if (auto blocked = dyn_cast_or_null<BlockedLayoutAttr>(encoding))
    return distributeBlocked(blocked, shape, numWarps);
  if (auto mma = dyn_cast_or_null<MmaLayoutAttr>(encoding))
    return distributeMma(mma, shape, numWarps);
  if (auto operand = dyn_cast_or_null<DotOperandLayoutAttr>(encoding))
    return distributeDotOperand(operand, shape, numWarps);
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

SmallVector<std::pair<int, unsigned>> Distributed::laneIndexBits() const {
  auto isZero = [](const Index &i) {
    return llvm::all_of(i, [](int64_t v) { return v == 0; });
  };
  if (regs.empty() || !llvm::all_of(warps, isZero) || !isZero(regs[0]))
    return {};
  for (unsigned r = 1; r < regs.size(); ++r)
    if (!isDuplicateRegister(r))
      return {};
  SmallVector<std::pair<int, unsigned>> bits;
  Index covered(shape.size(), 0);
  for (const Index &basis : lanes) {
    auto nonzero = llvm::count_if(basis, [](int64_t v) { return v != 0; });
    if (nonzero == 0) {
      bits.push_back({-1, 0}); // lanes differing here hold the same element
      continue;
    }
    auto dim = llvm::find_if(basis, [](int64_t v) { return v != 0; }) - basis.begin();
    if (nonzero > 1 || !llvm::isPowerOf2_64(basis[dim]) || (covered[dim] & basis[dim]))
      return {};
    covered[dim] |= basis[dim];
    bits.push_back({int(dim), unsigned(llvm::Log2_64(basis[dim]))});
  }
  for (auto [dim, size] : llvm::enumerate(shape))
    if (covered[dim] != size - 1)
      return {};
  return bits;
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

} // namespace tilejit::tile
