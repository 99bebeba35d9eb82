// Memory family: views, masked loads and stores through views (vectorized up
// to 16 bytes when the contiguous dimension allows) and through pointers.
// Accesses are predicated PTX (`@p ld.global`), so masked lanes never touch
// memory. Vector accesses assume 16-byte aligned base pointers (the runtime
// checks this at launch).
#include "Emitter.h"

#include <numeric>

using namespace mlir;

namespace tilejit::lowering {
namespace {

/// A proven divisor of an i32 tile-level value (1 when nothing is known).
int64_t knownMultiple(Value v) {
  constexpr int64_t kLarge = int64_t(1) << 30;
  Operation *def = v.getDefiningOp();
  if (!def)
    return 1;
  if (auto c = dyn_cast<arith::ConstantOp>(def)) {
    auto attr = dyn_cast<IntegerAttr>(c.getValue());
    if (!attr)
      return 1;
    int64_t value = std::abs(attr.getInt());
    return value == 0 ? kLarge : value;
  }
  if (auto mul = dyn_cast<arith::MulIOp>(def))
    return std::min(kLarge, knownMultiple(mul.getLhs()) * knownMultiple(mul.getRhs()));
  if (isa<arith::AddIOp, arith::SubIOp>(def))
    return std::gcd(knownMultiple(def->getOperand(0)), knownMultiple(def->getOperand(1)));
  return 1;
}

unsigned bitsOf(Type llvmType) {
  if (isa<LLVM::LLVMPointerType>(llvmType))
    return 64;
  return std::max(8u, llvmType.getIntOrFloatBitWidth());
}

/// Memory type of an element: i1 lives in memory as a byte.
Type memoryType(Emitter &e, Type llvmType) {
  return llvmType.isInteger(1) ? e.b.getI8Type() : llvmType;
}

/// The machine words a vector of `n` elements of `type` travels in.
struct Words {
  Type word;          ///< i16 (8/16-bit totals), i32, or i64
  unsigned count;     ///< 1, 2 or 4
  const char *suffix; ///< ld/st type suffix
  const char *reg;    ///< inline-asm constraint letter
};

Words wordsFor(Type type, unsigned n, MLIRContext *ctx) {
  unsigned total = bitsOf(type) * n;
  if (bitsOf(type) == 64)
    return {IntegerType::get(ctx, 64), n, "b64", "l"};
  if (total >= 32)
    return {IntegerType::get(ctx, 32), total / 32, "b32", "r"};
  return {IntegerType::get(ctx, 16), 1, total == 8 ? "u8" : "b16", "h"};
}

/// Packs `values` (n elements of `type`) into words, and back.
Regs toWords(Emitter &e, ArrayRef<Value> values, Type type, const Words &w,
             Location loc) {
  OpBuilder &b = e.b;
  unsigned n = values.size();
  if (n == 1 && w.count == 1 && bitsOf(type) == w.word.getIntOrFloatBitWidth()) {
    Value v = values[0];
    if (isa<LLVM::LLVMPointerType>(type))
      return {LLVM::PtrToIntOp::create(b, loc, w.word, v)};
    return {v.getType() == w.word ? v
                                  : Value(LLVM::BitcastOp::create(b, loc, w.word, v))};
  }
  if (bitsOf(type) * n < 16) // a lone byte in a 16-bit register
    return {LLVM::ZExtOp::create(b, loc, w.word, values[0])};
  auto vecType = VectorType::get({int64_t(n)}, type);
  Value vec = LLVM::UndefOp::create(b, loc, vecType);
  for (unsigned i = 0; i < n; ++i)
    vec = LLVM::InsertElementOp::create(b, loc, vec, values[i], e.i32(i, loc));
  Value words =
      LLVM::BitcastOp::create(b, loc, VectorType::get({int64_t(w.count)}, w.word), vec);
  Regs out;
  for (unsigned i = 0; i < w.count; ++i)
    out.push_back(LLVM::ExtractElementOp::create(b, loc, words, e.i32(i, loc)));
  return out;
}

Regs fromWords(Emitter &e, ArrayRef<Value> words, Type type, unsigned n, const Words &w,
               Location loc) {
  OpBuilder &b = e.b;
  if (n == 1 && w.count == 1 && bitsOf(type) == w.word.getIntOrFloatBitWidth()) {
    if (isa<LLVM::LLVMPointerType>(type))
      return {LLVM::IntToPtrOp::create(b, loc, type, words[0])};
    return {type == w.word ? words[0]
                           : Value(LLVM::BitcastOp::create(b, loc, type, words[0]))};
  }
  if (bitsOf(type) * n < 16)
    return {LLVM::TruncOp::create(b, loc, type, words[0])};
  auto wordVec = VectorType::get({int64_t(w.count)}, w.word);
  Value vec = LLVM::UndefOp::create(b, loc, wordVec);
  for (unsigned i = 0; i < w.count; ++i)
    vec = LLVM::InsertElementOp::create(b, loc, vec, words[i], e.i32(i, loc));
  Value elems = LLVM::BitcastOp::create(b, loc, VectorType::get({int64_t(n)}, type), vec);
  Regs out;
  for (unsigned i = 0; i < n; ++i)
    out.push_back(LLVM::ExtractElementOp::create(b, loc, elems, e.i32(i, loc)));
  return out;
}

std::string operandList(unsigned first, unsigned count) {
  std::string s;
  for (unsigned i = 0; i < count; ++i)
    s += (i ? ", $" : "$") + std::to_string(first + i);
  return count > 1 ? "{ " + s + " }" : s;
}

std::string vectorPrefix(unsigned count) {
  return count > 1 ? "v" + std::to_string(count) + "." : "";
}

/// n elements at `addr` where `pred` holds, `other` elsewhere.
Regs predicatedLoad(Emitter &e, Value addr, Value pred, Type type, ArrayRef<Value> other,
                    Location loc) {
  unsigned n = other.size();
  Words w = wordsFor(type, n, e.ctx);
  Regs otherWords = toWords(e, other, type, w, loc);
  std::string text, constraints;
  for (unsigned i = 0; i < w.count; ++i) {
    text += std::string("mov.") + (w.word.isInteger(16) ? "b16" : w.suffix) + " $" +
            std::to_string(i) + ", $" + std::to_string(w.count + 2 + i) + ";\n\t";
    constraints += std::string(i ? "," : "") + "=" + w.reg;
  }
  text += "@$" + std::to_string(w.count) + " ld.global." + vectorPrefix(w.count) +
          w.suffix + " " + operandList(0, w.count) + ", [ $" +
          std::to_string(w.count + 1) + " + 0 ];";
  constraints += ",b,l";
  for (unsigned i = 0; i < w.count; ++i)
    constraints += std::string(",") + w.reg;
  SmallVector<Value> args{pred, addr};
  args.append(otherWords.begin(), otherWords.end());
  SmallVector<Type> results(w.count, w.word);
  Regs words = e.inlineAsm(text, constraints, results, args, /*sideEffects=*/true, loc);
  return fromWords(e, words, type, n, w, loc);
}

void predicatedStore(Emitter &e, Value addr, Value pred, Type type,
                     ArrayRef<Value> values, Location loc) {
  Words w = wordsFor(type, values.size(), e.ctx);
  Regs words = toWords(e, values, type, w, loc);
  std::string text = "@$0 st.global." + vectorPrefix(w.count) + w.suffix +
                     " [ $1 + 0 ], " + operandList(2, w.count) + ";";
  std::string constraints = "b,l";
  for (unsigned i = 0; i < w.count; ++i)
    constraints += std::string(",") + w.reg;
  SmallVector<Value> args{pred, addr};
  args.append(words.begin(), words.end());
  e.inlineAsm(text, constraints, {}, args, /*sideEffects=*/true, loc);
}

/// How a view access is split: `width` elements per access; with `tail`, a
/// vector is issued only where all its elements are in bounds, and elements
/// of a partly-in-bounds vector go one by one (dynamic or ragged sizes).
struct VectorPlan {
  unsigned width = 1;
  bool tail = false;
};

VectorPlan planViewAccess(const Distributed &d, tile::ViewType view, ValueRange offsets,
                          Type memType) {
  auto contiguous = view.getContiguousDim();
  if (!contiguous)
    return {};
  unsigned c = *contiguous;
  unsigned width = d.contiguousRegisters(c, 128 / bitsOf(memType));
  for (; width > 1; width /= 2) {
    bool ok = knownMultiple(offsets[c]) % width == 0;
    for (auto [dim, stride] : llvm::enumerate(view.getStrides()))
      if (dim != c && (stride == ShapedType::kDynamic || stride % width != 0))
        ok = false;
    if (ok)
      break;
  }
  int64_t size = view.getShape()[c];
  return {width, width > 1 && (size == ShapedType::kDynamic || size % width != 0)};
}

/// Address and in-bounds predicate of register r of a view access.
std::pair<Value, Value> viewElement(Emitter &e, const Distributed &d, ViewValue &view,
                                    const Regs &offsets, unsigned r, Type memType,
                                    Location loc) {
  OpBuilder &b = e.b;
  Regs index = e.elementIndex(d, r, loc);
  Value inBounds = LLVM::ConstantOp::create(b, loc, b.getI1Type(), b.getBoolAttr(true));
  Value linear = e.i64(0, loc);
  for (unsigned dim = 0; dim < index.size(); ++dim) {
    Value idx = LLVM::AddOp::create(b, loc, index[dim], offsets[dim]);
    // Unsigned compare: a negative index is out of bounds too.
    inBounds = LLVM::AndOp::create(
        b, loc, inBounds,
        LLVM::ICmpOp::create(b, loc, LLVM::ICmpPredicate::ult, idx, view.sizes[dim]));
    Value wide = LLVM::SExtOp::create(b, loc, b.getI64Type(), idx);
    linear = LLVM::AddOp::create(b, loc, linear,
                                 LLVM::MulOp::create(b, loc, wide, view.strides[dim]));
  }
  return {gep(e, view.base, memType, linear, loc), inBounds};
}

Value trueValue(Emitter &e, Location loc) {
  return LLVM::ConstantOp::create(e.b, loc, e.b.getI1Type(), e.b.getBoolAttr(true));
}

/// The padding of a masked view load, as its memory type (zero when absent).
Value paddingValue(Emitter &e, TypedAttr attr, Type memType, Location loc) {
  if (!attr)
    return e.zero(memType, loc);
  APInt bits;
  if (auto f = dyn_cast<FloatAttr>(attr); f && isa<Float8E4M3FNType>(f.getType()))
    bits = f.getValue().bitcastToAPInt();
  else if (auto i = dyn_cast<IntegerAttr>(attr); i && i.getType().isInteger(1))
    bits = i.getValue();
  else
    return LLVM::ConstantOp::create(e.b, loc, memType, attr);
  return LLVM::ConstantOp::create(e.b, loc, memType,
                                  e.b.getIntegerAttr(memType, bits.getZExtValue()));
}

LogicalResult emitMakeView(Emitter &e, Operation *op) {
  auto make = cast<tile::MakeViewOp>(op);
  Location loc = op->getLoc();
  ViewValue view;
  view.type = make.getResult().getType();
  view.base = e.regs(make.getBase())[0];
  unsigned dynSize = 0, dynStride = 0;
  for (int64_t s : view.type.getShape())
    view.sizes.push_back(s == ShapedType::kDynamic ? e.regs(make.getSizes()[dynSize++])[0]
                                                   : e.i32(s, loc));
  for (int64_t s : view.type.getStrides())
    view.strides.push_back(s == ShapedType::kDynamic
                               ? e.regs(make.getStrides()[dynStride++])[0]
                               : e.i64(s, loc));
  e.mapView(make.getResult(), std::move(view));
  return success();
}

/// A load or store of a tile through a view: the shared setup and the guards
/// of each vector (and, for a ragged tail, of each element).
struct ViewAccess {
  ViewAccess(Emitter &e, ValueRange offsetValues, Value viewValue, RankedTensorType tile)
      : e(e), d(e.layout(tile)), view(e.view(viewValue)), type(e.elementType(tile)),
        memType(memoryType(e, type)),
        plan(planViewAccess(d, view.type, offsetValues, memType)) {
    for (Value o : offsetValues)
      offsets.push_back(e.regs(o)[0]);
  }

  /// Address of register r's vector and whether all of it is in bounds.
  std::pair<Value, Value> vector(unsigned r, Location loc) {
    auto [addr, inBounds] = viewElement(e, d, view, offsets, r, memType, loc);
    if (plan.tail) // first and last in bounds: the whole vector is
      inBounds = LLVM::AndOp::create(
          e.b, loc, inBounds,
          viewElement(e, d, view, offsets, r + plan.width - 1, memType, loc).second);
    return {addr, inBounds};
  }

  /// Address of element i of the vector at r and whether it goes alone (in
  /// bounds while its vector is not).
  std::pair<Value, Value> tailElement(unsigned r, unsigned i, Value whole, Location loc) {
    auto [addr, inBounds] = viewElement(e, d, view, offsets, r + i, memType, loc);
    Value partial = LLVM::AndOp::create(
        e.b, loc, inBounds, LLVM::XOrOp::create(e.b, loc, whole, trueValue(e, loc)));
    return {addr, partial};
  }

  Emitter &e;
  const Distributed &d;
  ViewValue &view;
  Type type, memType;
  VectorPlan plan;
  Regs offsets;
};

LogicalResult emitLoad(Emitter &e, Operation *op) {
  auto load = cast<tile::LoadOp>(op);
  Location loc = op->getLoc();
  ViewAccess access(e, load.getOffsets(), load.getView(), load.getResult().getType());
  unsigned width = access.plan.width;
  Value pad = paddingValue(e, load.getPaddingAttr(), access.memType, loc);
  Regs out(access.d.numRegs());
  for (unsigned r = 0; r < access.d.numRegs(); r += width) {
    auto [addr, whole] = access.vector(r, loc);
    Regs values = predicatedLoad(e, addr, whole, access.memType, Regs(width, pad), loc);
    for (unsigned i = 0; access.plan.tail && i < width; ++i) {
      auto [elemAddr, alone] = access.tailElement(r, i, whole, loc);
      values[i] = predicatedLoad(e, elemAddr, alone, access.memType, {values[i]}, loc)[0];
    }
    for (unsigned i = 0; i < width; ++i)
      out[r + i] = access.type.isInteger(1)
                       ? Value(LLVM::TruncOp::create(e.b, loc, access.type, values[i]))
                       : values[i];
  }
  e.map(load.getResult(), std::move(out));
  return success();
}

LogicalResult emitStore(Emitter &e, Operation *op) {
  auto store = cast<tile::StoreOp>(op);
  Location loc = op->getLoc();
  ViewAccess access(e, store.getOffsets(), store.getView(), store.getValue().getType());
  unsigned width = access.plan.width;
  Regs &values = e.regs(store.getValue());
  Value owner = e.isOwner(access.d, loc);
  for (unsigned r = 0; r < access.d.numRegs(); r += width) {
    if (access.d.isDuplicateRegister(r))
      continue;
    auto [addr, whole] = access.vector(r, loc);
    Regs chunk;
    for (unsigned i = 0; i < width; ++i)
      chunk.push_back(
          access.type.isInteger(1)
              ? Value(LLVM::ZExtOp::create(e.b, loc, access.memType, values[r + i]))
              : values[r + i]);
    predicatedStore(e, addr, LLVM::AndOp::create(e.b, loc, whole, owner), access.memType,
                    chunk, loc);
    for (unsigned i = 0; access.plan.tail && i < width; ++i) {
      auto [elemAddr, alone] = access.tailElement(r, i, whole, loc);
      predicatedStore(e, elemAddr, LLVM::AndOp::create(e.b, loc, alone, owner),
                      access.memType, {chunk[i]}, loc);
    }
  }
  return success();
}

LogicalResult emitPtrLoad(Emitter &e, Operation *op) {
  auto load = cast<tile::PtrLoadOp>(op);
  Location loc = op->getLoc();
  Type type = e.elementType(load.getResult().getType());
  Type memType = memoryType(e, type);
  Regs ptrs = e.regs(load.getPtrs()), out;
  Value yes = LLVM::ConstantOp::create(e.b, loc, e.b.getI1Type(), e.b.getBoolAttr(true));
  for (unsigned r = 0; r < ptrs.size(); ++r) {
    Value pred = load.getMask() ? e.regs(load.getMask())[r] : yes;
    Value other = load.getOther() ? e.regs(load.getOther())[r] : e.zero(type, loc);
    if (type.isInteger(1))
      other = LLVM::ZExtOp::create(e.b, loc, memType, other);
    Value v = predicatedLoad(e, ptrs[r], pred, memType, {other}, loc)[0];
    out.push_back(type.isInteger(1) ? Value(LLVM::TruncOp::create(e.b, loc, type, v))
                                    : v);
  }
  e.map(load.getResult(), std::move(out));
  return success();
}

LogicalResult emitPtrStore(Emitter &e, Operation *op) {
  auto store = cast<tile::PtrStoreOp>(op);
  Location loc = op->getLoc();
  Type type = e.elementType(store.getValue().getType());
  Type memType = memoryType(e, type);
  Regs ptrs = e.regs(store.getPtrs()), values = e.regs(store.getValue());
  Value owner =
      LLVM::ConstantOp::create(e.b, loc, e.b.getI1Type(), e.b.getBoolAttr(true));
  const Distributed *d = nullptr;
  if (auto t = dyn_cast<RankedTensorType>(store.getPtrs().getType())) {
    d = &e.layout(t);
    owner = e.isOwner(*d, loc);
  }
  for (unsigned r = 0; r < ptrs.size(); ++r) {
    if (d && d->isDuplicateRegister(r))
      continue;
    Value pred =
        store.getMask()
            ? Value(LLVM::AndOp::create(e.b, loc, e.regs(store.getMask())[r], owner))
            : owner;
    Value v = type.isInteger(1)
                  ? Value(LLVM::ZExtOp::create(e.b, loc, memType, values[r]))
                  : values[r];
    predicatedStore(e, ptrs[r], pred, memType, {v}, loc);
  }
  return success();
}

} // namespace

void populateMemoryEmitters(EmitterTable &table) {
  table.add<tile::MakeViewOp>(emitMakeView);
  table.add<tile::LoadOp>(emitLoad);
  table.add<tile::StoreOp>(emitStore);
  table.add<tile::PtrLoadOp>(emitPtrLoad);
  table.add<tile::PtrStoreOp>(emitPtrStore);
}

} // namespace tilejit::lowering
