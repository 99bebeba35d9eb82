// Helpers shared by the builder's implementation files (not a public header).
#ifndef TILEJIT_LIB_BUILDER_BUILDERINTERNAL_H
#define TILEJIT_LIB_BUILDER_BUILDERINTERNAL_H

#include "tilejit/Builder/Builder.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "tilejit/Dialect/Tile/IR/TileOps.h"

namespace tilejit::detail {

/// The kernel the operands belong to (or the thread's current kernel when all
/// are numbers). Null when an operand is an invalid Value: its mistake has
/// been reported already, so the caller returns an invalid Value silently.
Kernel *kernelOf(std::initializer_list<const Operand *> operands);

/// The shape of a tile type; empty for scalars.
Shape shapeOf(mlir::Type t);

/// `describeType` of the dialect: tile<128xf32>, i32, !tile.ptr<f32>.
std::string describe(mlir::Value v);

/// The operand as an mlir::Value: a Value as is, a number as a scalar
/// constant of `type`.
mlir::Value materialize(Kernel &k, const Operand &x, mlir::Type type);

/// The value of the integer (or integral float) number `x` as `element`, an
/// integer type; a number it cannot hold exactly is a diagnostic at x's line
/// (and 0 stands in for it, the build having failed).
int64_t exactInteger(Kernel &k, const Operand &x, mlir::Type element);

/// The most elements one tile may hold: 1024 threads of 1024 registers, far
/// past any kernel; past it a shape is a mistake (or an overflow upstream).
inline constexpr int64_t kMaxTileElements = int64_t(1) << 20;

/// Checks a tile shape a builder function was given: positive dimensions,
/// at most kMaxTileElements elements. A bad one is a diagnostic naming `what`.
bool checkShape(Kernel &k, const Shape &shape, const SrcLoc &loc, const char *what);

/// Splats a scalar or broadcasts a tile (numpy rules: trailing dimensions
/// align) to `shape`. The caller has checked that the shapes broadcast.
mlir::Value broadcastValue(Kernel &k, mlir::Value v, const Shape &shape,
                           mlir::Location loc);

/// The numpy broadcast of two shapes, or std::nullopt.
std::optional<Shape> broadcastShapes(const Shape &a, const Shape &b);

/// An i32 index operand named `what`: a number that fits i32, or an integer
/// scalar Value of at most 32 bits (sign-extended). A wider Value is a
/// diagnostic: truncating it would silently index elsewhere.
mlir::Value indexOperand(Kernel &k, const Operand &x, const char *what);

/// Converts a scalar integer Value to i32 / i64 (extending or truncating).
mlir::Value castInt(Kernel &k, mlir::Value v, mlir::Type to, mlir::Location loc);

} // namespace tilejit::detail

#endif // TILEJIT_LIB_BUILDER_BUILDERINTERNAL_H
