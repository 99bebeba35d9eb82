// The registry of tuning problems and the constraints between tile constants and
// launch sizes.
#include "tilejit/Tuning/TuneProblem.h"

#include "llvm/Support/FormatVariadic.h"

namespace tilejit::tuning {

TuneProblemRegistry &TuneProblemRegistry::global() {
  static TuneProblemRegistry registry;
  return registry;
}

llvm::Error TuneProblemRegistry::add(TuneProblem problem) {
  std::string name = problem.kernel;
  if (!problems.emplace(name, std::move(problem)).second)
    return llvm::createStringError("a tuning problem for kernel '%s' is already registered",
                                   name.c_str());
  return llvm::Error::success();
}

const TuneProblem *TuneProblemRegistry::find(llvm::StringRef kernel) const {
  auto it = problems.find(kernel);
  return it == problems.end() ? nullptr : &it->second;
}

std::vector<std::string> TuneProblemRegistry::names() const {
  std::vector<std::string> out;
  for (const auto &entry : problems)
    out.push_back(entry.first);
  return out;
}

std::optional<int64_t> lookupValue(const Specialization &spec, const NamedValues &shape,
                                   llvm::StringRef name) {
  auto it = spec.values().find(name.str());
  if (it != spec.values().end())
    return it->second;
  auto dim = shape.find(name.str());
  if (dim != shape.end())
    return dim->second;
  return std::nullopt;
}

std::string checkShapeConstraints(const TuneProblem &problem, const Specialization &spec,
                                  const NamedValues &shape) {
  auto resolve = [&](const std::string &name, std::string &why) -> std::optional<int64_t> {
    std::optional<int64_t> value = lookupValue(spec, shape, name);
    if (!value && why.empty())
      why = llvm::formatv("the constraint names '{0}', which is neither a constant nor a "
                          "launch size",
                          name);
    return value;
  };
  std::string why;
  for (const auto &[tile, size] : problem.divides) {
    std::optional<int64_t> t = resolve(tile, why), s = resolve(size, why);
    if (!t || !s)
      return why;
    if (*t <= 0 || *s % *t != 0)
      return llvm::formatv("{0}={1} does not divide {2}={3}", tile, *t, size, *s);
  }
  for (const auto &[tile, size] : problem.covers) {
    std::optional<int64_t> t = resolve(tile, why), s = resolve(size, why);
    if (!t || !s)
      return why;
    if (*t < *s)
      return llvm::formatv("{0}={1} is less than {2}={3}", tile, *t, size, *s);
  }
  return {};
}

} // namespace tilejit::tuning
