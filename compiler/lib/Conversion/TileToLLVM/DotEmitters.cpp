// Dot family: tile.dot on mma.sync (bf16/f16 m16n8k16, e4m3 m16n8k32, f32
// accumulation). Operands are staged through shared memory and each warp
// gathers its fragments as the PTX ISA lays them out; the accumulator stays
// in registers in the #tile.mma layout.
#include "Emitter.h"

using namespace mlir;

namespace tilejit::lowering {
namespace {

struct MmaShape {
  int64_t k;            ///< K per instruction
  int64_t aPack, bPack; ///< elements per 32-bit fragment register
  const char *ptxTypes; ///< ".bf16.bf16" etc.
};

LogicalResult emitDot(Emitter &e, Operation *op) {
  auto dot = cast<tile::DotOp>(op);
  Location loc = op->getLoc();
  OpBuilder &b = e.b;
  auto aType = dot.getA().getType(), bType = dot.getB().getType();
  auto accType = dot.getAcc().getType();
  auto mma = dyn_cast<tile::MmaLayoutAttr>(accType.getEncoding());
  if (!mma)
    return op->emitOpError("accumulator must be in the #tile.mma layout");
  Type element = aType.getElementType();
  MmaShape shape;
  if (element.isBF16())
    shape = {16, 2, 2, ".bf16.bf16"};
  else if (element.isF16())
    shape = {16, 2, 2, ".f16.f16"};
  else if (isa<Float8E4M3FNType>(element))
    shape = {32, 4, 4, ".e4m3.e4m3"};
  else
    return op->emitOpError("has no GPU lowering for ") << element << " operands";
  int64_t m = aType.getDimSize(0), kTotal = aType.getDimSize(1), n = bType.getDimSize(1);
  int64_t wm = mma.getWpc()[0], wn = mma.getWpc()[1];
  if (m % (16 * wm) || n % (8 * wn) || kTotal % shape.k)
    return op->emitOpError("needs M % ") << 16 * wm << ", N % " << 8 * wn << " and K % "
                                          << shape.k << " to be 0";
  Type llvmElement = e.elementType(aType);
  int64_t bytes = llvmElement.getIntOrFloatBitWidth() / 8;
  int64_t bOffset = m * kTotal * bytes;

  e.barrier(loc);
  e.storeShared(e.layout(aType), e.regs(dot.getA()), llvmElement, 0, loc);
  e.storeShared(e.layout(bType), e.regs(dot.getB()), llvmElement, bOffset, loc);
  e.barrier(loc);

  Value lane = e.lane(), warp = e.warp();
  Value gid = LLVM::LShrOp::create(b, loc, lane, e.i32(2, loc));
  Value tig = LLVM::AndOp::create(b, loc, lane, e.i32(3, loc));
  Value wy = LLVM::UDivOp::create(b, loc, warp, e.i32(wn, loc));
  Value wx = LLVM::URemOp::create(b, loc, warp, e.i32(wn, loc));
  auto add = [&](Value x, int64_t c) {
    return c ? Value(LLVM::AddOp::create(b, loc, x, e.i32(c, loc))) : x;
  };
  auto mul = [&](Value x, int64_t c) { return LLVM::MulOp::create(b, loc, x, e.i32(c, loc)); };
  Value rowBase = add(mul(wy, 16), 0), colBase = mul(wx, 8);
  Type i32 = b.getI32Type();
  // One 32-bit fragment register: `pack` elements at consecutive smem indices
  // (`step` apart), packed low to high.
  auto fragment = [&](Value first, int64_t step, int64_t pack, int64_t offset) -> Value {
    if (step == 1)
      return LLVM::LoadOp::create(b, loc, i32, e.sharedAddress(
          LLVM::UDivOp::create(b, loc, first, e.i32(pack, loc)), i32, offset, loc));
    Value word = e.i32(0, loc);
    for (int64_t p = 0; p < pack; ++p) {
      Value idx = add(first, p * step);
      Value v = LLVM::LoadOp::create(b, loc, llvmElement,
                                     e.sharedAddress(idx, llvmElement, offset, loc));
      Value bits = LLVM::ZExtOp::create(
          b, loc, i32,
          llvmElement.isInteger(8) ? v
                                   : Value(LLVM::BitcastOp::create(b, loc, b.getI16Type(), v)));
      word = LLVM::OrOp::create(b, loc, word, LLVM::ShlOp::create(b, loc, bits, e.i32(p * bytes * 8, loc)));
    }
    return word;
  };

  int64_t repsM = m / (16 * wm), repsN = n / (8 * wn);
  Regs acc = e.regs(dot.getAcc());
  std::string text = std::string("mma.sync.aligned.m16n8k") + std::to_string(shape.k) +
                     ".row.col.f32" + shape.ptxTypes +
                     ".f32 {$0,$1,$2,$3}, {$4,$5,$6,$7}, {$8,$9}, {$10,$11,$12,$13};";
  for (int64_t kk = 0; kk < kTotal; kk += shape.k) {
    SmallVector<Regs> aFrags, bFrags;
    for (int64_t i = 0; i < repsM; ++i) {
      // a[q]: row gid + 8*(q&1), columns (q>>1)*8*pack/2 .. : four registers.
      Regs regs;
      for (int64_t q = 0; q < 4; ++q) {
        int64_t rowOff = i * 16 * wm + 8 * (q & 1);
        int64_t colOff = kk + (q >> 1) * (shape.k / 2);
        Value row = add(add(rowBase, rowOff), 0);
        row = LLVM::AddOp::create(b, loc, row, gid);
        Value col = add(mul(tig, shape.aPack), colOff);
        Value first = LLVM::AddOp::create(b, loc, mul(row, kTotal), col);
        regs.push_back(fragment(first, 1, shape.aPack, 0));
      }
      aFrags.push_back(regs);
    }
    for (int64_t j = 0; j < repsN; ++j) {
      // b[q]: column gid, rows tig*pack + q*k/2 .. (consecutive rows).
      Regs regs;
      for (int64_t q = 0; q < 2; ++q) {
        Value col = LLVM::AddOp::create(b, loc, add(colBase, j * 8 * wn), gid);
        Value row = add(mul(tig, shape.bPack), kk + q * (shape.k / 2));
        Value first = LLVM::AddOp::create(b, loc, mul(row, n), col);
        regs.push_back(fragment(first, n, shape.bPack, bOffset));
      }
      bFrags.push_back(regs);
    }
    Type f32 = b.getF32Type();
    for (int64_t i = 0; i < repsM; ++i)
      for (int64_t j = 0; j < repsN; ++j) {
        int64_t base = 4 * (j + repsN * i);
        SmallVector<Value> args(aFrags[i]);
        args.append(bFrags[j].begin(), bFrags[j].end());
        for (int64_t c = 0; c < 4; ++c)
          args.push_back(acc[base + c]);
        Regs d = e.inlineAsm(text, "=f,=f,=f,=f,r,r,r,r,r,r,0,1,2,3", {f32, f32, f32, f32},
                             args, /*sideEffects=*/false, loc);
        for (int64_t c = 0; c < 4; ++c)
          acc[base + c] = d[c];
      }
  }
  e.map(dot.getResult(), std::move(acc));
  return success();
}

} // namespace

void populateDotEmitters(EmitterTable &table) { table["tile.dot"] = emitDot; }

} // namespace tilejit::lowering
