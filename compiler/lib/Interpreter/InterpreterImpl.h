// Internals shared by the interpreter's op families: how values are stored in
// slots, the run-time frame, checked host memory, and the table that turns
// each op into a whole-tile instruction once per kernel.
#ifndef TILEJIT_LIB_INTERPRETER_INTERPRETERIMPL_H
#define TILEJIT_LIB_INTERPRETER_INTERPRETERIMPL_H

#include "tilejit/Dialect/Tile/IR/OpTable.h"
#include "tilejit/Interpreter/Interpreter.h"
#include "tilejit/support/DType.h"

#include "mlir/IR/Operation.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallVector.h"

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace tilejit::interp::detail {

using llvm::Expected;

/// What a value holds: elements, pointers to them (a pointer or a tile of
/// them) or a view of them. Floats of every format live in `Slot::f` as f32
/// holding values exactly representable in their format; integers live in
/// `Slot::i` sign-extended from their width (so i1 true is -1); pointers live
/// in `Slot::i` as host addresses.
enum class ValueForm { Elements, Ptr, View };

/// The interpreter's view of an MLIR type: form, element type and static shape
/// (nothing that refers back to the MLIR context).
struct ValueType {
  ValueForm form = ValueForm::Elements;
  /// The elements' type, or the pointee's of a pointer or view (index counts
  /// as i64).
  DType element = DType::F32;
  llvm::SmallVector<int64_t, 4> shape; // empty for a scalar
  int64_t numElements = 1;

  /// Bits of an element (the pointee's for a pointer or view).
  unsigned bitWidth() const { return dtypeBits(element); }
  /// Bytes of an element in memory (the pointee's for a pointer or view).
  unsigned memoryBytes() const { return unsigned(dtypeBytes(element)); }
  bool isFloat() const {
    return form == ValueForm::Elements && tilejit::isFloat(element);
  }
  bool isTile() const { return !shape.empty(); }
};

/// Classifies `type`, or fails naming `op` when the interpreter cannot hold it.
llvm::Expected<ValueType> classifyType(mlir::Type type, mlir::Operation *op);
/// The kind and memory layout of one element of `type` (a scalar, the element
/// of a tile, or the pointee of a pointer).
ValueType elementOf(const ValueType &type);

/// A strided view of memory (sizes and strides in elements).
struct View {
  int64_t base = 0;
  llvm::SmallVector<int64_t, 4> sizes, strides;
};

/// Storage of one SSA value; reused from program to program.
struct Slot {
  std::vector<float> f;
  std::vector<int64_t> i;
  View view;
};

/// The storage of `slot` holding elements of C++ type `T` (float or int64_t).
template <typename T> std::vector<T> &storage(Slot &slot) {
  if constexpr (std::is_same_v<T, float>)
    return slot.f;
  else
    return slot.i;
}

/// An op as named in run-time errors: "'tile.ptr_load' at loc(...)".
struct OpSite {
  std::string text;
};
OpSite siteOf(mlir::Operation *op);
/// A compile-time error about `op` (unsupported op or type).
llvm::Error opError(mlir::Operation *op, const llvm::Twine &message);
/// A run-time error raised by the op at `site`.
llvm::Error siteError(const OpSite &site, const llvm::Twine &message);

/// The buffers of one run; every pointer access is checked against them.
class Memory {
public:
  void addBuffer(const Arg &arg, unsigned argIndex);
  /// True when [address, address + bytes) lies inside one buffer (writable
  /// when `write`).
  bool contains(int64_t address, uint64_t bytes, bool write) const;
  /// The offset of `address` from the start of the buffer that holds
  /// [address, address + bytes), or std::nullopt when no buffer does.
  std::optional<uint64_t> offsetInBuffer(int64_t address, uint64_t bytes) const;
  /// Checks element accesses of `bytes` bytes at `addresses[k]` for every k
  /// whose `active[k]` is non-zero (all when `active` is null); names the
  /// first bad element, its address and the nearest buffer.
  llvm::Error check(const OpSite &site, const int64_t *addresses, const int64_t *active,
                    size_t count, unsigned bytes, bool write) const;

private:
  struct Buffer {
    int64_t begin, end;
    unsigned argIndex;
    bool writable;
  };
  /// The first buffer holding [address, address + bytes) (writable when
  /// `write`), or null.
  const Buffer *holding(int64_t address, uint64_t bytes, bool write) const;
  std::string describe(int64_t address, unsigned bytes, bool write) const;
  std::vector<Buffer> buffers;
};

/// Reads or writes one element of the kind of `element` at a host address.
/// The caller has checked the address.
float readFloat(const ValueType &element, int64_t address);
int64_t readInt(const ValueType &element, int64_t address);
void writeFloat(const ValueType &element, int64_t address, float value);
void writeInt(const ValueType &element, int64_t address, int64_t value);

/// Rounds every element to `type` (bf16, f16 or e4m3, nearest even);
/// nothing to do for f32.
void roundInPlace(DType type, float *data, size_t count);

/// Integer helpers: values are kept sign-extended from their width.
inline int64_t signExtend(uint64_t value, unsigned width) {
  return width >= 64 ? int64_t(value) : int64_t(value << (64 - width)) >> (64 - width);
}
inline uint64_t zeroExtend(int64_t value, unsigned width) {
  return width >= 64 ? uint64_t(value) : uint64_t(value) & ((uint64_t(1) << width) - 1);
}

/// The state of one run: slots, the current program id and the memory.
struct Frame {
  std::vector<Slot> slots;
  Grid programId{0, 0, 0};
  Grid grid{1, 1, 1};
  const Memory *memory = nullptr;
};

using Instr = std::function<llvm::Error(Frame &)>;
using InstrList = std::vector<Instr>;

/// Runs `list` in order, stopping at the first error.
inline llvm::Error runList(const InstrList &list, Frame &frame) {
  for (const Instr &instr : list)
    if (llvm::Error err = instr(frame))
      return err;
  return llvm::Error::success();
}

class Compiler;
/// Translates one op into an instruction (results defined through `compiler`).
/// An empty instruction means the op needs no work at run time (its result
/// shares its operand's slot).
using OpCompiler = llvm::Expected<Instr> (*)(mlir::Operation *op, Compiler &compiler);
/// Op class -> translator.
using OpTable = tile::OpTable<OpCompiler>;

void registerArithFloatOps(OpTable &table);
void registerArithIntOps(OpTable &table);
void registerCastOps(OpTable &table);
void registerControlFlowOps(OpTable &table);
void registerMemoryOps(OpTable &table);
void registerReduceOps(OpTable &table);
void registerShapeOps(OpTable &table);

/// Assigns slots to values and translates blocks op by op.
class Compiler {
public:
  explicit Compiler(const OpTable &table) : table(table) {}

  /// Gives `value` a fresh slot (or fails on an unsupported type).
  llvm::Expected<unsigned> define(mlir::Value value, mlir::Operation *owner);
  /// Gives `value` the slot `existing`, whose storage it reinterprets (a
  /// reshape, a loop result that is its iteration argument).
  llvm::Error alias(mlir::Value value, unsigned existing, mlir::Operation *owner);
  /// The slot and type of a value defined earlier.
  unsigned slotOf(mlir::Value value) const { return slots.lookup(value); }
  ValueType typeOf(mlir::Value value) const { return types.find(value)->second; }
  unsigned numSlots() const { return slotCount; }

  /// Translates every op of `block` except its terminator.
  llvm::Expected<InstrList> compileBody(mlir::Block &block);

private:
  const OpTable &table;
  llvm::DenseMap<mlir::Value, unsigned> slots;
  llvm::DenseMap<mlir::Value, ValueType> types;
  unsigned slotCount = 0;
};

} // namespace tilejit::interp::detail

#endif // TILEJIT_LIB_INTERPRETER_INTERPRETERIMPL_H
