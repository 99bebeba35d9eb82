// The `tile` dialect: registration, types, attributes and type helpers.
#include "tilejit/Dialect/Tile/IR/TileOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/CheckedArithmetic.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace tilejit::tile;

#include "tilejit/Dialect/Tile/IR/TileDialect.cpp.inc"
#include "tilejit/Dialect/Tile/IR/TileEnums.cpp.inc"

#define GET_TYPEDEF_CLASSES
#include "tilejit/Dialect/Tile/IR/TileTypes.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "tilejit/Dialect/Tile/IR/TileAttrs.cpp.inc"

void TileDialect::initialize() {
  addTypes<
#define GET_TYPEDEF_LIST
#include "tilejit/Dialect/Tile/IR/TileTypes.cpp.inc"
      >();
  addAttributes<
#define GET_ATTRDEF_LIST
#include "tilejit/Dialect/Tile/IR/TileAttrs.cpp.inc"
      >();
  addOperations<
#define GET_OP_LIST
#include "tilejit/Dialect/Tile/IR/TileOps.cpp.inc"
      >();
}

Operation *TileDialect::materializeConstant(OpBuilder &builder, Attribute value,
                                            Type type, Location loc) {
  return arith::ConstantOp::materialize(builder, value, type, loc);
}

//===----------------------------------------------------------------------===//
// Type helpers
//===----------------------------------------------------------------------===//

namespace tilejit::tile {

static bool isScalarElement(Type t) {
  return isa<Float32Type, Float16Type, BFloat16Type, Float8E4M3FNType>(t) ||
         t.isInteger(1) || t.isInteger(8) || t.isInteger(32) || t.isInteger(64);
}

Type getSameShape(Type scalarOrTile, Type element) {
  if (auto tensor = dyn_cast<RankedTensorType>(scalarOrTile))
    return RankedTensorType::get(tensor.getShape(), element, tensor.getEncoding());
  return element;
}

Type getPointeeType(Type ptrOrPtrTile) {
  auto ptr = dyn_cast<PointerType>(getElementTypeOrSelf(ptrOrPtrTile));
  if (!ptr)
    return Type();
  return getSameShape(ptrOrPtrTile, ptr.getPointeeType());
}

Type getMaskType(Type scalarOrTile) {
  return getSameShape(scalarOrTile, IntegerType::get(scalarOrTile.getContext(), 1));
}

bool isWideningConversion(Type from, Type to) {
  from = getElementTypeOrSelf(from);
  to = getElementTypeOrSelf(to);
  if (from == to || to.isF32())
    return true;
  // e4m3fn (max 448, min subnormal 2^-9, 3 mantissa bits) fits bf16 and f16.
  return isa<Float8E4M3FNType>(from) && isa<BFloat16Type, Float16Type>(to);
}

std::string describeType(Type type) {
  std::string out;
  llvm::raw_string_ostream os(out);
  if (auto tensor = dyn_cast<RankedTensorType>(type)) {
    os << "tile<";
    for (int64_t d : tensor.getShape())
      os << d << "x";
    os << tensor.getElementType() << ">";
  } else {
    os << type;
  }
  return out;
}

} // namespace tilejit::tile

//===----------------------------------------------------------------------===//
// PointerType
//===----------------------------------------------------------------------===//

LogicalResult PointerType::verify(function_ref<InFlightDiagnostic()> emitError,
                                  Type pointee) {
  if (!isScalarElement(pointee))
    return emitError() << "pointee must be a scalar element type (f32, f16, bf16, "
                          "f8E4M3FN, i1, i8, i32, i64), got "
                       << pointee;
  return success();
}

//===----------------------------------------------------------------------===//
// ViewType
//===----------------------------------------------------------------------===//

static constexpr int64_t kDynamic = ShapedType::kDynamic;

LogicalResult ViewType::verify(function_ref<InFlightDiagnostic()> emitError,
                               ArrayRef<int64_t> shape, Type elementType,
                               ArrayRef<int64_t> strides) {
  if (shape.empty())
    return emitError() << "view must have rank >= 1";
  if (shape.size() != strides.size())
    return emitError() << "view of rank " << shape.size() << " has " << strides.size()
                       << " strides";
  if (!isScalarElement(elementType))
    return emitError() << "view element must be a scalar element type, got "
                       << elementType;
  for (int64_t s : shape) {
    if (s != kDynamic && s < 0)
      return emitError() << "view size must be non-negative, got " << s;
    // Sizes are compared with i32 indices (offsets and `?` sizes are i32); the
    // lowering would truncate a larger one to a wrong bound.
    if (s != kDynamic && s > INT32_MAX)
      return emitError() << "view size " << s << " does not fit i32 (at most "
                         << INT32_MAX << ")";
  }
  for (int64_t s : strides)
    if (s != kDynamic && s < 0)
      return emitError() << "view stride must be non-negative, got " << s;
  // The byte offset of the last element of the static dimensions, as the
  // lowering forms it in i64, must not wrap.
  const int64_t bytes = std::max<unsigned>(1, elementType.getIntOrFloatBitWidth() / 8);
  std::optional<int64_t> last = 0;
  for (auto [dim, size, stride] : llvm::enumerate(shape, strides)) {
    if (size == kDynamic || stride == kDynamic || size == 0)
      continue;
    if (auto step = llvm::checkedMul(size - 1, stride))
      last = llvm::checkedAdd(*last, *step);
    else
      last = std::nullopt;
    if (!last || !llvm::checkedMul(*last, bytes))
      return emitError() << "view dimension " << dim << " (size " << size << ", stride "
                         << stride << ") reaches past 2^63 bytes from the base";
  }
  return success();
}

unsigned ViewType::getNumDynamicSizes() const {
  return llvm::count(getShape(), kDynamic);
}

unsigned ViewType::getNumDynamicStrides() const {
  return llvm::count(getStrides(), kDynamic);
}

std::optional<unsigned> ViewType::getContiguousDim() const {
  for (auto [i, s] : llvm::enumerate(getStrides()))
    if (s == 1)
      return i;
  return std::nullopt;
}

static ParseResult parseDynamicInt(AsmParser &parser, int64_t &value) {
  if (succeeded(parser.parseOptionalQuestion())) {
    value = kDynamic;
    return success();
  }
  return parser.parseInteger(value);
}

Type ViewType::parse(AsmParser &parser) {
  SmallVector<int64_t> shape, strides;
  Type element;
  if (parser.parseLess() ||
      parser.parseDimensionList(shape, /*allowDynamic=*/true, /*withTrailingX=*/true) ||
      parser.parseType(element) || parser.parseComma() ||
      parser.parseKeyword("strides") || parser.parseEqual() ||
      parser.parseCommaSeparatedList(
          AsmParser::Delimiter::Square,
          [&] { return parseDynamicInt(parser, strides.emplace_back()); }) ||
      parser.parseGreater())
    return Type();
  return parser.getChecked<ViewType>(parser.getContext(), shape, element, strides);
}

void ViewType::print(AsmPrinter &printer) const {
  auto printDim = [&](int64_t d) {
    if (d == kDynamic)
      printer << "?";
    else
      printer << d;
  };
  printer << "<";
  for (int64_t d : getShape()) {
    printDim(d);
    printer << "x";
  }
  printer << getElementType() << ", strides = [";
  llvm::interleaveComma(getStrides(), printer, printDim);
  printer << "]>";
}

//===----------------------------------------------------------------------===//
// ConfigAttr
//===----------------------------------------------------------------------===//

LogicalResult ConfigAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                 ArrayRef<int64_t> tile, int64_t warps, int64_t stages,
                                 int64_t vector, int64_t splitK, int64_t direct,
                                 int64_t producer, int64_t persistent) {
  if (tile.empty())
    return emitError() << "config needs at least one tile size";
  for (int64_t t : tile)
    if (t <= 0)
      return emitError() << "config tile sizes must be positive, got " << t;
  if (warps < 1 || warps > 32 || !llvm::isPowerOf2_64(warps))
    return emitError() << "config warps must be a power of two in [1, 32], got " << warps;
  if (stages < 1 || stages > 8)
    return emitError() << "config stages must be in [1, 8], got " << stages;
  if (vector < 1 || vector > 16 || !llvm::isPowerOf2_64(vector))
    return emitError() << "config vector width must be a power of two in [1, 16], got "
                       << vector;
  if (splitK < 1 || splitK > warps || !llvm::isPowerOf2_64(splitK))
    return emitError() << "config split_k must be a power of two in [1, warps = " << warps
                       << "], got " << splitK;
  if (direct != 0 && direct != 1)
    return emitError() << "config direct must be 0 or 1, got " << direct;
  if (producer < 0 || producer > 2)
    return emitError()
           << "config producer must be 0, 1 (a producer warp or warpgroup) or "
              "2 (one consumer thread issues the copies), got "
           << producer;
  // A producer warp(group) comes on top of whole consumer warpgroups.
  if (producer == 1 && (warps % 4 || warps > 16))
    return emitError() << "config producer = 1 needs warps a multiple of 4 up to 16 "
                          "(whole consumer warpgroups), got "
                       << warps;
  if (persistent < 0 || persistent > 64)
    return emitError() << "config persistent must be 0 (off) or a tile group of 1 to 64, "
                          "got "
                       << persistent;
  return success();
}

// #tile.config<tile = [128, 64], warps = 4[, stages = N][, vector = N][, split_k = N]
//              [, direct = 0|1][, producer = 0|1|2][, persistent = G]>
Attribute ConfigAttr::parse(AsmParser &parser, Type) {
  SmallVector<int64_t> tile;
  int64_t warps = 0, stages = 1, vector = 1, splitK = 1, direct = 0, producer = 0,
          persistent = 0;
  if (parser.parseLess() || parser.parseKeyword("tile") || parser.parseEqual() ||
      parser.parseCommaSeparatedList(
          AsmParser::Delimiter::Square,
          [&] { return parser.parseInteger(tile.emplace_back()); }) ||
      parser.parseComma() || parser.parseKeyword("warps") || parser.parseEqual() ||
      parser.parseInteger(warps))
    return {};
  llvm::StringSet<> seen;
  while (succeeded(parser.parseOptionalComma())) {
    StringRef key;
    SMLoc loc = parser.getCurrentLocation();
    if (parser.parseKeyword(&key) || parser.parseEqual())
      return {};
    int64_t *slot = llvm::StringSwitch<int64_t *>(key)
                        .Case("stages", &stages)
                        .Case("vector", &vector)
                        .Case("split_k", &splitK)
                        .Case("direct", &direct)
                        .Case("producer", &producer)
                        .Case("persistent", &persistent)
                        .Default(nullptr);
    if (!slot) {
      parser.emitError(loc)
          << "unknown config key '" << key
          << "' (expected stages, vector, split_k, direct, producer or persistent)";
      return {};
    }
    if (!seen.insert(key).second) {
      parser.emitError(loc) << "config key '" << key << "' given twice";
      return {};
    }
    if (parser.parseInteger(*slot))
      return {};
  }
  if (parser.parseGreater())
    return {};
  return parser.getChecked<ConfigAttr>(parser.getContext(), tile, warps, stages, vector,
                                       splitK, direct, producer, persistent);
}

void ConfigAttr::print(AsmPrinter &printer) const {
  printer << "<tile = [";
  llvm::interleaveComma(getTile(), printer);
  printer << "], warps = " << getWarps();
  if (getStages() != 1)
    printer << ", stages = " << getStages();
  if (getVector() != 1)
    printer << ", vector = " << getVector();
  if (getSplitK() != 1)
    printer << ", split_k = " << getSplitK();
  if (getDirect() != 0)
    printer << ", direct = " << getDirect();
  if (getProducer() != 0)
    printer << ", producer = " << getProducer();
  if (getPersistent() != 0)
    printer << ", persistent = " << getPersistent();
  printer << ">";
}

//===----------------------------------------------------------------------===//
// BlockedLayoutAttr
//===----------------------------------------------------------------------===//

LogicalResult BlockedLayoutAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                        ArrayRef<int64_t> spt, ArrayRef<int64_t> tpw,
                                        ArrayRef<int64_t> wpc, ArrayRef<int64_t> order) {
  size_t rank = spt.size();
  if (rank == 0 || tpw.size() != rank || wpc.size() != rank || order.size() != rank)
    return emitError() << "blocked layout needs spt, tpw, wpc and order of one rank";
  int64_t lanes = 1;
  for (size_t d = 0; d < rank; ++d) {
    for (int64_t v : {spt[d], tpw[d], wpc[d]})
      if (v < 1 || !llvm::isPowerOf2_64(v))
        return emitError() << "blocked layout entries must be powers of two, got " << v;
    lanes *= tpw[d];
  }
  if (lanes != 32)
    return emitError() << "blocked layout tpw must multiply to 32 lanes, got " << lanes;
  SmallVector<bool> seen(rank, false);
  for (int64_t o : order) {
    if (o < 0 || o >= (int64_t)rank || seen[o])
      return emitError() << "blocked layout order must be a permutation of [0, " << rank
                         << ")";
    seen[o] = true;
  }
  return success();
}
