// measureCandidates: compile every kept candidate in parallel through the runtime,
// then one at a time on the device: load, check against the interpreter, time.
#include "Harness.h"

#include "tilejit/jit/JitCompiler.h"
#include "tilejit/support/HostMemory.h"
#include "tilejit/support/Timing.h"
#include "tilejit/tuning/TunedLookup.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/ThreadPool.h"
#include "llvm/Support/Threading.h"

#include <chrono>
#include <map>

using namespace llvm;
using namespace tilejit::runtime;

namespace tilejit::tuning {
namespace {

using Status = CandidateResult::Status;

double secondsSince(std::chrono::steady_clock::time_point start) {
  return support::msSince(start) / 1e3;
}

Dim3 toDim3(const std::array<int64_t, 3> &grid) {
  return {uint32_t(grid[0]), uint32_t(grid[1]), uint32_t(grid[2])};
}

json::Object namedJSON(const NamedValues &values) {
  json::Object out;
  for (const auto &[name, value] : values)
    out[name] = value;
  return out;
}

/// Checks one loaded candidate on the check inputs; an empty string when it
/// matches the reference.
Expected<std::string> checkCandidate(JitRuntime &jit, runtime::Kernel &kernel,
                                     const TuneTarget &target, const Specialization &spec,
                                     DeviceArgs &checkArgs,
                                     const std::vector<HostArg> &initial,
                                     const std::vector<HostArg> &reference,
                                     const Stream &stream, CandidateResult &result) {
  const TuneProblem &problem = *target.problem;
  if (Error err = poisonOutputs(jit, checkArgs, initial, stream))
    return std::move(err);
  Dim3 grid = toDim3(problem.grid(spec, problem.checkShape));
  if (Error err = kernel.launch(stream, grid, checkArgs.args))
    return toString(std::move(err));
  if (Error err = jit.device().synchronize(stream.handle()))
    return toString(std::move(err));
  Expected<Comparison> cmp =
      compareOutputs(checkArgs, reference, problem.atol, problem.rtol, stream);
  if (!cmp)
    return cmp.takeError();
  result.checked = cmp->checked;
  result.mismatches = cmp->mismatches;
  if (cmp->mismatches)
    return std::string(formatv(
        "{0} of {1} elements outside atol={2} rtol={3}; first: {4}", cmp->mismatches,
        cmp->checked, problem.atol, problem.rtol, cmp->firstMismatch));
  return std::string();
}

} // namespace

StringRef statusName(Status status) {
  switch (status) {
  case Status::Pruned:
    return "pruned";
  case Status::CompileFailed:
    return "compile-failed";
  case Status::LoadFailed:
    return "load-failed";
  case Status::Wrong:
    return "wrong";
  case Status::TimedOut:
    return "timed-out";
  case Status::Skipped:
    return "skipped";
  case Status::Measured:
    return "measured";
  }
  llvm_unreachable("unknown status");
}

json::Value CandidateResult::toJSON() const {
  json::Object out = *candidate.toJSON().getAsObject();
  out["status"] = statusName(status);
  if (!detail.empty())
    out["reason"] = detail;
  if (status != Status::Pruned)
    out["compile_ms"] = compileMs;
  if (checked)
    out["check"] =
        json::Object{{"elements", int64_t(checked)}, {"mismatches", int64_t(mismatches)}};
  if (samples)
    out["time_ms"] = json::Object{{"median", medianMs},
                                  {"min", minMs},
                                  {"max", maxMs},
                                  {"samples", int64_t(samples)},
                                  {"launches_per_sample", int64_t(launchesPerSample)},
                                  {"buffer_copies", int64_t(bufferCopies)}};
  if (finalRound) {
    out["final_round"] = true;
    out["sweep_median_ms"] = sweepMedianMs;
  }
  return out;
}

json::Value TuneReport::toJSON() const {
  json::Array candidates;
  for (const CandidateResult &r : results)
    candidates.push_back(r.toJSON());
  json::Object out{{"candidates", std::move(candidates)}};
  if (winner)
    out["winner"] = namedJSON(results[*winner].candidate.config);
  if (winner && defaultIndex && results[*defaultIndex].status == Status::Measured)
    out["speedup_over_default"] =
        results[*defaultIndex].medianMs / results[*winner].medianMs;
  return out;
}

struct MeasureSession::Buffers {
  Stream stream;
  std::vector<HostArg> initial,
      reference; ///< check inputs before / after the reference run
  DeviceArgs check;
  /// The timed launches' argument sets: copies of every buffer, rotated.
  std::vector<DeviceArgs> timed;
  std::vector<std::vector<KernelArg>> timedArgs;
};

MeasureSession::MeasureSession(JitRuntime &jit, const TuneTarget &target,
                               const TuneOptions &options)
    : jit(jit), target(target), options(options) {}
MeasureSession::~MeasureSession() = default;

Expected<std::unique_ptr<MeasureSession>>
MeasureSession::create(JitRuntime &jit, const TuneTarget &target,
                       const TuneOptions &options) {
  const TuneProblem &problem = *target.problem;
  // Sizes first: launch sizes from the command line or a database entry must
  // not end the process in an allocation.
  std::vector<TuneArg> timedArgs = problem.args(target.base, target.shape);
  if (Error err = checkArgBytes(
          timedArgs, support::allocatableMemoryBytes(),
          formatv("{0} at {1}", target.def->name, formatNamedValues(target.shape)).str()))
    return std::move(err);
  // The reference: the interpreter runs the base configuration (every
  // configuration computes the same function) on the check inputs.
  std::vector<HostArg> checkHost =
      makeHostArgs(problem.args(target.base, problem.checkShape), options.seed);
  std::vector<HostArg> reference = checkHost;
  if (Error err =
          runInterpreter(*target.def, target.base,
                         problem.grid(target.base, problem.checkShape), reference))
    return createStringError(inconvertibleErrorCode(),
                             "the interpreter's reference run failed: " +
                                 toString(std::move(err)));
  Expected<Stream> stream = Stream::create(jit.device());
  if (!stream)
    return stream.takeError();
  Expected<DeviceArgs> check = uploadArgs(jit, checkHost, *stream);
  if (!check)
    return check.takeError();
  // Timing inputs: other random values, at the tuned sizes, in as many
  // copies as keep the launches reading from HBM (docs/design.md#measuring-method).
  std::vector<HostArg> timedHost = makeHostArgs(timedArgs, options.seed + 1);
  uint64_t bufferBytes = 0;
  for (const HostArg &h : timedHost)
    bufferBytes += h.bytes.size();
  std::unique_ptr<MeasureSession> session(new MeasureSession(jit, target, options));
  session->buffers.reset(new Buffers{std::move(*stream),
                                     std::move(checkHost),
                                     std::move(reference),
                                     std::move(*check),
                                     {},
                                     {}});
  Buffers &b = *session->buffers;
  for (unsigned c = 0, n = rotationCopies(bufferBytes, jit.device().info().l2Bytes);
       c < n; ++c) {
    Expected<DeviceArgs> timed = uploadArgs(jit, timedHost, b.stream);
    if (!timed)
      return timed.takeError();
    b.timedArgs.push_back(timed->args);
    b.timed.push_back(std::move(*timed));
  }
  return std::move(session);
}

Error MeasureSession::measure(runtime::Kernel &kernel, const Specialization &spec,
                              CandidateResult &r) {
  if (Error err = kernel.prepare()) {
    r.status = Status::LoadFailed;
    r.detail = toString(std::move(err));
    return Error::success();
  }
  auto start = std::chrono::steady_clock::now();
  Expected<std::string> wrong =
      checkCandidate(jit, kernel, target, spec, buffers->check, buffers->initial,
                     buffers->reference, buffers->stream, r);
  if (!wrong)
    return wrong.takeError();
  if (!wrong->empty()) {
    r.status = Status::Wrong;
    r.detail = *wrong;
    return Error::success();
  }
  Dim3 grid = toDim3(target.problem->grid(spec, target.shape));
  Expected<Timing> timing =
      timeLaunches(jit, kernel, buffers->stream, grid, buffers->timedArgs, options,
                   options.candidateTimeoutS - secondsSince(start));
  if (!timing) {
    r.status = Status::LoadFailed;
    r.detail = "launch failed: " + toString(timing.takeError());
    return Error::success();
  }
  r.medianMs = timing->medianMs;
  r.minMs = timing->minMs;
  r.maxMs = timing->maxMs;
  r.samples = timing->samples;
  r.launchesPerSample = timing->launchesPerSample;
  r.bufferCopies = timing->copies;
  r.sampleMs = timing->perLaunchMs;
  // A candidate cut short has too few samples for a fair median.
  if (timing->timedOut) {
    r.status = Status::TimedOut;
    r.detail = formatv("over the {0} s bound per candidate ({1} samples)",
                       options.candidateTimeoutS, timing->samples);
  } else {
    r.status = Status::Measured;
  }
  return Error::success();
}

/// Re-times the default and the fastest others, alternating, and replaces
/// their times by the pooled samples of that round.
static Error finalRound(MeasureSession &session,
                        std::vector<std::unique_ptr<runtime::Kernel>> &kernels,
                        const TuneOptions &options, TuneReport &report) {
  std::vector<size_t> measured;
  for (size_t i = 0; i < report.results.size(); ++i)
    if (report.results[i].status == Status::Measured)
      measured.push_back(i);
  llvm::sort(measured, [&](size_t a, size_t b) {
    return report.results[a].medianMs < report.results[b].medianMs;
  });
  std::vector<size_t> finalists;
  if (report.defaultIndex && llvm::is_contained(measured, *report.defaultIndex))
    finalists.push_back(*report.defaultIndex);
  for (size_t i : measured)
    if (finalists.size() < options.finalists && !llvm::is_contained(finalists, i))
      finalists.push_back(i);
  if (finalists.size() < 2)
    return Error::success();
  std::map<size_t, std::vector<double>> pooled;
  for (int pass = 0; pass < 2; ++pass)
    for (size_t j = 0; j < finalists.size(); ++j) {
      size_t i = finalists[pass ? finalists.size() - 1 - j : j];
      CandidateResult again = report.results[i];
      if (Error err = session.measure(*kernels[i], again.candidate.spec, again))
        return err;
      if (again.status != Status::Measured) {
        report.results[i].status = again.status;
        report.results[i].detail = "final round: " + again.detail;
        pooled.erase(i);
        continue;
      }
      if (report.results[i].status == Status::Measured)
        llvm::append_range(pooled[i], again.sampleMs);
    }
  for (auto &[i, samples] : pooled) {
    CandidateResult &r = report.results[i];
    support::SampleSummary summary = support::summarize(samples);
    r.sweepMedianMs = r.medianMs;
    r.medianMs = summary.median;
    r.minMs = summary.min;
    r.maxMs = summary.max;
    r.samples = unsigned(summary.n);
    r.finalRound = true;
  }
  return Error::success();
}

Expected<TuneReport> measureCandidates(JitRuntime &jit, const TuneTarget &target,
                                       std::vector<Candidate> candidates,
                                       const TuneOptions &options,
                                       const ProgressFn &progress) {
  TuneReport report;
  for (Candidate &c : candidates) {
    CandidateResult r;
    r.status = c.pruned.empty() ? Status::Skipped : Status::Pruned;
    r.detail = c.pruned;
    r.candidate = std::move(c);
    report.results.push_back(std::move(r));
  }
  for (size_t i = 0; i < report.results.size(); ++i)
    if (report.results[i].candidate.isDefault)
      report.defaultIndex = i;
  std::vector<size_t> kept;
  for (size_t i = 0; i < report.results.size(); ++i)
    if (report.results[i].status != Status::Pruned)
      kept.push_back(i);

  Expected<std::unique_ptr<MeasureSession>> session =
      MeasureSession::create(jit, target, options);
  if (!session)
    return session.takeError();

  // Compile in parallel; each Kernel belongs to one task.
  std::vector<std::unique_ptr<runtime::Kernel>> kernels(report.results.size());
  for (size_t i : kept)
    kernels[i] = std::make_unique<runtime::Kernel>(
        jit, makeKernelSpec(*target.def, report.results[i].candidate.spec));
  {
    std::mutex progressMutex;
    size_t done = 0;
    unsigned threads =
        options.threads ? options.threads : hardware_concurrency().compute_thread_count();
    DefaultThreadPool pool(hardware_concurrency(std::max(1u, threads)));
    for (size_t i : kept)
      pool.async([&, i] {
        CandidateResult &r = report.results[i];
        auto start = std::chrono::steady_clock::now();
        if (Error err = kernels[i]->compile()) {
          r.status = Status::CompileFailed;
          r.detail = toString(std::move(err));
        }
        r.compileMs = secondsSince(start) * 1e3;
        std::lock_guard<std::mutex> lock(progressMutex);
        if (progress)
          progress({"compile", ++done, kept.size(), &r});
      });
    pool.wait();
  }

  auto budgetStart = std::chrono::steady_clock::now();
  size_t done = 0;
  for (size_t i : kept) {
    CandidateResult &r = report.results[i];
    auto finish = [&] {
      if (progress)
        progress({"measure", ++done, kept.size(), &r});
    };
    if (r.status == Status::CompileFailed) {
      finish();
      continue;
    }
    if (secondsSince(budgetStart) > options.budgetS) {
      r.detail = formatv("the tuning budget of {0} s was spent", options.budgetS);
      finish();
      continue;
    }
    if (Error err = (*session)->measure(*kernels[i], r.candidate.spec, r))
      return std::move(err);
    finish();
  }

  if (Error err = finalRound(**session, kernels, options, report))
    return std::move(err);
  // With a final round, only its times are compared.
  bool anyFinal =
      llvm::any_of(report.results, [](const CandidateResult &r) { return r.finalRound; });
  for (size_t i = 0; i < report.results.size(); ++i) {
    const CandidateResult &r = report.results[i];
    bool eligible = r.status == Status::Measured && (r.finalRound || !anyFinal);
    if (eligible &&
        (!report.winner || r.medianMs < report.results[*report.winner].medianMs))
      report.winner = i;
  }
  if (!report.winner)
    return report;
  Expected<TuneKey> key = tuneKeyFor(jit, target);
  if (!key)
    return key.takeError();
  const CandidateResult &best = report.results[*report.winner];
  TuneEntry entry;
  entry.key = std::move(*key);
  for (const auto &[name, value] : target.base.values())
    if (!best.candidate.config.count(name))
      entry.constants[name] = value;
  entry.shape = target.shape;
  entry.config = best.candidate.config;
  entry.medianMs = best.medianMs;
  entry.minMs = best.minMs;
  entry.maxMs = best.maxMs;
  entry.samples = best.samples;
  entry.codeHash = runtime::codeFingerprint(*kernels[*report.winner]->compiled());
  if (report.defaultIndex &&
      report.results[*report.defaultIndex].status == Status::Measured)
    entry.defaultMedianMs = report.results[*report.defaultIndex].medianMs;
  report.entry = std::move(entry);
  return report;
}

} // namespace tilejit::tuning
