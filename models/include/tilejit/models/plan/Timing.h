// Timing a plan on the GPU the way docs/BENCHMARKS.md states its figures:
// back-to-back launches in one CUDA graph, weights from HBM (distinct copies),
// median/min/max of the replays, and next to each kernel the floor of the bytes
// it must move, measured in the same run by a kernel that only streams them.
#ifndef TILEJIT_MODELS_PLAN_TIMING_H
#define TILEJIT_MODELS_PLAN_TIMING_H

#include "tilejit/models/plan/Runners.h"
#include "tilejit/runtime/Capture.h"
#include "tilejit/runtime/DeviceMemory.h"
#include "tilejit/support/Timing.h"

namespace tilejit::models {

/// Median/min/max milliseconds of `replays` replays of `graph` on `stream`
/// (events around each, one warm-up replay first).
llvm::Expected<support::SampleSummary> replayTimes(runtime::DeviceApi &device,
                                                   runtime::Graph &graph,
                                                   runtime::Stream &stream, int replays);

/// The practical floor of a launch that reads `readBytes` and writes
/// `writtenBytes` (design: docs/design.md, measuring): the per-launch time (µs)
/// of the registered `stream_bytes` kernel moving them, `launches` launches
/// back to back in one graph over buffers that do not fit the L2 together,
/// median over `replays` replays.
llvm::Expected<double> timeStreamFloor(runtime::JitRuntime &jit,
                                       const KernelRegistry &registry, size_t readBytes,
                                       size_t writtenBytes, int launches, int replays);

/// One kernel of a plan, timed alone.
struct KernelTime {
  size_t launch = 0; ///< the first plan launch of its kind
  std::string kernel, role, variant;
  runtime::SumPrecision sums = runtime::SumPrecision::Exact;
  int64_t bytesRead = 0, bytesWritten = 0;
  double us = 0;      ///< per launch, median
  double floorUs = 0; ///< timeStreamFloor of the same bytes

  /// Bytes moved per second, in TB/s.
  double terabytesPerSecond() const { return (bytesRead + bytesWritten) / (us * 1e6); }
};

/// Times the first launch of each kind (kernel, role, variant) of `runner`'s
/// plan: `launches` launches back to back in one graph over distinct weight
/// copies, median over `replays` replays, each next to its floor.
llvm::Expected<std::vector<KernelTime>>
timeKernels(GpuRunner &runner, const KernelRegistry &registry, int launches, int replays);

/// A plan's launches, each at its kind's time alone: what a step would take
/// with no gap between kernels, and the same sum of floors.
struct KernelSum {
  double us = 0, floorUs = 0;
  /// Launches whose kind `times` has no entry for (counted in neither sum).
  size_t untimed = 0;
};
KernelSum sumKernelTimes(const StepPlan &plan, llvm::ArrayRef<KernelTime> times);

} // namespace tilejit::models

#endif // TILEJIT_MODELS_PLAN_TIMING_H
