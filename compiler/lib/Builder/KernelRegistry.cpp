// The registry of named kernels and their specialization by constants.
#include "tilejit/Builder/KernelRegistry.h"

#include <cassert>

namespace tilejit {

int64_t Specialization::get(llvm::StringRef name) const {
  auto it = values_.find(name.str());
  assert(it != values_.end() && "kernel reads a constant it did not declare");
  return it->second;
}

std::string Specialization::key() const {
  std::string out;
  for (const auto &[name, value] : values_)
    out += (out.empty() ? "" : ",") + name + "=" + std::to_string(value);
  return out;
}

llvm::Expected<Specialization>
KernelDef::specialize(llvm::ArrayRef<std::string> overrides) const {
  Specialization spec;
  for (const KernelConstant &c : constants)
    spec.set(c.name, c.defaultValue);
  auto known = [&] {
    std::string names;
    for (const KernelConstant &c : constants)
      names += (names.empty() ? "" : ", ") + c.name;
    return names.empty() ? std::string("none") : names;
  };
  for (const std::string &kv : overrides) {
    auto [key, text] = llvm::StringRef(kv).split('=');
    if (!llvm::StringRef(kv).contains('='))
      return llvm::createStringError("expected name=value, got '%s'", kv.c_str());
    if (!spec.values().count(key.str()))
      return llvm::createStringError("kernel '%s' has no constant '%s' (it has: %s)",
                                     name.c_str(), key.str().c_str(), known().c_str());
    int64_t value;
    if (text.getAsInteger(10, value))
      return llvm::createStringError("constant '%s' needs an integer, got '%s'",
                                     key.str().c_str(), text.str().c_str());
    spec.set(key, value);
  }
  return spec;
}

llvm::Expected<mlir::OwningOpRef<mlir::ModuleOp>>
KernelDef::build(mlir::MLIRContext &ctx, const Specialization &spec) const {
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
