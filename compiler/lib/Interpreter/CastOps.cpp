// Conversions: tile.convert and arith's float and integer casts. Widening
// casts whose values are already exact in the slot (extf, extsi, widening
// tile.convert) share their operand's slot; narrowing float casts round with
// the FloatFormats routines, saturating for f8E4M3FN as the GPU's only e4m3
// conversion (cvt.rn.satfinite) does.
#include "InterpreterImpl.h"

#include "tilejit/Dialect/Tile/IR/TileOps.h"
#include "tilejit/support/FloatFormats.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "llvm/ADT/APFloat.h"

#include <cmath>

using namespace mlir;

namespace tilejit::interp::detail {
namespace {

Expected<Instr> aliasResult(Operation *op, Compiler &c) {
  if (llvm::Error err = c.alias(op->getResult(0), c.slotOf(op->getOperand(0)), op))
    return std::move(err);
  return Instr();
}

/// The result's type, classified before the result has a slot.
Expected<ValueType> resultType(Operation *op) {
  return classifyType(op->getResult(0).getType(), op);
}

/// An elementwise conversion between slot vectors of possibly different
/// storage (`From`/`To` are `float` or `int64_t`).
template <typename From, typename To, typename Fn>
Expected<Instr> convertEach(Operation *op, Compiler &c, Fn fn) {
  unsigned src = c.slotOf(op->getOperand(0));
  Expected<unsigned> out = c.define(op->getResult(0), op);
  if (!out)
    return out.takeError();
  int64_t n = c.typeOf(op->getResult(0)).numElements;
  unsigned dst = *out;
  return Instr([=](Frame &frame) {
    const From *x = storage<From>(frame.slots[src]).data();
    std::vector<To> &to = storage<To>(frame.slots[dst]);
    to.resize(n);
    for (int64_t k = 0; k < n; ++k)
      to[k] = fn(x[k]);
    return llvm::Error::success();
  });
}

/// Float -> narrower float: both tile.convert and arith.truncf.
Expected<Instr> narrowFloat(Operation *op, Compiler &c, Rounding rounding) {
  Expected<ValueType> result = resultType(op);
  if (!result)
    return result.takeError();
  DType to = result->element;
  if (c.typeOf(op->getOperand(0)).element == to || to == DType::F32)
    return aliasResult(op, c);
  switch (to) {
  case DType::BF16:
    return convertEach<float, float>(op, c,
                                     [=](float v) { return roundToBF16(v, rounding); });
  case DType::F16:
    return convertEach<float, float>(op, c,
                                     [=](float v) { return roundToF16(v, rounding); });
  default:
    return convertEach<float, float>(op, c,
                                     [=](float v) { return roundToE4M3(v, rounding); });
  }
}

Expected<Instr> compileConvert(Operation *op, Compiler &c) {
  auto convert = cast<tile::ConvertOp>(op);
  if (tile::isWideningConversion(convert.getSrc().getType(),
                                 convert.getResult().getType()))
    return aliasResult(op, c);
  bool rtz = convert.getRounding() == tile::RoundingMode::RTZ;
  return narrowFloat(op, c, rtz ? Rounding::TowardZero : Rounding::NearestEven);
}

Expected<Instr> compileTruncF(Operation *op, Compiler &c) {
  std::optional<arith::RoundingMode> mode = cast<arith::TruncFOp>(op).getRoundingmode();
  if (mode && *mode != arith::RoundingMode::to_nearest_even &&
      *mode != arith::RoundingMode::toward_zero)
    return opError(op, "rounds " + arith::stringifyRoundingMode(*mode).str() +
                           "; the interpreter supports to_nearest_even and toward_zero");
  bool rtz = mode == arith::RoundingMode::toward_zero;
  return narrowFloat(op, c, rtz ? Rounding::TowardZero : Rounding::NearestEven);
}

/// Integer -> float, rounded once to nearest even in the result's format.
template <bool isSigned> Expected<Instr> compileIntToFloat(Operation *op, Compiler &c) {
  unsigned w = c.typeOf(op->getOperand(0)).bitWidth();
  Expected<ValueType> result = resultType(op);
  if (!result)
    return result.takeError();
  if (result->element == DType::F32)
    return convertEach<int64_t, float>(
        op, c, [=](int64_t v) { return isSigned ? float(v) : float(zeroExtend(v, w)); });
  const llvm::fltSemantics &semantics =
      cast<FloatType>(getElementTypeOrSelf(op->getResult(0).getType()))
          .getFloatSemantics();
  return convertEach<int64_t, float>(op, c, [=, &semantics](int64_t v) {
    llvm::APFloat value(semantics);
    value.convertFromAPInt(
        llvm::APInt(64, uint64_t(isSigned ? v : int64_t(zeroExtend(v, w)))), isSigned,
        llvm::APFloat::rmNearestTiesToEven);
    bool lost;
    value.convert(llvm::APFloat::IEEEsingle(), llvm::APFloat::rmNearestTiesToEven, &lost);
    return value.convertToFloat();
  });
}

/// Float -> integer, truncating toward zero and saturating at the type's
/// bounds, NaN giving 0: PTX cvt.rzi's behaviour (arith leaves it undefined).
template <bool isSigned> Expected<Instr> compileFloatToInt(Operation *op, Compiler &c) {
  Expected<ValueType> result = resultType(op);
  if (!result)
    return result.takeError();
  unsigned w = result->bitWidth();
  double lo = isSigned ? -std::ldexp(1.0, w - 1) : 0.0;
  double hi = isSigned ? std::ldexp(1.0, w - 1) : std::ldexp(1.0, w); // exclusive
  return convertEach<float, int64_t>(op, c, [=](float v) -> int64_t {
    double t = std::trunc(double(v));
    if (std::isnan(t))
      return 0;
    if (t <= lo)
      return isSigned ? signExtend(uint64_t(1) << (w - 1), w) : 0;
    if (t >= hi)
      return isSigned ? signExtend((uint64_t(1) << (w - 1)) - 1, w)
                      : signExtend(~uint64_t(0), w);
    return isSigned ? int64_t(t) : signExtend(uint64_t(t), w);
  });
}

Expected<Instr> compileExtUI(Operation *op, Compiler &c) {
  unsigned w = c.typeOf(op->getOperand(0)).bitWidth();
  return convertEach<int64_t, int64_t>(
      op, c, [=](int64_t v) { return int64_t(zeroExtend(v, w)); });
}

/// trunci, and index casts: the value's bits, re-extended from the result's
/// width (signed for extsi-like casts, unsigned for index_castui widening).
template <bool unsignedWiden>
Expected<Instr> compileIntResize(Operation *op, Compiler &c) {
  unsigned from = c.typeOf(op->getOperand(0)).bitWidth();
  Expected<ValueType> result = resultType(op);
  if (!result)
    return result.takeError();
  unsigned to = result->bitWidth();
  if (to > from && unsignedWiden)
    return compileExtUI(op, c);
  if (to >= from)
    return aliasResult(op, c);
  return convertEach<int64_t, int64_t>(op, c,
                                       [=](int64_t v) { return signExtend(v, to); });
}

/// Same-width bitcast between f32/f16/bf16 and integers: through the bytes
/// the value has in memory.
Expected<Instr> compileBitcast(Operation *op, Compiler &c) {
  const ValueType &src = c.typeOf(op->getOperand(0));
  Expected<ValueType> dstType = resultType(op);
  if (!dstType)
    return dstType.takeError();
  ValueType from = elementOf(src), to = elementOf(*dstType);
  if (from.isFloat() == to.isFloat())
    return aliasResult(op, c);
  if (from.memoryBytes() * 8 != (to.isFloat() ? to.memoryBytes() * 8 : to.bitWidth()) ||
      from.element == DType::F8E4M3 || to.element == DType::F8E4M3)
    return opError(op, "bitcast between these types is not supported by the interpreter");
  if (from.isFloat())
    return convertEach<float, int64_t>(op, c, [=](float v) {
      int64_t bits = 0;
      writeFloat(from, int64_t(reinterpret_cast<uintptr_t>(&bits)), v);
      return readInt(to, int64_t(reinterpret_cast<uintptr_t>(&bits)));
    });
  return convertEach<int64_t, float>(op, c, [=](int64_t v) {
    int64_t bits = 0;
    writeInt(from, int64_t(reinterpret_cast<uintptr_t>(&bits)), v);
    return readFloat(to, int64_t(reinterpret_cast<uintptr_t>(&bits)));
  });
}

} // namespace

void registerCastOps(OpTable &table) {
  table.add<tile::ConvertOp>(compileConvert);
  table.add<arith::ExtFOp>(aliasResult);
  table.add<arith::TruncFOp>(compileTruncF);
  table.add<arith::SIToFPOp>(compileIntToFloat<true>);
  table.add<arith::UIToFPOp>(compileIntToFloat<false>);
  table.add<arith::FPToSIOp>(compileFloatToInt<true>);
  table.add<arith::FPToUIOp>(compileFloatToInt<false>);
  table.add<arith::ExtSIOp>(aliasResult);
  table.add<arith::ExtUIOp>(compileExtUI);
  table.add<arith::TruncIOp>(compileIntResize<false>);
  table.add<arith::IndexCastOp>(compileIntResize<false>);
  table.add<arith::IndexCastUIOp>(compileIntResize<true>);
  table.add<arith::BitcastOp>(compileBitcast);
}

} // namespace tilejit::interp::detail
