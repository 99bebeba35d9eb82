// Dot family on sm_90a: tile.dot and tile.dot_async as wgmma.mma_async
// m64nNk(32 bytes) with B (and A, unless it comes in registers) read by the
// tensor cores from shared memory, and tile.dot_wait as wgmma.wait_group.
//
// tile-pipeline-dots leaves each operand as one slot of a #tile.shared ring
// stored K-major: rows (M for A, N for B) of K elements, 16-byte chunks
// XORed with the row's phase, rows wider than 128 bytes as 128-byte column
// blocks. For rows (or blocks) of 128, 64 and 32 bytes that is exactly
// wgmma's 128B, 64B and 32B swizzle (the XOR of address bits [4, 7) with the
// 8-row group's bits above the row), so a descriptor describes the slot as
// stored: the start address, the stride between 8-row groups (SBO) and the
// swizzle mode; K steps of 32 bytes move the start address inside the
// swizzle atom, as the hardware applies the swizzle to the full address, and
// to the next column block every 128 bytes of K. The slots start on
// 1024-byte atoms (shared memory is 1024-byte aligned and slots are
// multiples of 8 rows).
//
// A 16-bit B loaded [K, N] (N contiguous) is staged as loaded, rows of N:
// each 32-, 64- or 128-byte row, or 128-byte column block, is an MN-major
// swizzle atom column, so a descriptor with the transpose immediate (tnspB =
// 1) reads it: SBO is the stride between 8-row groups of K, LBO the one
// between 64-column blocks along N, and a K step of 16 moves the start
// address by 16 rows.
//
// Warpgroup g (warps 4g .. 4g+3) owns the 64-row blocks 64g + 16 * warps * i
// of the accumulator, which is #tile.mma<wpc = [warps, 1]>: per block, the
// registers of its N/8 column tiles in the order wgmma's d fragment lists
// them (PTX ISA, "Register Fragments: wgmma .m64nNk*" accumulator D).
//
// A 16-bit A in registers is wgmma's register fragment for .m64nNk16 A: warp
// w of a warpgroup holds rows 16w .. 16w+15 of its 64-row block as four
// .b32 words laid out as mma.sync m16n8k16's a0..a3, so A arrives in the
// #tile.dot_operand layout whose parent is the accumulator's, and a chained
// accumulator of [warps, 1] is already in it (no shared-memory round trip).
#include "DotWgmma.h"

#include "mlir/IR/Matchers.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"

using namespace mlir;

namespace tilejit::lowering {

Value fragmentWord(Emitter &e, const Regs &regs, tile::DotOperandLayoutAttr layout,
                   int64_t kSteps, int64_t tile, int64_t step, int64_t word,
                   Location loc) {
  int64_t kw = layout.getKWidth();
  auto vecType = VectorType::get({kw}, regs[0].getType());
  Value vec = LLVM::UndefOp::create(e.b, loc, vecType);
  for (int64_t p = 0; p < kw; ++p)
    vec = LLVM::InsertElementOp::create(
        e.b, loc, vec, regs[tile::fragmentRegister(layout, kSteps, tile, step, word, p)],
        e.i32(p, loc));
  return LLVM::BitcastOp::create(e.b, loc, e.b.getI32Type(), vec);
}

namespace {

/// PTX ISA "Matrix Descriptor Format": bits 0-13 start address >> 4, 16-29
/// leading byte offset >> 4, 32-45 stride byte offset >> 4 (between 8-row
/// groups: of M/N when K-major, of K when MN-major), 62-63 swizzle mode (1:
/// 128B, 2: 64B, 3: 32B) for atoms of `rowBytes`-byte rows. The leading byte
/// offset `leading` steps between atom columns along N of an MN-major B;
/// swizzled K-major operands do not use it (16: the field holds 1, as
/// CUTLASS sets it).
Value descriptorBase(Emitter &e, Value slotAddress, int64_t rowBytes, int64_t leading,
                     Location loc) {
  OpBuilder &b = e.b;
  Type i64 = b.getI64Type();
  Value address = LLVM::PtrToIntOp::create(b, loc, i64, slotAddress);
  Value start = LLVM::LShrOp::create(
      b, loc, LLVM::AndOp::create(b, loc, address, e.i64(0x3FFFF, loc)), e.i64(4, loc));
  int64_t swizzle = rowBytes == 128 ? 1 : rowBytes == 64 ? 2 : 3;
  int64_t stride = 8 * rowBytes;
  uint64_t fields = (uint64_t(leading >> 4) << 16) | (uint64_t(stride >> 4) << 32) |
                    (uint64_t(swizzle) << 62);
  return LLVM::OrOp::create(b, loc, start, e.i64(int64_t(fields), loc));
}

/// The descriptor `bytes` further into the slot (no carry leaves the 14-bit
/// address field: shared memory ends below 256 KiB).
Value advance(Emitter &e, Value descriptor, int64_t bytes, Location loc) {
  if (!bytes)
    return descriptor;
  return LLVM::AddOp::create(e.b, loc, descriptor, e.i64(bytes >> 4, loc));
}

/// "{$first, ..., $(first+count-1)}"
std::string registerList(int64_t first, int64_t count) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "{";
  for (int64_t i = 0; i < count; ++i)
    os << (i ? ", $" : "$") << first + i;
  os << "}";
  return text;
}

/// `count` "=f" outputs, the `inputs` constraints, then (when `tied`) the
/// outputs tied as inputs.
std::string tiedConstraints(int64_t count, llvm::StringRef inputs, bool tied = true) {
  SmallVector<std::string> parts(count, "=f");
  if (!inputs.empty())
    parts.push_back(inputs.str());
  for (int64_t i = 0; tied && i < count; ++i)
    parts.push_back(std::to_string(i));
  return llvm::join(parts, ",");
}

/// One wgmma product on slot descriptors (and A registers): the checks, the
/// descriptors of this warpgroup's rows, and the issue of one group of
/// instructions.
struct WgmmaProduct {
  Emitter &e;
  Location loc;
  const char *types = nullptr;
  int64_t m = 0, k = 0, n = 0, bytes = 0, rowBytes = 0, blocks = 0, accPerBlock = 0;
  /// The stored rows (or 128-byte column blocks) of A's slot, and of B's: K
  /// like A's when K-major, N when MN-major.
  int64_t aAtom = 0, bAtom = 0;
  bool bMnMajor = false;
  Value aDesc, bDesc;
  tile::DotOperandLayoutAttr aFragments; ///< set when A comes in registers
  Regs aRegs;

  WgmmaProduct(Emitter &e, Location loc) : e(e), loc(loc) {}

  /// Checks `a` x `b` -> `acc` and builds the descriptors (before any issue).
  LogicalResult prepare(Operation *op, Value a, Value b, Value acc) {
    OpBuilder &builder = e.b;
    auto aType = cast<RankedTensorType>(a.getType());
    auto bType = cast<RankedTensorType>(b.getType());
    auto mma = dyn_cast<tile::MmaLayoutAttr>(
        cast<RankedTensorType>(acc.getType()).getEncoding());
    Type element = aType.getElementType();
    if (element.isBF16())
      types = ".bf16.bf16";
    else if (element.isF16())
      types = ".f16.f16";
    else if (isa<Float8E4M3FNType>(element)) {
      types = ".e4m3.e4m3";
      e.reducedSums = true;
    } else
      return op->emitOpError("has no wgmma lowering for ") << element << " operands";
    m = aType.getDimSize(0);
    k = aType.getDimSize(1);
    n = bType.getDimSize(1);
    bytes = element.getIntOrFloatBitWidth() / 8;
    rowBytes = k * bytes;
    aAtom = std::min<int64_t>(rowBytes, 128);
    int64_t warps = e.numWarps;
    if (!mma || mma.getWpc()[0] != warps || mma.getWpc()[1] != 1 || warps % 4 ||
        m % (16 * warps) || n % 8 || n > 256 || !isAtomRows(rowBytes))
      return op->emitOpError("wgmma needs the accumulator in #tile.mma<wpc = [")
             << warps << ", 1]>, warps a multiple of 4, M % " << 16 * warps
             << " = 0, N a multiple of 8 up to 256 and rows of 32 or 64 bytes or a "
                "multiple of 128; got "
             << m << "x" << n << "x" << k;
    blocks = m / (16 * warps);
    accPerBlock = n / 2;
    if ((aFragments = dyn_cast<tile::DotOperandLayoutAttr>(aType.getEncoding()))) {
      if (bytes != 2 || aFragments.getKWidth() != 2 || aFragments.getKContig() ||
          aFragments.getParent() != mma)
        return op->emitOpError("takes A from registers only as 16-bit fragments of "
                               "kWidth 2 over the accumulator's layout; got ")
               << aType;
      aRegs = e.regs(a);
    } else {
      Value aSlot = e.regs(a)[0];
      // Rows of this warpgroup's first block: 64 * (warp / 4).
      Value group = LLVM::LShrOp::create(builder, loc, e.warp(), e.i32(2, loc));
      Value aGroupOffset =
          LLVM::MulOp::create(builder, loc, group, e.i32(64 * aAtom, loc));
      Value aGroup =
          LLVM::GEPOp::create(builder, loc, aSlot.getType(), builder.getI8Type(), aSlot,
                              ValueRange{aGroupOffset});
      aDesc = descriptorBase(e, aGroup, aAtom, 16, loc);
    }
    auto bSlot = b.getDefiningOp<tile::SharedLoadOp>();
    bMnMajor = bSlot && bSlot.getKDim() == 0;
    if (!bMnMajor) {
      bAtom = aAtom;
      bDesc = descriptorBase(e, e.regs(b)[0], bAtom, 16, loc);
      return success();
    }
    if (!isAtomRows(n * bytes))
      return op->emitOpError("reads an MN-major B in rows of 32 or 64 bytes or a "
                             "multiple of 128; got N = ")
             << n << " (" << n * bytes << " bytes)";
    bAtom = std::min<int64_t>(n * bytes, 128);
    bDesc = descriptorBase(e, e.regs(b)[0], bAtom, k * 128, loc);
    return success();
  }

  /// Rows a slot stores as wgmma swizzle atoms: 32 or 64 bytes, or 128-byte
  /// column blocks.
  static bool isAtomRows(int64_t rowBytes) {
    return rowBytes == 32 || rowBytes == 64 || (rowBytes > 0 && rowBytes % 128 == 0);
  }

  /// Bytes from a K-major slot's start (`rows` rows) to K step `s`: inside
  /// the 128-byte column block, then the blocks.
  int64_t kStepOffset(int64_t s, int64_t rows) const {
    return (32 * s / 128) * rows * 128 + (32 * s) % 128;
  }

  /// Issues the K steps of block `block`, columns [col, col + width), on the
  /// registers `d` (width / 2 of them, in wgmma's d fragment order, which
  /// lists 8-column tiles in order), starting from zero when `fromZero`;
  /// closes the group when `commit`.
  void issue(int64_t block, int64_t col, int64_t width, Regs &d, bool fromZero,
             bool commit = true) {
    OpBuilder &b = e.b;
    bool registerA = bool(aFragments);
    // Every K step's A words are packed before the fence: a register written
    // after it and read by a wgmma would make ptxas insert another.
    SmallVector<Value> words;
    for (int64_t s = 0; registerA && s < rowBytes / 32; ++s)
      for (int64_t q = 0; q < 4; ++q)
        words.push_back(
            fragmentWord(e, aRegs, aFragments, rowBytes / 32, block, s, q, loc));
    // The slots' writes were made visible to the async proxy before this
    // (tile.async_wait's fence, or the TMA's mbarrier); wgmma.fence orders
    // the accumulator's (and A's) last register writes before the tensor
    // cores read them.
    NVVM::WgmmaFenceAlignedOp::create(b, loc);
    int64_t count = width / 2, kInstr = 32 / bytes;
    int64_t aWords = registerA ? 4 : 1;
    std::string shape = llvm::formatv("m64n{0}k{1}", width, kInstr);
    // 16-bit operands take transpose immediates: 0, K-major, 1, MN-major
    // (only B's when A comes in registers).
    std::string text = llvm::formatv(
        "{{\n.reg .pred p;\nsetp.ne.b32 p, ${0}, "
        "0;\nwgmma.mma_async.sync.aligned.{1}.f32{2} "
        "{3}, {4}, ${5}, p, 1, 1{6};\n}",
        count + aWords + 1, shape, types, registerList(0, count),
        registerA ? registerList(count, 4) : "$" + std::to_string(count), count + aWords,
        bytes != 2
            ? std::string()
            : llvm::formatv("{0}, {1}", registerA ? "" : ", 0", int(bMnMajor)).str());
    const char *inputs = registerA ? "r,r,r,r,l,r" : "l,l,r";
    std::string constraints = tiedConstraints(count, inputs);
    SmallVector<Type> resultTypes(count, b.getF32Type());
    Value one = e.i32(1, loc), zero = e.i32(0, loc);
    int64_t warps = e.numWarps;
    for (int64_t s = 0; s < rowBytes / 32; ++s) {
      // K-major B's rows are N: column `col` starts `col` rows (whole 8-row
      // swizzle atoms) into each column block. An MN-major B's rows are K (its one
      // group spans all N): a step of 32 bytes of K is 16 rows.
      SmallVector<Value> args;
      if (registerA)
        args.append(words.begin() + 4 * s, words.begin() + 4 * s + 4);
      else
        args.push_back(
            advance(e, aDesc, block * 16 * warps * aAtom + kStepOffset(s, m), loc));
      args.push_back(advance(
          e, bDesc, bMnMajor ? s * (32 / bytes) * bAtom : col * bAtom + kStepOffset(s, n),
          loc));
      args.push_back(fromZero && s == 0 ? zero : one);
      // Starting from zero (scale-d = 0) reads no accumulator: its registers
      // are outputs only, so nothing writes them before the instruction.
      bool readsD = !(fromZero && s == 0);
      if (readsD)
        args.append(d.begin(), d.end());
      d = e.inlineAsm(text, readsD ? constraints : tiedConstraints(count, inputs, false),
                      resultTypes, args, /*sideEffects=*/true, loc);
    }
    if (commit)
      NVVM::WgmmaGroupSyncAlignedOp::create(b, loc);
  }
};

/// `d` once at most `pending` wgmma groups of this warpgroup are in flight:
/// the registers pass through the wait, so nothing reads them before it.
Regs waitGroups(Emitter &e, const Regs &d, int64_t pending, Location loc) {
  SmallVector<Type> resultTypes;
  for (Value v : d)
    resultTypes.push_back(v.getType());
  return e.inlineAsm("wgmma.wait_group.sync.aligned " + std::to_string(pending) + ";",
                     tiedConstraints(d.size(), ""), resultTypes, d, /*sideEffects=*/true,
                     loc);
}

} // namespace

LogicalResult emitWgmmaDot(Emitter &e, tile::DotOp dot) {
  Location loc = dot.getLoc();
  WgmmaProduct product(e, loc);
  if (failed(product.prepare(dot, dot.getA(), dot.getB(), dot.getAcc())))
    return failure();
  int64_t n = product.n, blocks = product.blocks, accPerBlock = product.accPerBlock;
  Regs acc = e.regs(dot.getAcc());
  Value result = dot.getResult();
  auto wait = [&e, loc](const Regs &d) { return waitGroups(e, d, 0, loc); };
  // The last wait is deferred past the ops that cannot depend on it (the K
  // loop's refill copies), so they issue while the tensor cores run.
  if (product.bytes != 1) {
    for (int64_t i = 0; i < blocks; ++i) {
      Regs d(acc.begin() + i * accPerBlock, acc.begin() + (i + 1) * accPerBlock);
      product.issue(i, 0, n, d, /*fromZero=*/false);
      std::copy(d.begin(), d.end(), acc.begin() + i * accPerBlock);
    }
    e.defer([&e, wait, result, acc = std::move(acc)] { e.map(result, wait(acc)); });
    return success();
  }
  // e4m3 wgmma sums its products with fewer bits than f32 (measured on the
  // H200: docs/BENCHMARKS.md, "e4m3 wgmma accumulation"), so each dot's (one
  // K block's) products start from zero (scale-d = 0) and are added to the
  // f32 accumulator by ordinary adds after the wait. They are
  // summed one group (a 64-row block, at most 128 columns) at a time: the
  // partial registers are one group's, so a 64x256 warpgroup tile needs 64
  // of them next to its 128 accumulators, not 128.
  int64_t groups = (n + 127) / 128;
  while (n % groups || (n / groups) % 8)
    ++groups;
  int64_t width = n / groups;
  Type f32 = e.b.getF32Type();
  for (int64_t i = 0; i < blocks; ++i)
    for (int64_t g = 0; g < groups; ++g) {
      Regs partial(width / 2, LLVM::UndefOp::create(e.b, loc, f32));
      product.issue(i, g * width, width, partial, /*fromZero=*/true);
      int64_t first = i * accPerBlock + g * width / 2;
      auto promote = [&e, first](Regs &acc, const Regs &done) {
        for (auto [j, products] : llvm::enumerate(done))
          acc[first + j] =
              LLVM::FAddOp::create(e.b, products.getLoc(), acc[first + j], products);
      };
      if (i + 1 < blocks || g + 1 < groups) {
        promote(acc, wait(partial));
        continue;
      }
      e.defer([&e, wait, promote, result, acc = std::move(acc),
               partial = std::move(partial)] {
        Regs sums = acc;
        promote(sums, wait(partial));
        e.map(result, std::move(sums));
      });
    }
  return success();
}

LogicalResult emitWgmmaDotAsync(Emitter &e, tile::DotAsyncOp dot) {
  Location loc = dot.getLoc();
  WgmmaProduct product(e, loc);
  if (failed(product.prepare(dot, dot.getA(), dot.getB(), dot.getAcc())))
    return failure();
  // A zero accumulator (a K block's products on their own) is never read:
  // the first instruction starts from zero.
  Value acc0 = dot.getAcc();
  if (auto splat = acc0.getDefiningOp<tile::SplatOp>())
    acc0 = splat.getOperand();
  bool fromZero = matchPattern(acc0, m_AnyZeroFloat());
  Regs acc = e.regs(dot.getAcc());
  int64_t per = product.accPerBlock;
  for (int64_t i = 0; i < product.blocks; ++i) {
    Regs d(acc.begin() + i * per, acc.begin() + (i + 1) * per);
    product.issue(i, 0, product.n, d, fromZero, /*commit=*/i + 1 == product.blocks);
    std::copy(d.begin(), d.end(), acc.begin() + i * per);
  }
  e.map(dot.getResult(), std::move(acc));
  return success();
}

LogicalResult emitDotWait(Emitter &e, tile::DotWaitOp wait) {
  Regs all;
  SmallVector<unsigned> counts;
  for (Value v : wait.getValues()) {
    Regs &r = e.regs(v);
    all.append(r.begin(), r.end());
    counts.push_back(r.size());
  }
  Regs done = waitGroups(e, all, wait.getPending(), wait.getLoc());
  unsigned at = 0;
  for (auto [result, count] : llvm::zip(wait.getResults(), counts)) {
    e.map(result, Regs(done.begin() + at, done.begin() + at + count));
    at += count;
  }
  return success();
}

} // namespace tilejit::lowering
