// `tilejit tunedb ls|export|import|launch` and the helpers shared with `tilejit
// tune`. `launch` compiles a kernel through the runtime exactly as an application
// does (the runtime consults the database and says so), then checks and times it.
#include "Commands.h"
#include "TuneSupport.h"

#include "tilejit/Jit/JitCompiler.h"
#include "tilejit/runtime/CudaDevice.h"

#include "llvm/ADT/ScopeExit.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/raw_ostream.h"

#include <ctime>

using namespace llvm;
using namespace tilejit;

namespace {

cl::SubCommand tuneDbCmd("tunedb", "The tuning database: ls, export FILE, import FILE, "
                                   "launch KERNEL");
cl::list<std::string> dbArgs(cl::Positional, cl::desc("<ls | export FILE | import FILE | "
                                                      "launch KERNEL>"),
                             cl::OneOrMore, cl::sub(tuneDbCmd));
cl::list<std::string> launchShape("shape", cl::desc("launch: a launch size, name=value"),
                                  cl::sub(tuneDbCmd));

using cli::fail;

int listEntries(const runtime::TuneDb &db, StringRef path) {
  outs() << formatv("{0}: {1} entries\n", path, db.entries().size());
  for (const runtime::TuneEntry &e : db.entries())
    outs() << formatv("  {0,-12} [{1}] {2} {3} SMs  {4}  {5:F4} ms (default {6:F4})  tilejit "
                      "{7}, {8}, {9}{10}\n",
                      e.key.kernel, e.key.shapeBucket, e.key.arch, e.key.smCount,
                      runtime::formatNamedValues(e.config), e.medianMs, e.defaultMedianMs,
                      e.key.version, e.provenance.date, e.provenance.device,
                      e.rejected.empty() ? "" : "  REJECTED: " + e.rejected);
  return 0;
}

int launch(const KernelRegistry &registry, StringRef kernel) {
  Expected<tuning::NamedValues> shape = cli::parseNamedValues(launchShape, "--shape");
  if (!shape)
    return fail(toString(shape.takeError()));
  Expected<tuning::TuneTarget> target = cli::makeTarget(registry, kernel, {}, *shape);
  if (!target)
    return fail(toString(target.takeError()));
  Expected<std::unique_ptr<runtime::JitRuntime>> jit = cli::openGpuRuntime();
  if (!jit)
    return fail("tunedb launch needs a GPU: " + toString(jit.takeError()));
  runtime::Kernel k(**jit,
                    tuning::makeTunableKernelSpec(*target->def, target->base, target->shape));
  if (Error err = k.compile())
    return fail(toString(std::move(err)));
  Specialization used = target->base;
  for (const auto &[name, value] : k.tunedConfig())
    used.set(name, value);
  tuning::TuneOptions options;
  Expected<std::unique_ptr<tuning::MeasureSession>> session =
      tuning::MeasureSession::create(**jit, *target, options);
  if (!session)
    return fail(toString(session.takeError()));
  tuning::CandidateResult result;
  if (Error err = (*session)->measure(k, used, result))
    return fail(toString(std::move(err)));
  outs() << formatv("{0} at {1}: {2} configuration {3}: {4}", kernel,
                    runtime::formatNamedValues(target->shape),
                    k.tunedConfig().empty() ? "default" : "tuned",
                    runtime::formatNamedValues(k.tunedConfig().empty()
                                                   ? tuning::NamedValues(used.values().begin(),
                                                                         used.values().end())
                                                   : k.tunedConfig()),
                    tuning::statusName(result.status));
  if (result.status == tuning::CandidateResult::Status::Measured)
    outs() << formatv(", {0} elements checked, median {1:F4} ms (min {2:F4}, max {3:F4}, n "
                      "= {4} x {5} launches)",
                      result.checked, result.medianMs, result.minMs, result.maxMs,
                      result.samples, result.launchesPerSample);
  else
    outs() << ": " << result.detail;
  outs() << "\n";
  return result.status == tuning::CandidateResult::Status::Measured ? 0 : 1;
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
    auto [name, value] = StringRef(item).split('=');
    int64_t v;
    if (name.trim().empty() || value.trim().getAsInteger(0, v))
      return createStringError("%s '%s': expected name=integer", option.str().c_str(),
                               item.c_str());
    out[name.trim().str()] = v;
  }
  return out;
}

Expected<std::string> cli::tuneDbPath() { return runtime::tuneDbPathFromEnvironment(); }

Error cli::updateTuneDb(StringRef path,
                        const std::function<Error(runtime::TuneDb &)> &update) {
  if (StringRef dir = sys::path::parent_path(path); !dir.empty())
    if (std::error_code ec = sys::fs::create_directories(dir))
      return createStringError(ec, "cannot create the folder of '%s'", path.str().c_str());
  int fd;
  std::string lockPath = (path + ".lock").str();
  if (std::error_code ec =
          sys::fs::openFileForReadWrite(lockPath, fd, sys::fs::CD_OpenAlways, sys::fs::OF_None))
    return createStringError(ec, "cannot open '%s': %s", lockPath.c_str(),
                             ec.message().c_str());
  scope_exit closeLock([&] { sys::Process::SafelyCloseFileDescriptor(fd); });
  if (std::error_code ec = sys::fs::lockFile(fd))
    return createStringError(ec, "cannot lock '%s': %s", lockPath.c_str(),
                             ec.message().c_str());
  scope_exit unlockLock([&] { sys::fs::unlockFile(fd); });
  Expected<runtime::TuneDb> db = runtime::TuneDb::load(path);
  if (!db)
    return db.takeError();
  if (Error err = update(*db))
    return err;
  return db->save(path);
}

runtime::TuneProvenance cli::currentProvenance(const runtime::DeviceInfo &info) {
  runtime::TuneProvenance p;
  std::time_t now = std::time(nullptr);
  std::tm utc;
  gmtime_r(&now, &utc);
  char date[32];
  std::strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%SZ", &utc);
  p.date = date;
  p.device = info.name;
  p.driverVersion = info.driverVersion;
  p.clocks = "unknown (nvidia-smi not found)";
  ErrorOr<std::string> smi = sys::findProgramByName("nvidia-smi");
  SmallString<128> out;
  if (smi && !sys::fs::createTemporaryFile("tilejit-clocks", "txt", out)) {
    scope_exit removeTemp([&] { sys::fs::remove(out); });
    std::string id = std::to_string(info.ordinal);
    std::optional<StringRef> redirects[] = {std::nullopt, out.str(), std::nullopt};
    if (sys::ExecuteAndWait(*smi,
                            {*smi, "-i", id,
                             "--query-gpu=clocks.sm,clocks.mem,clocks.max.sm,driver_version",
                             "--format=csv,noheader"},
                            {}, redirects, 10) == 0)
      if (auto text = MemoryBuffer::getFile(out))
        p.clocks = "sm, mem, max sm, driver: " + (*text)->getBuffer().trim().str();
  }
  return p;
}

Expected<tuning::TuneTarget> cli::makeTarget(const KernelRegistry &registry, StringRef kernel,
                                             const tuning::NamedValues &constants,
                                             const tuning::NamedValues &shape) {
  tuning::TuneTarget target;
  target.def = registry.find(kernel);
  if (!target.def)
    return createStringError("unknown kernel '%s' (see 'tilejit list')", kernel.str().c_str());
  if (llvm::none_of(target.def->constants, [](auto &c) { return c.isTunable(); }))
    return createStringError("kernel '%s' has no tunable constant (no candidate lists)",
                             kernel.str().c_str());
  target.problem = tuning::TuneProblemRegistry::global().find(kernel);
  if (!target.problem) {
    std::string known = llvm::join(tuning::TuneProblemRegistry::global().names(), ", ");
    return createStringError("kernel '%s' has no tuning problem (launch sizes and "
                             "arguments); kernels with one: %s",
                             kernel.str().c_str(), known.c_str());
  }
  std::vector<std::string> overrides;
  for (const auto &[name, value] : constants)
    overrides.push_back(formatv("{0}={1}", name, value));
  Expected<Specialization> base = target.def->specialize(overrides);
  if (!base)
    return base.takeError();
  target.base = std::move(*base);
  target.shape = target.problem->shape;
  for (const auto &[name, value] : shape) {
    if (!target.shape.count(name))
      return createStringError("kernel '%s' has no launch size '%s' (it has: %s)",
                               kernel.str().c_str(), name.c_str(),
                               runtime::formatNamedValues(target.problem->shape).c_str());
    target.shape[name] = value;
  }
  return target;
}

void cli::printResults(raw_ostream &os, const tuning::TuneReport &report) {
  for (size_t i = 0; i < report.results.size(); ++i) {
    const tuning::CandidateResult &r = report.results[i];
    os << formatv("{0} {1,-14} {2}", report.winner == i ? "*" : " ",
                  tuning::statusName(r.status), r.candidate.label());
    if (r.status == tuning::CandidateResult::Status::Measured)
      os << formatv("  median {0:F4} ms (min {1:F4}, max {2:F4}; n = {3} x {4}){5}", r.medianMs,
                    r.minMs, r.maxMs, r.samples, r.launchesPerSample,
                    r.finalRound ? formatv("  final round; sweep {0:F4} ms", r.sweepMedianMs).str()
                                 : std::string());
    else if (!r.detail.empty())
      os << "  -- " << StringRef(r.detail).split('\n').first;
    os << "\n";
  }
  if (report.winner && report.defaultIndex &&
      report.results[*report.defaultIndex].status == tuning::CandidateResult::Status::Measured)
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
    Expected<runtime::TuneDb> db = runtime::TuneDb::load(*path);
    return db ? listEntries(*db, *path) : fail(toString(db.takeError()));
  }
  if (action == "export" && dbArgs.size() == 2) {
    Expected<runtime::TuneDb> db = runtime::TuneDb::load(*path);
    if (!db)
      return fail(toString(db.takeError()));
    if (Error err = db->save(dbArgs[1]))
      return fail(toString(std::move(err)));
    outs() << formatv("exported {0} entries from {1} to {2}\n", db->entries().size(), *path,
                      dbArgs[1]);
    return 0;
  }
  if (action == "import" && dbArgs.size() == 2) {
    if (!sys::fs::exists(dbArgs[1]))
      return fail("no file '" + dbArgs[1] + "' to import");
    Expected<runtime::TuneDb> incoming = runtime::TuneDb::load(dbArgs[1]);
    if (!incoming)
      return fail(toString(incoming.takeError()));
    std::string version = runtime::tuneVersion(JitCompiler().identity().buildId,
                                               JitCompiler().identity().llvmVersion);
    std::vector<std::string> stale;
    runtime::TuneDb::MergeReport report;
    if (Error err = updateTuneDb(*path, [&](runtime::TuneDb &db) {
          report = db.merge(*incoming, version);
          for (const runtime::TuneEntry *e : report.needRevalidation)
            stale.push_back(formatv("{0} [{1}] {2} (tilejit {3})", e->key.kernel,
                                    e->key.shapeBucket, e->key.arch, e->key.version));
          return Error::success();
        }))
      return fail(toString(std::move(err)));
    outs() << formatv("imported {0} into {1}: {2} added, {3} replaced\n", dbArgs[1], *path,
                      report.added, report.replaced);
    for (const std::string &s : stale)
      outs() << "  needs re-validation before use (another tilejit version): " << s << "\n";
    if (!stale.empty())
      outs() << "  run 'tilejit tune --revalidate' on the GPU they were measured on\n";
    return 0;
  }
  return fail("tunedb: expected 'ls', 'export FILE', 'import FILE' or 'launch KERNEL'");
}
