// The state behind the embedding API's handles (not a public header: it names
// the models' front door and LLVM's error type), and the conversions between
// the API's plain types and tilejit's. Every handle wraps its counterpart in
// models/session (Backend, LoadedModel, ModelSession, ModelStep): the same
// front door `tilejit run` and the Python package use.
#ifndef TILEJIT_EMBED_EMBEDINTERNAL_H
#define TILEJIT_EMBED_EMBEDINTERNAL_H

#include "tilejit/embed/Embed.h"
#include "tilejit/models/session/Session.h"

#include "llvm/Support/Error.h"

namespace tilejit::embed {

/// `err` as an Error of `kind`, its message unchanged; an ArgumentError (the
/// caller's mistake) as InvalidArgument whatever `kind` says.
Error toError(ErrorKind kind, llvm::Error err);

struct Engine::State {
  std::shared_ptr<models::Backend> backend;
  Backend kind = Backend::Interpreter;
  int device = kHost;
};

struct Buffer::State {
  std::shared_ptr<Engine::State> engine;
  runtime::DeviceBuffer device; ///< on the GPU
  std::vector<uint8_t> host;    ///< on the interpreter
  void *data = nullptr;
  size_t size = 0;
};

struct Model::State {
  std::shared_ptr<const models::LoadedModel> model;
  ModelInfo info;
};

struct Session::State {
  std::shared_ptr<Engine::State> engine;
  std::unique_ptr<models::ModelSession> session;
};

struct DecodeStep::State {
  std::shared_ptr<Engine::State> engine;
  std::unique_ptr<models::ModelStep> step;
};

struct PrefillStep::State {
  std::shared_ptr<Engine::State> engine;
  std::unique_ptr<models::ModelStep> step;
  int64_t tokens = 0;
  std::vector<int32_t> slots; ///< one per sequence, as planned
};

} // namespace tilejit::embed

#endif // TILEJIT_EMBED_EMBEDINTERNAL_H
