// `tilejit tune KERNEL`: enumerate and prune the candidate configurations, compile
// the kept ones in parallel, check each on the GPU against the interpreter, time
// them, and record the winner in the tuning database. `--dry-run` stops after
// pruning and needs no GPU; `--revalidate` re-measures entries of other versions.
#include "Commands.h"
#include "TuneSupport.h"

#include "tilejit/support/Timing.h"
#include "tilejit/tuning/Record.h"
#include "tilejit/tuning/TunedLookup.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/raw_ostream.h"

using namespace llvm;
using namespace tilejit;
using tuning::CandidateResult;

namespace {

cl::SubCommand tuneCmd("tune",
                       "Autotune a kernel's configuration and record the winner in "
                       "the tuning database");
cl::opt<std::string> kernelArg(cl::Positional, cl::desc("<kernel>"), cl::sub(tuneCmd));
cl::list<std::string> setArgs("set", cl::desc("Fix a constant: name=value (not tuned)"),
                              cl::sub(tuneCmd));
cl::list<std::string> startArgs(
    "start",
    cl::desc("Start a tunable constant at name=value: the first candidate and the "
             "check's reference, still tuned (a plan's own configuration)"),
    cl::sub(tuneCmd));
cl::list<std::string> shapeArgs("shape",
                                cl::desc("A launch size: name=value (e.g. m=4096)"),
                                cl::sub(tuneCmd));
cl::opt<std::string> dryArch("arch", cl::desc("Dry run: the arch to prune for"),
                             cl::init("sm_90a"), cl::sub(tuneCmd));
cl::opt<bool> dryRun("dry-run",
                     cl::desc("List the candidates and why each is pruned; no GPU"),
                     cl::sub(tuneCmd));
cl::opt<bool> jsonOut("json", cl::desc("Print JSON ({\"candidates\": [...]})"),
                      cl::sub(tuneCmd));
cl::opt<bool> revalidate("revalidate",
                         cl::desc("Re-measure the database's entries made by another "
                                  "tilejit version (all, or KERNEL's)"),
                         cl::sub(tuneCmd));
cl::opt<bool> noSave("no-save", cl::desc("Do not write the database"), cl::sub(tuneCmd));
cl::opt<double> budgetS("budget-s", cl::desc("Bound of the measurement phase, seconds"),
                        cl::init(300), cl::sub(tuneCmd));
cl::opt<double> candidateTimeoutS("candidate-timeout-s",
                                  cl::desc("Bound of one candidate's check and timing"),
                                  cl::init(20), cl::sub(tuneCmd));
cl::opt<unsigned> samples("samples", cl::desc("Timed samples per candidate"),
                          cl::init(15), cl::sub(tuneCmd));
cl::opt<unsigned> threads("threads", cl::desc("Compile threads (0: one per core)"),
                          cl::init(0), cl::sub(tuneCmd));

using cli::fail;

/// A progress bar with an ETA on a terminal; plain lines otherwise.
class ProgressBar {
public:
  explicit ProgressBar(std::string kernel)
      : kernel(std::move(kernel)), tty(sys::Process::StandardErrIsDisplayed()) {}
  ~ProgressBar() {
    if (tty && drawn)
      errs() << "\n";
  }

  void operator()(const tuning::TuneProgress &p) {
    if (p.phase != phase) {
      if (tty && drawn)
        errs() << "\n";
      phase = p.phase.str();
      start = std::chrono::steady_clock::now();
    }
    double elapsed = tilejit::support::msSince(start) / 1e3;
    double eta = p.done ? elapsed / p.done * (p.total - p.done) : 0;
    std::string what;
    if (p.last) {
      what = p.last->candidate.label() + ": " + tuning::statusName(p.last->status).str();
      if (p.last->status == CandidateResult::Status::Measured)
        what += formatv(" {0:F4} ms", p.last->medianMs);
    }
    if (!tty) {
      errs() << formatv("tune {0}: {1} {2}/{3} {4}\n", kernel, phase, p.done, p.total,
                        what);
      return;
    }
    constexpr size_t width = 30;
    size_t filled = p.total ? width * p.done / p.total : width;
    errs() << formatv("\r{0} {1,-7} [{2}{3}] {4}/{5} ETA {6}:{7:d2}  ", kernel, phase,
                      std::string(filled, '#'), std::string(width - filled, '.'), p.done,
                      p.total, int(eta) / 60, int(eta) % 60);
    drawn = true;
  }

private:
  std::string kernel;
  bool tty;
  bool drawn = false;
  std::string phase;
  std::chrono::steady_clock::time_point start;
};

/// The constants --set fixes (tuneMain has read them already): they are not
/// tuned.
std::vector<std::string> fixedNames() {
  std::vector<std::string> fixed;
  for (const auto &entry : cantFail(cli::parseNamedValues(setArgs, "--set")))
    fixed.push_back(entry.first);
  return fixed;
}

int runDryRun(const tuning::TuneTarget &target) {
  Expected<Arch> arch = Arch::parse(dryArch);
  if (!arch)
    return fail(toString(arch.takeError()));
  std::vector<tuning::Candidate> candidates =
      tuning::prunedCandidates(target, tuning::limitsForArch(*arch), *arch, fixedNames());
  if (jsonOut) {
    json::Array list;
    for (const tuning::Candidate &c : candidates)
      list.push_back(c.toJSON());
    outs() << formatv("{0:2}", json::Value(json::Object{{"candidates", std::move(list)}}))
           << "\n";
    return 0;
  }
  size_t kept = llvm::count_if(candidates, [](auto &c) { return c.pruned.empty(); });
  outs() << formatv("{0} at {1} for {2}: {3} candidates, {4} kept, {5} pruned\n",
                    target.def->name, tuning::formatNamedValues(target.shape),
                    arch->name(), candidates.size(), kept, candidates.size() - kept);
  for (const tuning::Candidate &c : candidates) {
    outs() << formatv("  {0,-6} {1}", c.pruned.empty() ? "kept" : "pruned", c.label());
    if (c.pruned.empty())
      outs() << formatv("  ({0} threads, {1} B shared, {2} regs/tile)", c.threads,
                        c.sharedBytes, c.tileWordsPerThread);
    else
      outs() << "  -- " << c.pruned;
    outs() << "\n";
  }
  return 0;
}

/// Records `entry` (a winner, or a rejected entry) in the database.
int saveEntry(runtime::JitRuntime &jit, const tuning::TuneEntry &entry) {
  if (noSave)
    return 0;
  Expected<std::string> path = cli::tuneDbPath();
  if (!path)
    return fail(toString(path.takeError()));
  Expected<std::vector<std::string>> replaced =
      tuning::recordEntry(*path, entry, jit.device().info());
  if (!replaced)
    return fail(toString(replaced.takeError()));
  outs() << formatv("recorded {0} [{1}] {2} in {3}", entry.key.kernel,
                    entry.key.shapeBucket,
                    entry.rejected.empty() ? tuning::formatNamedValues(entry.config)
                                           : "as rejected (" + entry.rejected + ")",
                    *path);
  for (const std::string &v : *replaced)
    outs() << formatv("; replaces the entry of tilejit {0}", v);
  outs() << "\n";
  return 0;
}

int runTune(runtime::JitRuntime &jit, const tuning::TuneTarget &target) {
  tuning::StaticLimits limits = tuning::limitsForArch(jit.targetArch());
  limits.maxSharedBytes = jit.device().info().maxDynamicSharedBytes;
  std::vector<tuning::Candidate> candidates =
      tuning::prunedCandidates(target, limits, jit.targetArch(), fixedNames());
  tuning::TuneOptions options;
  options.budgetS = budgetS;
  options.candidateTimeoutS = candidateTimeoutS;
  options.samples = std::max(1u, unsigned(samples));
  options.threads = threads;
  ProgressBar bar(target.def->name);
  Expected<tuning::TuneReport> report = tuning::measureCandidates(
      jit, target, std::move(candidates), options, std::ref(bar));
  if (!report)
    return fail(toString(report.takeError()));
  if (jsonOut) {
    outs() << formatv("{0:2}", report->toJSON()) << "\n";
  } else {
    cli::printResults(outs(), *report);
  }
  if (!report->entry)
    return fail(target.def->name + ": no candidate passed the check and was timed");
  return saveEntry(jit, *report->entry);
}

/// Re-measures the stored configuration and the default of every entry made
/// by another version; records the faster, or the entry as rejected.
int runRevalidate(runtime::JitRuntime &jit, const KernelRegistry &registry) {
  Expected<std::string> path = cli::tuneDbPath();
  if (!path)
    return fail(toString(path.takeError()));
  Expected<tuning::TuneDb> db = tuning::TuneDb::load(*path);
  if (!db)
    return fail(toString(db.takeError()));
  tuning::TuneOptions options;
  options.samples = std::max(1u, unsigned(samples));
  options.candidateTimeoutS = candidateTimeoutS;
  int status = 0;
  unsigned considered = 0;
  for (const tuning::TuneEntry *stale :
       db->staleEntries(tuning::tuneVersion(jit.compiler()))) {
    if (!kernelArg.empty() && stale->key.kernel != kernelArg)
      continue;
    ++considered;
    std::string name = formatv("{0} [{1}] of tilejit {2}", stale->key.kernel,
                               stale->key.shapeBucket, stale->key.version);
    ProgressBar bar(stale->key.kernel);
    Expected<tuning::Revalidation> result =
        tuning::revalidateEntry(jit, registry, tuning::TuneProblemRegistry::global(),
                                *stale, options, std::ref(bar));
    if (!result)
      return fail(toString(result.takeError()));
    if (!result->notHere.empty()) {
      outs() << name << ": not re-validated here: " << result->notHere << "\n";
      continue;
    }
    if (result->report)
      cli::printResults(outs(), *result->report);
    const std::string &rejected = result->verdict.rejected;
    if (!rejected.empty())
      status = 1;
    outs() << name << ": "
           << (rejected.empty() ? "re-validated" : "rejected: " + rejected) << "\n";
    if (int rc = saveEntry(jit, result->verdict))
      return rc;
  }
  outs() << formatv("{0} entr{1} of other versions considered\n", considered,
                    considered == 1 ? "y" : "ies");
  return status;
}

} // namespace

bool tilejit::cli::tuneRequested() { return bool(tuneCmd); }

int tilejit::cli::tuneMain(const KernelRegistry &registry) {
  if (revalidate) {
    Expected<std::unique_ptr<runtime::JitRuntime>> jit = openGpuRuntime();
    if (!jit)
      return fail("tune --revalidate needs a GPU: " + toString(jit.takeError()));
    return runRevalidate(**jit, registry);
  }
  if (kernelArg.empty())
    return fail("tune: name a kernel (see 'tilejit list'), or give --revalidate");
  Expected<tuning::NamedValues> sets = parseNamedValues(setArgs, "--set");
  if (!sets)
    return fail(toString(sets.takeError()));
  Expected<tuning::NamedValues> starts = parseNamedValues(startArgs, "--start");
  if (!starts)
    return fail(toString(starts.takeError()));
  sets->insert(starts->begin(), starts->end()); // a --set of the same name wins
  Expected<tuning::NamedValues> shape = parseNamedValues(shapeArgs, "--shape");
  if (!shape)
    return fail(toString(shape.takeError()));
  Expected<tuning::TuneTarget> target = tuning::makeTuneTarget(
      registry, tuning::TuneProblemRegistry::global(), kernelArg, *sets, *shape);
  if (!target)
    return fail(toString(target.takeError()));
  if (dryRun)
    return runDryRun(*target);
  Expected<std::unique_ptr<runtime::JitRuntime>> jit = openGpuRuntime();
  if (!jit)
    return fail("tune needs a GPU (--dry-run lists the candidates without one): " +
                toString(jit.takeError()));
  return runTune(**jit, *target);
}
