// Plan checks (plan/Validate.h), run by every planner when it builds a plan.
#include "tilejit/models/plan/Validate.h"
#include "tilejit/models/reference/HostTensor.h"
#include "tilejit/support/HostMemory.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MathExtras.h"

#include <set>

namespace tilejit::models {
namespace {

/// CUDA's grid limits (x, y, z).
constexpr int64_t kMaxGrid[3] = {(int64_t(1) << 31) - 1, 65535, 65535};

std::string launchName(const StepPlan &plan, size_t i) {
  const PlannedLaunch &l = plan.launches[i];
  return llvm::formatv("launch {0} ({1} of layer {2})", i, l.kernel, l.layer).str();
}

} // namespace

llvm::Error validatePlan(const StepPlan &plan, const KernelOverrides &overrides,
                         uint64_t hostBytes, unsigned referenceCopies) {
  // Sizes first: a plan too large for the host says what it would need
  // before anything about its launches.
  uint64_t host = 0;
  const std::pair<const std::string, PlanBuffer> *largest = nullptr;
  for (const auto &entry : plan.buffers) {
    const auto &[name, buffer] = entry;
    uint64_t bytes = dtypeBytes(buffer.type);
    for (int64_t d : buffer.shape)
      if (d < 0 || __builtin_mul_overflow(bytes, uint64_t(d), &bytes))
        return llvm::createStringError("plan: buffer '" + name + "' of shape " +
                                       formatShape(buffer.shape) +
                                       " has no representable size");
    if (bytes != buffer.bytes)
      return llvm::createStringError(llvm::formatv(
          "plan: buffer '{0}' holds {1} bytes, its shape {2} of {3} needs {4}", name,
          buffer.bytes, formatShape(buffer.shape), tensorTypeName(buffer.type), bytes));
    if (buffer.role == PlanBuffer::Role::Weight)
      continue;
    if (__builtin_add_overflow(host, bytes, &host))
      host = UINT64_MAX;
    if (!largest || bytes > largest->second.bytes)
      largest = &entry;
  }
  uint64_t needed = host;
  if (__builtin_mul_overflow(host, uint64_t(1) + referenceCopies, &needed))
    needed = UINT64_MAX;
  if (needed > hostBytes)
    return llvm::createStringError(llvm::formatv(
        "plan: its buffers need {0} of host memory (the largest, '{1}' {2}, {3}){4}, "
        "more than the {5} available: use fewer rows or tokens",
        support::formatBytes(host), largest->first, formatShape(largest->second.shape),
        support::formatBytes(largest->second.bytes),
        referenceCopies ? llvm::formatv(", and the check's f64 reference about {0} times "
                                        "as much ({1} in all)",
                                        referenceCopies, support::formatBytes(needed))
                              .str()
                        : std::string(),
        support::formatBytes(hostBytes)));
  for (size_t i = 0; i < plan.launches.size(); ++i) {
    const PlannedLaunch &launch = plan.launches[i];
    for (int axis = 0; axis < 3; ++axis) {
      const int64_t n = launch.grid[axis];
      if (n < 1)
        return llvm::createStringError(llvm::formatv(
            "plan: {0} has an empty grid [{1}, {2}, {3}]: its work would never run",
            launchName(plan, i), launch.grid[0], launch.grid[1], launch.grid[2]));
      if (n > kMaxGrid[axis])
        return llvm::createStringError(llvm::formatv(
            "plan: {0} needs {1} programs along grid axis {2}, over CUDA's limit of {3}",
            launchName(plan, i), n, "xyz"[axis], kMaxGrid[axis]));
    }
    for (auto [j, arg] : llvm::enumerate(launch.args)) {
      // Every integer parameter of the model's kernels is i32 (rows, tokens,
      // slots, chunks); the runners pass it as one, so a wider count would
      // reach the kernel truncated.
      if (arg.kind == PlanArg::Kind::Int && !llvm::isInt<32>(arg.intValue))
        return llvm::createStringError(llvm::formatv(
            "plan: {0} passes {1} as argument {2}, which does not fit the kernel's i32",
            launchName(plan, i), arg.intValue, j));
      if (arg.kind == PlanArg::Kind::Buffer && !plan.buffers.count(arg.buffer))
        return llvm::createStringError("plan: " + launchName(plan, i) +
                                       " reads buffer '" + arg.buffer +
                                       "', which the plan does not declare");
    }
  }
  std::set<std::string> launched;
  for (const PlannedLaunch &launch : plan.launches)
    launched.insert(launch.kernel);
  for (const auto &[kernel, values] : overrides)
    if (!launched.count(kernel) && !values.empty())
      return llvm::createStringError(
          "plan: --set " +
          formatConstantSetting({kernel, values.begin()->first, values.begin()->second}) +
          ": the plan launches no '" + kernel + "' (it launches " +
          llvm::join(launched, ", ") + ")");
  return llvm::Error::success();
}

llvm::Error validatePlan(const StepPlan &plan, const KernelOverrides &overrides,
                         unsigned referenceCopies) {
  return validatePlan(plan, overrides, support::allocatableMemoryBytes(),
                      referenceCopies);
}

llvm::Expected<KernelOverrides>
parseKernelSettings(const KernelRegistry &registry, llvm::ArrayRef<std::string> settings,
                    llvm::function_ref<std::string(llvm::StringRef)> quote) {
  KernelOverrides overrides;
  for (const std::string &text : settings) {
    auto fail = [&](const llvm::Twine &problem) {
      return llvm::createStringError(quote(text) + ": " + problem);
    };
    auto setting = parseConstantSetting(text, /*namesKernel=*/true);
    if (!setting)
      return fail(llvm::toString(setting.takeError()));
    const KernelDef *def = registry.find(setting->kernel);
    if (!def) {
      std::vector<std::string> names;
      for (const KernelDef *d : registry.all())
        names.push_back(d->name);
      return fail("no kernel '" + setting->kernel +
                  "' is registered (kernels: " + llvm::join(names, ", ") + ")");
    }
    // Ranges wait for the plan's geometry.
    if (llvm::Error err = def->checkNames({{setting->name, setting->value}}))
      return fail(llvm::toString(std::move(err)));
    overrides[setting->kernel][setting->name] = setting->value;
  }
  return overrides;
}

} // namespace tilejit::models
