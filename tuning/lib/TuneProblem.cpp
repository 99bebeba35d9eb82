// The registry of tuning problems, the instances `tilejit tune` measures, and the
// constraints between tile constants and launch sizes.
#include "tilejit/tuning/TuneProblem.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MathExtras.h"

namespace tilejit::tuning {

TuneProblemRegistry &TuneProblemRegistry::global() {
  static TuneProblemRegistry registry;
  return registry;
}

llvm::Error TuneProblemRegistry::add(TuneProblem problem) {
  std::string name = problem.kernel;
  if (!problems.emplace(name, std::move(problem)).second)
    return llvm::createStringError(
        "a tuning problem for kernel '%s' is already registered", name.c_str());
  return llvm::Error::success();
}

llvm::Error TuneProblemRegistry::addAll(std::vector<TuneProblem> all) {
  for (TuneProblem &problem : all)
    if (llvm::Error err = add(std::move(problem)))
      return err;
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

llvm::Expected<TuneTarget> makeTuneTarget(const KernelRegistry &kernels,
                                          const TuneProblemRegistry &problems,
                                          llvm::StringRef kernel,
                                          const NamedValues &constants,
                                          const NamedValues &shape) {
  TuneTarget target;
  target.def = kernels.find(kernel);
  if (!target.def)
    return llvm::createStringError("unknown kernel '%s' (see 'tilejit list')",
                                   kernel.str().c_str());
  if (llvm::none_of(target.def->constants, [](auto &c) { return c.isTunable(); }))
    return llvm::createStringError(
        "kernel '%s' has no tunable constant (no candidate lists)", kernel.str().c_str());
  target.problem = problems.find(kernel);
  if (!target.problem) {
    std::string known = llvm::join(problems.names(), ", ");
    return llvm::createStringError("kernel '%s' has no tuning problem (launch sizes and "
                                   "arguments); kernels with one: %s",
                                   kernel.str().c_str(), known.c_str());
  }
  // The tuner records each entry under the launch sizes the kernel declares
  // it is tuned by, and plans look it up by those: a problem measuring at
  // other sizes would record entries no plan finds.
  std::vector<std::string> axes;
  for (const auto &entry : target.problem->shape)
    axes.push_back(entry.first);
  std::vector<std::string> key = target.def->tuningKey;
  llvm::sort(key);
  if (axes != key)
    return llvm::createStringError(
        "kernel '%s' is tuned by launch sizes (%s), but its tuning problem has (%s)",
        kernel.str().c_str(), llvm::join(key, ", ").c_str(),
        llvm::join(axes, ", ").c_str());
  llvm::Expected<Specialization> base = target.def->specialize(constants);
  if (!base)
    return base.takeError();
  target.base = std::move(*base);
  target.shape = target.problem->shape;
  for (const auto &[name, value] : shape) {
    if (!target.shape.count(name))
      return llvm::createStringError("kernel '%s' has no launch size '%s' (it has: %s)",
                                     kernel.str().c_str(), name.c_str(),
                                     formatNamedValues(target.problem->shape).c_str());
    // Every kernel takes its sizes as i32 arguments, and the harness sizes
    // host buffers from them: a size outside [1, 2^31) would reach the
    // kernel truncated or make a negative allocation.
    if (value < 1 || !llvm::isInt<32>(value))
      return llvm::createStringError(
          llvm::formatv("kernel '{0}': launch size '{1}' is {2}; it must be in [1, {3}] "
                        "(kernels take their sizes as i32)",
                        kernel, name, value, INT32_MAX));
    target.shape[name] = value;
  }
  return target;
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
  auto resolve = [&](const std::string &name,
                     std::string &why) -> std::optional<int64_t> {
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
