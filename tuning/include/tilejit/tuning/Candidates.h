// The candidate configurations of a kernel: the product of its tunable constants'
// candidate lists, pruned by static limits (constraints between tiles and sizes,
// threads, shared memory, registers, the arch's capabilities) before compiling.
#ifndef TILEJIT_TUNING_CANDIDATES_H
#define TILEJIT_TUNING_CANDIDATES_H

#include "tilejit/support/Arch.h"
#include "tilejit/tuning/TuneProblem.h"

#include "llvm/Support/JSON.h"

namespace tilejit::tuning {

/// What a program of the target may use.
struct StaticLimits {
  ArchCapabilities caps{};
  int64_t maxThreadsPerBlock = 1024;
  /// Dynamic shared memory one program may opt in to, in bytes.
  int64_t maxSharedBytes = 0;
  /// 32-bit registers one tile value may take per thread. Half of the 255 a
  /// thread can address: the rest hold operand fragments, addresses and
  /// loop state (a 128x128 f32 accumulator on 4 warps, 128 per thread,
  /// compiles to 226-255 registers: docs/BENCHMARKS.md, "Example kernels").
  int64_t maxTileWordsPerThread = 128;
};

/// The limits of `arch` from tilejit's table, for dry runs without a GPU
/// (shared memory: 227 KiB on sm_90/sm_90a/sm_110a, 99 KiB on sm_121a).
StaticLimits limitsForArch(const Arch &arch);

/// One configuration to try.
struct Candidate {
  /// The tunable constants' values.
  NamedValues config;
  /// Every constant: the fixed ones and `config`.
  Specialization spec;
  bool isDefault = false;
  /// Why it is not compiled; empty while it is kept.
  std::string pruned;
  /// From the static analysis, when it got that far (0 otherwise).
  int64_t threads = 0, sharedBytes = 0, tileWordsPerThread = 0;
  /// hashKernelIR of the kernel as built (empty if it did not build):
  /// candidates with equal hashes are one kernel, e.g. where a constant only
  /// one form of the kernel reads varies in another form.
  std::string irHash;

  /// "block_k=64,block_m=128,..." (default) marked.
  std::string label() const;
  llvm::json::Value toJSON() const;
};

/// The product of the candidate lists of `def`'s tunable constants (each list
/// with the constant's default first) over `base`; constants named in `fixed`
/// keep their value in `base`. The all-defaults candidate comes first.
std::vector<Candidate> enumerateCandidates(const KernelDef &def,
                                           const Specialization &base,
                                           llvm::ArrayRef<std::string> fixed = {});

/// Prunes `candidate` when the problem's constraints reject it at `shape`,
/// when it does not build or its layouts cannot be assigned, or when the
/// static analysis of its tile IR (after layout assignment and pipelining)
/// exceeds `limits`. Sets `pruned` and the facts.
void pruneCandidate(const KernelDef &def, const TuneProblem *problem,
                    const NamedValues &shape, const StaticLimits &limits,
                    const Arch &arch, Candidate &candidate);

/// Every candidate of `target` (the constants named in `fixed` not tuned),
/// each pruned for `limits` on `arch`, and pruned as a repeat when it builds
/// the same kernel as an earlier one kept (the default never is): what
/// `tilejit tune` measures, or lists with --dry-run.
std::vector<Candidate> prunedCandidates(const TuneTarget &target,
                                        const StaticLimits &limits, const Arch &arch,
                                        llvm::ArrayRef<std::string> fixed);

} // namespace tilejit::tuning

#endif // TILEJIT_TUNING_CANDIDATES_H
