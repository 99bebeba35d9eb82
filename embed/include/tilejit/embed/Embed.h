// tilejit's embedding API: load a NemotronH checkpoint (or the embedded synthetic
// weights), build decode and prefill steps of its Mamba2 mixers on the GPU or the
// CPU interpreter, run them on the caller's memory and stream, and read what
// loading cost. Standard C++ only: no LLVM, MLIR or CUDA header is needed to use
// it (tests/check/embed_headers.py holds this header and examples/ to that).
// Errors are values (Result.h). Objects are cheap handles to shared state and
// are not thread-safe: one thread drives an engine and what it made.
#ifndef TILEJIT_EMBED_EMBED_H
#define TILEJIT_EMBED_EMBED_H

#include "tilejit/embed/Result.h"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace tilejit::embed {

/// The `device` of memory on the host.
constexpr int kHost = -1;

/// Element types of the tensors a step takes and returns.
enum class DType { BF16, F32, I32 };
/// "bf16", "f32", "i32".
const char *dtypeName(DType type);
size_t dtypeBytes(DType type);

/// A caller's tensor, described without a copy: element type, dense row-major
/// shape, where it lives (a CUDA device ordinal, or kHost) and its address.
struct TensorView {
  DType dtype = DType::BF16;
  std::vector<int64_t> shape;
  int device = kHost;
  void *data = nullptr;
};

/// A CUDA stream of the engine's device (a CUstream or cudaStream_t, cast);
/// nullptr is the legacy default stream. The interpreter ignores it.
using Stream = void *;

enum class Backend {
  Auto,        ///< the GPU when a driver and a device are present, else the interpreter
  Gpu,         ///< the GPU, or an error saying why there is none
  Interpreter, ///< the CPU interpreter (the GPU's numerics, slowly)
  /// No GPU: steps are planned and compiled for `EngineOptions::arch` (the
  /// disk cache filled ahead of deployment) but do not run.
  CompileOnly,
};
/// "auto", "gpu", "interpreter", "compile-only".
const char *backendName(Backend backend);

struct EngineOptions {
  Backend backend = Backend::Auto;
  int device = 0; ///< the CUDA ordinal
  /// Compile for this arch ("sm_90a", "sm_110a", "sm_121a", ...) instead of
  /// the device's (else TILEJIT_ARCH); CompileOnly needs one, here, in
  /// `planArch` or in TILEJIT_ARCH.
  std::string arch;
  /// Plan for this arch's device (its tiles and shared memory); on a GPU of
  /// another arch the steps run the portable sm_90 build of that plan.
  /// Empty: the arch the engine compiles for (none on the interpreter).
  std::string planArch;
  /// The disk cache of compiled kernels; empty: TILEJIT_CACHE_DIR, else
  /// $XDG_CACHE_HOME/tilejit, else ~/.cache/tilejit.
  std::string cacheDirectory;
  /// The tuning database the steps' kernels are configured from; empty:
  /// TILEJIT_TUNE_DB, else tune.json in the cache directory, and while that
  /// file does not exist the database shipped with tilejit.
  std::string tuneDatabase;
  /// Receives what loading says, one line at a time: each step's compile
  /// report and the tuning database's choices. None: nothing is said.
  std::function<void(const std::string &line)> log;
};

/// What loading cost an engine so far (runtime::LoadStats): the interpreter
/// uploads and compiles nothing.
struct LoadStatistics {
  uint64_t bytesUploaded = 0, modulesCompiled = 0, modulesLoaded = 0, memoryHits = 0,
           diskHits = 0, corruptEntries = 0;
  /// Compile time per stage ("lower", "codegen", ...), milliseconds.
  std::map<std::string, double> compileMsByStage;
  /// One line with every counter.
  std::string text;
};

/// Memory where an engine's steps read and write tensors: device memory on the
/// GPU, host memory on the interpreter. Freed when the last handle goes.
class Buffer {
public:
  void *data() const;
  size_t size() const;
  /// The engine's device ordinal, or kHost.
  int device() const;
  /// The buffer's start as a tensor of `dtype` and `shape`. Errors
  /// (InvalidArgument): a shape with a negative extent or more bytes than the
  /// buffer holds.
  Result<TensorView> view(DType dtype, std::vector<int64_t> shape) const;

  struct State;
  explicit Buffer(std::shared_ptr<State> state) : state(std::move(state)) {}

private:
  std::shared_ptr<State> state;
};

/// The JIT runtime on one GPU (kernel caches, load statistics), or the
/// interpreter.
class Engine {
public:
  /// Errors (Device): Backend::Gpu without a usable GPU, a runtime that
  /// cannot start (an unusable cache directory, an arch without a table row),
  /// CompileOnly without an arch. An unknown arch name is InvalidArgument.
  static Result<Engine> open(const EngineOptions &options = {});
  /// Gpu, Interpreter or CompileOnly: what Auto chose.
  Backend backend() const;
  /// Where step tensors must live: the device ordinal, or kHost.
  int device() const;
  /// "gpu: NVIDIA H200, compiling for sm_90a", "compile-only: ..." or
  /// "interpreter (no GPU: ...)".
  const std::string &describe() const;
  LoadStatistics stats() const;
  /// `bytes` of the engine's memory. Errors (Device): out of memory.
  Result<Buffer> allocate(size_t bytes);
  /// Copies between the host and an engine buffer, complete on return.
  /// Errors: more bytes than the buffer holds (InvalidArgument), a copy that
  /// fails (Device).
  Status upload(const Buffer &dst, const void *src, size_t bytes);
  Status download(void *dst, const Buffer &src, size_t bytes);
  /// Waits for the work queued on `stream` (nothing to wait for on the interpreter).
  Status synchronize(Stream stream);

  struct State;
  explicit Engine(std::shared_ptr<State> state) : state(std::move(state)) {}

private:
  friend class Session;
  std::shared_ptr<State> state;
};

struct ModelOptions {
  /// A checkpoint directory (config.json, hf_quant_config.json when quantized,
  /// safetensors shards; docs/models.md says which it takes); empty: the
  /// embedded synthetic weights at the full NemotronH geometry.
  std::string checkpoint;
  /// The first `layers` Mamba layers; 0: every Mamba layer of the model.
  int layers = 0;
  /// Called as each layer is read or generated: (done, total).
  std::function<void(int done, int total)> progress;
};

/// A loaded model: its geometry, layer kinds and the weights of its Mamba layers.
struct ModelInfo {
  /// The checkpoint directory, or "embedded synthetic NemotronH".
  std::string source;
  int64_t hiddenSize = 0, numHeads = 0, headDim = 0, numGroups = 0, stateSize = 0,
          convKernel = 0, chunkSize = 0;
  /// One character per layer of the model: 'M' Mamba, 'E' MoE, '*' attention,
  /// '-' MLP.
  std::string layerPattern;
  /// The Mamba layers of the model, and the indices of those loaded (the
  /// first ones, in order).
  int64_t mambaLayers = 0;
  std::vector<int64_t> loadedLayers;
  /// Loaded layers whose projections are FP8 (both), bf16 (both) or one of each.
  int fp8Layers = 0, bf16Layers = 0, mixedLayers = 0;
  /// Where the checkpoint declares its quantization; empty when it does not.
  std::string quantization;
  /// The prefix of the checkpoint's tensor names ("language_model."), or empty.
  std::string tensorPrefix;
  /// Host bytes of the loaded weights and the time loading took.
  uint64_t weightBytes = 0;
  double loadMs = 0;
  /// "10 layers: 5 Mamba, 4 MoE, 1 attention".
  std::string describeLayers() const;
};

class Model {
public:
  /// Errors: a checkpoint that cannot be loaded (Checkpoint, naming the file
  /// or tensor and what disagrees), more layers than the model has
  /// (InvalidArgument), a model without Mamba layers (Checkpoint).
  static Result<Model> load(const ModelOptions &options = {});
  const ModelInfo &info() const;

  struct State;
  explicit Model(std::shared_ptr<const State> state) : state(std::move(state)) {}

private:
  friend class Session;
  std::shared_ptr<const State> state;
};

/// One sequence of a prefill batch, in packing order: its tokens, the slot of
/// the session's state it writes (negative: a padding sequence that touches
/// no state) and whether it continues from that slot's state or starts fresh.
struct PrefillSequence {
  int64_t tokens = 0;
  int32_t slot = 0;
  bool continued = false;
};

/// A prefill step of one batch layout: the loaded Mamba mixers in sequence
/// over the packed tokens of every sequence.
class PrefillStep {
public:
  int64_t tokens() const;
  /// hidden and out [tokens, hiddenSize] bf16 on the engine's device (host
  /// memory on the interpreter), queued on `stream`: returns without waiting
  /// on the GPU. Errors (InvalidArgument): a tensor whose type, shape or
  /// device disagrees with the step, named, with nothing run.
  Status run(const TensorView &hidden, const TensorView &out, Stream stream = nullptr);

  struct State;
  explicit PrefillStep(std::shared_ptr<State> state) : state(std::move(state)) {}

private:
  std::shared_ptr<State> state;
};

/// A decode step: one token for each of `rows` rows through the loaded Mamba
/// mixers in sequence, each row advancing the state of its slot.
class DecodeStep {
public:
  int64_t rows() const;
  /// hidden and out [rows, hiddenSize] bf16 as for PrefillStep::run; `slots`
  /// one per row (negative: a padding row), distinct, below the session's
  /// slot count. Errors (InvalidArgument) as run's, and bad slots.
  Status run(const TensorView &hidden, const std::vector<int32_t> &slots,
             const TensorView &out, Stream stream = nullptr);

  struct State;
  explicit DecodeStep(std::shared_ptr<State> state) : state(std::move(state)) {}

private:
  std::shared_ptr<State> state;
};

struct SessionOptions {
  /// Sequences whose state the session holds (page slots).
  int64_t slots = 1;
  /// Kernel constants of the steps' plans, "KERNEL.CONSTANT=VALUE" (as
  /// `tilejit run --set`); they win over the tuning database and the defaults.
  std::vector<std::string> settings;
  /// Element type of the SSM state pages: "f32" (the default), "bf16" or
  /// "f16" (docs/numerics.md R8s; vLLM's mamba_ssm_cache_dtype).
  std::string ssmStateDtype = "f32";
  /// With a 16-bit page: decode rounds each new state stochastically, seeded
  /// by the step's counter; otherwise to nearest even.
  bool stochasticRounding = false;
};

/// The state of `slots` sequences (each Mamba layer's conv and SSM pages,
/// zero at the start) and the steps that advance it. Every step of a session
/// shares its weights (uploaded once) and its pages, so a decode step
/// continues the sequences a prefill step began.
class Session {
public:
  /// Errors (InvalidArgument): fewer than one slot, a setting that is not
  /// KERNEL.CONSTANT=VALUE of a registered kernel's constant, an SSM page
  /// type other than f32, bf16 and f16, stochastic rounding of an f32 page.
  static Result<Session> create(Engine &engine, const Model &model,
                                const SessionOptions &options = {});
  int64_t slots() const;
  /// Plans, compiles (on the GPU: in parallel, from the disk cache when
  /// there) and captures a decode step of `rows` rows. Errors: rows below 1
  /// (InvalidArgument), a compile or device failure (Device).
  Result<DecodeStep> decode(int64_t rows);
  /// The same for a prefill step of `batch`. Errors (InvalidArgument): an
  /// empty batch, a sequence without tokens, a slot out of range or used
  /// twice, each with its numbers.
  Result<PrefillStep> prefill(const std::vector<PrefillSequence> &batch);
  /// The plan decode(rows) and prefill(batch) would run, as text: every
  /// launch (kernel, constants, grid, arguments, bytes) and buffer, for logs
  /// and for comparing with `tilejit run --dry-run`. Nothing is compiled.
  /// Errors as decode's and prefill's planning.
  Result<std::string> describeDecode(int64_t rows) const;
  Result<std::string> describePrefill(const std::vector<PrefillSequence> &batch) const;

  struct State;
  explicit Session(std::shared_ptr<State> state) : state(std::move(state)) {}

private:
  std::shared_ptr<State> state;
};

} // namespace tilejit::embed

#endif // TILEJIT_EMBED_EMBED_H
