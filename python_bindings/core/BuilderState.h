// The state behind a KernelBuilder, shared by its files (not a public header):
// the builder's values, and the translation of the core's Operands and
// Locations into tilejit's for the length of one builder call.
#ifndef TILEJIT_PYTHON_BUILDERSTATE_H
#define TILEJIT_PYTHON_BUILDERSTATE_H

#include "CoreInternal.h"
#include "tilejit/python/KernelBuilder.h"

#include <bit>
#include <deque>
#include <source_location>

#ifndef __GLIBCXX__
#error "SourceLocationRecord below mirrors libstdc++'s std::source_location"
#endif

namespace tilejit::python {

/// The builder takes every location as a std::source_location, which standard
/// C++ can only make for a C++ line. libstdc++ represents one as a pointer to
/// this record (<source_location>, `__impl`), so a record filled with the
/// Python caller's file and line stands in. Records live for one builder call,
/// which copies the file name into the MLIR context.
struct SourceLocationRecord {
  const char *fileName;
  const char *functionName;
  unsigned line;
  unsigned column;
};
static_assert(sizeof(std::source_location) == sizeof(const SourceLocationRecord *));

/// Turns core Operands and Locations into the builder's, for one call.
class CallScope {
public:
  explicit CallScope(std::vector<Value> &values) : values(values) {}

  SrcLoc loc(const Location &l) {
    files.push_back(l.file);
    records.push_back({files.back().c_str(), "", l.line, l.column});
    return std::bit_cast<SrcLoc>(&records.back());
  }
  Value value(ValueId id) {
    if (id < 0 || size_t(id) >= values.size())
      throw Error(ErrorKind::Argument,
                  "value #" + std::to_string(id) + " does not exist");
    return values[id];
  }
  tilejit::Operand operand(const Operand &x) {
    SrcLoc l = loc(x.loc);
    switch (x.kind) {
    case Operand::Kind::Value:
      return tilejit::Operand(value(x.value), l);
    case Operand::Kind::Int:
      return tilejit::Operand(long(x.integer), l);
    case Operand::Kind::Float:
      return tilejit::Operand(x.number, l);
    }
    return tilejit::Operand(0, l);
  }
  std::optional<tilejit::Operand> operand(const std::optional<Operand> &x) {
    if (!x)
      return std::nullopt;
    return operand(*x);
  }
  std::vector<tilejit::Operand> operands(const std::vector<Operand> &xs) {
    std::vector<tilejit::Operand> out;
    for (const Operand &x : xs)
      out.push_back(operand(x));
    return out;
  }
  Dim dim(const ViewDim &d) {
    if (d.fixed)
      return Dim(*d.fixed);
    return Dim(value(d.value));
  }

private:
  std::vector<Value> &values;
  std::deque<std::string> files;
  std::deque<SourceLocationRecord> records;
};

struct KernelBuilder::State {
  std::string name;
  std::unique_ptr<mlir::MLIRContext> ctx;
  std::unique_ptr<Kernel> kernel;
  std::vector<Value> values;

  /// The builder calls act on the thread's current tilejit::Kernel: refuse a
  /// finished kernel or another thread.
  Kernel &active() {
    if (!kernel)
      throw Error(ErrorKind::Build,
                  "kernel '" + name +
                      "' is finished: its values cannot be used any more");
    if (Kernel::current() != kernel.get())
      throw Error(ErrorKind::Build,
                  "kernel '" + name + "' is being built on another thread");
    return *kernel;
  }
  /// for_range and if_then bodies being built: finish() inside one would
  /// destroy the kernel under the builder frames that are building it.
  int openBodies = 0;

  ValueId add(Value v) {
    values.push_back(v);
    return ValueId(values.size() - 1);
  }
  /// A value of this kernel. Its IR lives in the kernel's context, which a
  /// finished kernel has handed to its module (freed with it) or, after a
  /// failed finish(), holds erased: either way it is refused, never read.
  const Value &at(ValueId id) const {
    if (!kernel)
      throw Error(ErrorKind::Build,
                  "kernel '" + name +
                      "' is finished: its values cannot be used any more");
    if (id < 0 || size_t(id) >= values.size())
      throw Error(ErrorKind::Argument,
                  "value #" + std::to_string(id) + " does not exist");
    return values[id];
  }
};

} // namespace tilejit::python

#endif // TILEJIT_PYTHON_BUILDERSTATE_H
