// The state behind a session and its steps (not a public header).
#ifndef TILEJIT_MODELS_SESSION_SESSIONINTERNAL_H
#define TILEJIT_MODELS_SESSION_SESSIONINTERNAL_H

#include "tilejit/models/session/Session.h"

#include <cstring>

namespace tilejit::models {

struct ModelSession::State {
  std::shared_ptr<Backend> backend;
  std::shared_ptr<const LoadedModel> model;
  SessionOptions options;
  /// The weights and pages every GPU step of the session shares.
  std::shared_ptr<GpuSharedState> gpu;
  /// The pages on the interpreter, by plan buffer name (each step swaps them
  /// into its buffers while it runs).
  HostBuffers pages;

  /// The backend's plan options with the session's settings.
  PlanOptions planOptions(int64_t rows, int64_t tokens) const;
};

struct ModelStep::State {
  std::shared_ptr<ModelSession::State> session;
  StepPlan plan;
  std::unique_ptr<GpuRunner> gpu;
  std::unique_ptr<InterpreterRunner> interpreter;
  /// The interpreter's buffers, pages excepted (the session holds those).
  HostBuffers host;
  /// The slots of the last step (-1 before the first): every upload to a
  /// GpuRunner carries them, since it checks them first.
  std::vector<int32_t> slots;
  /// Stochastic rounding's seed for the next step (ModelStep::seed).
  int64_t seed = 0;

  std::vector<uint8_t> slotBytes() const {
    std::vector<uint8_t> bytes(slots.size() * sizeof(int32_t));
    std::memcpy(bytes.data(), slots.data(), bytes.size());
    return bytes;
  }
};

} // namespace tilejit::models

#endif // TILEJIT_MODELS_SESSION_SESSIONINTERNAL_H
