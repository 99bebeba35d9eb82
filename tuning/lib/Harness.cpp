// The tuner's launch harness: random inputs, the interpreter reference, device
// copies, the element-wise comparison and graph-based timing.
#include "Harness.h"

#include "tilejit/Interpreter/Interpreter.h"
#include "tilejit/Pipeline/Pipeline.h"
#include "tilejit/support/FloatFormats.h"
#include "tilejit/support/HostMemory.h"
#include "tilejit/support/Timing.h"

#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MathExtras.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <random>

using namespace llvm;
using namespace tilejit::runtime;

namespace tilejit::tuning {
namespace {

void encode(DType t, double v, uint8_t *out) {
  float f = float(v);
  switch (t) {
  case DType::F32:
    std::memcpy(out, &f, 4);
    return;
  case DType::BF16: {
    uint16_t bits = f32ToBF16(f);
    std::memcpy(out, &bits, 2);
    return;
  }
  case DType::F16: {
    uint16_t bits = f32ToF16(f);
    std::memcpy(out, &bits, 2);
    return;
  }
  case DType::F8E4M3:
    *out = f32ToE4M3(f);
    return;
  default: {
    // Integer inputs: small values, never an out-of-range index by chance.
    int64_t i = int64_t(std::lround(v));
    std::memcpy(out, &i, dtypeBytes(t));
  }
  }
}

double decode(DType t, const uint8_t *in) {
  switch (t) {
  case DType::F32: {
    float f;
    std::memcpy(&f, in, 4);
    return f;
  }
  case DType::BF16: {
    uint16_t bits;
    std::memcpy(&bits, in, 2);
    return bf16ToF32(bits);
  }
  case DType::F16: {
    uint16_t bits;
    std::memcpy(&bits, in, 2);
    return f16ToF32(bits);
  }
  case DType::F8E4M3:
    return e4m3ToF32(*in);
  case DType::I32: {
    int32_t i;
    std::memcpy(&i, in, 4);
    return i;
  }
  case DType::I64: {
    int64_t i;
    std::memcpy(&i, in, 8);
    return double(i);
  }
  default:
    return int8_t(*in);
  }
}

KernelArg scalarArg(const TuneArg &a) {
  if (a.kind == TuneArg::Kind::Float)
    return a.dtype == DType::F32 ? KernelArg::f32(float(a.floatValue))
                                 : KernelArg::f64(a.floatValue);
  return a.dtype == DType::I64 ? KernelArg::i64(a.intValue)
                               : KernelArg::i32(int32_t(a.intValue));
}

bool isBuffer(const TuneArg &a) {
  return a.kind != TuneArg::Kind::Int && a.kind != TuneArg::Kind::Float;
}

/// Whether the kernel writes `a` (it is compared with the reference).
bool isWritten(const TuneArg &a) {
  return a.kind == TuneArg::Kind::Output || a.kind == TuneArg::Kind::State;
}

} // namespace

Error checkArgBytes(const std::vector<TuneArg> &args, uint64_t hostBytes,
                    StringRef what) {
  uint64_t total = 0, largest = 0;
  size_t largestIndex = 0;
  for (auto [i, a] : llvm::enumerate(args)) {
    if (!isBuffer(a))
      continue;
    uint64_t bytes;
    if (a.elements < 0 ||
        __builtin_mul_overflow(uint64_t(a.elements), dtypeBytes(a.dtype), &bytes))
      return createStringError(
          formatv("{0}: argument {1} has {2} elements, no representable size", what, i,
                  a.elements));
    if (__builtin_add_overflow(total, bytes, &total))
      total = UINT64_MAX;
    if (bytes > largest)
      largest = bytes, largestIndex = i;
  }
  if (total > hostBytes)
    return createStringError(formatv(
        "{0}: its arguments need {1} of host memory (the largest, argument {2}, {3}), "
        "more than the {4} available: tune at smaller launch sizes",
        what, support::formatBytes(total), largestIndex, support::formatBytes(largest),
        support::formatBytes(hostBytes)));
  return Error::success();
}

std::vector<HostArg> makeHostArgs(const std::vector<TuneArg> &args, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal(0.0, 1.0);
  std::vector<HostArg> out;
  for (const TuneArg &a : args) {
    HostArg host{a, {}};
    if (isBuffer(a)) {
      size_t width = dtypeBytes(a.dtype);
      host.bytes.assign(size_t(a.elements) * width, 0xff);
      if (a.kind == TuneArg::Kind::Data)
        host.bytes = a.bytes;
      if (a.kind == TuneArg::Kind::Input || a.kind == TuneArg::Kind::State)
        for (int64_t i = 0; i < a.elements; ++i)
          encode(a.dtype, normal(rng) * a.scale, &host.bytes[size_t(i) * width]);
    }
    out.push_back(std::move(host));
  }
  return out;
}

Error runInterpreter(const KernelDef &def, const Specialization &spec,
                     const std::array<int64_t, 3> &grid, std::vector<HostArg> &args) {
  mlir::DialectRegistry dialects;
  registerCompilerDialects(dialects);
  mlir::MLIRContext ctx(dialects, mlir::MLIRContext::Threading::DISABLED);
  auto module = def.build(ctx, spec);
  if (!module)
    return module.takeError();
  auto kernels = (*module)->getOps<tile::KernelOp>();
  if (kernels.empty())
    return createStringError("kernel '%s' builds no tile.kernel", def.name.c_str());
  std::vector<interp::Arg> interpArgs;
  for (HostArg &h : args) {
    switch (h.arg.kind) {
    case TuneArg::Kind::Input:
    case TuneArg::Kind::Data:
      interpArgs.push_back(interp::Arg::readOnlyBuffer(h.bytes.data(), h.bytes.size()));
      break;
    case TuneArg::Kind::Output:
    case TuneArg::Kind::State:
      interpArgs.push_back(interp::Arg::buffer(h.bytes.data(), h.bytes.size()));
      break;
    case TuneArg::Kind::Int:
      interpArgs.push_back(interp::Arg::intScalar(h.arg.intValue));
      break;
    case TuneArg::Kind::Float:
      interpArgs.push_back(interp::Arg::floatScalar(h.arg.floatValue));
      break;
    }
  }
  return interp::run(*kernels.begin(), grid, interpArgs);
}

Expected<DeviceArgs> uploadArgs(JitRuntime &jit, const std::vector<HostArg> &host,
                                const Stream &stream) {
  DeviceArgs device;
  for (const HostArg &h : host) {
    if (!isBuffer(h.arg)) {
      device.args.push_back(scalarArg(h.arg));
      device.bufferOf.push_back(-1);
      continue;
    }
    Expected<DeviceBuffer> buffer = jit.allocate(h.bytes.size());
    if (!buffer)
      return buffer.takeError();
    if (Error err = buffer->upload(h.bytes, stream.handle()))
      return std::move(err);
    device.args.push_back(KernelArg::pointer(buffer->address()));
    device.bufferOf.push_back(int(device.buffers.size()));
    device.buffers.push_back(std::move(*buffer));
  }
  return std::move(device);
}

Error poisonOutputs(JitRuntime &jit, DeviceArgs &device, const std::vector<HostArg> &host,
                    const Stream &stream) {
  for (size_t i = 0; i < host.size(); ++i) {
    DeviceBuffer *buffer =
        device.bufferOf[i] < 0 ? nullptr : &device.buffers[device.bufferOf[i]];
    if (host[i].arg.kind == TuneArg::Kind::Output) {
      if (Error err =
              jit.device().fill(buffer->address(), 0xff, buffer->size(), stream.handle()))
        return err;
    } else if (host[i].arg.kind == TuneArg::Kind::State) {
      // The previous candidate's launches moved the state on.
      if (Error err = buffer->upload(host[i].bytes, stream.handle()))
        return err;
    }
  }
  return jit.device().synchronize(stream.handle());
}

namespace {

/// Adds the comparison of `got` with the reference's argument `i` to `result`.
void compareArgument(size_t i, const HostArg &want, llvm::ArrayRef<uint8_t> got,
                     double atol, double rtol, Comparison &result) {
  size_t width = dtypeBytes(want.arg.dtype);
  for (int64_t e = 0; e < want.arg.elements; ++e) {
    double g = decode(want.arg.dtype, &got[size_t(e) * width]);
    double w = decode(want.arg.dtype, &want.bytes[size_t(e) * width]);
    ++result.checked;
    // A NaN on either side (an element never written) fails the band.
    if (!(std::abs(g - w) <= atol + rtol * std::abs(w))) {
      if (!result.mismatches)
        result.firstMismatch =
            formatv("argument {0} element {1}: got {2}, want {3}", i, e, g, w);
      ++result.mismatches;
    }
  }
}

} // namespace

Comparison compareHostOutputs(const std::vector<HostArg> &got,
                              const std::vector<HostArg> &reference, double atol,
                              double rtol) {
  Comparison result;
  for (size_t i = 0; i < reference.size(); ++i)
    if (isWritten(reference[i].arg))
      compareArgument(i, reference[i], got[i].bytes, atol, rtol, result);
  return result;
}

Expected<size_t> checkOnInterpreter(const TuneTarget &target,
                                    const Specialization &candidate, uint64_t seed) {
  const TuneProblem &problem = *target.problem;
  std::vector<HostArg> reference =
      makeHostArgs(problem.args(target.base, problem.checkShape), seed);
  std::vector<HostArg> got = reference;
  if (Error err =
          runInterpreter(*target.def, target.base,
                         problem.grid(target.base, problem.checkShape), reference))
    return std::move(err);
  if (Error err = runInterpreter(*target.def, candidate,
                                 problem.grid(candidate, problem.checkShape), got))
    return std::move(err);
  Comparison c = compareHostOutputs(got, reference, problem.atol, problem.rtol);
  if (c.mismatches)
    return createStringError(inconvertibleErrorCode(),
                             formatv("{0} of {1} elements outside the band; first {2}",
                                     c.mismatches, c.checked, c.firstMismatch)
                                 .str());
  return c.checked;
}

Expected<Comparison> compareOutputs(DeviceArgs &device,
                                    const std::vector<HostArg> &reference, double atol,
                                    double rtol, const Stream &stream) {
  Comparison result;
  for (size_t i = 0; i < reference.size(); ++i) {
    const HostArg &want = reference[i];
    if (!isWritten(want.arg))
      continue;
    std::vector<uint8_t> got(want.bytes.size());
    if (Error err = device.buffers[device.bufferOf[i]].download(got, stream.handle()))
      return std::move(err);
    compareArgument(i, want, got, atol, rtol, result);
  }
  return result;
}

unsigned rotationCopies(uint64_t bufferBytes, uint64_t l2Bytes) {
  if (!l2Bytes || !bufferBytes)
    return 1;
  return unsigned(
      std::min<uint64_t>(llvm::divideCeil(2 * l2Bytes, bufferBytes), kMaxRotationCopies));
}

Expected<Timing> timeLaunches(JitRuntime &jit, runtime::Kernel &kernel,
                              const Stream &stream, Dim3 grid,
                              ArrayRef<std::vector<KernelArg>> argSets,
                              const TuneOptions &options, double deadlineS) {
  auto start = std::chrono::steady_clock::now();
  auto elapsedS = [&] { return support::msSince(start) / 1e3; };
  Expected<Event> begin = Event::create(jit.device()), end = Event::create(jit.device());
  if (!begin)
    return begin.takeError();
  if (!end)
    return end.takeError();
  auto timed = [&](auto &&work) -> Expected<double> {
    if (Error err = begin->record(stream))
      return std::move(err);
    if (Error err = work())
      return std::move(err);
    if (Error err = end->record(stream))
      return std::move(err);
    if (Error err = end->synchronize())
      return std::move(err);
    Expected<float> ms = Event::elapsedMs(*begin, *end);
    if (!ms)
      return ms.takeError();
    return double(*ms);
  };
  Timing timing;
  timing.copies = unsigned(argSets.size());
  auto launch = [&](unsigned i) {
    return kernel.launch(stream, grid, argSets[i % timing.copies]);
  };
  // Warm-up launches; the last one also sizes the graph.
  double single = 0;
  for (unsigned i = 0; i < std::max(1u, options.warmup); ++i) {
    Expected<double> ms = timed([&] { return launch(i); });
    if (!ms)
      return ms.takeError();
    single = *ms;
    if (elapsedS() > deadlineS) {
      timing.timedOut = true;
      return timing;
    }
  }
  // Whole rounds over the copies, so every sample reads each copy alike.
  timing.launchesPerSample = unsigned(llvm::alignTo(
      unsigned(
          std::clamp(std::ceil(options.sampleMs / std::max(single, 1e-4)), 1.0, 1000.0)),
      timing.copies));
  if (Error err = jit.beginCapture(stream))
    return std::move(err);
  for (unsigned i = 0; i < timing.launchesPerSample; ++i)
    if (Error err = launch(i)) {
      consumeError(jit.endCapture(stream).takeError());
      return std::move(err);
    }
  Expected<Graph> graph = jit.endCapture(stream);
  if (!graph)
    return graph.takeError();
  if (Error err = graph->launch(stream))
    return std::move(err);
  std::vector<double> perLaunch;
  for (unsigned s = 0; s < options.samples; ++s) {
    Expected<double> ms = timed([&] { return graph->launch(stream); });
    if (!ms)
      return ms.takeError();
    perLaunch.push_back(*ms / timing.launchesPerSample);
    if (elapsedS() > deadlineS) {
      timing.timedOut = true;
      break;
    }
  }
  support::SampleSummary summary = support::summarize(perLaunch);
  timing.samples = unsigned(summary.n);
  timing.medianMs = summary.median;
  timing.minMs = summary.min;
  timing.maxMs = summary.max;
  timing.perLaunchMs = std::move(perLaunch);
  return timing;
}

} // namespace tilejit::tuning
