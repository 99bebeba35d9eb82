// A StepPlan on the CPU interpreter: host buffers by name, each kernel
// specialization built and translated once.
#include "tilejit/Interpreter/Interpreter.h"
#include "tilejit/Pipeline/Pipeline.h"
#include "tilejit/models/plan/Runners.h"
#include "tilejit/models/reference/HostTensor.h"

#include "mlir/IR/MLIRContext.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <set>

namespace tilejit::models {

HostBuffers allocateHostBuffers(const StepPlan &plan) {
  HostBuffers buffers;
  for (const auto &[name, buffer] : plan.buffers)
    if (buffer.role != PlanBuffer::Role::Weight)
      buffers[name].assign(buffer.bytes, 0);
  return buffers;
}

HostBuffers randomStepBuffers(const StepPlan &plan, llvm::ArrayRef<int32_t> slots,
                              uint64_t seed, bool randomPages) {
  HostBuffers buffers = allocateHostBuffers(plan);
  Rng rng(seed);
  for (auto &[name, bytes] : buffers) {
    const PlanBuffer &buffer = plan.buffers.at(name);
    const int64_t elements = int64_t(bytes.size() / dtypeBytes(buffer.type));
    if (name == StepPlan::activation(0)) {
      bytes = bytesOf(randomBF16({elements}, rng, -2, 2).data);
    } else if (buffer.role == PlanBuffer::Role::State && randomPages) {
      bytes = buffer.type == DType::F32
                  ? bytesOf(randomF32({elements}, rng, -1, 1).data)
                  : bytesOf(randomBF16({elements}, rng, -1, 1).data);
    }
  }
  if (!slots.empty())
    buffers["slots"] = bytesOf(std::vector<int32_t>(slots.begin(), slots.end()));
  return buffers;
}

llvm::Error checkSlots(llvm::ArrayRef<int32_t> slots, int64_t numSlots) {
  std::set<int32_t> seen;
  for (size_t row = 0; row < slots.size(); ++row) {
    int32_t slot = slots[row];
    if (slot < 0)
      continue;
    if (slot >= numSlots)
      return llvm::createStringError(
          llvm::formatv("step: row {0} uses slot {1}, but the pages hold {2} slots", row,
                        slot, numSlots));
    if (!seen.insert(slot).second)
      return llvm::createStringError(llvm::formatv(
          "step: slot {0} appears twice in one batch (row {1}); each sequence owns its "
          "slot, so duplicate rows would race on its state",
          slot, row));
  }
  return llvm::Error::success();
}

struct InterpreterRunner::Impl {
  const KernelRegistry &registry;
  mlir::MLIRContext ctx;
  /// By kernel and constants.
  std::map<std::pair<std::string, ConstantValues>, interp::CompiledKernel> kernels;
  /// Weights a kernel reads packed, by buffer and layout: packed once, by the
  /// same function the GPU's weight slots use.
  std::map<std::pair<std::string, WeightLayout>, std::vector<uint8_t>> packedWeights;

  /// The host bytes weight argument `arg` binds.
  llvm::Expected<llvm::ArrayRef<uint8_t>> weightBytes(const StepPlan &plan,
                                                      const PlanArg &arg) {
    const PlanBuffer &buffer = plan.buffers.at(arg.buffer);
    if (!arg.layout.packed())
      return buffer.hostWeight;
    auto key = std::make_pair(arg.buffer, arg.layout);
    auto it = packedWeights.find(key);
    if (it == packedWeights.end()) {
      auto packed = packPlanWeight(buffer, arg.layout);
      if (!packed)
        return packed.takeError();
      it = packedWeights.emplace(key, std::move(*packed)).first;
    }
    return llvm::ArrayRef<uint8_t>(it->second);
  }

  /// Runs `launch` over `buffers` (checked by the caller).
  llvm::Error run(const StepPlan &plan, const PlannedLaunch &launch,
                  HostBuffers &buffers);

  explicit Impl(const KernelRegistry &registry) : registry(registry) {
    mlir::DialectRegistry dialects;
    registerCompilerDialects(dialects);
    ctx.appendDialectRegistry(dialects);
    ctx.loadAllAvailableDialects();
  }

  llvm::Expected<const interp::CompiledKernel *> kernel(const PlannedLaunch &launch) {
    std::pair<std::string, ConstantValues> key{launch.kernel, launch.spec.values()};
    auto it = kernels.find(key);
    if (it != kernels.end())
      return &it->second;
    auto def = findPlanKernel(registry, launch.kernel);
    if (!def)
      return def.takeError();
    auto module = (*def)->build(ctx, launch.spec);
    if (!module)
      return module.takeError();
    auto compiled =
        interp::CompiledKernel::compile(*(*module)->getOps<tile::KernelOp>().begin());
    if (!compiled)
      return compiled.takeError();
    return &kernels.emplace(key, std::move(*compiled)).first->second;
  }
};

InterpreterRunner::InterpreterRunner(const KernelRegistry &registry)
    : impl(std::make_unique<Impl>(registry)) {}
InterpreterRunner::~InterpreterRunner() = default;

/// Every host buffer a launch binds exists at the plan's size, and the slots
/// are a valid batch: checked before anything runs.
static llvm::Error checkHostBuffers(const StepPlan &plan, const HostBuffers &buffers) {
  for (const PlannedLaunch &launch : plan.launches)
    for (const PlanArg &arg : launch.args) {
      if (arg.kind != PlanArg::Kind::Buffer ||
          plan.buffers.at(arg.buffer).role == PlanBuffer::Role::Weight)
        continue;
      auto it = buffers.find(arg.buffer);
      if (it == buffers.end())
        return llvm::createStringError("plan: no host buffer '" + arg.buffer + "'");
      if (it->second.size() != plan.buffers.at(arg.buffer).bytes)
        return llvm::createStringError(llvm::formatv(
            "plan: buffer '{0}' has {1} bytes, the plan expects {2}", arg.buffer,
            it->second.size(), plan.buffers.at(arg.buffer).bytes));
    }
  auto slots = buffers.find("slots");
  if (slots == buffers.end())
    return llvm::createStringError("plan: no 'slots' buffer");
  if (slots->second.size() != size_t(plan.rows) * sizeof(int32_t))
    return llvm::createStringError(
        llvm::formatv("plan: buffer 'slots' has {0} bytes, the plan expects {1}",
                      slots->second.size(), plan.rows * sizeof(int32_t)));
  return checkSlots(
      {reinterpret_cast<const int32_t *>(slots->second.data()), size_t(plan.rows)},
      plan.numSlots);
}

llvm::Error InterpreterRunner::run(const StepPlan &plan, HostBuffers &buffers) {
  if (auto err = checkHostBuffers(plan, buffers))
    return err;
  for (size_t i = 0; i < plan.launches.size(); ++i)
    if (auto err = impl->run(plan, plan.launches[i], buffers))
      return err;
  return llvm::Error::success();
}

llvm::Error InterpreterRunner::runLaunch(const StepPlan &plan, size_t index,
                                         HostBuffers &buffers) {
  if (index >= plan.launches.size())
    return llvm::createStringError(
        llvm::formatv("plan: launch {0} of {1}", index, plan.launches.size()));
  if (auto err = checkHostBuffers(plan, buffers))
    return err;
  return impl->run(plan, plan.launches[index], buffers);
}

llvm::Error InterpreterRunner::Impl::run(const StepPlan &plan,
                                         const PlannedLaunch &launch,
                                         HostBuffers &buffers) {
  auto kernel = this->kernel(launch);
  if (!kernel)
    return kernel.takeError();
  std::vector<interp::Arg> args;
  for (const PlanArg &arg : launch.args) {
    switch (arg.kind) {
    case PlanArg::Kind::Int:
      args.push_back(interp::Arg::intScalar(arg.intValue));
      break;
    case PlanArg::Kind::Float:
      args.push_back(interp::Arg::floatScalar(arg.floatValue));
      break;
    case PlanArg::Kind::Buffer:
      if (plan.buffers.at(arg.buffer).role == PlanBuffer::Role::Weight) {
        auto bytes = weightBytes(plan, arg);
        if (!bytes)
          return bytes.takeError();
        args.push_back(interp::Arg::readOnlyBuffer(*bytes));
      } else {
        args.push_back(interp::Arg::buffer(buffers.at(arg.buffer)));
      }
    }
  }
  if (auto err = (*kernel)->run(launch.grid, args))
    return llvm::createStringError(llvm::formatv("layer {0} {1}: {2}", launch.layer,
                                                 launch.kernel,
                                                 llvm::toString(std::move(err))));
  return llvm::Error::success();
}

} // namespace tilejit::models
