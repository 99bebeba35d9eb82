// The staging conditions and rewrites tile-pipeline-dots and
// tile-warp-specialize share (see Staging.h).
#include "Staging.h"
#include "tilejit/Dialect/Tile/IR/Layouts.h"

#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/Support/Debug.h"
#include "llvm/Support/FormatVariadic.h"

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
  return def && def->getBlock() == loop.getBody() && isMemoryEffectFree(def) &&
         def->getNumRegions() == 0 && llvm::all_of(def->getOperands(), [&](Value o) {
           return isRecomputable(o, loop);
         });
}

std::string whyNotStageable(LoadOp load, unsigned opIdx, bool transposed,
                            scf::ForOp loop) {
  if (load->getBlock() != loop.getBody() || !load->hasOneUse())
    return "the load is not in the loop's body or has other uses";
  if (!loop.getInductionVar().getType().isInteger(32))
    return "the loop's induction variable is not i32";
  if (auto pad = load.getPaddingAttr()) {
    auto f = dyn_cast<FloatAttr>(pad);
    if (!f || !f.getValue().isPosZero())
      return "its padding is not zero, which is what cp.async fills with";
  }
  ViewType view = load.getView().getType();
  Type element = view.getElementType();
  int64_t bits = element.isIntOrFloat() ? element.getIntOrFloatBitWidth() : 0;
  if (bits != 8 && bits != 16)
    return "its elements are not 8 or 16 bits wide";
  int64_t vec = 128 / bits;
  if (view.getRank() != 2 || view.getContiguousDim() != 1u)
    return "its view is not 2-D with a contiguous last dimension";
  int64_t size = view.getShape()[1], stride = view.getStrides()[0];
  if (size == ShapedType::kDynamic || size % vec || stride == ShapedType::kDynamic ||
      stride % vec)
    return "its view's rows and row stride are not static multiples of 16 bytes";
  // ldmatrix reads 16-byte rows along K, or (.trans) along N of a 16-bit B.
  bool kContiguous = (opIdx == 0) != transposed;
  if (!kContiguous && bits != 16)
    return "ldmatrix reads 8-bit elements only along K";
  if (load.getResult().getType().getDimSize(1) % vec)
    return "the tile's rows are not a multiple of 16 bytes";
  if (!isMultipleOf(load.getOffsets()[1], vec, loop))
    return "its column offset is not provably a multiple of 16 bytes";
  if (!isRecomputable(load.getView(), loop) ||
      !llvm::all_of(load.getOffsets(), [&](Value o) { return isRecomputable(o, loop); }))
    return "its view or offsets cannot be computed for a later iteration";
  return {};
}

bool wgmmaStagesA(DotOp dot) {
  auto loop = dyn_cast<scf::ForOp>(dot->getParentOp());
  auto aLoad = dot.getA().getDefiningOp<LoadOp>();
  return loop && aLoad && whyNotStageable(aLoad, 0, false, loop).empty();
}

std::string whyNotWgmma(DotOp dot, int64_t numWarps) {
  auto loop = dyn_cast<scf::ForOp>(dot->getParentOp());
  if (!loop)
    return "the dot is not in a loop that could stage its operands";
  auto aType = dot.getA().getType();
  Type element = aType.getElementType();
  if (!(element.isBF16() || element.isF16() || isa<Float8E4M3FNType>(element)))
    return "its operands are not bf16, f16 or e4m3";
  int64_t m = aType.getDimSize(0), n = dot.getB().getType().getDimSize(1);
  int64_t rowBytes = aType.getDimSize(1) * element.getIntOrFloatBitWidth() / 8;
  if (numWarps % 4 || m % (16 * numWarps))
    return llvm::formatv("M = {0} on {1} warps is not whole warpgroups of 64-row blocks",
                         m, numWarps);
  if (n % 8 || n > 256)
    return llvm::formatv("N = {0} is not a multiple of 8 up to 256", n);
  // Slots store rows wider than 128 bytes as 128-byte column blocks, each a
  // column of wgmma swizzle atoms.
  auto atomRows = [](int64_t bytes) {
    return bytes == 32 || bytes == 64 || (bytes > 0 && bytes % 128 == 0);
  };
  if (!atomRows(rowBytes))
    return llvm::formatv("a K row of A is {0} bytes, not 32 or 64 or a multiple of 128",
                         rowBytes);
  // B K-major: the [1, 0] transpose of an [N, K] load; MN-major (16-bit
  // only, wgmma's transpose immediate): a [K, N] load, whose slot rows of N
  // are MN-major swizzle atoms as A's are K-major ones.
  auto bTranspose = dot.getB().getDefiningOp<TransposeOp>();
  auto bLoad = bTranspose ? bTranspose.getSrc().getDefiningOp<LoadOp>()
                          : dot.getB().getDefiningOp<LoadOp>();
  if (bTranspose &&
      (!bTranspose->hasOneUse() || bTranspose.getOrder() != ArrayRef<int32_t>{1, 0}))
    bLoad = LoadOp();
  if (!bLoad)
    return "B is neither a load nor the only use of a [1, 0] transpose of one";
  if (!bTranspose) {
    int64_t nBytes = n * element.getIntOrFloatBitWidth() / 8;
    if (element.getIntOrFloatBitWidth() != 16)
      return "B is loaded [K, N] (N contiguous), which wgmma reads only for 16-bit "
             "operands";
    if (!atomRows(nBytes))
      return llvm::formatv("B is loaded [K, N] with N rows of {0} bytes, not 32 or 64 "
                           "or a multiple of 128",
                           nBytes);
  }
  if (std::string why = whyNotStageable(bLoad, 1, bool(bTranspose), loop); !why.empty())
    return "B cannot be staged: " + why;
  // An A the loop does not stage (a computed tile, a load outside the loop)
  // is read from registers: wgmma takes 16-bit A fragments there.
  if (!wgmmaStagesA(dot) && element.getIntOrFloatBitWidth() != 16)
    return "A is not a stageable load, and wgmma takes only 16-bit A from registers";
  return {};
}

std::optional<StagedOperand> matchStagedOperand(Value operand, unsigned opIdx,
                                                scf::ForOp loop, std::string &why) {
  StagedOperand s;
  s.convert = operand.getDefiningOp<ConvertLayoutOp>();
  if (!s.convert || s.convert->getBlock() != loop.getBody() || !s.convert->hasOneUse() ||
      !isa<DotOperandLayoutAttr, WgmmaOperandLayoutAttr>(
          s.convert.getResult().getType().getEncoding())) {
    why = "it is not the loop's only conversion of a tile into an operand layout";
    return std::nullopt;
  }
  // ldmatrix fills the standard fragments; kContig ones are loaded directly.
  if (auto layout =
          dyn_cast<DotOperandLayoutAttr>(s.convert.getResult().getType().getEncoding());
      layout && layout.getKContig()) {
    why = "its fragments hold 16 contiguous bytes of K and are loaded straight from "
          "global memory";
    return std::nullopt;
  }
  Value src = s.convert.getSrc();
  if ((s.transpose = src.getDefiningOp<TransposeOp>())) {
    if (!s.transpose->hasOneUse() || s.transpose.getOrder() != ArrayRef<int32_t>{1, 0}) {
      why = "it is a transpose that is not [1, 0] or has other uses";
      return std::nullopt;
    }
    src = s.transpose.getSrc();
  }
  s.load = src.getDefiningOp<LoadOp>();
  why = s.load ? whyNotStageable(s.load, opIdx, bool(s.transpose), loop)
               : "it is not loaded from a view";
  if (!why.empty())
    return std::nullopt;
  return s;
}

void forEachDotOperand(
    scf::ForOp loop,
    function_ref<void(DotOp, unsigned, const std::optional<StagedOperand> &, StringRef)>
        decided) {
  for (Operation &op : *loop.getBody()) {
    auto dot = dyn_cast<DotOp>(op);
    if (!dot)
      continue;
    Value operands[] = {dot.getA(), dot.getB()};
    for (auto [opIdx, operand] : llvm::enumerate(operands)) {
      std::string why;
      std::optional<StagedOperand> s = matchStagedOperand(operand, opIdx, loop, why);
      decided(dot, opIdx, s, why);
    }
  }
}

SmallVector<StagedOperand> collectStagedOperands(scf::ForOp loop, StringRef debugType) {
  SmallVector<StagedOperand> staged;
  forEachDotOperand(loop, [&](DotOp dot, unsigned opIdx,
                              const std::optional<StagedOperand> &s, StringRef why) {
    if (s)
      staged.push_back(*s);
    DEBUG_WITH_TYPE(debugType.data(),
                    llvm::dbgs() << debugType << ": operand " << (opIdx ? "B" : "A")
                                 << " of the dot at " << dot.getLoc() << ": "
                                 << (why.empty() ? "staged through shared memory"
                                                 : "stays in registers, since " + why)
                                 << "\n");
  });
  return staged;
}

Value recomputeFor(OpBuilder &b, Value v, scf::ForOp loop, IRMapping &map) {
  if (Value mapped = map.lookupOrNull(v))
    return mapped;
  Operation *def = v.getDefiningOp();
  if (!def || def->getBlock() != loop.getBody())
    return v;
  for (Value o : def->getOperands())
    recomputeFor(b, o, loop, map);
  return b.clone(*def, map)->getResult(cast<OpResult>(v).getResultNumber());
}

void allocateRing(OpBuilder &b, Location loc, StagedOperand &s, int64_t stages) {
  auto tile = s.load.getResult().getType();
  auto layout =
      sharedLayoutFor(b.getContext(), tile.getDimSize(1), tile.getElementType());
  auto type = MemRefType::get({stages, tile.getDimSize(0), tile.getDimSize(1)},
                              tile.getElementType(), MemRefLayoutAttrInterface(), layout);
  s.buffer = SharedAllocOp::create(b, loc, type);
}

void readFromSlot(OpBuilder &b, StagedOperand &s, Value slot) {
  b.setInsertionPoint(s.convert);
  Value tile =
      SharedLoadOp::create(b, s.convert.getLoc(), s.convert.getResult().getType(),
                           s.buffer, slot, DenseI64ArrayAttr(), bool(s.transpose));
  s.convert.getResult().replaceAllUsesWith(tile);
  s.convert.erase();
  if (s.transpose)
    s.transpose.erase();
  s.load.erase();
}

} // namespace tilejit::tile
