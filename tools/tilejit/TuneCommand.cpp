// `tilejit tune KERNEL`: enumerate and prune the candidate configurations, compile
// the kept ones in parallel, check each on the GPU against the interpreter, time
// them, and record the winner in the tuning database. `--dry-run` stops after
// pruning and needs no GPU; `--revalidate` re-measures entries of other versions.
#include "Commands.h"
#include "TuneSupport.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>

using namespace llvm;
using namespace tilejit;
using tuning::CandidateResult;

namespace {

cl::SubCommand tuneCmd("tune", "Autotune a kernel's configuration and record the winner in "
                               "the tuning database");
cl::opt<std::string> kernelArg(cl::Positional, cl::desc("<kernel>"), cl::sub(tuneCmd));
cl::list<std::string> setArgs("set", cl::desc("Fix a constant: name=value (not tuned)"),
                              cl::sub(tuneCmd));
cl::list<std::string> shapeArgs("shape", cl::desc("A launch size: name=value (e.g. m=4096)"),
                                cl::sub(tuneCmd));
cl::opt<std::string> dryArch("arch", cl::desc("Dry run: the arch to prune for"),
                             cl::init("sm_90a"), cl::sub(tuneCmd));
cl::opt<bool> dryRun("dry-run", cl::desc("List the candidates and why each is pruned; no GPU"),
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
cl::opt<unsigned> samples("samples", cl::desc("Timed samples per candidate"), cl::init(15),
                          cl::sub(tuneCmd));
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
    auto now = std::chrono::steady_clock::now();
    if (p.phase != phase) {
      if (tty && drawn)
        errs() << "\n";
      phase = p.phase.str();
      start = now;
    }
    double elapsed = std::chrono::duration<double>(now - start).count();
    double eta = p.done ? elapsed / p.done * (p.total - p.done) : 0;
    std::string what;
    if (p.last) {
      what = p.last->candidate.label() + ": " + tuning::statusName(p.last->status).str();
      if (p.last->status == CandidateResult::Status::Measured)
        what += formatv(" {0:F4} ms", p.last->medianMs);
    }
    if (!tty) {
      errs() << formatv("tune {0}: {1} {2}/{3} {4}\n", kernel, phase, p.done, p.total, what);
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

/// The candidates of `target`, pruned for `limits`.
std::vector<tuning::Candidate> prunedCandidates(const tuning::TuneTarget &target,
                                                const tuning::StaticLimits &limits,
                                                const Arch &arch) {
  std::vector<std::string> fixed;
  for (const std::string &s : setArgs)
    fixed.push_back(StringRef(s).split('=').first.trim().str());
  std::vector<tuning::Candidate> candidates =
      tuning::enumerateCandidates(*target.def, target.base, fixed);
  for (tuning::Candidate &c : candidates)
    tuning::pruneCandidate(*target.def, target.problem, target.shape, limits, arch, c);
  return candidates;
}

int runDryRun(const tuning::TuneTarget &target) {
  Expected<Arch> arch = Arch::parse(dryArch);
  if (!arch)
    return fail(toString(arch.takeError()));
  std::vector<tuning::Candidate> candidates =
      prunedCandidates(target, tuning::limitsForArch(*arch), *arch);
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
                    target.def->name, runtime::formatNamedValues(target.shape), arch->name(),
                    candidates.size(), kept, candidates.size() - kept);
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

/// Records `report`'s winner (or `rejected`) in the database.
int saveEntry(runtime::JitRuntime &jit, runtime::TuneEntry entry) {
  if (noSave)
    return 0;
  Expected<std::string> path = cli::tuneDbPath();
  if (!path)
    return fail(toString(path.takeError()));
  entry.provenance = cli::currentProvenance(jit.device().info());
  std::vector<std::string> replaced;
  if (Error err = cli::updateTuneDb(*path, [&](runtime::TuneDb &db) {
        replaced = db.record(entry);
        return Error::success();
      }))
    return fail(toString(std::move(err)));
  outs() << formatv("recorded {0} [{1}] {2} in {3}", entry.key.kernel, entry.key.shapeBucket,
                    entry.rejected.empty() ? runtime::formatNamedValues(entry.config)
                                           : "as rejected (" + entry.rejected + ")",
                    *path);
  for (const std::string &v : replaced)
    outs() << formatv("; replaces the entry of tilejit {0}", v);
  outs() << "\n";
  return 0;
}

int runTune(runtime::JitRuntime &jit, const tuning::TuneTarget &target) {
  tuning::StaticLimits limits = tuning::limitsForArch(jit.targetArch());
  limits.maxSharedBytes = jit.device().info().maxDynamicSharedBytes;
  std::vector<tuning::Candidate> candidates =
      prunedCandidates(target, limits, jit.targetArch());
  tuning::TuneOptions options;
  options.budgetS = budgetS;
  options.candidateTimeoutS = candidateTimeoutS;
  options.samples = std::max(1u, unsigned(samples));
  options.threads = threads;
  ProgressBar bar(target.def->name);
  Expected<tuning::TuneReport> report =
      tuning::measureCandidates(jit, target, std::move(candidates), options, std::ref(bar));
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
  Expected<runtime::TuneDb> db = runtime::TuneDb::load(*path);
  if (!db)
    return fail(toString(db.takeError()));
  int status = 0;
  unsigned considered = 0;
  for (const runtime::TuneEntry *stale : db->staleEntries(jit.tuningVersion())) {
    const runtime::TuneEntry entry = *stale;
    if (!kernelArg.empty() && entry.key.kernel != kernelArg)
      continue;
    ++considered;
    std::string name = formatv("{0} [{1}] of tilejit {2}", entry.key.kernel,
                               entry.key.shapeBucket, entry.key.version);
    if (entry.key.arch != jit.targetArch().name() ||
        entry.key.smCount != jit.device().info().smCount) {
      outs() << formatv("{0}: not re-validated here: it needs {1} with {2} SMs\n", name,
                        entry.key.arch, entry.key.smCount);
      continue;
    }
    Expected<tuning::TuneTarget> target =
        cli::makeTarget(registry, entry.key.kernel, entry.constants, entry.shape);
    Expected<runtime::TuneKey> key =
        target ? tuning::tuneKeyFor(jit, *target) : Expected<runtime::TuneKey>(target.takeError());
    runtime::TuneEntry verdict = entry;
    if (!key) {
      verdict.rejected = "cannot be rebuilt: " + toString(key.takeError());
    } else if (key->irHash != entry.key.irHash) {
      // Another kernel now: its entry can never match again; keep it visible.
      verdict.rejected = "the kernel's IR changed since it was tuned; re-tune it";
    } else {
      tuning::Candidate stored, fallback;
      stored.spec = fallback.spec = target->base;
      for (const auto &[n, v] : entry.config) {
        stored.config[n] = v;
        stored.spec.set(n, v);
        fallback.config[n] = target->base.get(n);
      }
      fallback.isDefault = true;
      tuning::TuneOptions options;
      options.samples = std::max(1u, unsigned(samples));
      options.candidateTimeoutS = candidateTimeoutS;
      ProgressBar bar(entry.key.kernel);
      Expected<tuning::TuneReport> report =
          tuning::measureCandidates(jit, *target, {fallback, stored}, options, std::ref(bar));
      if (!report)
        return fail(toString(report.takeError()));
      cli::printResults(outs(), *report);
      const CandidateResult &result = report->results[1];
      if (result.status != CandidateResult::Status::Measured) {
        verdict.key = *key;
        verdict.rejected = formatv("re-validation by {0}: {1}: {2}", key->version,
                                   tuning::statusName(result.status), result.detail);
      } else {
        verdict = *report->entry;
      }
    }
    if (!verdict.rejected.empty())
      status = 1;
    outs() << name << ": "
           << (verdict.rejected.empty() ? "re-validated" : "rejected: " + verdict.rejected)
           << "\n";
    if (int rc = saveEntry(jit, verdict))
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
  Expected<tuning::NamedValues> shape = parseNamedValues(shapeArgs, "--shape");
  if (!shape)
    return fail(toString(shape.takeError()));
  Expected<tuning::TuneTarget> target = makeTarget(registry, kernelArg, *sets, *shape);
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
