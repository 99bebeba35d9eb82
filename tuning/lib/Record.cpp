// Provenance of a measurement, the locked write of an entry, re-validation (an
// entry of another version is measured again against the default, here) and the
// code hashes stamped on entries recorded before they existed.
#include "tilejit/tuning/Record.h"

#include "tilejit/tuning/TunedLookup.h"

#include "llvm/ADT/ScopeExit.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Program.h"

#include <ctime>

using namespace llvm;

namespace tilejit::tuning {

TuneProvenance currentProvenance(const runtime::DeviceInfo &info) {
  TuneProvenance p;
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
    if (sys::ExecuteAndWait(
            *smi,
            {*smi, "-i", id,
             "--query-gpu=clocks.sm,clocks.mem,clocks.max.sm,driver_version",
             "--format=csv,noheader"},
            {}, redirects, 10) == 0)
      if (auto text = MemoryBuffer::getFile(out))
        p.clocks = "sm, mem, max sm, driver: " + (*text)->getBuffer().trim().str();
  }
  return p;
}

Expected<std::vector<std::string>> recordEntry(StringRef path, TuneEntry entry,
                                               const runtime::DeviceInfo &info) {
  entry.provenance = currentProvenance(info);
  std::vector<std::string> replaced;
  if (Error err = updateTuneDb(path, [&](TuneDb &db) {
        replaced = db.record(entry);
        return Error::success();
      }))
    return std::move(err);
  return replaced;
}

namespace {

/// An entry's kernel rebuilt on a runtime at the entry's constants and sizes.
struct Rebuilt {
  TuneTarget target;
  TuneKey key;
};

/// `entry`'s kernel rebuilt on `jit`, or why it cannot be: it does not build, or
/// its IR hash changed (another kernel now: the entry can never match again).
Expected<Rebuilt> rebuild(runtime::JitRuntime &jit, const KernelRegistry &kernels,
                          const TuneProblemRegistry &problems, const TuneEntry &entry) {
  Expected<TuneTarget> target =
      makeTuneTarget(kernels, problems, entry.key.kernel, entry.constants, entry.shape);
  Expected<TuneKey> key =
      target ? tuneKeyFor(jit, *target) : Expected<TuneKey>(target.takeError());
  if (!key)
    return createStringError("cannot be rebuilt: " + toString(key.takeError()));
  if (key->irHash != entry.key.irHash)
    return createStringError("the kernel's IR changed since it was tuned; re-tune it");
  return Rebuilt{std::move(*target), std::move(*key)};
}

} // namespace

Expected<Revalidation> revalidateEntry(runtime::JitRuntime &jit,
                                       const KernelRegistry &kernels,
                                       const TuneProblemRegistry &problems,
                                       const TuneEntry &entry, const TuneOptions &options,
                                       const ProgressFn &progress) {
  Revalidation result;
  if (entry.key.arch != jit.targetArch().name() ||
      entry.key.smCount != jit.device().info().smCount) {
    result.notHere =
        formatv("it needs {0} with {1} SMs", entry.key.arch, entry.key.smCount).str();
    return result;
  }
  result.verdict = entry;
  Expected<Rebuilt> rebuilt = rebuild(jit, kernels, problems, entry);
  if (!rebuilt) {
    // The entry stays visible, rejected with the reason.
    result.verdict.rejected = toString(rebuilt.takeError());
    return result;
  }
  const TuneTarget *target = &rebuilt->target;
  const TuneKey *key = &rebuilt->key;
  Candidate stored, fallback;
  stored.spec = fallback.spec = target->base;
  for (const auto &[name, value] : entry.config) {
    stored.config[name] = value;
    stored.spec.set(name, value);
    fallback.config[name] = target->base.get(name);
  }
  fallback.isDefault = true;
  Expected<TuneReport> report =
      measureCandidates(jit, *target, {fallback, stored}, options, progress);
  if (!report)
    return report.takeError();
  const CandidateResult &measured = report->results[1];
  if (measured.status != CandidateResult::Status::Measured) {
    result.verdict.key = *key;
    result.verdict.rejected = formatv("re-validation by {0}: {1}: {2}", key->version,
                                      statusName(measured.status), measured.detail);
  } else {
    result.verdict = *report->entry;
  }
  result.report = std::move(*report);
  return result;
}

StampReport stampCodeHashes(TuneDb &db, const KernelRegistry &kernels,
                            const TuneProblemRegistry &problems,
                            runtime::JitRuntime &jit) {
  StampReport report;
  std::string version = tuneVersion(jit.compiler());
  for (size_t i = 0; i < db.entries().size(); ++i) {
    const TuneEntry &e = db.entries()[i];
    if (!e.codeHash.empty() || e.key.arch != jit.targetArch().name() ||
        e.key.smCount != jit.device().info().smCount)
      continue;
    auto skip = [&](const Twine &why) {
      report.skipped.push_back(formatv("{0} [{1}] {2}: {3}", e.key.kernel,
                                       e.key.shapeBucket, e.key.arch, why.str()));
    };
    if (e.key.version != version) {
      skip("measured by tilejit " + e.key.version + ", not this build");
      continue;
    }
    Expected<Rebuilt> rebuilt = rebuild(jit, kernels, problems, e);
    if (!rebuilt) {
      skip(toString(rebuilt.takeError()));
      continue;
    }
    Expected<std::string> code =
        winnerFingerprint(jit, *rebuilt->target.def, rebuilt->target.base, e.config);
    if (!code) {
      skip("its configuration does not compile: " + toString(code.takeError()));
      continue;
    }
    db.setCodeHash(i, std::move(*code));
    ++report.stamped;
  }
  return report;
}

} // namespace tilejit::tuning
