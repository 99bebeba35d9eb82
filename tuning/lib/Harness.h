// The tuner's launch harness: host arguments (random inputs, poisoned outputs), the
// interpreter's reference run, device copies, the comparison and the timing loop.
#ifndef TILEJIT_LIB_TUNING_HARNESS_H
#define TILEJIT_LIB_TUNING_HARNESS_H

#include "tilejit/tuning/Tuner.h"

namespace tilejit::tuning {

/// One argument's host side: the bytes of a buffer (empty for scalars).
struct HostArg {
  TuneArg arg;
  std::vector<uint8_t> bytes;
};

/// Refuses arguments whose buffers need more than `hostBytes` of host memory
/// (they are held on the host and on the device) or have no representable
/// size, before anything is allocated; `what` names the launch.
llvm::Error checkArgBytes(const std::vector<TuneArg> &args, uint64_t hostBytes,
                          llvm::StringRef what);

/// Inputs drawn from N(0, 1) * scale with `seed`, outputs poisoned (all bits set).
std::vector<HostArg> makeHostArgs(const std::vector<TuneArg> &args, uint64_t seed);

/// Runs `def` at `spec` on the interpreter over `grid`, writing its outputs
/// into `args`.
llvm::Error runInterpreter(const KernelDef &def, const Specialization &spec,
                           const std::array<int64_t, 3> &grid,
                           std::vector<HostArg> &args);

/// Device copies of a launch's arguments.
struct DeviceArgs {
  std::vector<runtime::DeviceBuffer> buffers;
  std::vector<runtime::KernelArg> args;
  /// Index into `buffers` of each argument; -1 for scalars.
  std::vector<int> bufferOf;
};
llvm::Expected<DeviceArgs> uploadArgs(runtime::JitRuntime &jit,
                                      const std::vector<HostArg> &host,
                                      const runtime::Stream &stream);
/// How many copies of a launch's buffers (`bufferBytes` together) the timer
/// rotates over so that they pass twice the L2 (`l2Bytes`, 0: unknown, one
/// copy): a weight read by back-to-back launches then comes from HBM, as in a
/// step where the other kernels' weights have evicted it. At most
/// kMaxRotationCopies: a launch of a few hundred KB stays partly L2-resident,
/// as a step's activations are.
constexpr unsigned kMaxRotationCopies = 16;
unsigned rotationCopies(uint64_t bufferBytes, uint64_t l2Bytes);

/// Sets every byte of every output buffer (NaN in every float type) and
/// restores every state buffer to `host`'s bytes (the inputs before any launch).
llvm::Error poisonOutputs(runtime::JitRuntime &jit, DeviceArgs &device,
                          const std::vector<HostArg> &host,
                          const runtime::Stream &stream);

/// Elements compared and elements outside |got - want| <= atol + rtol |want|
/// (a NaN, i.e. an element never written, is outside).
struct Comparison {
  size_t checked = 0, mismatches = 0;
  std::string firstMismatch;
};
/// The same for outputs on the host (`got` holds the arguments of a run like
/// the reference's).
Comparison compareHostOutputs(const std::vector<HostArg> &got,
                              const std::vector<HostArg> &reference, double atol,
                              double rtol);
llvm::Expected<Comparison> compareOutputs(DeviceArgs &device,
                                          const std::vector<HostArg> &reference,
                                          double atol, double rtol,
                                          const runtime::Stream &stream);

/// Per-launch times of a kernel (docs/design.md#measuring-method).
struct Timing {
  double medianMs = 0, minMs = 0, maxMs = 0;
  unsigned samples = 0, launchesPerSample = 0;
  /// Argument sets (buffer copies) the launches rotated over.
  unsigned copies = 1;
  bool timedOut = false;
  /// Every sample's per-launch time, in the order measured.
  std::vector<double> perLaunchMs;
};
/// Warms up, sizes a graph of back-to-back launches to about options.sampleMs
/// (a multiple of the argument sets, launch i taking set i mod their count),
/// then times options.samples replays with events. Stops early, marking
/// timedOut, once `deadlineS` seconds of wall time have passed.
llvm::Expected<Timing>
timeLaunches(runtime::JitRuntime &jit, runtime::Kernel &kernel,
             const runtime::Stream &stream, runtime::Dim3 grid,
             llvm::ArrayRef<std::vector<runtime::KernelArg>> argSets,
             const TuneOptions &options, double deadlineS);

} // namespace tilejit::tuning

#endif // TILEJIT_LIB_TUNING_HARNESS_H
