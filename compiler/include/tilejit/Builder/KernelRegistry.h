// Registered kernels: named builder functions with compile-time constants that
// specialize them. The CLI lists, dumps and compiles them; the runtime keys
// its caches on the specialization.
#ifndef TILEJIT_BUILDER_KERNELREGISTRY_H
#define TILEJIT_BUILDER_KERNELREGISTRY_H

#include "tilejit/Builder/Builder.h"

#include <functional>
#include <map>

namespace tilejit {

/// A compile-time constant of a kernel (a tile size, a hidden width, ...).
struct KernelConstant {
  std::string name;
  int64_t defaultValue;
  std::string help;
  /// The values `tilejit tune` tries; empty for a constant that is not tuned
  /// (a shape). The default need not be listed: the tuner always tries it.
  std::vector<int64_t> candidates = {};

  bool isTunable() const { return !candidates.empty(); }
};

/// The constants a kernel is built with.
class Specialization {
public:
  /// The value of `name`; asserts it was declared (a kernel bug, not a user one).
  int64_t get(llvm::StringRef name) const;
  void set(llvm::StringRef name, int64_t value) { values_[name.str()] = value; }
  const std::map<std::string, int64_t> &values() const { return values_; }
  /// "k1=v1,k2=v2" in name order: part of the cache key.
  std::string key() const;

private:
  std::map<std::string, int64_t> values_;
};

/// Builds the kernel body into `k` for the given constants.
using KernelBuildFn = std::function<void(Kernel &k, const Specialization &spec)>;

struct KernelDef {
  std::string name;
  std::string summary;
  std::vector<KernelConstant> constants;
  KernelBuildFn body;

  /// Defaults overridden by "name=value" strings; unknown names and values
  /// that are not integers are errors listing what is accepted.
  llvm::Expected<Specialization> specialize(llvm::ArrayRef<std::string> overrides) const;
  /// Builds and verifies the kernel module.
  llvm::Expected<mlir::OwningOpRef<mlir::ModuleOp>>
  build(mlir::MLIRContext &ctx, const Specialization &spec) const;
};

/// The process-wide registry. Registration is explicit (no static
/// initializers), so a program sees exactly the kernel sets it registered.
class KernelRegistry {
public:
  static KernelRegistry &global();
  /// Adds a kernel; a second kernel of the same name is an error.
  llvm::Error add(KernelDef def);
  const KernelDef *find(llvm::StringRef name) const;
  /// All kernels, sorted by name.
  std::vector<const KernelDef *> all() const;

private:
  std::map<std::string, KernelDef, std::less<>> kernels_;
};

} // namespace tilejit

#endif // TILEJIT_BUILDER_KERNELREGISTRY_H
