// The narrow interface through which the runtime reaches the compiler: a request
// (canonical tile IR, an Arch, options) in, PTX and launch metadata out. The
// runtime includes no MLIR header; the MLIR -> PTX implementation lives in compiler/.
#ifndef TILEJIT_RUNTIME_COMPILERINTERFACE_H
#define TILEJIT_RUNTIME_COMPILERINTERFACE_H

#include "tilejit/runtime/KernelSignature.h"
#include "tilejit/support/Arch.h"

#include "llvm/Support/Error.h"

#include <string>
#include <vector>

namespace tilejit::runtime {

/// Compiler options that change the emitted code; all of them are part of the
/// disk cache key through canonical().
struct CompileOptions {
  /// LLVM optimization level, 0 to 3.
  unsigned optLevel = 3;
  /// The shared memory one program may use, in bytes, when the plan is sized
  /// for a smaller device than the arch's (RuntimeOptions::sharedBytesLimit);
  /// 0: the arch's own. A kernel that needs more is refused.
  int64_t sharedBytesLimit = 0;
  /// The packed weight layouts the kernel reads (formatWeightLayouts): a
  /// module is only valid with weights in these layouts, so they key it.
  std::string weightLayouts;

  /// The options as the disk cache key spells them: "O3", followed by
  /// ";shared-bytes=N" when a limit is set and ";layouts=..." when a weight
  /// is packed. Equal options give equal text.
  std::string canonical() const;
};

/// One kernel specialization to compile.
struct KernelRequest {
  /// The kernel's name, for messages and `tilejit cache ls`.
  std::string kernelName;
  /// The tile IR after specialization, printed canonically (generic form,
  /// no locations): the content the disk cache key hashes.
  std::string canonicalIR;
  /// The exact target, suffix included (sm_90a): its name is part of the
  /// disk cache key, its capability table picks the compiler's paths.
  Arch arch;
  CompileOptions options;
};

/// Grid-independent launch parameters the compiler decided.
struct LaunchInfo {
  /// 1-D thread blocks of this many threads.
  uint32_t threadsPerBlock = 128;
  /// Dynamic shared memory per block, in bytes. Above 48 KiB the launcher
  /// raises the function's limit first (the device's opt-in maximum caps it).
  uint32_t dynamicSharedBytes = 0;
  /// Programs one multiprocessor holds at once (a persistent kernel's grid is
  /// at most this many per multiprocessor).
  uint32_t programsPerSM = 1;
  /// Whether the kernel waits for the kernels before it (tile.grid_dep_wait):
  /// it may then be launched with programmatic stream serialization.
  bool waitsForPredecessors = false;

  bool operator==(const LaunchInfo &other) const = default;
};

/// How the kernel's matrix instructions add their products: exactly as f32
/// does (CUDA cores, mma.sync, the interpreter) or with fewer bits inside one
/// instruction (Hopper's e4m3 wgmma). Checks choose their band from it
/// (docs/numerics.md, R1h), never from the arch name.
enum class SumPrecision : uint8_t { Exact, Reduced };
/// "exact" or "reduced".
llvm::StringRef sumPrecisionName(SumPrecision sums);

/// Wall time of one compile stage ("tile", "llvm", "ptx", ...).
struct StageTiming {
  std::string stage;
  double ms = 0;
};

/// The compiler's output for one request: everything needed to load and
/// launch the kernel. A disk cache entry stores all of it except `timings`
/// and `warnings`.
struct CompiledKernel {
  /// PTX text, `.target` naming the request's arch.
  std::string ptx;
  /// The `.entry` to launch.
  std::string entryName;
  /// Parameters in order, as the PTX declares them.
  std::vector<KernelParam> params;
  LaunchInfo launch;
  SumPrecision sums = SumPrecision::Exact;
  /// Per-stage compile times; empty when the kernel came from a cache.
  std::vector<StageTiming> timings;
  /// Problems the compiler recovered from (a TILEJIT_DUMP_DIR it could not
  /// write), which the runtime reports through its diagnostics handler.
  std::vector<std::string> warnings;

  /// The sum of `timings`.
  double totalMs() const;
};

/// SHA-256 (64 hex digits) of what the device is handed of `kernel`: its PTX,
/// entry, launch sizes and parameters, not its compile times or warnings.
/// Two compiles with equal fingerprints run the same code the same way, so a
/// time measured for one holds for the other (the tuning database relies on
/// it across compiler builds).
std::string codeFingerprint(const CompiledKernel &kernel);

/// The toolchain's identity; part of every disk cache key, so that a rebuilt
/// tilejit or another LLVM never loads an entry an older one wrote.
struct CompilerIdentity {
  /// Changes whenever the compiler's code does (e.g. commit + dirty-tree hash).
  std::string buildId;
  /// LLVM/MLIR version string ("22.1.0").
  std::string llvmVersion;
};

/// The compiler as the runtime sees it. Implementations must allow compile()
/// to run on several threads at once (the runtime compiles a model's kernels
/// in parallel at load).
class KernelCompiler {
public:
  virtual ~KernelCompiler();

  /// The toolchain identity keyed into the disk cache.
  virtual CompilerIdentity identity() const = 0;

  /// Compiles `request` to PTX. Errors carry the compiler's diagnostics.
  virtual llvm::Expected<CompiledKernel> compile(const KernelRequest &request) = 0;
};

} // namespace tilejit::runtime

#endif // TILEJIT_RUNTIME_COMPILERINTERFACE_H
