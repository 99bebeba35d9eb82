// The registry of named kernels and their specialization by constants.
#include "tilejit/Builder/KernelRegistry.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CheckedArithmetic.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MathExtras.h"

#include <cassert>

namespace tilejit {

bool ConstantRange::contains(int64_t value) const {
  return value >= min && value <= max && (!powerOfTwo || llvm::isPowerOf2_64(value));
}

std::string ConstantRange::describe() const {
  return llvm::formatv("{0}in [{1}, {2}]", powerOfTwo ? "a power of two " : "", min, max);
}

namespace {

/// The values of `names` in `spec`, "a = 1, b = 2".
std::string valuesOf(const Specialization &spec, llvm::ArrayRef<std::string> names) {
  std::string out;
  for (const std::string &n : names) {
    auto it = spec.values().find(n);
    out += (out.empty() ? "" : ", ") + n + " = " +
           (it == spec.values().end() ? std::string("?") : std::to_string(it->second));
  }
  return out;
}

int64_t valueOf(const Specialization &s, llvm::StringRef name) {
  auto it = s.values().find(name.str());
  return it == s.values().end() ? 0 : it->second;
}

} // namespace

ConstantRule divides(llvm::StringRef divisor, llvm::StringRef multiple) {
  return {(divisor + " divides " + multiple).str(),
          {divisor.str(), multiple.str()},
          [d = divisor.str(), m = multiple.str()](const Specialization &s) {
            // A positive divisor only: INT64_MIN % -1 would overflow.
            int64_t by = valueOf(s, d);
            return by > 0 && valueOf(s, m) % by == 0;
          }};
}

ConstantRule productAtMost(std::vector<std::string> names, int64_t limit,
                           llvm::StringRef why) {
  std::string text =
      llvm::join(names, " * ") + " <= " + std::to_string(limit) + " (" + why.str() + ")";
  return {text, names, [names, limit](const Specialization &s) {
            std::optional<int64_t> product = 1;
            for (const std::string &n : names)
              if (!(product = llvm::checkedMul(*product, valueOf(s, n))))
                return false;
            return *product <= limit;
          }};
}

ConstantRule quotientAtMost(llvm::StringRef dividend, llvm::StringRef divisor,
                            int64_t limit, llvm::StringRef why) {
  return {llvm::formatv("{0} / {1} <= {2} ({3})", dividend, divisor, limit, why).str(),
          {dividend.str(), divisor.str()},
          [a = dividend.str(), b = divisor.str(), limit](const Specialization &s) {
            int64_t by = valueOf(s, b);
            return by > 0 && llvm::divideCeil(uint64_t(valueOf(s, a)), uint64_t(by)) <=
                                 uint64_t(limit);
          }};
}

int64_t Specialization::get(llvm::StringRef name) const {
  auto it = values_.find(name.str());
  assert(it != values_.end() && "kernel reads a constant it did not declare");
  return it->second;
}

llvm::Expected<ConstantSetting> parseConstantSetting(llvm::StringRef text,
                                                     bool namesKernel) {
  ConstantSetting setting;
  llvm::StringRef assignment = text;
  if (namesKernel) {
    auto [kernel, rest] = text.split('.');
    if (rest.empty() || !rest.contains('='))
      return llvm::createStringError("expected KERNEL.CONSTANT=VALUE");
    setting.kernel = kernel.trim().str();
    assignment = rest;
  } else if (!text.contains('=')) {
    return llvm::createStringError("expected name=value, got '%s'", text.str().c_str());
  }
  auto [name, value] = assignment.split('=');
  setting.name = name.trim().str();
  if (value.trim().getAsInteger(10, setting.value))
    return llvm::createStringError("constant '%s' needs an integer, got '%s'",
                                   setting.name.c_str(), value.trim().str().c_str());
  return setting;
}

std::string formatConstantSetting(const ConstantSetting &setting) {
  return (setting.kernel.empty() ? "" : setting.kernel + ".") +
         formatConstants({{setting.name, setting.value}});
}

std::string formatConstants(const ConstantValues &values) {
  std::string out;
  for (const auto &[name, value] : values)
    out += (out.empty() ? "" : ",") + name + "=" + std::to_string(value);
  return out;
}

llvm::Error KernelDef::checkNames(const ConstantValues &values) const {
  for (const auto &entry : values) {
    const std::string &key = entry.first;
    if (llvm::any_of(constants, [&](const KernelConstant &c) { return c.name == key; }))
      continue;
    std::string known;
    for (const KernelConstant &c : constants)
      known += (known.empty() ? "" : ", ") + c.name;
    return llvm::createStringError("kernel '%s' has no constant '%s' (it has: %s)",
                                   name.c_str(), key.c_str(),
                                   known.empty() ? "none" : known.c_str());
  }
  return llvm::Error::success();
}

llvm::Expected<Specialization>
KernelDef::specialize(const ConstantValues &overrides) const {
  if (llvm::Error err = checkNames(overrides))
    return std::move(err);
  Specialization spec;
  for (const KernelConstant &c : constants)
    spec.set(c.name, c.defaultValue);
  for (const auto &[key, value] : overrides)
    spec.set(key, value);
  if (llvm::Error err = check(spec))
    return std::move(err);
  return spec;
}

llvm::Error KernelDef::check(const Specialization &spec) const {
  for (const KernelConstant &c : constants) {
    auto it = spec.values().find(c.name);
    if (it == spec.values().end())
      return llvm::createStringError("kernel '%s': constant '%s' has no value",
                                     name.c_str(), c.name.c_str());
    if (c.range.declared() && !c.range.contains(it->second))
      return llvm::createStringError("kernel '%s': constant '%s' is %lld; it must be %s",
                                     name.c_str(), c.name.c_str(), (long long)it->second,
                                     c.range.describe().c_str());
  }
  for (const ConstantRule &rule : rules)
    if (!rule.holds(spec))
      return llvm::createStringError("kernel '%s': %s breaks the rule %s", name.c_str(),
                                     valuesOf(spec, rule.names).c_str(),
                                     rule.text.c_str());
  return llvm::Error::success();
}

llvm::Expected<mlir::OwningOpRef<mlir::ModuleOp>>
KernelDef::build(mlir::MLIRContext &ctx, const Specialization &spec) const {
  if (llvm::Error err = check(spec))
    return std::move(err);
  Kernel k(ctx, name);
  body(k, spec);
  return k.finish();
}

KernelRegistry &KernelRegistry::global() {
  static KernelRegistry registry;
  return registry;
}

llvm::Error KernelRegistry::add(KernelDef def) {
  if (kernels_.count(def.name))
    return llvm::createStringError("kernel '%s' is registered twice", def.name.c_str());
  // A registration mistake, reported as an error so that the tests of every
  // kernel set catch it.
  Specialization defaults;
  for (const KernelConstant &c : def.constants) {
    if (!c.range.declared())
      return llvm::createStringError("kernel '%s': constant '%s' declares no range",
                                     def.name.c_str(), c.name.c_str());
    for (int64_t v : c.candidates)
      if (!c.range.contains(v))
        return llvm::createStringError(
            "kernel '%s': candidate %lld of constant '%s' is not %s", def.name.c_str(),
            (long long)v, c.name.c_str(), c.range.describe().c_str());
    defaults.set(c.name, c.defaultValue);
  }
  if (llvm::Error err = def.check(defaults))
    return llvm::createStringError("kernel '%s': its defaults are invalid: %s",
                                   def.name.c_str(),
                                   llvm::toString(std::move(err)).c_str());
  std::string key = def.name;
  kernels_.emplace(std::move(key), std::move(def));
  return llvm::Error::success();
}

const KernelDef *KernelRegistry::find(llvm::StringRef name) const {
  auto it = kernels_.find(name);
  return it == kernels_.end() ? nullptr : &it->second;
}

std::vector<const KernelDef *> KernelRegistry::all() const {
  std::vector<const KernelDef *> out;
  for (const auto &[name, def] : kernels_)
    out.push_back(&def);
  return out;
}

} // namespace tilejit
