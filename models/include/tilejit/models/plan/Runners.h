// Running a StepPlan: on the CPU interpreter over host buffers, or on the GPU
// through the JIT runtime (weights in weight slots, the step captured as one
// CUDA graph). Both take the same plan, so CI's interpreter run and the H200 run
// execute the same launches.
#ifndef TILEJIT_MODELS_PLAN_RUNNERS_H
#define TILEJIT_MODELS_PLAN_RUNNERS_H

#include "tilejit/models/plan/StepPlan.h"
#include "tilejit/runtime/CompilerInterface.h"
#include "tilejit/runtime/DeviceApi.h"
#include "tilejit/runtime/WeightSlot.h"
#include "tilejit/tuning/TuneDb.h"

#include <memory>

namespace tilejit::runtime {
class JitRuntime;
} // namespace tilejit::runtime

namespace tilejit::models {

/// The bytes of every non-weight buffer of a plan, by name.
using HostBuffers = std::map<std::string, std::vector<uint8_t>>;

/// Zeroed host buffers for every non-weight buffer of `plan`.
HostBuffers allocateHostBuffers(const StepPlan &plan);

/// Host buffers for one step of `plan`: the step's hidden input ("act0")
/// random bf16 in [-2, 2], the pages random in [-1, 1] when `randomPages`
/// (else zero), `slots` in "slots" when given, everything else zero.
HostBuffers randomStepBuffers(const StepPlan &plan, llvm::ArrayRef<int32_t> slots,
                              uint64_t seed, bool randomPages = true);

/// Checks a batch's slots before anything launches: negative is padding,
/// others below `numSlots` and pairwise distinct (docs/numerics.md#r8-paged-state).
llvm::Error checkSlots(llvm::ArrayRef<int32_t> slots, int64_t numSlots);

/// Runs plans on the interpreter; each kernel specialization is built once.
/// Its sums are exact (f32, in the kernel's order).
class InterpreterRunner {
public:
  explicit InterpreterRunner(const KernelRegistry &registry);
  ~InterpreterRunner();

  /// Runs every launch of `plan` in order over `buffers` (states updated in
  /// place) and the plan's weights. The slots are checked first.
  llvm::Error run(const StepPlan &plan, HostBuffers &buffers);
  /// Runs launch `index` of `plan` alone over `buffers` (checked as run does).
  llvm::Error runLaunch(const StepPlan &plan, size_t index, HostBuffers &buffers);

private:
  struct Impl;
  std::unique_ptr<Impl> impl;
};

/// Times of whole-step graph replays.
struct StepTimes {
  double stepUs = 0; ///< one replay of the whole step, median
  double stepMinUs = 0, stepMaxUs = 0;
  int replays = 0;
};

/// Device memory that GpuRunners of one model can share: a weight slot per
/// layer, each weight uploaded by the first runner that needs it, and the
/// pages (the plans' State buffers), so a prefill and a decode runner over the
/// same layers hold one copy of the weights and carry the same sequences.
/// Runners that share it must be planned from the same weights and page
/// geometry (a size that disagrees is an error). Each runner keeps it alive;
/// it must not outlive its JitRuntime.
struct GpuSharedState {
  std::map<int64_t, std::unique_ptr<runtime::WeightSlot>> slots; ///< by layer
  std::map<std::string, runtime::DeviceBuffer> pages;            ///< by buffer name
};

/// Runs plans on the GPU: weights uploaded once into one weight slot per
/// layer, projection kernels specialized to their layer's slot, every kernel
/// compiled (in parallel) and loaded before the step is captured as a graph.
class GpuRunner {
public:
  /// Uploads the plan's weights and compiles every kernel of `plan`. With
  /// `shared`, weights and pages already there are used, the others are
  /// added to it; without, the runner keeps its own.
  static llvm::Expected<std::unique_ptr<GpuRunner>>
  create(runtime::JitRuntime &jit, const KernelRegistry &registry, const StepPlan &plan,
         llvm::raw_ostream &log, std::shared_ptr<GpuSharedState> shared = nullptr);
  ~GpuRunner();

  /// Copies the non-weight buffers in `buffers` to the device (states too).
  llvm::Error upload(const HostBuffers &buffers);
  /// Copies every non-weight buffer back into `buffers`.
  llvm::Error download(HostBuffers &buffers);
  /// Replays the captured step once (after checking the uploaded slots).
  llvm::Error step();
  /// Launches plan launch `index` alone (outside the graph) and waits.
  llvm::Error runLaunch(size_t index);
  /// How launch `index`'s compiled kernel adds its products.
  runtime::SumPrecision launchSums(size_t index) const;
  /// One step on caller-owned device memory, on the caller's `stream`. First
  /// checks `hidden` and `out` against the plan's input ("act0") and output
  /// (the last activation) with checkPlanTensor, on this runner's device,
  /// and the slots with checkSlots; a refused step changes nothing.
  /// Then, in stream order: uploads the slots only when they differ from the
  /// ones on the device, copies `hidden` into the graph's input buffer (device
  /// to device), replays the captured graph and copies its output into `out`.
  /// Returns without waiting; with unchanged slots nothing passes through the
  /// host. The graph keeps its own buffers, so one captured graph serves any
  /// caller's tensors. Steps share the pages: the caller orders steps on
  /// different streams; upload, download and step() wait for this one.
  /// `inputs` (small input buffers that change from step to step, such as a
  /// seed) are copied from the host in stream order before the replay.
  llvm::Error step(const TensorRef &hidden, llvm::ArrayRef<int32_t> slots,
                   const TensorRef &out, runtime::StreamHandle stream,
                   const HostBuffers &inputs = {});
  /// The device address of non-weight buffer `name` (a page, an activation).
  llvm::Expected<runtime::DevicePtr> bufferAddress(llvm::StringRef name) const;
  /// Median/min/max time of `replays` back-to-back replays of the step.
  llvm::Expected<StepTimes> time(int replays);
  /// The per-launch time (µs) of plan launch `index`: `launches` launches
  /// back to back in one graph, each over its own copy of the weights so they
  /// stream from HBM, median over `replays` replays.
  llvm::Expected<double> timeLaunch(size_t index, int launches, int replays);
  const StepPlan &plan() const;
  runtime::JitRuntime &jit() const;

private:
  struct Impl;
  explicit GpuRunner(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl;
};

/// The tuning database's configurations (the runtime's TILEJIT_TUNE_DB) for
/// every kernel of a plan that declares a tuning key (KernelDef::tuningKey),
/// looked up at `shape`, the plan's launch sizes by name ("rows" of a decode
/// step, "tokens" of a prefill); a kernel tuned by a size the plan lacks (or
/// gives as 0) is not looked up. The key is the kernel at the plan's geometry
/// with its tunable constants at their defaults, on this device, as `tilejit
/// tune` records it; each entry used, or found and not used, is said once on
/// `log`.
TunedConstants tunedFromDatabase(runtime::JitRuntime &jit, const KernelRegistry &registry,
                                 tuning::NamedValues shape, llvm::raw_ostream &log);

} // namespace tilejit::models

#endif // TILEJIT_MODELS_PLAN_RUNNERS_H
