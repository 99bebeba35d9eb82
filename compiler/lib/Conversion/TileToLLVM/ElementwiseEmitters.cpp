// Elementwise family: arith on every register, math through PTX approximations,
// float conversions (bf16/f16 by LLVM casts, e4m3 by the cvt instructions),
// splat, arange, addptr and grid queries.
//
// Precision (documented in docs/tile-dialect.md): exp/exp2 use ex2.approx.ftz.f32
// (max 2 ulp, plus |x|*2^-24 relative from the scaling by log2(e)); log uses
// lg2.approx.f32 (max 2 ulp away from 1); log1p corrects log(1+x) with
// x/((1+x)-1) so small x keep full relative precision; rsqrt is
// rsqrt.approx.ftz.f32 (max 2 ulp); sqrt is IEEE (sqrt.rn); fma is fma.rn.
// The .ftz forms are one MUFU instruction; without .ftz ptxas wraps each in a
// compare and two predicated rescales for subnormals (4 issue slots), which
// bought only exp results below 2^-126 and rsqrt of inputs below 2^-126.
#include "Emitter.h"

#include "mlir/Dialect/Math/IR/Math.h"

#include <algorithm>

using namespace mlir;

namespace tilejit::lowering {
namespace {

RankedTensorType tileType(Value v) { return dyn_cast<RankedTensorType>(v.getType()); }

unsigned registerCount(Emitter &e, Operation *op) {
  for (Value r : op->getResults())
    if (auto t = tileType(r))
      return e.layout(t).numRegs();
  for (Value v : op->getOperands())
    if (auto t = tileType(v))
      return e.layout(t).numRegs();
  return 1;
}

/// An arith op: the same op on each register's scalars.
LogicalResult emitArith(Emitter &e, Operation *op) {
  for (Type t : llvm::concat<Type>(op->getOperandTypes(), op->getResultTypes()))
    if (isa<Float8E4M3FNType>(getElementTypeOrSelf(t)))
      return op->emitOpError("on f8E4M3FN has no GPU lowering: convert to f32 first");
  if (auto constant = dyn_cast<arith::ConstantOp>(op)) {
    auto type = tileType(constant.getResult());
    if (!type) {
      e.map(constant.getResult(), {e.b.clone(*op)->getResult(0)});
      return success();
    }
    auto splat = dyn_cast<SplatElementsAttr>(constant.getValue());
    if (!splat)
      return op->emitOpError("with a non-splat tile constant has no GPU lowering");
    Value scalar = arith::ConstantOp::create(
        e.b, op->getLoc(), cast<TypedAttr>(splat.getSplatValue<Attribute>()));
    e.map(constant.getResult(), Regs(e.layout(type).numRegs(), scalar));
    return success();
  }
  unsigned n = registerCount(e, op);
  SmallVector<Regs> results(op->getNumResults());
  for (unsigned r = 0; r < n; ++r) {
    OperationState state(op->getLoc(), op->getName());
    for (Value v : op->getOperands()) {
      Regs &in = e.regs(v);
      state.addOperands(in.size() == 1 ? in[0] : in[r]);
    }
    for (Type t : op->getResultTypes())
      state.addTypes(getElementTypeOrSelf(t));
    state.addAttributes(op->getAttrs());
    Operation *scalar = e.b.create(state);
    for (unsigned i = 0; i < op->getNumResults(); ++i)
      results[i].push_back(scalar->getResult(i));
  }
  for (unsigned i = 0; i < op->getNumResults(); ++i)
    e.map(op->getResult(i), std::move(results[i]));
  return success();
}

/// A math op computed in f32 (bf16/f16 operands are widened, the result rounded).
template <typename Fn> LogicalResult emitMath(Emitter &e, Operation *op, Fn &&f32Fn) {
  Location loc = op->getLoc();
  Type element = getElementTypeOrSelf(op->getResult(0).getType());
  if (!isa<Float32Type, Float16Type, BFloat16Type>(element))
    return op->emitOpError("has no GPU lowering for ") << element;
  Regs out;
  for (Value x : e.regs(op->getOperand(0))) {
    Value f =
        element.isF32() ? x : Value(LLVM::FPExtOp::create(e.b, loc, e.b.getF32Type(), x));
    Value y = f32Fn(f);
    out.push_back(element.isF32() ? y
                                  : Value(LLVM::FPTruncOp::create(e.b, loc, element, y)));
  }
  e.map(op->getResult(0), std::move(out));
  return success();
}

/// math.fma: fma.rn.f32 on each register (bf16/f16 widened, then rounded
/// once more, as the interpreter does).
LogicalResult emitFma(Emitter &e, Operation *op) {
  Location loc = op->getLoc();
  Type element = getElementTypeOrSelf(op->getResult(0).getType());
  if (!isa<Float32Type, Float16Type, BFloat16Type>(element))
    return op->emitOpError("has no GPU lowering for ") << element;
  Type f32 = e.b.getF32Type();
  unsigned n = registerCount(e, op);
  Regs out;
  for (unsigned r = 0; r < n; ++r) {
    SmallVector<Value, 3> wide;
    for (Value v : op->getOperands()) {
      Regs &in = e.regs(v);
      Value x = in.size() == 1 ? in[0] : in[r];
      wide.push_back(element.isF32() ? x
                                     : Value(LLVM::FPExtOp::create(e.b, loc, f32, x)));
    }
    Value y = e.intrinsic("llvm.fma.f32", f32, wide, loc);
    out.push_back(element.isF32() ? y
                                  : Value(LLVM::FPTruncOp::create(e.b, loc, element, y)));
  }
  e.map(op->getResult(0), std::move(out));
  return success();
}

Value f32Const(Emitter &e, double v, Location loc) {
  return LLVM::ConstantOp::create(e.b, loc, e.b.getF32Type(), e.b.getF32FloatAttr(v));
}

Value ex2(Emitter &e, Value x, Location loc) {
  return e.intrinsic("llvm.nvvm.ex2.approx.ftz.f32", e.b.getF32Type(), {x}, loc);
}

Value lg2(Emitter &e, Value x, Location loc) {
  return e.intrinsic("llvm.nvvm.lg2.approx.f", e.b.getF32Type(), {x}, loc);
}

Value natLog(Emitter &e, Value x, Location loc) {
  return LLVM::FMulOp::create(e.b, loc, lg2(e, x, loc), f32Const(e, M_LN2, loc));
}

/// log1p(x) = log(u) * x / (u - 1) with u = 1 + x (x itself where u rounds to 1).
Value log1p(Emitter &e, Value x, Location loc) {
  OpBuilder &b = e.b;
  Value one = f32Const(e, 1.0, loc);
  Value u = LLVM::FAddOp::create(b, loc, one, x);
  Value um1 = LLVM::FSubOp::create(b, loc, u, one);
  Value scaled = LLVM::FDivOp::create(
      b, loc, LLVM::FMulOp::create(b, loc, natLog(e, u, loc), x), um1);
  Value tiny =
      LLVM::FCmpOp::create(b, loc, LLVM::FCmpPredicate::oeq, um1, f32Const(e, 0.0, loc));
  // Infinite x: u - 1 is inf too and the quotient NaN; log(u) is right there.
  Value inf = LLVM::FCmpOp::create(b, loc, LLVM::FCmpPredicate::oeq, u,
                                   f32Const(e, INFINITY, loc));
  Value r = LLVM::SelectOp::create(b, loc, tiny, x, scaled);
  return LLVM::SelectOp::create(b, loc, inf, u, r);
}

LogicalResult emitConvert(Emitter &e, Operation *op) {
  auto convert = cast<tile::ConvertOp>(op);
  Location loc = op->getLoc();
  OpBuilder &b = e.b;
  Type from = getElementTypeOrSelf(convert.getSrc().getType());
  Type to = getElementTypeOrSelf(convert.getResult().getType());
  Type f32 = b.getF32Type(), f16 = b.getF16Type();
  Regs in = e.regs(convert.getSrc());
  if (convert.getRounding() == tile::RoundingMode::RTZ)
    return op->emitOpError("round-toward-zero has no GPU lowering yet");
  // Everything passes through f32 (exact for every source type).
  // e4m3 converts two codes per instruction: a thread's registers are taken in
  // pairs (any two elements; the conversion is elementwise), halving the cvts
  // and letting LLVM fold the packing of two loaded bytes into one 16-bit move.
  Type i16 = b.getI16Type();
  Regs wide;
  if (isa<Float8E4M3FNType>(from)) {
    for (size_t i = 0; i < in.size(); i += 2) {
      Value pair = LLVM::ZExtOp::create(b, loc, i16, in[i]);
      if (i + 1 < in.size()) {
        Value high = LLVM::ZExtOp::create(b, loc, i16, in[i + 1]);
        high =
            LLVM::ShlOp::create(b, loc, high, LLVM::ConstantOp::create(b, loc, i16, 8));
        pair = LLVM::OrOp::create(b, loc, pair, high);
      }
      // The low byte becomes element 0, the high byte element 1.
      Value halves = e.intrinsic("llvm.nvvm.e4m3x2.to.f16x2.rn",
                                 VectorType::get({2}, f16), {pair}, loc);
      for (size_t j = i; j < std::min(in.size(), i + 2); ++j) {
        Value h =
            LLVM::ExtractElementOp::create(b, loc, halves, e.i32(int32_t(j - i), loc));
        wide.push_back(LLVM::FPExtOp::create(b, loc, f32, h));
      }
    }
  } else {
    for (Value v : in)
      wide.push_back(from.isF32() ? v : Value(LLVM::FPExtOp::create(b, loc, f32, v)));
  }
  Regs out;
  if (isa<Float8E4M3FNType>(to)) {
    // cvt.rn.satfinite.e4m3x2.f32 packs {cvt(a), cvt(b)} high to low.
    for (size_t i = 0; i < wide.size(); i += 2) {
      bool two = i + 1 < wide.size();
      Value packed =
          e.intrinsic("llvm.nvvm.ff.to.e4m3x2.rn", i16,
                      {two ? wide[i + 1] : f32Const(e, 0.0, loc), wide[i]}, loc);
      out.push_back(LLVM::TruncOp::create(b, loc, b.getI8Type(), packed));
      if (two) {
        Value high = LLVM::LShrOp::create(b, loc, packed,
                                          LLVM::ConstantOp::create(b, loc, i16, 8));
        out.push_back(LLVM::TruncOp::create(b, loc, b.getI8Type(), high));
      }
    }
  } else {
    for (Value v : wide)
      out.push_back(to.isF32() ? v : Value(LLVM::FPTruncOp::create(b, loc, to, v)));
  }
  e.map(convert.getResult(), std::move(out));
  return success();
}

LogicalResult emitGridQuery(Emitter &e, Operation *op, bool count) {
  Location loc = op->getLoc();
  int32_t axis = op->getAttrOfType<IntegerAttr>("axis").getInt();
  Type i32 = e.b.getI32Type();
  Value v;
  if (!count)
    v = axis == 0   ? Value(NVVM::BlockIdXOp::create(e.b, loc, i32))
        : axis == 1 ? Value(NVVM::BlockIdYOp::create(e.b, loc, i32))
                    : Value(NVVM::BlockIdZOp::create(e.b, loc, i32));
  else
    v = axis == 0   ? Value(NVVM::GridDimXOp::create(e.b, loc, i32))
        : axis == 1 ? Value(NVVM::GridDimYOp::create(e.b, loc, i32))
                    : Value(NVVM::GridDimZOp::create(e.b, loc, i32));
  e.map(op->getResult(0), {v});
  return success();
}

} // namespace

void populateElementwiseEmitters(EmitterTable &table) {
  // The arith ops the interpreter runs too (a kernel with any other fails on
  // both); they stay arith on scalars, for convert-arith-to-llvm.
  table.add<arith::AddFOp, arith::SubFOp, arith::MulFOp, arith::DivFOp, arith::RemFOp,
            arith::MaximumFOp, arith::MinimumFOp, arith::MaxNumFOp, arith::MinNumFOp,
            arith::NegFOp, arith::CmpFOp>(emitArith);
  table.add<arith::AddIOp, arith::SubIOp, arith::MulIOp, arith::DivSIOp, arith::DivUIOp,
            arith::RemSIOp, arith::RemUIOp, arith::FloorDivSIOp, arith::CeilDivSIOp,
            arith::CeilDivUIOp, arith::AndIOp, arith::OrIOp, arith::XOrIOp, arith::ShLIOp,
            arith::ShRUIOp, arith::ShRSIOp, arith::MaxSIOp, arith::MinSIOp,
            arith::MaxUIOp, arith::MinUIOp, arith::CmpIOp>(emitArith);
  table.add<arith::ExtFOp, arith::TruncFOp, arith::SIToFPOp, arith::UIToFPOp,
            arith::FPToSIOp, arith::FPToUIOp, arith::ExtSIOp, arith::ExtUIOp,
            arith::TruncIOp, arith::IndexCastOp, arith::IndexCastUIOp, arith::BitcastOp,
            arith::ConstantOp, arith::SelectOp>(emitArith);
  table.add<tile::ProgramIdOp>(
      [](Emitter &e, Operation *op) { return emitGridQuery(e, op, false); });
  table.add<tile::NumProgramsOp>(
      [](Emitter &e, Operation *op) { return emitGridQuery(e, op, true); });
  table.add<tile::SplatOp>([](Emitter &e, Operation *op) {
    auto splat = cast<tile::SplatOp>(op);
    e.map(splat.getResult(), Regs(e.layout(splat.getResult().getType()).numRegs(),
                                  e.regs(splat.getSrc())[0]));
    return success();
  });
  table.add<tile::ArangeOp>([](Emitter &e, Operation *op) {
    auto arange = cast<tile::ArangeOp>(op);
    const Distributed &d = e.layout(arange.getResult().getType());
    Regs out;
    for (unsigned r = 0; r < d.numRegs(); ++r)
      out.push_back(LLVM::AddOp::create(e.b, op->getLoc(),
                                        e.elementIndex(d, r, op->getLoc())[0],
                                        e.i32(arange.getStart(), op->getLoc())));
    e.map(arange.getResult(), std::move(out));
    return success();
  });
  table.add<tile::AddPtrOp>([](Emitter &e, Operation *op) {
    auto add = cast<tile::AddPtrOp>(op);
    Type pointee = e.elementType(tile::getPointeeType(add.getPtr().getType()));
    Regs ptrs = e.regs(add.getPtr()), offsets = e.regs(add.getOffset()), out;
    for (unsigned r = 0; r < ptrs.size(); ++r)
      out.push_back(gep(e, ptrs[r], pointee, offsets[r], op->getLoc()));
    e.map(add.getResult(), std::move(out));
    return success();
  });
  table.add<tile::ConvertOp>(emitConvert);
  table.add<math::FmaOp>(emitFma);
  table.add<math::ExpOp>([](Emitter &e, Operation *op) {
    Location loc = op->getLoc();
    return emitMath(e, op, [&](Value x) {
      return ex2(e, LLVM::FMulOp::create(e.b, loc, x, f32Const(e, M_LOG2E, loc)), loc);
    });
  });
  table.add<math::Exp2Op>([](Emitter &e, Operation *op) {
    return emitMath(e, op, [&](Value x) { return ex2(e, x, op->getLoc()); });
  });
  table.add<math::LogOp>([](Emitter &e, Operation *op) {
    return emitMath(e, op, [&](Value x) { return natLog(e, x, op->getLoc()); });
  });
  table.add<math::Log1pOp>([](Emitter &e, Operation *op) {
    return emitMath(e, op, [&](Value x) { return log1p(e, x, op->getLoc()); });
  });
  table.add<math::SqrtOp>([](Emitter &e, Operation *op) {
    return emitMath(e, op, [&](Value x) {
      return e.intrinsic("llvm.sqrt.f32", e.b.getF32Type(), {x}, op->getLoc());
    });
  });
  table.add<math::RsqrtOp>([](Emitter &e, Operation *op) {
    return emitMath(e, op, [&](Value x) {
      return e.intrinsic("llvm.nvvm.rsqrt.approx.ftz.f", e.b.getF32Type(), {x},
                         op->getLoc());
    });
  });
  table.add<math::AbsFOp>([](Emitter &e, Operation *op) {
    return emitMath(e, op, [&](Value x) {
      return e.intrinsic("llvm.fabs.f32", e.b.getF32Type(), {x}, op->getLoc());
    });
  });
}

} // namespace tilejit::lowering
