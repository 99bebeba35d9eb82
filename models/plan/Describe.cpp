// A plan as text, one line per launch and per buffer.
#include "tilejit/models/plan/Describe.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

using namespace llvm;

namespace tilejit::models {

namespace {

const char *roleName(PlanBuffer::Role role) {
  switch (role) {
  case PlanBuffer::Role::Weight:
    return "weight";
  case PlanBuffer::Role::State:
    return "state";
  case PlanBuffer::Role::Activation:
    return "activation";
  case PlanBuffer::Role::Input:
    return "input";
  }
  return "?";
}

std::string describeArg(const PlanArg &arg) {
  switch (arg.kind) {
  case PlanArg::Kind::Buffer:
    return arg.buffer;
  case PlanArg::Kind::Int:
    return std::to_string(arg.intValue);
  case PlanArg::Kind::Float:
    return formatv("{0:e}", arg.floatValue);
  }
  return "?";
}

} // namespace

std::string describePlan(const StepPlan &plan) {
  std::string text;
  raw_string_ostream os(text);
  os << formatv("rows {0}, slots {1}, layers {2}\n", plan.rows, plan.numSlots,
                plan.numLayers);
  for (const PlannedLaunch &l : plan.launches) {
    SmallVector<std::string> args;
    for (const PlanArg &arg : l.args)
      args.push_back(describeArg(arg));
    os << formatv("launch {0} ({1}{2}{3}) layer {4} slot {5} grid [{6}, {7}, {8}] "
                  "constants [{9}] args ({10}) bytes {11} read {12} written\n",
                  l.kernel, l.role, l.variant.empty() ? "" : ", ", l.variant, l.layer,
                  l.weightSlot, l.grid[0], l.grid[1], l.grid[2],
                  formatConstants(l.spec.values()), join(args, ", "), l.bytesRead,
                  l.bytesWritten);
  }
  for (const auto &[name, buffer] : plan.buffers) {
    SmallVector<std::string> shape;
    for (int64_t d : buffer.shape)
      shape.push_back(std::to_string(d));
    os << formatv("buffer {0} {1} {2} [{3}] layer {4}\n", name, roleName(buffer.role),
                  tensorTypeName(buffer.type), join(shape, ", "), buffer.layer);
  }
  return text;
}

} // namespace tilejit::models
