// The one tuned-constant lookup: what the tuning database holds for a kernel
// instance on a runtime, and the one message that says what was found. Every
// kernel built with tuned constants goes through it (the model plans,
// `tilejit tunedb launch`); the runtime itself knows nothing of tuning.
#ifndef TILEJIT_TUNING_TUNEDLOOKUP_H
#define TILEJIT_TUNING_TUNEDLOOKUP_H

#include "tilejit/runtime/Jit.h"
#include "tilejit/tuning/TuneProblem.h"

#include <string>
#include <vector>

namespace tilejit::tuning {

/// The version stamped on entries measured with `compiler`: its build id and
/// LLVM version (tuneVersion of its identity).
std::string tuneVersion(const runtime::KernelCompiler &compiler);

/// The database key of `target` on this runtime's device: the hash of the
/// canonical IR of `target.base` with its tunable constants at their defaults
/// (tuningBase, so a value --set fixed keys as a plan's own does), the bucket of the
/// launch sizes its kernel's tuning key names, the arch, the SM count and the runtime
/// compiler's version.
llvm::Expected<TuneKey> tuneKeyFor(runtime::JitRuntime &jit, const TuneTarget &target);

/// The database of `jit` (RuntimeOptions::tuneDbPath); while none is
/// configured or its file does not exist yet, the one shipped with tilejit
/// (ShippedTuneDb.h). A file that cannot be read is reported through the
/// runtime's warnings and treated as empty.
TuneDb loadTuneDb(runtime::JitRuntime &jit);

/// One line naming the database at `path` and what it holds, for a program
/// configured from it to say so (`tilejit run` does): "tuning database P: 5
/// entries, 5 of them measured by this build (<currentVersion>): in_proj_conv
/// on sm_90a (132 SMs) at rows<=1, rows<=8; ...", with the other versions
/// named when some entries are not this build's; "... none there" for an
/// empty file (the kernels keep their registered defaults); for a missing
/// file or none configured, that, then "; using <the shipped database>: ..."
/// and what it holds; the reading error (which names the file) for a file
/// that cannot be read.
std::string describeTuneDb(llvm::StringRef path, llvm::StringRef currentVersion);

/// `def` at `constants` with every tunable constant at its default: the
/// instance `tilejit tune` keys its entry by.
llvm::Expected<Specialization> tuningBase(const KernelDef &def,
                                          const ConstantValues &constants);

/// What the database holds for one kernel instance.
struct TunedChoice {
  TuneKey key;
  TuneMatch match = TuneMatch::None;
  /// The tuned values of the tunable constants; empty: the defaults.
  ConstantValues config;
  /// What was found, for the user; empty when there is no entry.
  std::string message;
  /// An entry of another version used because this build compiles its
  /// winner to the code that build measured (TuneEntry::codeHash).
  bool sameCode = false;
};

/// The entry of `db` for `def` at `base` (tunable constants at their
/// defaults, see tuningBase) launched at `shape` on `jit`: a current entry's
/// configuration, or an entry of another version whose winner this build
/// compiles to the code measured (its codeHash; the winner is compiled here
/// to check), or none with the reason in the message (another version's
/// entry without a code hash or whose code changed, a rejected one, one naming constants
/// the kernel lacks, one refused for setting constants without candidate lists: shapes,
/// forms, split counts, whose values change what the launch computes). A base that does
/// not build has no key and finds nothing.
TunedChoice lookupTuned(runtime::JitRuntime &jit, const TuneDb &db, const KernelDef &def,
                        const Specialization &base, const NamedValues &shape);

/// runtime::codeFingerprint of `def` at `base` with `config` set, compiled by
/// `jit` as the tuner compiles its candidates (default compile options).
llvm::Expected<std::string> winnerFingerprint(runtime::JitRuntime &jit,
                                              const KernelDef &def,
                                              const Specialization &base,
                                              const ConstantValues &config);

} // namespace tilejit::tuning

#endif // TILEJIT_TUNING_TUNEDLOOKUP_H
