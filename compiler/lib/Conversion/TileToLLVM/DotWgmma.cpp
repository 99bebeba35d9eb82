// Dot family on sm_90a: tile.dot as wgmma.mma_async m64nNk(32 bytes) with both
// operands read by the tensor cores from shared memory.
//
// tile-pipeline-dots leaves each operand as one slot of a #tile.shared ring
// stored K-major: rows (M for A, N for B) of K elements, 16-byte chunks
// XORed with the row's phase. For rows of 128, 64 and 32 bytes that is
// exactly wgmma's 128B, 64B and 32B swizzle (the XOR of address bits [4, 7)
// with the 8-row group's bits above the row), so a descriptor describes the
// slot as stored: the start address, the stride between 8-row groups (SBO)
// and the swizzle mode; K steps of 32 bytes move the start address inside
// the swizzle atom, as the hardware applies the swizzle to the full address.
// The slots start on 1024-byte atoms (shared memory is 1024-byte aligned and
// slots are multiples of 8 rows).
//
// Warpgroup g (warps 4g .. 4g+3) owns the 64-row blocks 64g + 16 * warps * i
// of the accumulator, which is #tile.mma<wpc = [warps, 1]>: per block, the
// registers of its N/8 column tiles in the order wgmma's d fragment lists
// them (PTX ISA, "Register Fragments: wgmma .m64nNk*" accumulator D).
#include "DotWgmma.h"

#include "llvm/ADT/StringExtras.h"

using namespace mlir;

namespace tilejit::lowering {
namespace {

/// PTX ISA "Matrix Descriptor Format": bits 0-13 start address >> 4, 16-29
/// leading byte offset >> 4 (unused for swizzled K-major operands: 1, as
/// CUTLASS sets it), 32-45 stride byte offset >> 4, 62-63 swizzle mode
/// (1: 128B, 2: 64B, 3: 32B).
Value descriptorBase(Emitter &e, Value slotAddress, int64_t rowBytes, Location loc) {
  OpBuilder &b = e.b;
  Type i64 = b.getI64Type();
  Value address = LLVM::PtrToIntOp::create(b, loc, i64, slotAddress);
  Value start = LLVM::LShrOp::create(
      b, loc, LLVM::AndOp::create(b, loc, address, e.i64(0x3FFFF, loc)), e.i64(4, loc));
  int64_t swizzle = rowBytes == 128 ? 1 : rowBytes == 64 ? 2 : 3;
  int64_t stride = 8 * rowBytes;
  uint64_t fields = (uint64_t(1) << 16) | (uint64_t(stride >> 4) << 32) |
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
  SmallVector<std::string> names;
  for (int64_t i = 0; i < count; ++i)
    names.push_back("$" + std::to_string(first + i));
  return "{" + llvm::join(names, ", ") + "}";
}

/// `count` "=f" outputs, the `inputs` constraints, then the outputs tied.
std::string tiedConstraints(int64_t count, llvm::StringRef inputs) {
  SmallVector<std::string> parts(count, "=f");
  if (!inputs.empty())
    parts.push_back(inputs.str());
  for (int64_t i = 0; i < count; ++i)
    parts.push_back(std::to_string(i));
  return llvm::join(parts, ",");
}

} // namespace

LogicalResult emitWgmmaDot(Emitter &e, tile::DotOp dot) {
  Location loc = dot.getLoc();
  OpBuilder &b = e.b;
  auto aType = dot.getA().getType(), bType = dot.getB().getType();
  auto mma = dyn_cast<tile::MmaLayoutAttr>(dot.getAcc().getType().getEncoding());
  Type element = aType.getElementType();
  const char *types;
  if (element.isBF16())
    types = ".bf16.bf16";
  else if (element.isF16())
    types = ".f16.f16";
  else if (isa<Float8E4M3FNType>(element))
    types = ".e4m3.e4m3";
  else
    return dot.emitOpError("has no wgmma lowering for ") << element << " operands";
  int64_t m = aType.getDimSize(0), k = aType.getDimSize(1), n = bType.getDimSize(1);
  int64_t bytes = element.getIntOrFloatBitWidth() / 8, rowBytes = k * bytes;
  int64_t warps = e.numWarps;
  if (!mma || mma.getWpc()[0] != warps || mma.getWpc()[1] != 1 || warps % 4 ||
      m % (16 * warps) || n % 8 || n > 256 ||
      (rowBytes != 32 && rowBytes != 64 && rowBytes != 128))
    return dot.emitOpError("wgmma needs the accumulator in #tile.mma<wpc = [")
           << warps << ", 1]>, warps a multiple of 4, M % " << 16 * warps
           << " = 0, N a multiple of 8 up to 256 and rows of 32, 64 or 128 bytes; got "
           << m << "x" << n << "x" << k;
  int64_t kInstr = 32 / bytes, blocks = m / (16 * warps), accPerBlock = n / 2;
  Value aSlot = e.regs(dot.getA())[0], bSlot = e.regs(dot.getB())[0];
  Regs acc = e.regs(dot.getAcc());

  // Rows of this warpgroup's first block: 64 * (warp / 4).
  Value group = LLVM::LShrOp::create(b, loc, e.warp(), e.i32(2, loc));
  Value aGroupOffset = LLVM::MulOp::create(b, loc, group, e.i32(64 * rowBytes, loc));
  Value aGroup = LLVM::GEPOp::create(b, loc, aSlot.getType(), b.getI8Type(), aSlot,
                                     ValueRange{aGroupOffset});
  Value aDesc = descriptorBase(e, aGroup, rowBytes, loc);
  Value bDesc = descriptorBase(e, bSlot, rowBytes, loc);

  // The slots' cp.async writes were fenced into the async proxy by the
  // tile.async_wait before this dot; wgmma.fence orders the accumulator
  // registers' last writes before the tensor cores read them.
  NVVM::WgmmaFenceAlignedOp::create(b, loc);
  std::string shape = "m64n" + std::to_string(n) + "k" + std::to_string(kInstr);
  // 16-bit operands take transpose immediates: 0, both K-major.
  std::string text = "{\n.reg .pred p;\nsetp.ne.b32 p, $" + std::to_string(accPerBlock + 2) +
                     ", 0;\nwgmma.mma_async.sync.aligned." + shape + ".f32" + types + " " +
                     registerList(0, accPerBlock) + ", $" + std::to_string(accPerBlock) +
                     ", $" + std::to_string(accPerBlock + 1) + ", p, 1, 1" +
                     (bytes == 2 ? ", 0, 0" : "") + ";\n}";
  std::string constraints = tiedConstraints(accPerBlock, "l,l,r");
  Type f32 = b.getF32Type();
  SmallVector<Type> accTypes(accPerBlock, f32);
  // e4m3 wgmma sums its products with fewer bits than f32 (measured on the
  // H200: ~240 of 4M outputs of a K = 4096 product outside the bf16 band),
  // so each dot's (one K block's) products start from zero (scale-d = 0) and
  // are added to the f32 accumulator by ordinary adds after the wait.
  bool promote = bytes == 1;
  Regs partial = acc;
  if (promote)
    for (Value &v : partial)
      v = LLVM::UndefOp::create(b, loc, f32);
  Value one = e.i32(1, loc), zero = e.i32(0, loc);
  for (int64_t i = 0; i < blocks; ++i) {
    int64_t first = i * accPerBlock;
    for (int64_t s = 0; s < rowBytes / 32; ++s) {
      SmallVector<Value> args{advance(e, aDesc, i * 16 * warps * rowBytes + 32 * s, loc),
                              advance(e, bDesc, 32 * s, loc),
                              promote && s == 0 ? zero : one};
      args.append(partial.begin() + first, partial.begin() + first + accPerBlock);
      Regs d = e.inlineAsm(text, constraints, accTypes, args, /*sideEffects=*/true, loc);
      std::copy(d.begin(), d.end(), partial.begin() + first);
    }
  }
  NVVM::WgmmaGroupSyncAlignedOp::create(b, loc);
  // The accumulator registers are written asynchronously: the wait passes
  // them through, so nothing reads them before it.
  SmallVector<Type> allTypes(acc.size(), f32);
  Regs done = e.inlineAsm("wgmma.wait_group.sync.aligned 0;",
                          tiedConstraints(acc.size(), ""), allTypes, partial,
                          /*sideEffects=*/true, loc);
  if (promote)
    for (auto [sum, products] : llvm::zip(acc, done))
      products = LLVM::FAddOp::create(b, loc, sum, products);
  e.map(dot.getResult(), std::move(done));
  return success();
}

} // namespace tilejit::lowering
