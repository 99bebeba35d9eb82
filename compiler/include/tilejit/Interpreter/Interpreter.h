// The CPU interpreter of tile IR: runs a `tile.kernel` over a grid on host
// buffers with the GPU's numerics (f32 accumulation, bit-exact bf16 / f16 /
// e4m3 rounding) and bounds-checks every memory access against the buffers.
#ifndef TILEJIT_INTERPRETER_INTERPRETER_H
#define TILEJIT_INTERPRETER_INTERPRETER_H

#include "tilejit/Dialect/Tile/IR/TileOps.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/Error.h"

#include <array>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <memory>

namespace tilejit::interp {

// Numerics, where the IR leaves room (see also TileOps.td's header):
// - f32 ops round once per op (no FMA contraction); bf16 / f16 results are
//   rounded back to their type after every op; e4m3 tiles only load, store,
//   move and convert (arithmetic on them is an error, as on the GPU).
// - reduce / scan / dot accumulate in f32 in index order; float max / min
//   propagate NaN. Transcendentals are within 0.5 ulp (f64 then rounded); the
//   GPU's approximations are looser (ArithFloatOps.cpp lists the bounds).
// - Integer division by zero yields 0, shifts by >= the width yield 0 (the
//   sign for shrsi), float -> int truncates and saturates with NaN -> 0.
// - Programs run one after another, axis 0 fastest, on one thread.

/// One kernel argument: a host buffer for a `!tile.ptr<T>` parameter, or a
/// scalar for an integer or float parameter. A buffer is not copied; it must
/// outlive the run. Every pointer access of the kernel must fall inside one of
/// the run's buffers (any of them); stores into a read-only buffer are errors.
class Arg {
public:
  enum class Kind { Buffer, Int, Float };

  /// A writable buffer of `bytes` bytes at `data`.
  static Arg buffer(void *data, size_t bytes) {
    return Arg(Kind::Buffer, data, bytes, true);
  }
  /// A buffer the kernel may only read.
  static Arg readOnlyBuffer(const void *data, size_t bytes) {
    return Arg(Kind::Buffer, const_cast<void *>(data), bytes, false);
  }
  /// A writable buffer over a contiguous container (std::vector, std::array,
  /// llvm::MutableArrayRef, ...).
  template <typename Container> static Arg buffer(Container &data) {
    return buffer(std::data(data), std::size(data) * sizeof(*std::data(data)));
  }
  /// A read-only buffer over a contiguous container.
  template <typename Container> static Arg readOnlyBuffer(const Container &data) {
    return readOnlyBuffer(std::data(data), std::size(data) * sizeof(*std::data(data)));
  }
  /// A value for an integer parameter (i1, i8, i32, i64); it must fit the
  /// parameter's width (signed or unsigned reading).
  static Arg intScalar(int64_t value) {
    Arg a(Kind::Int, nullptr, 0, false);
    a.intValue = value;
    return a;
  }
  /// A value for a float parameter (f32, f16, bf16); rounded to the
  /// parameter's type to nearest even.
  static Arg floatScalar(double value) {
    Arg a(Kind::Float, nullptr, 0, false);
    a.floatValue = value;
    return a;
  }

  Kind getKind() const { return kind; }
  void *getData() const { return data; }
  size_t getBytes() const { return bytes; }
  bool isWritable() const { return writable; }
  int64_t getInt() const { return intValue; }
  double getFloat() const { return floatValue; }

private:
  Arg(Kind kind, void *data, size_t bytes, bool writable)
      : kind(kind), data(data), bytes(bytes), writable(writable) {}

  Kind kind;
  void *data;
  size_t bytes;
  bool writable;
  int64_t intValue = 0;
  double floatValue = 0;
};

/// The launch grid: programs along axes 0, 1, 2 (each >= 0; a zero runs
/// nothing).
using Grid = std::array<int64_t, 3>;

/// The most programs one interpreter launch runs (2^24): programs run one
/// after another on one thread, so a larger grid is refused rather than left
/// running for days. Each axis also keeps CUDA's limit (2^31 - 1, 65535, 65535).
inline constexpr int64_t kMaxPrograms = int64_t(1) << 24;

class CompiledKernelImpl;

/// A kernel translated once into a list of whole-tile instructions (one per
/// op, values in numbered slots), ready to run any number of times. Keeps a
/// reference to nothing in the IR: the module may be destroyed after compile.
class CompiledKernel {
public:
  /// Translates `kernel`. Fails, naming the op and its location, on an op or
  /// type the interpreter does not support.
  static llvm::Expected<CompiledKernel> compile(tile::KernelOp kernel);

  /// Runs the body once per program id of `grid` (axis 0 fastest), in order,
  /// on one thread. `args` must match the kernel parameters in count and kind;
  /// an integer scalar must fit its parameter as a signed value (0 or 1 for
  /// i1); a grid past CUDA's limits or kMaxPrograms is refused before it runs.
  /// The first failing access or op stops the run with an error naming the
  /// op's location and the program id. Each run has its own state, so runs
  /// of one compiled kernel may proceed concurrently on several threads.
  llvm::Error run(const Grid &grid, llvm::ArrayRef<Arg> args) const;

  CompiledKernel(CompiledKernel &&) noexcept;
  CompiledKernel &operator=(CompiledKernel &&) noexcept;
  ~CompiledKernel();

private:
  explicit CompiledKernel(std::unique_ptr<CompiledKernelImpl> impl);
  std::unique_ptr<CompiledKernelImpl> impl;
};

/// Compiles `kernel` and runs it once: `CompiledKernel::compile` then `run`.
llvm::Error run(tile::KernelOp kernel, const Grid &grid, llvm::ArrayRef<Arg> args);

} // namespace tilejit::interp

#endif // TILEJIT_INTERPRETER_INTERPRETER_H
