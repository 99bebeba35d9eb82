// The tuned-constant lookup: the key of a kernel instance on a runtime, the
// database that runtime is configured with, and what an entry found means.
#include "tilejit/tuning/TunedLookup.h"

#include "tilejit/jit/JitCompiler.h"
#include "tilejit/runtime/Kernel.h"
#include "tilejit/tuning/ShippedTuneDb.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"

#include <set>

using namespace llvm;

namespace tilejit::tuning {

std::string tuneVersion(const runtime::KernelCompiler &compiler) {
  runtime::CompilerIdentity identity = compiler.identity();
  return tuneVersion(identity.buildId, identity.llvmVersion);
}

Expected<TuneKey> tuneKeyFor(runtime::JitRuntime &jit, const TuneTarget &target) {
  // The tunable constants at their defaults, as a plan looks the kernel up:
  // a tune that fixes one (--set warps=8 at a plan's value) records an entry
  // that plan finds, the fixed value in its configuration.
  Expected<Specialization> base = tuningBase(*target.def, target.base.values());
  if (!base)
    return base.takeError();
  Expected<std::string> ir = buildCanonicalIR(*target.def, *base);
  if (!ir)
    return ir.takeError();
  NamedValues keyed;
  for (const std::string &axis : target.def->tuningKey)
    if (auto it = target.shape.find(axis); it != target.shape.end())
      keyed.insert(*it);
  return TuneKey{target.def->name,
                 hashKernelIR(*ir),
                 shapeBucket(keyed),
                 jit.targetArch().name().str(),
                 jit.device().info().smCount,
                 tuneVersion(jit.compiler())};
}

namespace {

/// Whether the database at `path` is the one in use: it is configured and its
/// file exists. Otherwise the shipped one stands in.
bool configuredExists(StringRef path) { return !path.empty() && sys::fs::exists(path); }

/// The name messages give the database in use for configured `path`.
std::string nameInUse(StringRef path) {
  return configuredExists(path) ? path.str() : shippedTuneDbName().str();
}

/// "N entries, M of them measured by this build (V)...: K on A (S SMs) at B, ...".
std::string describeEntries(const TuneDb &db, StringRef currentVersion) {
  // Buckets per kernel and device, in the order the entries were recorded.
  std::vector<std::pair<std::string, std::vector<std::string>>> targets;
  std::set<std::string> others;
  size_t current = 0;
  for (const TuneEntry &e : db.entries()) {
    std::string target =
        formatv("{0} on {1} ({2} SMs)", e.key.kernel, e.key.arch, e.key.smCount);
    auto it = find_if(targets, [&](const auto &t) { return t.first == target; });
    if (it == targets.end())
      it = targets.insert(targets.end(), {target, {}});
    it->second.push_back(e.key.shapeBucket);
    if (e.key.version == currentVersion)
      ++current;
    else
      others.insert(e.key.version);
  }
  std::string text = formatv("{0} entr{1}, {2} of them measured by this build ({3})",
                             db.entries().size(), db.entries().size() == 1 ? "y" : "ies",
                             current, currentVersion);
  if (!others.empty())
    text += formatv(", the others by {0} (used where this build compiles their "
                    "winners to the code measured, the rest after 'tilejit tune "
                    "--revalidate')",
                    join(others, ", "));
  const char *sep = ": ";
  for (const auto &[target, buckets] : targets) {
    text += formatv("{0}{1} at {2}", sep, target, join(buckets, ", "));
    sep = "; ";
  }
  return text;
}

/// Why an entry's configuration must not be used for `def`, or "": it names a
/// constant the kernel lacks, or one without a candidate list. Only those
/// with lists are launch choices; any other (a shape, a form, k_splits) would
/// change what the launch computes or which buffers it reads, so such an
/// entry is refused whole.
std::string unusableConfig(const KernelDef &def, const NamedValues &config) {
  std::vector<std::string> unknown, notChoices;
  for (const auto &[name, value] : config) {
    auto c =
        find_if(def.constants, [&](const KernelConstant &k) { return k.name == name; });
    if (c == def.constants.end())
      unknown.push_back(name);
    else if (!c->isTunable())
      notChoices.push_back(name);
  }
  if (!unknown.empty())
    return formatv("has an entry for constants the kernel does not have ({0}); using "
                   "the defaults",
                   join(unknown, ", "));
  if (!notChoices.empty())
    return formatv("has an entry that sets {0}, not tuned launch choices of the kernel "
                   "(they change what it computes); refused, using the defaults",
                   join(notChoices, ", "));
  return "";
}

} // namespace

TuneDb loadTuneDb(runtime::JitRuntime &jit) {
  StringRef path = jit.tuneDbPath();
  Expected<TuneDb> db = configuredExists(path) ? TuneDb::load(path) : shippedTuneDb();
  if (db)
    return std::move(*db);
  jit.warn(toString(db.takeError()) + "; no tuned configuration is used");
  return TuneDb();
}

std::string describeTuneDb(StringRef path, StringRef currentVersion) {
  if (configuredExists(path)) {
    Expected<TuneDb> db = TuneDb::load(path);
    if (!db)
      return toString(db.takeError()) + "; nothing tuned is used";
    if (db->entries().empty())
      return formatv("tuning database {0}: none there", path);
    return formatv("tuning database {0}: {1}", path,
                   describeEntries(*db, currentVersion));
  }
  std::string configured = path.empty()
                               ? std::string("tuning database: none configured")
                               : formatv("tuning database {0}: none there", path).str();
  Expected<TuneDb> shipped = shippedTuneDb();
  if (!shipped)
    return configured + "; " + toString(shipped.takeError());
  return formatv("{0}; using {1}: {2}", configured, shippedTuneDbName(),
                 describeEntries(*shipped, currentVersion));
}

Expected<Specialization> tuningBase(const KernelDef &def,
                                    const ConstantValues &constants) {
  ConstantValues fixed = constants;
  for (const KernelConstant &c : def.constants)
    if (c.isTunable())
      fixed.erase(c.name);
  return def.specialize(fixed);
}

TunedChoice lookupTuned(runtime::JitRuntime &jit, const TuneDb &db, const KernelDef &def,
                        const Specialization &base, const NamedValues &shape) {
  TunedChoice choice;
  Expected<TuneKey> key = tuneKeyFor(jit, {&def, nullptr, base, shape});
  if (!key) {
    consumeError(key.takeError());
    return choice;
  }
  choice.key = std::move(*key);
  auto [match, entry] = db.lookup(choice.key);
  choice.match = match;
  if (match == TuneMatch::None)
    return choice;
  std::string where =
      formatv("tuning database {0}: {1} ({2}, {3}, {4} SMs)", nameInUse(jit.tuneDbPath()),
              def.name, choice.key.shapeBucket, choice.key.arch, choice.key.smCount);
  if (match == TuneMatch::Rejected) {
    choice.message =
        formatv("{0} has an entry rejected by re-validation ({1}); using the "
                "defaults",
                where, entry->rejected);
    return choice;
  }
  if (std::string why = unusableConfig(def, entry->config); !why.empty()) {
    choice.message = where + " " + why;
    return choice;
  }
  std::string measuredBy;
  if (match == TuneMatch::OtherVersion) {
    std::string unused = formatv("{0} has an entry measured by tilejit {1}, not this {2}",
                                 where, entry->key.version, choice.key.version);
    const char *until =
        "; using the defaults until it is re-validated ('tilejit tune --revalidate')";
    if (entry->codeHash.empty()) {
      choice.message = unused + until;
      return choice;
    }
    Expected<std::string> code = winnerFingerprint(jit, def, base, entry->config);
    if (!code) {
      choice.message =
          formatv("{0}, and its configuration does not compile here ({1}){2}", unused,
                  toString(code.takeError()), until);
      return choice;
    }
    if (*code != entry->codeHash) {
      choice.message = unused + ", which compiled it to other code" + until;
      return choice;
    }
    choice.sameCode = true;
    measuredBy = formatv(" by tilejit {0}, whose code for it this build generates "
                         "unchanged",
                         entry->key.version);
  }
  choice.config = entry->config;
  choice.message = formatv(
      "{0} uses {1} (tuned {2} on {3}{4}: {5:F4} ms, default {6:F4} ms)", where,
      formatNamedValues(entry->config), entry->provenance.date, entry->provenance.device,
      measuredBy, entry->medianMs, entry->defaultMedianMs);
  return choice;
}

Expected<std::string> winnerFingerprint(runtime::JitRuntime &jit, const KernelDef &def,
                                        const Specialization &base,
                                        const ConstantValues &config) {
  Specialization spec = base;
  for (const auto &[name, value] : config)
    spec.set(name, value);
  runtime::Kernel kernel(jit, makeKernelSpec(def, spec));
  if (Error err = kernel.compile())
    return std::move(err);
  return runtime::codeFingerprint(*kernel.compiled());
}

} // namespace tilejit::tuning
