// The C++ builder API: write tile kernels like Triton, in C++.
//
//   tilejit::Kernel k(ctx, "vadd");
//   Value x = k.ptrParam("x", DType::F32), n = k.scalarParam("n", DType::I32);
//   Value offs = programId(0) * 1024 + arange(0, 1024);
//   store(x + offs, load(x + offs, offs < n) * 2.0f, offs < n);
//   auto module = k.finish();   // llvm::Expected<OwningOpRef<ModuleOp>>
//
// Every op records the C++ call site as its location. A user mistake (shapes that
// do not broadcast, mismatched dtypes, a bad axis) becomes a diagnostic naming
// that file and line; the build goes on with an invalid Value so all mistakes are
// reported, and `finish()` returns them as one llvm::Error. Nothing aborts.
#ifndef TILEJIT_BUILDER_BUILDER_H
#define TILEJIT_BUILDER_BUILDER_H

#include "tilejit/support/DType.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <optional>
#include <source_location>
#include <string>
#include <vector>

namespace tilejit {

mlir::Type toMlirType(mlir::MLIRContext &ctx, DType t);
/// The DType of a scalar element type; std::nullopt for anything else.
std::optional<DType> fromMlirType(mlir::Type t);

using Shape = std::vector<int64_t>;
using SrcLoc = std::source_location;

class Kernel;

/// A value of the kernel being built: a scalar, a tile, a pointer or tile of
/// pointers, or a view. Cheap to copy. Invalid after a diagnosed mistake.
class Value {
public:
  Value() = default;
  Value(Kernel *kernel, mlir::Value value) : kernel_(kernel), value_(value) {}

  bool valid() const { return kernel_ && value_; }
  Kernel *kernel() const { return kernel_; }
  mlir::Value raw() const { return value_; }

  bool isTile() const;
  bool isPointer() const; ///< A pointer or a tile of pointers.
  bool isView() const;
  /// The tile shape; empty for scalars, pointers and views.
  Shape shape() const;
  /// Element type (a pointer's pointee, a view's element).
  DType dtype() const;

  /// Converts to another element type: float narrowing rounds to nearest even
  /// (and saturates to +-448 for f8e4m3), widening is exact, int<->float as C.
  Value to(DType t, SrcLoc loc = SrcLoc::current()) const;

private:
  Kernel *kernel_ = nullptr;
  mlir::Value value_;
};

/// An argument of a builder function or operator: a Value or a C++ number.
/// It records the source location of the user's expression that produced it,
/// which is how operators report the line a mistake was made on.
struct Operand {
  Operand(Value v, SrcLoc loc = SrcLoc::current()) : value(v), loc(loc) {}
  Operand(int c, SrcLoc loc = SrcLoc::current())
      : number(c), integer(c), isInteger(true), loc(loc) {}
  Operand(long c, SrcLoc loc = SrcLoc::current())
      : number(double(c)), integer(c), isInteger(true), loc(loc) {}
  Operand(double c, SrcLoc loc = SrcLoc::current()) : number(c), loc(loc) {}
  Operand(float c, SrcLoc loc = SrcLoc::current()) : number(c), loc(loc) {}

  Value value;
  std::optional<double> number;
  /// The exact value of an integer number (a double holds only 53 bits). An
  /// integer that does not fit the type it takes is a diagnostic, never
  /// truncated.
  int64_t integer = 0;
  bool isInteger = false;
  SrcLoc loc;
};

/// A strided view of global memory (see makeView); load/store tiles through it.
class View {
public:
  View() = default;
  explicit View(Value v) : value(v) {}
  bool valid() const { return value.valid(); }
  Value value;
};

/// A size or stride of a view: static (a C++ integer) or a run-time Value.
struct Dim {
  Dim(int64_t v) : fixed(v) {}
  Dim(int v) : fixed(v) {}
  Dim(Value v) : dynamic(v) {}
  std::optional<int64_t> fixed;
  Value dynamic;
};

/// Tuning choices recorded as `#tile.config` on the kernel.
struct Config {
  Shape tile;
  int64_t warps = 4;
  int64_t stages = 1;
  int64_t vector = 1;
  /// Warp groups that each sum one part of a dot's K (#tile.config split_k).
  int64_t splitK = 1;
  /// Dot operands straight from memory into mma fragments (#tile.config direct).
  bool direct = false;
  /// TMA feeds the K loop's dots (#tile.config producer): 1 from a producer
  /// warp(group), 2 from one consumer thread; 0: off.
  int64_t producer = 0;
  /// G >= 1: at most one program per multiprocessor walks the output tiles,
  /// G along grid axis 0 at a time (#tile.config persistent); 0: off.
  int64_t persistent = 0;
};

/// A kernel under construction. The constructor makes it the thread's current
/// kernel (for free functions such as programId); the destructor restores the
/// One dimension of a pointer parameter's declared shape: a fixed size, the
/// name of the scalar parameter that holds it, or "?" (any size).
struct ParamDim {
  ParamDim(int64_t size) : size(size) {}
  ParamDim(int size) : size(size) {}
  ParamDim(const char *scalar) : scalar(scalar) {}
  int64_t size = -1;
  std::string scalar; ///< empty for a fixed size
};

/// previous one.
class Kernel {
public:
  Kernel(mlir::MLIRContext &ctx, llvm::StringRef name, SrcLoc loc = SrcLoc::current());
  ~Kernel();
  Kernel(const Kernel &) = delete;
  Kernel &operator=(const Kernel &) = delete;

  /// Declares a pointer parameter to elements of `pointee`.
  Value ptrParam(llvm::StringRef name, DType pointee, SrcLoc loc = SrcLoc::current());
  /// The same, with the row-major shape a caller's array must have at launch
  /// (a `tile.shape` argument attribute that launchers holding arrays check).
  Value ptrParam(llvm::StringRef name, DType pointee, std::vector<ParamDim> shape,
                 SrcLoc loc = SrcLoc::current());
  /// Marks a pointer parameter as memory no kernel writes while this one may
  /// run (weights): it may be read before waitForPredecessors().
  void markInvariant(Value param, SrcLoc loc = SrcLoc::current());
  /// Declares a scalar parameter.
  Value scalarParam(llvm::StringRef name, DType type, SrcLoc loc = SrcLoc::current());
  /// Records the config; an invalid one is a diagnostic at `loc`.
  void setConfig(const Config &config, SrcLoc loc = SrcLoc::current());

  /// Verifies and returns the module holding the kernel, or every diagnostic
  /// (builder mistakes and verifier errors) as one error. Call once.
  llvm::Expected<mlir::OwningOpRef<mlir::ModuleOp>> finish();

  /// The innermost kernel under construction on this thread, or null.
  static Kernel *current();

  // Used by the builder functions.
  mlir::OpBuilder &builder() { return builder_; }
  mlir::MLIRContext &context() { return ctx_; }
  mlir::Location location(const SrcLoc &loc);
  /// Records a user mistake at `loc` and returns an invalid Value.
  Value fail(const SrcLoc &loc, const llvm::Twine &message);
  bool failed() const { return !diagnostics_.empty(); }
  Value wrap(mlir::Value v) { return Value(this, v); }

private:
  Value addParam(llvm::StringRef name, mlir::Type type, const SrcLoc &loc);

  mlir::MLIRContext &ctx_;
  mlir::OpBuilder builder_;
  mlir::OwningOpRef<mlir::ModuleOp> module_;
  mlir::Operation *kernelOp_;
  std::vector<std::string> diagnostics_;
  std::vector<std::string> paramNames_;
  std::vector<std::vector<ParamDim>> paramShapes_; ///< empty: not declared
  std::vector<bool> paramInvariant_;
  std::unique_ptr<class DiagnosticCollector> collector_;
  Kernel *previous_;
};

// Grid and index tiles.
Value programId(int axis, SrcLoc loc = SrcLoc::current());
Value numPrograms(int axis, SrcLoc loc = SrcLoc::current());
/// The 1-D i32 tile [start, end); both bounds must fit i32.
Value arange(int64_t start, int64_t end, SrcLoc loc = SrcLoc::current());
/// A scalar constant of type `t`.
Value constant(double value, DType t, SrcLoc loc = SrcLoc::current());
/// A tile of `shape` filled with a scalar (a Value or a number of type `t`).
Value full(const Shape &shape, const Operand &value, DType t);
Value zeros(const Shape &shape, DType t, SrcLoc loc = SrcLoc::current());

// Shapes.
Value broadcastTo(const Operand &x, const Shape &shape);
Value expandDims(const Operand &x, int axis);
Value reshape(const Operand &x, const Shape &shape);
Value transpose(const Operand &x, const std::vector<int32_t> &order);

// Elementwise arithmetic with numpy broadcasting; scalars splat, C++ numbers
// take the other operand's dtype. Comparisons yield i1. A C++ integer added to
// a pointer is an i32 offset, or an i64 one when it does not fit i32.
Value operator+(const Operand &a, const Operand &b);
Value operator-(const Operand &a, const Operand &b);
Value operator*(const Operand &a, const Operand &b);
Value operator/(const Operand &a, const Operand &b);
Value operator%(const Operand &a, const Operand &b);
Value operator-(const Operand &a);
Value operator<(const Operand &a, const Operand &b);
Value operator<=(const Operand &a, const Operand &b);
Value operator>(const Operand &a, const Operand &b);
Value operator>=(const Operand &a, const Operand &b);
Value operator==(const Operand &a, const Operand &b);
Value operator!=(const Operand &a, const Operand &b);
Value operator&(const Operand &a, const Operand &b);
Value operator|(const Operand &a, const Operand &b);
Value operator^(const Operand &a, const Operand &b);
/// Integer shifts; shr is logical (zeros shift in). A shift by the width or more
/// yields 0, as PTX's clamped shifts do.
Value shl(const Operand &a, const Operand &bits);
Value shr(const Operand &a, const Operand &bits);
Value maximum(const Operand &a, const Operand &b);
Value minimum(const Operand &a, const Operand &b);
/// The same bits read as `t`, which has x's element width (f32 <-> i32,
/// bf16 / f16 <-> i16).
Value bitcast(const Operand &x, DType t);
/// cond ? a : b, elementwise.
Value where(const Operand &cond, const Operand &a, const Operand &b);

// Math on floats.
Value exp(const Operand &x);
Value log(const Operand &x);
Value log1p(const Operand &x);
Value sqrt(const Operand &x);
Value rsqrt(const Operand &x);
Value abs(const Operand &x);
/// a * b + c rounded once (fused multiply-add), elementwise on floats. `a * b + c`
/// rounds twice and is never contracted, so the interpreter and the GPU agree
/// bit for bit either way.
Value fma(const Operand &a, const Operand &b, const Operand &c);
/// x / (1 + exp(-x)).
Value silu(const Operand &x);
/// x if x > 20 else log1p(exp(x)) (docs/numerics.md#notation-and-rounding-points).
Value softplus(const Operand &x);

// Reductions and scans along an axis (a 1-D reduction yields a scalar).
Value sum(const Operand &x, int axis);
Value max(const Operand &x, int axis);
Value min(const Operand &x, int axis);
/// Inclusive cumulative sum.
Value cumsum(const Operand &x, int axis);

/// acc + a x b with f32 accumulation; a is MxK, b is KxN (bf16, f16, f8e4m3, f32).
Value dot(const Operand &a, const Operand &b, const Operand &acc);

// Memory through views: a tile of `shape` at `offsets`, masked by the view's
// bounds (elements outside read `padding`, zero by default, and are not written).
// Sizes and offsets are i32 (a wider Value is a diagnostic, never truncated),
// strides i64; the lowering forms each address in i64.
View makeView(const Operand &ptr, const std::vector<Dim> &sizes,
              const std::vector<Dim> &strides);
Value load(const View &view, const std::vector<Operand> &offsets, const Shape &shape,
           std::optional<double> padding = std::nullopt, SrcLoc loc = SrcLoc::current());
void store(const View &view, const std::vector<Operand> &offsets, const Operand &value,
           SrcLoc loc = SrcLoc::current());

// Memory through pointers (ptr + offsets) under an optional mask.
Value load(const Operand &ptrs, std::optional<Operand> mask = std::nullopt,
           std::optional<Operand> other = std::nullopt);
void store(const Operand &ptrs, const Operand &value,
           std::optional<Operand> mask = std::nullopt);

// Structured control flow.
using LoopBody =
    llvm::function_ref<std::vector<Value>(Value iv, std::vector<Value> carried)>;
/// for (iv = lo; iv < hi; iv += step) in i32, threading `init` through the
/// iterations; returns the final carried values. A constant step must be positive.
std::vector<Value> forRange(const Operand &lo, const Operand &hi, const Operand &step,
                            std::vector<Value> init, LoopBody body);
/// Runs `body` only where the scalar i1 `cond` holds.
void ifThen(const Operand &cond, llvm::function_ref<void()> body);
using BranchBody = llvm::function_ref<std::vector<Value>()>;
/// cond ? thenBody() : elseBody() for a scalar i1 `cond`: only the taken arm
/// runs (where `where` computes both), so a value needed on a rare path (a
/// sequence's first chunk) costs nothing on the common one. Both arms return
/// values of the same types, one per result.
std::vector<Value> ifElse(const Operand &cond, BranchBody thenBody, BranchBody elseBody);

// Programmatic dependent launch (docs/design.md#programmatic-dependent-launch):
// the kernel may start while the one before it on the stream still runs.
/// Waits until the kernels before this one have finished and their writes are
/// visible. Call it once, in the kernel's body (not in a loop or a branch);
/// before it the kernel reads only invariant parameters and writes nothing.
void waitForPredecessors(SrcLoc loc = SrcLoc::current());
/// Lets the next kernel start its programs once every program of this one has
/// called it or ended. Correctness never depends on where: right after the
/// wait (the decode kernels) lets the next kernel's programs take what this
/// one leaves as early as possible.
void launchDependents(SrcLoc loc = SrcLoc::current());
/// Starts bringing `bytes` bytes at the scalar pointer `ptr` into L2 (one
/// thread per program; both multiples of 16 bytes, the range in bounds). A
/// hint that needs no wait: it may prefetch weights before waitForPredecessors.
void prefetchL2(const Operand &ptr, const Operand &bytes);

} // namespace tilejit

#endif // TILEJIT_BUILDER_BUILDER_H
