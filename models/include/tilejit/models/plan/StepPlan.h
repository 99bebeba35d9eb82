// A model step as data: the kernel launches over named buffers that one step
// (a decode step, a prefill forward) runs. One plan serves every backend: the
// interpreter binds host buffers, the GPU binds device buffers and captures the
// launches in one CUDA graph (plan/Runners.h). Nothing here knows a model: the
// planners (nemotron_h/Planner.h) fill the plan, and every fact a runner or a
// check needs (a buffer's layer, the weight slot a kernel is specialized to,
// the bytes a launch moves) is a field, never parsed out of a name.
#ifndef TILEJIT_MODELS_PLAN_STEPPLAN_H
#define TILEJIT_MODELS_PLAN_STEPPLAN_H

#include "tilejit/Builder/KernelRegistry.h"
#include "tilejit/support/DType.h"
#include "tilejit/support/WeightLayout.h"

#include "llvm/ADT/ArrayRef.h"

#include <array>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace tilejit::models {

/// One kernel argument of a planned launch: a named buffer or a scalar.
struct PlanArg {
  enum class Kind { Buffer, Int, Float } kind;
  std::string buffer;
  int64_t intValue = 0;
  double floatValue = 0;
  /// A weight buffer: the layout the launch's kernel reads it in (its
  /// KernelDef::weightLayouts); the runners bind the weight packed so.
  WeightLayout layout = {};

  static PlanArg of(std::string name) { return {Kind::Buffer, std::move(name)}; }
  static PlanArg integer(int64_t v) { return {Kind::Int, {}, v}; }
  static PlanArg real(double v) { return {Kind::Float, {}, 0, v}; }
};

/// A launch of registered kernel `kernel` built with `spec`.
struct PlannedLaunch {
  std::string kernel;
  /// Every constant of the kernel, as the planner set them (planKernel): the
  /// runners build the kernel with exactly these.
  Specialization spec;
  std::array<int64_t, 3> grid;
  std::vector<PlanArg> args;
  int64_t layer = -1; ///< index in the whole model
  /// What the launch does in the model ("in_proj", "ssd", ...): one kernel
  /// may serve several roles (prefill's in_proj GEMM is the out_proj kernel).
  std::string role;
  /// How the planner tells launches of one kernel and role apart in timings
  /// ("fp8 layer"); empty when nothing does.
  std::string variant;
  /// The layer whose weight slot the kernel's module is specialized to (its
  /// weights are baked into the module's key); -1 for none.
  int64_t weightSlot = -1;
  /// The fewest bytes the launch must move through device memory (each input
  /// read once, each output written once), as its planner counts them: the
  /// terms of its floor.
  int64_t bytesRead = 0, bytesWritten = 0;
};

/// The name callers' tensors give a plan buffer's element type (bf16 as bits,
/// e4m3 as codes): the IR's name, but "e4m3" for f8e4m3.
llvm::StringRef tensorTypeName(DType type);

/// A buffer the plan uses: its size, what fills it, and the row-major tensor it
/// holds (shape times element width is `bytes`).
struct PlanBuffer {
  enum class Role {
    Weight,     ///< a layer parameter, uploaded once (a weight slot on the GPU)
    State,      ///< a paged state, carried from step to step
    Activation, ///< written and read within a step
    Input,      ///< the step's inputs (hidden rows, slots)
  } role;
  size_t bytes;
  DType type = DType::BF16;
  std::vector<int64_t> shape;
  /// The layer a weight or a page belongs to; -1 for buffers of the step.
  int64_t layer = -1;
  /// A weight's host bytes, borrowed from the weights the plan was made from
  /// (they must outlive the plan's runners); empty for other roles.
  llvm::ArrayRef<uint8_t> hostWeight;
};

/// Weight buffer `buffer` as the [rows, rowBytes] matrix a layout packs: its
/// last dimension is the row.
std::pair<int64_t, int64_t> weightMatrix(const PlanBuffer &buffer);

/// The host bytes of weight buffer `buffer` in `layout` (packWeight).
llvm::Expected<std::vector<uint8_t>> packPlanWeight(const PlanBuffer &buffer,
                                                    const WeightLayout &layout);

/// A caller's tensor handed to a step in place of a plan buffer: the element
/// type's name ("bf16", ... or whatever the caller's framework calls it), the
/// shape, the strides in elements (empty: row-major), where it lives
/// (`device` a CUDA ordinal, -1 the host) and its address.
struct TensorRef {
  std::string type;
  std::vector<int64_t> shape, strides;
  int device = -1;
  uint64_t address = 0;
};

/// One step over `numLayers` layers for `rows` rows and pages of `numSlots`
/// slots. Layer i reads activation "act<i>" and writes "act<i+1>"; "slots"
/// holds one i32 slot per row.
struct StepPlan {
  std::vector<PlannedLaunch> launches;
  std::map<std::string, PlanBuffer> buffers;
  int64_t rows = 0, numSlots = 0, numLayers = 0;

  /// Declares buffer `name` (its bytes from `type` and `shape`) and returns
  /// the argument that names it.
  PlanArg addBuffer(std::string name, PlanBuffer::Role role, DType type,
                    std::vector<int64_t> shape, int64_t layer = -1);
  /// A buffer that several launches share (an intermediate all layers use):
  /// the first call declares it as addBuffer does, a later one of the same
  /// type grows it to the larger shape, so it holds the largest use.
  PlanArg addSharedBuffer(std::string name, PlanBuffer::Role role, DType type,
                          std::vector<int64_t> shape, int64_t layer = -1);

  /// "l<layer>.<name>", the buffer of one layer's parameter or page.
  static std::string layerBuffer(int64_t layer, llvm::StringRef name);
  static std::string activation(int64_t index) { return "act" + std::to_string(index); }
  /// The bytes the whole step reads and writes (the sum over its launches).
  int64_t bytesMoved() const;
};

/// Checks `tensor`, called `what` in the caller's terms, against plan buffer
/// `buffer` before anything launches: element type, shape, row-major
/// contiguity (extent-1 dimensions may have any stride), a non-null address,
/// and that it lives on `device` (-1: the host). The error names the tensor,
/// the plan buffer and the numbers that disagree.
llvm::Error checkPlanTensor(const StepPlan &plan, llvm::StringRef buffer,
                            llvm::StringRef what, const TensorRef &tensor, int device);

/// Kernel `kernel` of `registry`; an unregistered kernel is an error naming it.
llvm::Expected<const KernelDef *> findPlanKernel(const KernelRegistry &registry,
                                                 llvm::StringRef kernel);

/// A registered kernel with its constants applied.
struct SpecializedKernel {
  const KernelDef *def;
  Specialization spec;
};

/// Looks `kernel` up in `registry` and applies `constants`; an unregistered
/// kernel or a bad constant is an error naming it.
llvm::Expected<SpecializedKernel> specializeKernel(const KernelRegistry &registry,
                                                   llvm::StringRef kernel,
                                                   const ConstantValues &constants);

/// The caller's constants of a plan's kernels, by kernel; empty means the
/// registered defaults (or the tuned values).
using KernelOverrides = std::map<std::string, ConstantValues>;

/// Tuned constants for `kernel` planned with `geometry`, e.g. from the tuning
/// database; empty for none. Consulted before the caller's overrides, which
/// win.
using TunedConstants =
    std::function<ConstantValues(llvm::StringRef kernel, const ConstantValues &geometry)>;

/// `kernel` specialized with `geometry`, then the tuned constants, then the
/// caller's overrides for it, checked against the kernel's ranges and rules:
/// the specialization a PlannedLaunch carries. A bad override fails the plan
/// with the kernel's message.
llvm::Expected<Specialization> planKernel(const KernelRegistry &registry,
                                          const KernelOverrides &overrides,
                                          llvm::StringRef kernel, ConstantValues geometry,
                                          const TunedConstants &tuned = nullptr);

} // namespace tilejit::models

#endif // TILEJIT_MODELS_PLAN_STEPPLAN_H
