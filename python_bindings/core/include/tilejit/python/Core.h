// The C++ core behind the `tilejit` Python package: what every part of it
// shares (errors, source locations, element types), the registered kernels and
// the bit-exact float conversions. The builder, the finished kernels, the
// runtime and the Mamba2 step have a header each beside this one. None of them
// includes an LLVM, MLIR or Python header: the pybind11 module compiles against
// these headers alone, so on a host without LLVM it is built against a
// prebuilt core library (python_bindings/gpu/build-module.sh).
#ifndef TILEJIT_PYTHON_CORE_H
#define TILEJIT_PYTHON_CORE_H

#include "tilejit/support/DType.h"

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace tilejit::python {

/// What kind of mistake an Error reports; the module maps each to a Python
/// exception class.
enum class ErrorKind { Build, Compile, Run, Argument, Device };

/// Every failure of the core: a message carrying the IR location(s) and the
/// numbers that disagree. The core never aborts the process.
class Error : public std::runtime_error {
public:
  Error(ErrorKind kind, const std::string &message)
      : std::runtime_error(message), errorKind(kind) {}
  /// Out of line: the type's identity lives in the core library, so an Error
  /// thrown there is caught as one in the module.
  ~Error() override;
  ErrorKind kind() const { return errorKind; }

private:
  ErrorKind errorKind;
};

/// A user's source position (a Python file and line): the location the IR
/// records for the ops a builder call creates.
struct Location {
  std::string file;
  unsigned line = 0;
  unsigned column = 0;
};

class KernelModule;

/// A compile-time constant of a registered kernel.
struct ConstantInfo {
  std::string name;
  int64_t defaultValue = 0;
  std::string help;
};

/// A kernel of the registry (the models' kernels and the examples).
struct RegisteredKernel {
  std::string name;
  std::string summary;
  std::vector<ConstantInfo> constants;
};

/// Every registered kernel, sorted by name.
std::vector<RegisteredKernel> registeredKernels();
/// Builds registered kernel `name` with its defaults overridden by `constants`.
/// Errors (ErrorKind::Argument): an unknown kernel or constant.
std::shared_ptr<KernelModule>
buildRegistered(const std::string &name, const std::map<std::string, int64_t> &constants);

/// The codes of the registered kernels' device-side checks (the error word's
/// OpError, tilejit/models/mamba2/OpChecks.h), by name.
std::map<std::string, int64_t> opErrorCodes();

/// Bit-exact conversions (tilejit/support/FloatFormats.h, round to nearest even).
void f32ToBF16(const float *in, uint16_t *out, size_t n);
void bf16ToF32(const uint16_t *in, float *out, size_t n);
void f32ToE4M3(const float *in, uint8_t *out, size_t n);
void e4m3ToF32(const uint8_t *in, float *out, size_t n);

} // namespace tilejit::python

#endif // TILEJIT_PYTHON_CORE_H
