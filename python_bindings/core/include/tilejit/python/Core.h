// The C++ core behind the `tilejit` Python package: the builder, the stages, the
// interpreter, the registered kernels and the GPU runtime, behind plain C++ types.
// No LLVM, MLIR or Python header: the pybind11 module compiles against this header
// alone, so on a host without LLVM it is built against a prebuilt core library.
#ifndef TILEJIT_PYTHON_CORE_H
#define TILEJIT_PYTHON_CORE_H

#include "tilejit/support/DType.h"

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>
#include <variant>
#include <vector>

namespace tilejit::python {

/// What kind of mistake an Error reports; the module maps each to a Python
/// exception class.
enum class ErrorKind { Build, Compile, Run, Argument, Device };

/// Every failure of the core: a message carrying the IR location(s) and the
/// numbers that disagree. The core never aborts the process.
class Error : public std::runtime_error {
public:
  Error(ErrorKind kind, const std::string &message)
      : std::runtime_error(message), errorKind(kind) {}
  /// Out of line: the type's identity lives in the core library, so an Error
  /// thrown there is caught as one in the module.
  ~Error() override;
  ErrorKind kind() const { return errorKind; }

private:
  ErrorKind errorKind;
};

/// A user's source position (a Python file and line): the location the IR
/// records for the ops a builder call creates.
struct Location {
  std::string file;
  unsigned line = 0;
  unsigned column = 0;
};

/// A value of the kernel under construction, by its index in the builder.
using ValueId = int32_t;

/// An argument of a builder call: a value, an integer or a float, with the
/// location of the user's expression.
struct Operand {
  enum class Kind { Value, Int, Float } kind = Kind::Int;
  ValueId value = -1;
  int64_t integer = 0;
  double number = 0;
  Location loc;
};

/// A size or stride of a view: static or a run-time value.
struct ViewDim {
  std::optional<int64_t> fixed;
  ValueId value = -1;
};

/// `#tile.config` of the kernel (tilejit::Config).
struct KernelConfig {
  std::vector<int64_t> tile;
  int64_t warps = 4, stages = 1, vector = 1, splitK = 1;
};

/// One kernel parameter: a pointer to `type`, or a scalar of `type`.
struct Param {
  std::string name;
  bool pointer = false;
  DType type = DType::F32;
  /// Pointers: the declared row-major shape, each dimension a size, the name
  /// of the scalar parameter holding it, or "?"; empty when not declared.
  std::vector<std::variant<int64_t, std::string>> shape;
};

enum class UnaryOp { Neg, Exp, Log, Log1p, Sqrt, Rsqrt, Abs, Silu, Softplus };
enum class BinaryOp {
  Add,
  Sub,
  Mul,
  Div,
  Rem,
  Lt,
  Le,
  Gt,
  Ge,
  Eq,
  Ne,
  And,
  Or,
  Maximum,
  Minimum
};
enum class ReduceOp { Sum, Max, Min, Cumsum };

class KernelModule;

/// A kernel under construction (tilejit::Kernel). One per thread at a time:
/// the builder's free functions (programId, arange) act on the thread's
/// current kernel. Mistakes are recorded with their location and reported
/// together by finish(), as in C++.
class KernelBuilder {
public:
  /// Errors: another kernel is still under construction on this thread.
  KernelBuilder(const std::string &name, const Location &loc);
  ~KernelBuilder();
  KernelBuilder(const KernelBuilder &) = delete;
  KernelBuilder &operator=(const KernelBuilder &) = delete;

  /// The unfinished kernel of this thread, or null.
  static KernelBuilder *current();
  const std::string &name() const;
  bool finished() const;

  ValueId ptrParam(const std::string &name, DType pointee, const Location &loc);
  ValueId scalarParam(const std::string &name, DType type, const Location &loc);
  void setConfig(const KernelConfig &config);
  /// Records a mistake that finish() will report (e.g. a Python loop body
  /// that raised).
  void fail(const Location &loc, const std::string &message);

  bool valid(ValueId v) const;
  bool isTile(ValueId v) const;
  bool isPointer(ValueId v) const;
  bool isView(ValueId v) const;
  std::vector<int64_t> shape(ValueId v) const;
  DType dtype(ValueId v) const;
  /// "tile<128xf32>", "i32", "!tile.ptr<bf16>"; "<invalid>" after a mistake.
  std::string describe(ValueId v) const;

  ValueId convert(ValueId v, DType type, const Location &loc);
  ValueId programId(int axis, const Location &loc);
  ValueId numPrograms(int axis, const Location &loc);
  ValueId arange(int start, int end, const Location &loc);
  ValueId constant(double value, DType type, const Location &loc);
  ValueId full(const std::vector<int64_t> &shape, const Operand &value, DType type);
  ValueId zeros(const std::vector<int64_t> &shape, DType type, const Location &loc);
  ValueId broadcastTo(const Operand &x, const std::vector<int64_t> &shape);
  ValueId expandDims(const Operand &x, int axis);
  ValueId reshape(const Operand &x, const std::vector<int64_t> &shape);
  ValueId transpose(const Operand &x, const std::vector<int32_t> &order);
  ValueId unary(UnaryOp op, const Operand &x);
  ValueId binary(BinaryOp op, const Operand &a, const Operand &b);
  ValueId where(const Operand &cond, const Operand &a, const Operand &b);
  ValueId fma(const Operand &a, const Operand &b, const Operand &c);
  ValueId reduce(ReduceOp op, const Operand &x, int axis);
  ValueId dot(const Operand &a, const Operand &b, const Operand &acc);

  ValueId makeView(const Operand &ptr, const std::vector<ViewDim> &sizes,
                   const std::vector<ViewDim> &strides);
  ValueId loadView(ValueId view, const std::vector<Operand> &offsets,
                   const std::vector<int64_t> &shape, std::optional<double> padding,
                   const Location &loc);
  void storeView(ValueId view, const std::vector<Operand> &offsets, const Operand &value,
                 const Location &loc);
  ValueId load(const Operand &ptrs, const std::optional<Operand> &mask,
               const std::optional<Operand> &other);
  void store(const Operand &ptrs, const Operand &value,
             const std::optional<Operand> &mask);

  /// The loop body must not throw: a caller that can fail (Python) catches,
  /// calls fail() and returns no values.
  using LoopBody = std::function<std::vector<ValueId>(ValueId iv, std::vector<ValueId>)>;
  std::vector<ValueId> forRange(const Operand &lo, const Operand &hi, const Operand &step,
                                const std::vector<ValueId> &init, const LoopBody &body);
  void ifThen(const Operand &cond, const std::function<void()> &body);

  /// Programmatic dependent launch (tilejit/Builder/Builder.h).
  void markInvariant(ValueId param, const Location &loc);
  void waitForPredecessors(const Location &loc);
  void launchDependents(const Location &loc);
  void prefetchL2(const Operand &ptr, const Operand &bytes);

  /// Verifies the kernel and ends construction. Errors (ErrorKind::Build):
  /// every recorded mistake and verifier error, each with its location.
  std::shared_ptr<KernelModule> finish();

private:
  struct State;
  std::unique_ptr<State> state;
};

/// One compiled stage's text, in pipeline order ("tile", "mlir.<pass>",
/// "llvm", "ptx").
struct Stage {
  std::string name;
  std::string text;
};

/// A kernel compiled to PTX (tilejit::CompiledKernel) with every stage.
struct PTXResult {
  std::string entry;
  std::string ptx;
  int64_t threads = 0;
  int64_t sharedBytes = 0;
  /// "reduced" when a dot adds its products with fewer bits than f32 (e4m3
  /// wgmma: R1h's band applies), else "exact".
  std::string sums = "exact";
  std::vector<std::pair<std::string, std::string>> params;
  std::vector<Stage> stages;
  double lowerMs = 0, translateMs = 0, optimizeMs = 0, codegenMs = 0;
};

/// An argument of an interpreter run: a host buffer or a scalar.
struct HostArg {
  enum class Kind { Buffer, Int, Float } kind = Kind::Int;
  void *data = nullptr;
  size_t bytes = 0;
  bool writable = false;
  int64_t integer = 0;
  double number = 0;
};

/// A verified kernel module: immutable, shareable across threads.
class KernelModule {
public:
  ~KernelModule();
  const std::string &name() const;
  const std::vector<Param> &params() const;
  /// The tile IR; with locations, each op names the source line that built it.
  std::string tileIR(bool locations) const;
  /// Generic form without locations: the text the disk cache key hashes.
  const std::string &canonicalIR() const;
  /// Lowers a copy of the module for `arch` ("sm_90a", ...) and returns each
  /// stage's text when `stages` is set. Errors: ErrorKind::Compile.
  PTXResult compilePTX(const std::string &arch, unsigned optLevel, bool stages) const;
  /// Runs on the CPU interpreter over `grid` (translated once, on first use).
  /// Errors: ErrorKind::Run with the op's location and the program id.
  void run(const std::array<int64_t, 3> &grid, const std::vector<HostArg> &args) const;

  struct State;
  explicit KernelModule(std::unique_ptr<State> state);

private:
  std::unique_ptr<State> state;
};

/// A compile-time constant of a registered kernel.
struct ConstantInfo {
  std::string name;
  int64_t defaultValue = 0;
  std::string help;
};

/// A kernel of the registry (the models' kernels and the examples).
struct RegisteredKernel {
  std::string name;
  std::string summary;
  std::vector<ConstantInfo> constants;
};

/// Every registered kernel, sorted by name.
std::vector<RegisteredKernel> registeredKernels();
/// Builds registered kernel `name` with its defaults overridden by `constants`.
/// Errors (ErrorKind::Argument): an unknown kernel or constant.
std::shared_ptr<KernelModule>
buildRegistered(const std::string &name, const std::map<std::string, int64_t> &constants);

/// The codes of the registered kernels' device-side checks (the error word's
/// OpError, tilejit/models/mamba2/OpChecks.h), by name.
std::map<std::string, int64_t> opErrorCodes();

/// Bit-exact conversions (tilejit/support/FloatFormats.h, round to nearest even).
void f32ToBF16(const float *in, uint16_t *out, size_t n);
void bf16ToF32(const uint16_t *in, float *out, size_t n);
void f32ToE4M3(const float *in, uint8_t *out, size_t n);
void e4m3ToF32(const uint8_t *in, float *out, size_t n);

/// The runtime's load statistics (runtime::LoadStatsSnapshot).
struct LoadStatistics {
  uint64_t bytesUploaded = 0, modulesCompiled = 0, modulesLoaded = 0, memoryHits = 0,
           diskHits = 0, corruptEntries = 0;
  /// Every copy through the runtime's device, weights and buffers alike:
  /// host -> device, device -> host, device -> device (0 when compile-only).
  uint64_t bytesToDevice = 0, bytesToHost = 0, bytesOnDevice = 0;
  std::map<std::string, double> compileMsByStage;
  /// runtime::LoadStatsSnapshot::print's line.
  std::string text;
};

/// An argument of a GPU launch: a device address or a scalar.
struct DeviceArg {
  enum class Kind { Pointer, Int, Float } kind = Kind::Int;
  uint64_t address = 0;
  int64_t integer = 0;
  double number = 0;
};

class Runtime;

/// Geometry of a NemotronH model (models::NemotronHConfig).
struct MambaGeometry {
  int64_t hiddenSize = 0, numHeads = 0, headDim = 0, numGroups = 0, stateSize = 0,
          convKernel = 0;
  double eps = 0, dtMin = 0, dtMax = 0;
  /// One character per layer: 'M' Mamba, '*' attention, 'E' MoE, '-' MLP.
  std::string layerPattern;
};
/// The full Nemotron-3-Nano-30B-A3B geometry (docs/numerics.md#geometry).
MambaGeometry fullMambaGeometry();

/// What a decode step runs: the first `layers` Mamba layers of `geometry`
/// with synthetic weights (models::syntheticMambaLayers, `seed`), `rows` rows
/// per step over pages of `slots` slots.
struct DecodeStepOptions {
  MambaGeometry geometry;
  int64_t layers = 1, rows = 1, slots = 1;
  uint64_t seed = 0;
  /// On the interpreter: plan for this arch's device ("sm_121a"); empty: the
  /// tiles every arch runs. A runtime's steps plan for its own arch.
  std::string planArch;
};

/// One sequence of a prefill batch: its tokens, its slot (negative: padding)
/// and whether it continues from that slot's state.
struct PrefillSequence {
  int64_t tokens = 0;
  int64_t slot = 0;
  bool continued = false;
};

/// The parameters of one layer a reference needs besides the weight buffers.
struct DecodeLayerInfo {
  int64_t layer = 0; ///< index in the whole model
  bool fp8 = false;  ///< e4m3 projections with static scales, else bf16
  float inWeightScale = 1, inInputScale = 1, outWeightScale = 1, outInputScale = 1;
};

/// An array or tensor handed to the decode step, described without a copy:
/// its element type ("bf16", "e4m3", "f32", "i32", or the caller's name for
/// another type), shape, strides in elements (empty: row-major), device (a
/// CUDA ordinal; -1 the host) and address. Checked against the plan
/// (models::checkPlanTensor) before anything runs.
struct TensorArg {
  std::string dtype;
  std::vector<int64_t> shape, strides;
  int device = -1;
  uint64_t address = 0;
};

/// The NemotronH Mamba2 decode mixer step (docs/numerics.md#r7-the-mixer, R3d/R5d)
/// over a models::StepPlan: on the interpreter over host buffers, or on the
/// GPU (one CUDA graph, pages resident on the device). Buffers are named as
/// the plan names them ("act0", "slots", "l<layer>.conv_page", ...).
class DecodeStep {
public:
  ~DecodeStep();
  bool onDevice() const;
  int64_t rows() const;
  int64_t numSlots() const;
  const MambaGeometry &geometry() const;
  std::vector<DecodeLayerInfo> layers() const;
  /// A buffer's name, role ("weight", "state", "activation", "input"), size in
  /// bytes, element type and shape.
  using BufferInfo =
      std::tuple<std::string, std::string, size_t, std::string, std::vector<int64_t>>;
  /// Every buffer of the plan.
  std::vector<BufferInfo> buffers() const;
  /// A host copy of weight buffer `name`. Errors: ErrorKind::Argument.
  std::vector<uint8_t> weight(const std::string &name) const;
  /// Copies non-weight buffer `name` into the host array `dst` (from the
  /// device on the GPU). Errors: ErrorKind::Argument for an unknown name or
  /// an array that disagrees with the plan's type, shape or layout.
  void read(const std::string &name, const TensorArg &dst);
  /// Overwrites non-weight buffer `name` (e.g. a page) with the host array `src`.
  void write(const std::string &name, const TensorArg &src);
  /// The check read and write make: `t` is a host array matching non-weight
  /// buffer `name`. Errors: ErrorKind::Argument with the numbers.
  void checkHost(const std::string &name, const TensorArg &t) const;
  /// One step: `hidden` [rows, hiddenSize] bf16 and `slots` [rows] (negative:
  /// padding) in, the last layer's output [rows, hiddenSize] bf16 into `out`;
  /// pages carried in place. The interpreter takes host arrays; the GPU takes
  /// device tensors and runs on `stream` (a CUstream; 0 the legacy default)
  /// without waiting and without host copies (GpuRunner::step). Errors:
  /// ErrorKind::Argument for a tensor that disagrees with the plan (type,
  /// shape, layout, device) or bad slots, with nothing run.
  void step(const TensorArg &hidden, const std::vector<int32_t> &slots,
            const TensorArg &out, uint64_t stream);
  /// The device address of non-weight buffer `name` on the GPU (0 on the
  /// interpreter).
  uint64_t deviceAddress(const std::string &name) const;

  struct State;
  explicit DecodeStep(std::unique_ptr<State> state);

private:
  std::unique_ptr<State> state;
};

/// The decode step on the CPU interpreter. Errors (ErrorKind::Argument): an
/// invalid geometry, layer count, rows or slots.
std::shared_ptr<DecodeStep> createDecodeStep(const DecodeStepOptions &options);

/// The plan a decode step of `options` runs, or with `prefill` sequences the
/// plan of a prefill forward of them, on `runtime` (its arch and tuning
/// database) or, when null, on the interpreter (for options.planArch): the
/// text of models::describePlan, the same `tilejit run --dry-run` and the
/// embedding API print. Nothing is compiled. Errors: as createDecodeStep.
std::string describePlan(const DecodeStepOptions &options,
                         const std::vector<PrefillSequence> &prefill,
                         const std::shared_ptr<Runtime> &runtime);

/// A kernel of a Runtime (runtime::Kernel): compiled on first use through the
/// memory cache, the disk cache, then the compiler.
class DeviceKernel {
public:
  ~DeviceKernel();
  const std::string &name() const;
  /// Obtains the compiled code; no device work. Errors: ErrorKind::Compile.
  void compile();
  /// compile(), then loads the module. Errors: ErrorKind::Device.
  void prepare();
  /// "none", "memory", "disk" or "compiler".
  std::string origin() const;
  double compileMs() const;
  std::string diskKey() const;
  /// The compiled PTX; empty before compile().
  std::string ptx() const;
  /// Launches on `stream` (a CUstream owned by the caller, e.g. torch's
  /// current stream; 0 is the legacy default stream). Scalars are converted
  /// to the compiled parameter kinds, range-checked. Errors: ErrorKind::Argument
  /// for a bad argument, ErrorKind::Device for a driver failure.
  void launch(uint64_t stream, const std::array<uint32_t, 3> &grid,
              const std::vector<DeviceArg> &args);

  struct State;
  explicit DeviceKernel(std::unique_ptr<State> state);

private:
  std::unique_ptr<State> state;
};

/// How to open a Runtime.
struct RuntimeConfig {
  /// "cuda": the GPU through the driver. "compile-only": no device; kernels
  /// compile (and fill the caches) for `arch` but cannot be prepared or launched.
  std::string device = "cuda";
  int ordinal = 0;
  /// Empty: TILEJIT_ARCH, else the device's own arch ("compile-only" needs one).
  std::string arch;
  /// Empty: TILEJIT_CACHE_DIR and its defaults.
  std::string cacheDirectory;
  /// False turns the disk cache off (as TILEJIT_NO_CACHE=1 does).
  bool diskCache = true;
};

/// A JIT runtime on one device context (runtime::JitRuntime).
class Runtime {
public:
  /// Errors (ErrorKind::Device): no driver, no GPU, an unknown arch, a cache
  /// directory that cannot be made.
  static std::shared_ptr<Runtime> open(const RuntimeConfig &config);
  ~Runtime();
  std::string arch() const;
  /// The CUDA device ordinal (RuntimeConfig::ordinal).
  int ordinal() const;
  /// printDeviceInfo's line, or "compile-only (sm_90a)".
  std::string describe() const;
  bool canLaunch() const;
  LoadStatistics stats() const;
  /// A kernel handle for `module`; compiled on first use.
  std::shared_ptr<DeviceKernel> kernel(std::shared_ptr<KernelModule> module,
                                       unsigned optLevel);
  /// Waits on the host until the work queued on `stream` (a CUstream of this
  /// device's context) is done: how a launch is ordered after an array's
  /// producer stream (CUDA array interface v3) other than its own.
  void synchronizeStream(uint64_t stream);

  /// The NemotronH decode step on this runtime's GPU (GpuRunner): the
  /// weights are uploaded and every kernel compiled here. Errors: as
  /// createDecodeStep, and ErrorKind::Device for a runtime that cannot launch.
  std::shared_ptr<DecodeStep> decodeStep(const DecodeStepOptions &options);

  struct State;
  explicit Runtime(std::unique_ptr<State> state);

private:
  friend std::string describePlan(const DecodeStepOptions &,
                                  const std::vector<PrefillSequence> &,
                                  const std::shared_ptr<Runtime> &);
  std::shared_ptr<State> state;
};

} // namespace tilejit::python

#endif // TILEJIT_PYTHON_CORE_H
