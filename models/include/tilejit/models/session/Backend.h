// Where a model step runs, opened the same way by every front door (the CLI's
// `tilejit run`, the embedding API, the Python package): the JIT runtime on a
// GPU (its arch, its caches, the tuning database found as docs/design.md says), a
// compile-only runtime that plans and compiles for an arch without a GPU, or
// the CPU interpreter. It also makes the plan options every plan of a backend
// is made with, so no front door can plan without the arch or the database.
#ifndef TILEJIT_MODELS_SESSION_BACKEND_H
#define TILEJIT_MODELS_SESSION_BACKEND_H

#include "tilejit/models/nemotron_h/Planner.h"
#include "tilejit/runtime/Jit.h"

#include <functional>
#include <memory>
#include <optional>
#include <string>

namespace tilejit::models {

/// An argument the caller got wrong (a layer count the model lacks, a session
/// without slots, a step tensor that disagrees with the plan, bad slots):
/// nothing was done. Front doors report it as the caller's mistake, and other
/// errors of the same call as the checkpoint's or the device's.
class ArgumentError : public llvm::ErrorInfo<ArgumentError> {
public:
  static char ID;
  explicit ArgumentError(std::string message) : message(std::move(message)) {}
  void log(llvm::raw_ostream &os) const override { os << message; }
  std::error_code convertToErrorCode() const override {
    return llvm::inconvertibleErrorCode();
  }

private:
  std::string message;
};

enum class BackendKind : uint8_t {
  Auto,        ///< the GPU when a driver and a device are present, else the interpreter
  Gpu,         ///< the GPU, or an error saying why there is none
  Interpreter, ///< the CPU interpreter (the GPU's numerics, slowly)
  CompileOnly, ///< plans and compiles for an arch without a GPU; steps do not run
};
/// "auto", "gpu", "interpreter", "compile-only".
llvm::StringRef backendKindName(BackendKind kind);

struct BackendOptions {
  BackendKind kind = BackendKind::Auto;
  int device = 0; ///< the CUDA ordinal
  /// Compile for this arch instead of the device's (else TILEJIT_ARCH); a
  /// compile-only backend needs one, from here, `planArch` or the environment.
  std::optional<Arch> arch;
  /// Plan for this arch's device (its tiles, its shared memory). On a GPU of
  /// another arch the kernels are the portable sm_90 build of that plan (sm_90
  /// or sm_90a itself for a Hopper plan), each held to that device's shared
  /// memory; on the interpreter it only picks the plan. Default: the arch the
  /// runtime compiles for; none on the interpreter.
  std::optional<Arch> planArch;
  /// The disk cache; empty: TILEJIT_CACHE_DIR and its defaults.
  std::string cacheDirectory;
  /// False: no disk cache (as TILEJIT_NO_CACHE=1).
  bool diskCache = true;
  /// The tuning database; empty: TILEJIT_TUNE_DB, else tune.json in the cache
  /// directory, and while that file does not exist the database shipped with
  /// tilejit (tuning/ShippedTuneDb.h).
  std::string tuneDatabase;
  /// Wraps the CUDA device once opened (the Python module lends caller
  /// streams through such a wrapper); none: the device as opened.
  std::function<std::unique_ptr<runtime::DeviceApi>(std::unique_ptr<runtime::DeviceApi>)>
      wrapDevice;
  /// Receives what the backend says, one message at a time: the runtime's
  /// notes (tuned configurations used or not), each step's compile report.
  /// None: nothing is said.
  std::function<void(llvm::StringRef)> log;
};

/// The JIT runtime on one device (or compile-only), or the interpreter, with
/// the model kernels it plans with. Shared by the sessions made on it.
class Backend {
public:
  /// Errors: BackendKind::Gpu without a usable GPU (the driver's reason), a
  /// runtime that cannot start (an unusable cache directory, an arch without a
  /// table row), a compile-only backend without an arch, a kernel
  /// registration that failed.
  static llvm::Expected<std::shared_ptr<Backend>> open(BackendOptions options);
  ~Backend();
  Backend(const Backend &) = delete;
  Backend &operator=(const Backend &) = delete;

  /// Gpu, Interpreter or CompileOnly: what Auto chose.
  BackendKind kind() const;
  /// The runtime; null on the interpreter.
  runtime::JitRuntime *jit() const;
  /// The arch plans are made for: planArch, else the runtime's target; none
  /// on an interpreter without planArch (the tiles every arch runs).
  std::optional<Arch> planArch() const;
  /// "gpu: NVIDIA H200, compiling for sm_90a", "compile-only: sm_121a",
  /// "interpreter (no GPU: ...)", with the portable plan's device when there
  /// is one.
  const std::string &describe() const;
  /// The tuning database and what it holds for this build (one line).
  std::string describeTuneDb() const;
  /// The model kernels (the Mamba2 ops and the examples), registered once.
  const KernelRegistry &registry() const;
  /// The runtime's load statistics; zero on the interpreter.
  runtime::LoadStatsSnapshot stats() const;
  /// Passes `text` to the options' log, one line at a time.
  void say(llvm::StringRef text) const;

  /// What every plan on this backend is made with: `overrides` (must they
  /// name a kernel the plan launches?), the tuning database's choices for
  /// `rows` decode rows or `tokens` prefill tokens (runtime backends only; each
  /// choice said once through the log), the plan arch, and per-layer
  /// activations when `perLayerActivations` (checks read every layer's
  /// intermediates).
  PlanOptions planOptions(const KernelOverrides &overrides, bool overridesMustApply,
                          int64_t rows, int64_t tokens, bool perLayerActivations) const;

  struct State;

private:
  explicit Backend(std::unique_ptr<State> state);
  std::unique_ptr<State> state;
};

/// The model kernels (registerModelKernels and registerExampleKernels) in a
/// registry of their own, registered on first use. Every front door plans
/// with these. Errors: a registration that failed, with its message.
llvm::Expected<const KernelRegistry &> modelKernels();

} // namespace tilejit::models

#endif // TILEJIT_MODELS_SESSION_BACKEND_H
