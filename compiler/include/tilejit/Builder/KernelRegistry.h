// Registered kernels: named builder functions with compile-time constants that
// specialize them. The CLI lists, dumps and compiles them; the runtime keys
// its caches on the specialization.
#ifndef TILEJIT_BUILDER_KERNELREGISTRY_H
#define TILEJIT_BUILDER_KERNELREGISTRY_H

#include "tilejit/Builder/Builder.h"
#include "tilejit/support/WeightLayout.h"

#include <functional>
#include <map>

namespace tilejit {

/// The values a constant may take: [min, max], optionally powers of two
/// only. A kernel builds only from values in range, so its body may rely on
/// them (no zero divisor, no negative size, no loop unrolled 2^40 times).
struct ConstantRange {
  int64_t min = 1;
  int64_t max = 0; ///< below min: not declared, which KernelRegistry::add refuses
  bool powerOfTwo = false;

  static ConstantRange between(int64_t min, int64_t max) { return {min, max, false}; }
  static ConstantRange powersOfTwo(int64_t min, int64_t max) { return {min, max, true}; }
  /// 0 or 1.
  static ConstantRange flag() { return {0, 1, false}; }

  bool declared() const { return min <= max; }
  bool contains(int64_t value) const;
  /// "a power of two in [16, 4096]", "in [0, 1]".
  std::string describe() const;
};

/// A compile-time constant of a kernel (a tile size, a hidden width, ...).
struct KernelConstant {
  std::string name;
  int64_t defaultValue;
  std::string help;
  /// The values `tilejit tune` tries; empty for a constant that is not tuned
  /// (a shape). The default need not be listed: the tuner always tries it.
  std::vector<int64_t> candidates = {};
  ConstantRange range = {};

  bool isTunable() const { return !candidates.empty(); }
};

/// Constant values by name: a plan's geometry, a tuned configuration, a
/// caller's settings. Every layer passes constants in this typed form; their
/// text form is read only where text comes in (parseConstantSetting).
using ConstantValues = std::map<std::string, int64_t>;

/// One constant set by name; `kernel` names its kernel where the settings of
/// several kernels travel together (the CLI's `run --set`).
struct ConstantSetting {
  std::string kernel;
  std::string name;
  int64_t value = 0;
};

/// Parses the text form of one constant setting: "NAME=VALUE", or with
/// `namesKernel` "KERNEL.NAME=VALUE". The one reader of that form, for every
/// edge where it comes in (`tilejit --set`, the embedding API's session
/// settings); names and values may have spaces around them. Errors: "expected
/// name=value, got 'TEXT'" (or "expected KERNEL.CONSTANT=VALUE"), "constant
/// 'NAME' needs an integer, got 'VALUE'".
llvm::Expected<ConstantSetting> parseConstantSetting(llvm::StringRef text,
                                                     bool namesKernel = false);
/// The text form of `setting`, as parseConstantSetting reads it.
std::string formatConstantSetting(const ConstantSetting &setting);
/// "k1=v1,k2=v2" in name order: constants as messages show them.
std::string formatConstants(const ConstantValues &values);

/// The constants a kernel is built with.
class Specialization {
public:
  /// The value of `name`; asserts it was declared (a kernel bug, not a user one).
  int64_t get(llvm::StringRef name) const;
  void set(llvm::StringRef name, int64_t value) { values_[name.str()] = value; }
  const ConstantValues &values() const { return values_; }

private:
  ConstantValues values_;
};

/// Builds the kernel body into `k` for the given constants.
using KernelBuildFn = std::function<void(Kernel &k, const Specialization &spec)>;

/// A relation between constants that ranges cannot state ("block_k divides
/// hidden"), with the text an error quotes.
struct ConstantRule {
  std::string text;
  std::vector<std::string> names; ///< the constants it reads, named in errors
  std::function<bool(const Specialization &)> holds;
};

/// `divisor` divides `multiple` (e.g. a tile size and the dimension it tiles).
ConstantRule divides(llvm::StringRef divisor, llvm::StringRef multiple);
/// The product of `names` is at most `limit` (an i32 offset, an unrolled loop).
ConstantRule productAtMost(std::vector<std::string> names, int64_t limit,
                           llvm::StringRef why);
/// ceil(`dividend` / `divisor`) is at most `limit`: the steps of a loop the
/// builder unrolls.
ConstantRule quotientAtMost(llvm::StringRef dividend, llvm::StringRef divisor,
                            int64_t limit, llvm::StringRef why);

struct KernelDef {
  std::string name;
  std::string summary;
  std::vector<KernelConstant> constants;
  KernelBuildFn body;
  std::vector<ConstantRule> rules = {};
  /// The launch sizes its tuned configurations are bucketed by, as Triton's
  /// `autotune(key=...)`: `tilejit tune` records an entry under these values
  /// of the tuning problem's launch (each rounded up to a power of two), and a
  /// plan looks the kernel up with its own values of them ("rows" of a decode
  /// step, "tokens" of a prefill). Empty: the kernel is never looked up.
  std::vector<std::string> tuningKey = {};
  /// The packed layouts the kernel, built with a specialization, reads its
  /// weight parameters in (the weight slot packs each once at upload); null
  /// when every weight is read row-major.
  std::function<WeightLayouts(const Specialization &)> weightLayouts = nullptr;

  /// weightLayouts(spec), or none.
  WeightLayouts layoutsFor(const Specialization &spec) const {
    return weightLayouts ? weightLayouts(spec) : WeightLayouts{};
  }

  /// Defaults overridden by `overrides`, then checked: unknown names and
  /// values outside the constants' ranges or rules are errors naming the
  /// constant, its value and the rule.
  llvm::Expected<Specialization> specialize(const ConstantValues &overrides) const;
  /// Checks that `values` names constants of this kernel only: an unknown
  /// name is an error listing the ones it has.
  llvm::Error checkNames(const ConstantValues &values) const;
  /// Checks `spec` against the ranges and rules (what specialize does after
  /// reading the overrides; a tuner's candidates come here too).
  llvm::Error check(const Specialization &spec) const;
  /// Checks `spec`, then builds and verifies the kernel module.
  llvm::Expected<mlir::OwningOpRef<mlir::ModuleOp>>
  build(mlir::MLIRContext &ctx, const Specialization &spec) const;
};

/// The process-wide registry. Registration is explicit (no static
/// initializers), so a program sees exactly the kernel sets it registered.
class KernelRegistry {
public:
  static KernelRegistry &global();
  /// Adds a kernel; a second kernel of the same name is an error, and so is
  /// a constant without a declared range or whose default or candidates lie
  /// outside it or break a rule.
  llvm::Error add(KernelDef def);
  const KernelDef *find(llvm::StringRef name) const;
  /// All kernels, sorted by name.
  std::vector<const KernelDef *> all() const;

private:
  std::map<std::string, KernelDef, std::less<>> kernels_;
};

} // namespace tilejit

#endif // TILEJIT_BUILDER_KERNELREGISTRY_H
