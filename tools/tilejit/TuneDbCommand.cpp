// `tilejit tunedb ls|export|import|launch|stamp` and the helpers shared with
// `tilejit tune`. `launch` builds a kernel with the constants the database holds for it,
// as an application does (tuning::lookupTuned says what it found), then checks
// and times it.
#include "Commands.h"
#include "TuneSupport.h"

#include "tilejit/jit/JitCompiler.h"
#include "tilejit/runtime/CudaDevice.h"
#include "tilejit/runtime/FakeDevice.h"
#include "tilejit/tuning/Record.h"
#include "tilejit/tuning/TunedLookup.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include <set>

using namespace llvm;
using namespace tilejit;

namespace {

cl::SubCommand tuneDbCmd("tunedb", "The tuning database: ls, export FILE, import FILE, "
                                   "launch KERNEL, stamp");
cl::list<std::string> dbArgs(cl::Positional,
                             cl::desc("<ls | export FILE | import FILE | "
                                      "launch KERNEL | stamp>"),
                             cl::OneOrMore, cl::sub(tuneDbCmd));
cl::list<std::string> launchShape("shape", cl::desc("launch: a launch size, name=value"),
                                  cl::sub(tuneDbCmd));

using cli::fail;

int listEntries(const tuning::TuneDb &db, StringRef path) {
  outs() << formatv("{0}: {1} entries\n", path, db.entries().size());
  for (const tuning::TuneEntry &e : db.entries())
    outs() << formatv(
        "  {0,-12} [{1}] {2} {3} SMs  {4}  {5:F4} ms (default {6:F4})  tilejit "
        "{7}, {8}, {9}{10}{11}\n",
        e.key.kernel, e.key.shapeBucket, e.key.arch, e.key.smCount,
        tuning::formatNamedValues(e.config), e.medianMs, e.defaultMedianMs, e.key.version,
        e.provenance.date, e.provenance.device,
        e.codeHash.empty() ? "" : ", code " + e.codeHash.substr(0, 12),
        e.rejected.empty() ? "" : "  REJECTED: " + e.rejected);
  return 0;
}

int launch(const KernelRegistry &registry, StringRef kernel) {
  Expected<tuning::NamedValues> shape = cli::parseNamedValues(launchShape, "--shape");
  if (!shape)
    return fail(toString(shape.takeError()));
  Expected<tuning::TuneTarget> target = tuning::makeTuneTarget(
      registry, tuning::TuneProblemRegistry::global(), kernel, {}, *shape);
  if (!target)
    return fail(toString(target.takeError()));
  Expected<std::unique_ptr<runtime::JitRuntime>> jit = cli::openGpuRuntime();
  if (!jit)
    return fail("tunedb launch needs a GPU: " + toString(jit.takeError()));
  tuning::TunedChoice choice = tuning::lookupTuned(
      **jit, tuning::loadTuneDb(**jit), *target->def, target->base, target->shape);
  if (!choice.message.empty())
    (*jit)->note(choice.message);
  Specialization used = target->base;
  for (const auto &[name, value] : choice.config)
    used.set(name, value);
  runtime::Kernel k(**jit, makeKernelSpec(*target->def, used));
  tuning::TuneOptions options;
  Expected<std::unique_ptr<tuning::MeasureSession>> session =
      tuning::MeasureSession::create(**jit, *target, options);
  if (!session)
    return fail(toString(session.takeError()));
  tuning::CandidateResult result;
  if (Error err = (*session)->measure(k, used, result))
    return fail(toString(std::move(err)));
  outs() << formatv("{0} at {1}: {2} configuration {3}: {4}", kernel,
                    tuning::formatNamedValues(target->shape),
                    choice.config.empty() ? "default" : "tuned",
                    tuning::formatNamedValues(
                        choice.config.empty() ? tuning::NamedValues(used.values().begin(),
                                                                    used.values().end())
                                              : choice.config),
                    tuning::statusName(result.status));
  if (result.status == tuning::CandidateResult::Status::Measured)
    outs() << formatv(
        ", {0} elements checked, median {1:F4} ms (min {2:F4}, max {3:F4}, n "
        "= {4} x {5} launches)",
        result.checked, result.medianMs, result.minMs, result.maxMs, result.samples,
        result.launchesPerSample);
  else
    outs() << ": " << result.detail;
  outs() << "\n";
  return result.status == tuning::CandidateResult::Status::Measured ? 0 : 1;
}

/// Code hashes for the entries this build measured before the tuner recorded
/// them: compiled here for each entry's arch and SM count, no GPU needed.
int stamp(const KernelRegistry &registry, StringRef path) {
  Expected<runtime::RuntimeOptions> options = runtime::RuntimeOptions::fromEnvironment();
  if (!options)
    return fail(toString(options.takeError()));
  std::shared_ptr<runtime::KernelCompiler> compiler = JitCompiler::fromEnvironment();
  tuning::StampReport report;
  if (Error err = tuning::updateTuneDb(path, [&](tuning::TuneDb &db) -> Error {
        std::set<std::pair<std::string, unsigned>> targets;
        for (const tuning::TuneEntry &e : db.entries())
          if (e.codeHash.empty())
            targets.insert({e.key.arch, e.key.smCount});
        for (const auto &[name, sms] : targets) {
          Expected<Arch> arch = Arch::parse(name);
          if (!arch) {
            report.skipped.push_back("the entries for " + name + ": " +
                                     toString(arch.takeError()));
            continue;
          }
          runtime::DeviceInfo info = runtime::compileOnlyInfo(*arch);
          info.smCount = sms;
          runtime::RuntimeOptions here = *options;
          here.archOverride = *arch;
          Expected<std::unique_ptr<runtime::JitRuntime>> jit =
              runtime::JitRuntime::create(std::make_unique<runtime::FakeDevice>(info),
                                          compiler, std::move(here));
          if (!jit)
            return jit.takeError();
          tuning::StampReport r = tuning::stampCodeHashes(
              db, registry, tuning::TuneProblemRegistry::global(), **jit);
          report.stamped += r.stamped;
          llvm::append_range(report.skipped, r.skipped);
        }
        return Error::success();
      }))
    return fail(toString(std::move(err)));
  outs() << formatv("{0}: stamped {1} entr{2} with the code hash of their winner\n", path,
                    report.stamped, report.stamped == 1 ? "y" : "ies");
  for (const std::string &s : report.skipped)
    outs() << "  left without one: " << s << "\n";
  return 0;
}

} // namespace

Expected<std::unique_ptr<runtime::JitRuntime>> cli::openGpuRuntime() {
  Expected<std::unique_ptr<runtime::DeviceApi>> device = runtime::openCudaDevice(0);
  if (!device)
    return device.takeError();
  Expected<runtime::RuntimeOptions> options = runtime::RuntimeOptions::fromEnvironment();
  if (!options)
    return options.takeError();
  return runtime::JitRuntime::create(std::move(*device), JitCompiler::fromEnvironment(),
                                     std::move(*options));
}

Expected<tuning::NamedValues> cli::parseNamedValues(ArrayRef<std::string> items,
                                                    StringRef option) {
  tuning::NamedValues out;
  for (const std::string &item : items) {
    Expected<ConstantSetting> setting = parseConstantSetting(item);
    if (!setting || setting->name.empty()) {
      consumeError(setting.takeError());
      return createStringError("%s '%s': expected name=integer", option.str().c_str(),
                               item.c_str());
    }
    out[setting->name] = setting->value;
  }
  return out;
}

Expected<std::string> cli::tuneDbPath() { return runtime::tuneDbPathFromEnvironment(); }

void cli::printResults(raw_ostream &os, const tuning::TuneReport &report) {
  for (size_t i = 0; i < report.results.size(); ++i) {
    const tuning::CandidateResult &r = report.results[i];
    os << formatv("{0} {1,-14} {2}", report.winner == i ? "*" : " ",
                  tuning::statusName(r.status), r.candidate.label());
    if (r.status == tuning::CandidateResult::Status::Measured)
      os << formatv("  median {0:F4} ms (min {1:F4}, max {2:F4}; n = {3} x {4}){5}",
                    r.medianMs, r.minMs, r.maxMs, r.samples, r.launchesPerSample,
                    r.finalRound
                        ? formatv("  final round; sweep {0:F4} ms", r.sweepMedianMs).str()
                        : std::string());
    else if (!r.detail.empty())
      os << "  -- " << StringRef(r.detail).split('\n').first;
    os << "\n";
  }
  if (report.winner && report.defaultIndex &&
      report.results[*report.defaultIndex].status ==
          tuning::CandidateResult::Status::Measured)
    os << formatv("winner {0}: {1:F4} ms vs default {2:F4} ms ({3:F3}x)\n",
                  report.results[*report.winner].candidate.label(),
                  report.results[*report.winner].medianMs,
                  report.results[*report.defaultIndex].medianMs,
                  report.results[*report.defaultIndex].medianMs /
                      report.results[*report.winner].medianMs);
}

bool tilejit::cli::tuneDbRequested() { return bool(tuneDbCmd); }

int tilejit::cli::tuneDbMain(const KernelRegistry &registry) {
  StringRef action = dbArgs[0];
  Expected<std::string> path = tuneDbPath();
  if (!path)
    return fail(toString(path.takeError()));
  if (action == "launch" && dbArgs.size() == 2)
    return launch(registry, dbArgs[1]);
  if (action == "ls" && dbArgs.size() == 1) {
    Expected<tuning::TuneDb> db = tuning::TuneDb::load(*path);
    return db ? listEntries(*db, *path) : fail(toString(db.takeError()));
  }
  if (action == "export" && dbArgs.size() == 2) {
    Expected<tuning::TuneDb> db = tuning::TuneDb::load(*path);
    if (!db)
      return fail(toString(db.takeError()));
    if (Error err = db->save(dbArgs[1]))
      return fail(toString(std::move(err)));
    outs() << formatv("exported {0} entries from {1} to {2}\n", db->entries().size(),
                      *path, dbArgs[1]);
    return 0;
  }
  if (action == "import" && dbArgs.size() == 2) {
    if (!sys::fs::exists(dbArgs[1]))
      return fail("no file '" + dbArgs[1] + "' to import");
    Expected<tuning::TuneDb> incoming = tuning::TuneDb::load(dbArgs[1]);
    if (!incoming)
      return fail(toString(incoming.takeError()));
    std::string version = tuning::tuneVersion(JitCompiler());
    std::vector<std::string> stale;
    tuning::TuneDb::MergeReport report;
    if (Error err = tuning::updateTuneDb(*path, [&](tuning::TuneDb &db) {
          report = db.merge(*incoming, version);
          for (const tuning::TuneEntry *e : report.needRevalidation)
            stale.push_back(formatv("{0} [{1}] {2} (tilejit {3})", e->key.kernel,
                                    e->key.shapeBucket, e->key.arch, e->key.version));
          return Error::success();
        }))
      return fail(toString(std::move(err)));
    outs() << formatv("imported {0} into {1}: {2} added, {3} replaced\n", dbArgs[1],
                      *path, report.added, report.replaced);
    for (const std::string &s : stale)
      outs() << "  needs re-validation before use (another tilejit version): " << s
             << "\n";
    if (!stale.empty())
      outs() << "  run 'tilejit tune --revalidate' on the GPU they were measured on\n";
    return 0;
  }
  if (action == "stamp" && dbArgs.size() == 1)
    return stamp(registry, *path);
  return fail("tunedb: expected 'ls', 'export FILE', 'import FILE', 'launch KERNEL' or "
              "'stamp'");
}
