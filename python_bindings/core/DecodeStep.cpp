// DecodeStep: the NemotronH decode mixer step over a models::DecodePlan, run by
// models::InterpreterDecoder on host buffers or by models::GpuDecoder (pages on
// the device, the step one CUDA graph). Only plumbing lives here: the plan, the
// kernels and the checks are the models' own.
#include "CoreInternal.h"

#include "tilejit/Builder/KernelRegistry.h"
#include "tilejit/models/DecodeRun.h"
#include "tilejit/runtime/Jit.h"

#include "llvm/Support/FormatVariadic.h"

#include <cstring>

namespace tilejit::python {

struct DecodeStep::State {
  MambaGeometry geometry;
  std::vector<models::MambaLayerWeights> layers;
  models::DecodePlan plan;
  /// Interpreter: every non-weight buffer. GPU: the host side of "slots"
  /// (every upload carries it, since GpuDecoder checks it first).
  models::HostBuffers host;
  std::unique_ptr<models::InterpreterDecoder> interpreter;
  std::shared_ptr<Runtime::State> runtime; ///< keeps the device alive
  std::unique_ptr<models::GpuDecoder> gpu;
};

namespace {

models::NemotronHConfig toConfig(const MambaGeometry &g) {
  models::NemotronHConfig c;
  c.hiddenSize = g.hiddenSize;
  c.numHeads = g.numHeads;
  c.headDim = g.headDim;
  c.numGroups = g.numGroups;
  c.stateSize = g.stateSize;
  c.convKernel = g.convKernel;
  c.eps = g.eps;
  c.dtMin = g.dtMin;
  c.dtMax = g.dtMax;
  c.layerPattern = g.layerPattern;
  return c;
}

/// The geometry, weights, plan and host buffers shared by both backends.
std::unique_ptr<DecodeStep::State> planStep(const DecodeStepOptions &options) {
  models::NemotronHConfig config = toConfig(options.geometry);
  if (llvm::Error err = config.validate())
    throwError(ErrorKind::Argument, std::move(err));
  int64_t available = int64_t(config.mambaLayers().size());
  if (options.layers < 1 || options.layers > available)
    throw Error(ErrorKind::Argument,
                llvm::formatv("decode step: layers must be in [1, {0}] (the Mamba layers of "
                              "'{1}'), got {2}",
                              available, config.layerPattern, options.layers)
                    .str());
  auto state = std::make_unique<DecodeStep::State>();
  state->geometry = options.geometry;
  state->layers = unwrap(models::syntheticMambaLayers(config, options.layers, options.seed),
                         ErrorKind::Argument);
  state->plan = unwrap(models::planDecodeStep(registry(), config, state->layers, options.rows,
                                              options.slots),
                       ErrorKind::Argument);
  state->host = models::allocateHostBuffers(state->plan);
  // Until the first step every row is padding: no slot is claimed.
  auto &slots = state->host.at("slots");
  std::memset(slots.data(), 0xff, slots.size());
  return state;
}

std::string outputName(const models::DecodePlan &plan) {
  return models::DecodePlan::activation(plan.numLayers);
}

void checkBytes(const std::string &what, size_t got, size_t want) {
  if (got != want)
    throw Error(ErrorKind::Argument,
                llvm::formatv("decode step: {0} has {1} bytes, expected {2}", what, got, want)
                    .str());
}

} // namespace

DecodeStep::DecodeStep(std::unique_ptr<State> state) : state(std::move(state)) {}
DecodeStep::~DecodeStep() = default;

std::shared_ptr<DecodeStep> createDecodeStep(const DecodeStepOptions &options) {
  auto state = planStep(options);
  state->interpreter = std::make_unique<models::InterpreterDecoder>(registry());
  return std::make_shared<DecodeStep>(std::move(state));
}

std::shared_ptr<DecodeStep> Runtime::decodeStep(const DecodeStepOptions &options) {
  if (!canLaunch())
    throw Error(ErrorKind::Device, "decode step: a compile-only runtime cannot launch");
  auto decode = planStep(options);
  std::string log;
  llvm::raw_string_ostream os(log);
  decode->gpu = unwrap(models::GpuDecoder::create(*state->jit, registry(), decode->plan,
                                                  decode->layers, os),
                       ErrorKind::Device);
  decode->runtime = state;
  // The device pages start zeroed, as the interpreter's do.
  models::HostBuffers initial;
  for (const auto &[name, buffer] : decode->plan.buffers)
    if (buffer.role != models::PlanBuffer::Role::Weight)
      initial[name] = name == "slots" ? decode->host.at("slots")
                                      : std::vector<uint8_t>(buffer.bytes, 0);
  if (llvm::Error err = decode->gpu->upload(initial))
    throwError(ErrorKind::Device, std::move(err));
  return std::make_shared<DecodeStep>(std::move(decode));
}

bool DecodeStep::onDevice() const { return state->gpu != nullptr; }
int64_t DecodeStep::rows() const { return state->plan.rows; }
int64_t DecodeStep::numSlots() const { return state->plan.numSlots; }
const MambaGeometry &DecodeStep::geometry() const { return state->geometry; }

std::vector<DecodeLayerInfo> DecodeStep::layers() const {
  std::vector<DecodeLayerInfo> out;
  for (const models::MambaLayerWeights &w : state->layers)
    out.push_back({w.layer, w.inProj.isFP8, w.inProj.weightScale, w.inProj.inputScale,
                   w.outProj.weightScale, w.outProj.inputScale});
  return out;
}

std::vector<std::tuple<std::string, std::string, size_t>> DecodeStep::buffers() const {
  static const char *roles[] = {"weight", "state", "activation", "input"};
  std::vector<std::tuple<std::string, std::string, size_t>> out;
  for (const auto &[name, buffer] : state->plan.buffers)
    out.emplace_back(name, roles[int(buffer.role)], buffer.bytes);
  return out;
}

namespace {
const models::PlanBuffer &findBuffer(const models::DecodePlan &plan, const std::string &name,
                                     bool weight) {
  auto it = plan.buffers.find(name);
  if (it == plan.buffers.end() ||
      (it->second.role == models::PlanBuffer::Role::Weight) != weight)
    throw Error(ErrorKind::Argument, "decode step: no " +
                                         std::string(weight ? "weight" : "non-weight") +
                                         " buffer '" + name + "'");
  return it->second;
}
} // namespace

std::vector<uint8_t> DecodeStep::weight(const std::string &name) const {
  findBuffer(state->plan, name, true);
  llvm::ArrayRef<uint8_t> bytes = models::DecodePlan::weightBytes(state->layers, name);
  return {bytes.begin(), bytes.end()};
}

void DecodeStep::read(const std::string &name, void *dst, size_t bytes) {
  checkBytes("buffer '" + name + "'", bytes, findBuffer(state->plan, name, false).bytes);
  if (!state->gpu) {
    std::memcpy(dst, state->host.at(name).data(), bytes);
    return;
  }
  models::HostBuffers one{{name, {}}};
  if (llvm::Error err = state->gpu->download(one))
    throwError(ErrorKind::Device, std::move(err));
  std::memcpy(dst, one.at(name).data(), bytes);
}

void DecodeStep::write(const std::string &name, const void *src, size_t bytes) {
  checkBytes("buffer '" + name + "'", bytes, findBuffer(state->plan, name, false).bytes);
  if (name == "slots") {
    const auto *first = static_cast<const int32_t *>(src);
    if (llvm::Error err = models::checkDecodeSlots({first, size_t(rows())}, numSlots()))
      throwError(ErrorKind::Argument, std::move(err));
  }
  const auto *begin = static_cast<const uint8_t *>(src);
  if (!state->gpu) {
    std::memcpy(state->host.at(name).data(), src, bytes);
    return;
  }
  models::HostBuffers upload{{"slots", state->host.at("slots")},
                             {name, std::vector<uint8_t>(begin, begin + bytes)}};
  if (llvm::Error err = state->gpu->upload(upload))
    throwError(ErrorKind::Device, std::move(err));
  if (name == "slots")
    state->host.at("slots") = upload.at("slots");
}

void DecodeStep::step(const void *hidden, size_t hiddenBytes, const int32_t *slots,
                      size_t numRows, void *out, size_t outBytes) {
  const models::DecodePlan &plan = state->plan;
  const std::string input = models::DecodePlan::activation(0), output = outputName(plan);
  checkBytes("hidden", hiddenBytes, plan.buffers.at(input).bytes);
  checkBytes("out", outBytes, plan.buffers.at(output).bytes);
  if (numRows != size_t(plan.rows))
    throw Error(ErrorKind::Argument,
                llvm::formatv("decode step: {0} slots for {1} rows", numRows, plan.rows).str());
  // Checked before any buffer changes, so a refused step leaves all as it was.
  if (llvm::Error err = models::checkDecodeSlots({slots, numRows}, plan.numSlots))
    throwError(ErrorKind::Argument, std::move(err));
  const auto *hiddenBegin = static_cast<const uint8_t *>(hidden);
  const auto *slotsBegin = reinterpret_cast<const uint8_t *>(slots);
  std::vector<uint8_t> slotBytes(slotsBegin, slotsBegin + numRows * sizeof(int32_t));
  if (!state->gpu) {
    std::memcpy(state->host.at(input).data(), hidden, hiddenBytes);
    state->host.at("slots") = slotBytes;
    if (llvm::Error err = state->interpreter->run(plan, state->layers, state->host))
      throwError(ErrorKind::Run, std::move(err));
    std::memcpy(out, state->host.at(output).data(), outBytes);
    return;
  }
  models::HostBuffers in{{"slots", slotBytes},
                         {input, std::vector<uint8_t>(hiddenBegin, hiddenBegin + hiddenBytes)}};
  if (llvm::Error err = state->gpu->upload(in))
    throwError(ErrorKind::Device, std::move(err));
  state->host.at("slots") = std::move(slotBytes);
  if (llvm::Error err = state->gpu->step())
    throwError(ErrorKind::Device, std::move(err));
  models::HostBuffers result{{output, {}}};
  if (llvm::Error err = state->gpu->download(result))
    throwError(ErrorKind::Device, std::move(err));
  std::memcpy(out, result.at(output).data(), outBytes);
}

MambaGeometry fullMambaGeometry() {
  models::NemotronHConfig c;
  return {c.hiddenSize, c.numHeads,  c.headDim, c.numGroups, c.stateSize,
          c.convKernel, c.eps,       c.dtMin,   c.dtMax,     c.layerPattern};
}

} // namespace tilejit::python
