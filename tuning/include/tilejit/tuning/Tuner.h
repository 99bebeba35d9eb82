// The tuner: candidates compiled in parallel through the runtime, each checked on
// the GPU against the interpreter on the same random inputs, then timed
// (docs/design.md#measuring-method: warm-up, graphs of back-to-back launches,
// median/min/max), with a time bound per candidate. Every failure is a result,
// not an error.
#ifndef TILEJIT_TUNING_TUNER_H
#define TILEJIT_TUNING_TUNER_H

#include "tilejit/runtime/Jit.h"
#include "tilejit/tuning/Candidates.h"

#include <functional>
#include <optional>

namespace tilejit::tuning {

struct TuneOptions {
  /// Wall-clock bound of the whole measurement phase; candidates not reached
  /// are recorded as skipped.
  double budgetS = 300;
  /// Bound of one candidate's check and timing.
  double candidateTimeoutS = 20;
  unsigned warmup = 3;
  /// Timed samples per candidate.
  unsigned samples = 15;
  /// Each sample is a graph of back-to-back launches lasting about this long.
  double sampleMs = 2.0;
  /// Compile threads (0: one per core).
  unsigned threads = 0;
  /// After the sweep, the default and the fastest others (this many in all)
  /// are timed again twice, in alternating order, and compared on those
  /// times alone: clocks drift during a sweep (boost at its start, power
  /// limits later), which would favour whichever ran first.
  unsigned finalists = 4;
  uint64_t seed = 1;
};

/// What happened to one candidate.
struct CandidateResult {
  enum class Status {
    Pruned,
    CompileFailed,
    LoadFailed,
    Wrong,
    TimedOut,
    Skipped,
    Measured
  };
  Candidate candidate;
  Status status = Status::Skipped;
  /// The reason of a failure; empty for a measured candidate.
  std::string detail;
  double compileMs = 0;
  /// Per launch, in ms.
  double medianMs = 0, minMs = 0, maxMs = 0;
  unsigned samples = 0, launchesPerSample = 0;
  /// Copies of the buffers the launches rotated over (past twice the L2).
  unsigned bufferCopies = 1;
  /// The check against the interpreter: elements compared, outside the band.
  size_t checked = 0, mismatches = 0;
  /// Whether the times are the final round's; the sweep's median then.
  bool finalRound = false;
  double sweepMedianMs = 0;
  /// The per-launch time of every sample.
  std::vector<double> sampleMs;

  llvm::json::Value toJSON() const;
};
llvm::StringRef statusName(CandidateResult::Status status);

/// Reported as the tuner works: a phase ("compile", "measure"), how many of
/// `total` are done, and the candidate just finished.
struct TuneProgress {
  llvm::StringRef phase;
  size_t done = 0, total = 0;
  const CandidateResult *last = nullptr;
};
using ProgressFn = std::function<void(const TuneProgress &)>;

/// The results of one kernel's tuning.
struct TuneReport {
  std::vector<CandidateResult> results;
  /// Index of the fastest measured candidate, and of the default one.
  std::optional<size_t> winner, defaultIndex;
  /// The database entry for the winner (with provenance left to the caller).
  std::optional<TuneEntry> entry;

  llvm::json::Value toJSON() const;
};

class MeasureSession;

/// Compiles, checks and times `candidates` (pruned ones are reported as
/// such) on the runtime's device. Errors only for what stops every candidate
/// (inputs that cannot be allocated, a reference that cannot run).
/// Runs `target.base` and `candidate` on the interpreter at the problem's
/// check sizes on the same inputs (drawn with `seed`) and compares the
/// candidate's outputs with the base's in the problem's band: shows without a
/// GPU that a candidate computes what the default does, and that the
/// problem's arguments and grid fit the kernel. Returns the elements checked;
/// an element outside the band is an error naming it.
llvm::Expected<size_t> checkOnInterpreter(const TuneTarget &target,
                                          const Specialization &candidate,
                                          uint64_t seed = 1);

llvm::Expected<TuneReport> measureCandidates(runtime::JitRuntime &jit,
                                             const TuneTarget &target,
                                             std::vector<Candidate> candidates,
                                             const TuneOptions &options,
                                             const ProgressFn &progress);

/// The inputs of one problem instance on a device: the check inputs and the
/// interpreter's reference outputs, and the timing inputs.
class MeasureSession {
public:
  /// Runs the reference on the interpreter and uploads both input sets.
  static llvm::Expected<std::unique_ptr<MeasureSession>>
  create(runtime::JitRuntime &jit, const TuneTarget &target, const TuneOptions &options);
  ~MeasureSession();

  /// Loads `kernel` (built with `spec`), checks it against the reference and
  /// times it, filling `result` (status, detail, check, times). An error only
  /// for a device failure outside the kernel.
  llvm::Error measure(runtime::Kernel &kernel, const Specialization &spec,
                      CandidateResult &result);

private:
  MeasureSession(runtime::JitRuntime &jit, const TuneTarget &target,
                 const TuneOptions &options);
  struct Buffers;
  runtime::JitRuntime &jit;
  const TuneTarget &target;
  const TuneOptions &options;
  std::unique_ptr<Buffers> buffers;
};

} // namespace tilejit::tuning

#endif // TILEJIT_TUNING_TUNER_H
