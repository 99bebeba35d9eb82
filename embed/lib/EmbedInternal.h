// The state behind the embedding API's handles (not a public header: it names
// the runtime, the plans and LLVM's error type), and the conversions between
// the API's plain types and tilejit's.
#ifndef TILEJIT_EMBED_EMBEDINTERNAL_H
#define TILEJIT_EMBED_EMBEDINTERNAL_H

#include "tilejit/embed/Embed.h"
#include "tilejit/models/nemotron_h/Planner.h"
#include "tilejit/runtime/Jit.h"

#include "llvm/Support/Error.h"

namespace tilejit::embed {

/// `err` as an Error of `kind`, its message unchanged.
Error toError(ErrorKind kind, llvm::Error err);

/// The registered kernels of the models (the Mamba2 ops), registered once.
/// Errors: a registration that failed (Run, with its message).
Result<const KernelRegistry *> modelRegistry();

struct Engine::State {
  EngineOptions options;
  Backend backend = Backend::Interpreter;
  int device = kHost;
  std::string description;
  /// The JIT runtime on the GPU; null on the interpreter.
  std::unique_ptr<runtime::JitRuntime> jit;

  /// Passes `text` to the options' log, one line at a time.
  void say(llvm::StringRef text) const;
};

struct Buffer::State {
  std::shared_ptr<Engine::State> engine;
  runtime::DeviceBuffer device; ///< on the GPU
  std::vector<uint8_t> host;    ///< on the interpreter
  void *data = nullptr;
  size_t size = 0;
};

struct Model::State {
  models::NemotronHConfig config;
  /// The loaded Mamba layers; plans borrow their bytes, so steps keep the
  /// model's state alive.
  std::vector<models::MambaLayerWeights> weights;
  ModelInfo info;
};

struct Session::State {
  std::shared_ptr<Engine::State> engine;
  std::shared_ptr<const Model::State> model;
  int64_t slots = 0;
  models::KernelOverrides overrides;
  /// The weights and pages every GPU step of the session shares.
  std::shared_ptr<models::GpuSharedState> gpu;
  /// The pages on the interpreter, by plan buffer name (each step swaps them
  /// into its buffers for a run).
  models::HostBuffers pages;
};

/// What a decode and a prefill step share: the plan on the session's backend.
struct StepState {
  std::shared_ptr<Session::State> session;
  models::StepPlan plan;
  std::unique_ptr<models::GpuRunner> gpu;
  std::unique_ptr<models::InterpreterRunner> interpreter;
  /// The interpreter's buffers, pages excepted (the session holds those).
  models::HostBuffers host;

  /// One step: `hidden` into the plan's input, `slots` into its slots, the
  /// last layer's output into `out`, checked first (nothing runs when a
  /// tensor or a slot disagrees with the plan).
  Status run(const TensorView &hidden, const std::vector<int32_t> &slots,
             const TensorView &out, Stream stream);
};

/// Makes the runner of `plan` on the session's backend, the plan's inputs
/// (`inputs`: a prefill's batch metadata) uploaded, the session's new pages zeroed.
Result<std::unique_ptr<StepState>> makeStep(std::shared_ptr<Session::State> session,
                                            models::StepPlan plan,
                                            const models::HostBuffers &inputs);

struct DecodeStep::State {
  std::unique_ptr<StepState> step;
};

struct PrefillStep::State {
  std::unique_ptr<StepState> step;
  int64_t tokens = 0;
  std::vector<int32_t> slots; ///< one per sequence, as planned
};

} // namespace tilejit::embed

#endif // TILEJIT_EMBED_EMBEDINTERNAL_H
