// Dot family: tile.dot on mma.sync (bf16/f16 m16n8k16, e4m3 m16n8k32, f32
// accumulation). Operands arrive in #tile.dot_operand layouts (from
// tile.shared_load's ldmatrix, loaded straight from memory when kContig, or any
// layout through tile.convert_layout); fragmentRegister() names the kWidth
// registers of each 32-bit fragment word. The accumulator stays in registers in
// the #tile.mma layout (with split K, each warp group sums its part of K).
// Operands in #tile.wgmma_operand layouts take the wgmma path (DotWgmma.cpp).
#include "DotWgmma.h"

#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "convert-tile-to-llvm"

using namespace mlir;

namespace tilejit::lowering {
namespace {

LogicalResult emitDot(Emitter &e, Operation *op) {
  auto dot = cast<tile::DotOp>(op);
  Location loc = op->getLoc();
  auto aType = dot.getA().getType(), bType = dot.getB().getType();
  // wgmma reads B from a slot; A from a slot or, in A fragments, registers.
  bool wgmma = isa<tile::WgmmaOperandLayoutAttr>(bType.getEncoding());
  if (!wgmma && isa<tile::WgmmaOperandLayoutAttr>(aType.getEncoding()))
    return op->emitOpError("has A in a #tile.wgmma_operand layout but not B");
  LLVM_DEBUG(llvm::dbgs() << DEBUG_TYPE ": dot at " << loc << ": "
                          << (wgmma ? "wgmma" : "mma.sync") << "\n");
  if (wgmma)
    return emitWgmmaDot(e, dot);
  auto mma = dyn_cast<tile::MmaLayoutAttr>(dot.getAcc().getType().getEncoding());
  if (!mma)
    return op->emitOpError("accumulator must be in the #tile.mma layout");
  Type element = aType.getElementType();
  const char *ptxTypes;
  int64_t kMma;
  if (element.isBF16())
    ptxTypes = ".bf16.bf16", kMma = 16;
  else if (element.isF16())
    ptxTypes = ".f16.f16", kMma = 16;
  else if (isa<Float8E4M3FNType>(element))
    ptxTypes = ".e4m3.e4m3", kMma = 32;
  else
    return op->emitOpError("has no GPU lowering for ") << element << " operands";
  int64_t m = aType.getDimSize(0), kTotal = aType.getDimSize(1), n = bType.getDimSize(1);
  int64_t wm = mma.getWpc()[0], wn = mma.getWpc()[1], wpk = mma.getWpk();
  auto aLayout = dyn_cast<tile::DotOperandLayoutAttr>(aType.getEncoding());
  auto bLayout = dyn_cast<tile::DotOperandLayoutAttr>(bType.getEncoding());
  if (!aLayout || !bLayout || m % (16 * wm) || n % (8 * wn) || kTotal % (kMma * wpk))
    return op->emitOpError("needs M % ")
           << 16 * wm << ", N % " << 8 * wn << " and K % " << kMma * wpk << " to be 0";
  if (aLayout.getKContig() != bLayout.getKContig())
    return op->emitOpError(
        "needs both operands or neither kContig (they permute K alike)");
  // Each split-K group sums its own part of K: kSteps per thread and tile.
  int64_t repsM = m / (16 * wm), repsN = n / (8 * wn), kSteps = kTotal / (kMma * wpk);
  const Regs &a = e.regs(dot.getA()), &b = e.regs(dot.getB());
  Regs acc = e.regs(dot.getAcc());
  std::string text = "mma.sync.aligned.m16n8k" + std::to_string(kMma) + ".row.col.f32" +
                     ptxTypes +
                     ".f32 {$0,$1,$2,$3}, {$4,$5,$6,$7}, {$8,$9}, {$10,$11,$12,$13};";
  Type f32 = e.b.getF32Type();
  auto word = [&](const Regs &regs, tile::DotOperandLayoutAttr layout, int64_t tileIndex,
                  int64_t step, int64_t q) {
    return fragmentWord(e, regs, layout, kSteps, tileIndex, step, q, loc);
  };
  for (int64_t s = 0; s < kSteps; ++s) {
    SmallVector<Regs> aWords(repsM), bWords(repsN);
    for (int64_t i = 0; i < repsM; ++i)
      for (int64_t q = 0; q < 4; ++q)
        aWords[i].push_back(word(a, aLayout, i, s, q));
    for (int64_t j = 0; j < repsN; ++j)
      for (int64_t q = 0; q < 2; ++q)
        bWords[j].push_back(word(b, bLayout, j, s, q));
    for (int64_t i = 0; i < repsM; ++i)
      for (int64_t j = 0; j < repsN; ++j) {
        int64_t base = 4 * (j + repsN * i);
        SmallVector<Value> args(aWords[i]);
        args.append(bWords[j].begin(), bWords[j].end());
        for (int64_t c = 0; c < 4; ++c)
          args.push_back(acc[base + c]);
        Regs d = e.inlineAsm(text, "=f,=f,=f,=f,r,r,r,r,r,r,0,1,2,3",
                             {f32, f32, f32, f32}, args, /*sideEffects=*/false, loc);
        for (int64_t c = 0; c < 4; ++c)
          acc[base + c] = d[c];
      }
  }
  e.map(dot.getResult(), std::move(acc));
  return success();
}

} // namespace

void populateDotEmitters(EmitterTable &table) {
  table.add<tile::DotOp>(emitDot);
  table.add<tile::DotAsyncOp>([](Emitter &e, Operation *op) {
    return emitWgmmaDotAsync(e, cast<tile::DotAsyncOp>(op));
  });
  table.add<tile::DotWaitOp>([](Emitter &e, Operation *op) {
    return emitDotWait(e, cast<tile::DotWaitOp>(op));
  });
}

} // namespace tilejit::lowering
