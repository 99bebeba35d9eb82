// Graph-replay timing of plans and the stream floor of their bytes (Timing.h).
#include "tilejit/models/plan/Timing.h"
#include "tilejit/jit/JitCompiler.h"
#include "tilejit/runtime/Jit.h"

#include "llvm/Support/MathExtras.h"

#include <algorithm>
#include <set>
#include <tuple>

namespace tilejit::models {

using namespace tilejit::runtime;

llvm::Expected<support::SampleSummary> replayTimes(DeviceApi &device, Graph &graph,
                                                   Stream &stream, int replays) {
  auto start = Event::create(device), end = Event::create(device);
  if (!start || !end)
    return llvm::joinErrors(start.takeError(), end.takeError());
  if (auto err = graph.launch(stream)) // warm-up
    return std::move(err);
  std::vector<double> ms;
  for (int r = 0; r < replays; ++r) {
    if (auto err = start->record(stream))
      return std::move(err);
    if (auto err = graph.launch(stream))
      return std::move(err);
    if (auto err = end->record(stream))
      return std::move(err);
    if (auto err = end->synchronize())
      return std::move(err);
    auto elapsed = Event::elapsedMs(*start, *end);
    if (!elapsed)
      return elapsed.takeError();
    ms.push_back(*elapsed);
  }
  return support::summarize(std::move(ms));
}

llvm::Expected<double> timeStreamFloor(JitRuntime &jit, const KernelRegistry &registry,
                                       size_t readBytes, size_t writtenBytes,
                                       int launches, int replays) {
  auto specialized = specializeKernel(registry, "stream_bytes", {});
  if (!specialized)
    return specialized.takeError();
  const Specialization &spec = specialized->spec;
  const int64_t perProgram = spec.get("block") * spec.get("steps") * 4;
  const int64_t readWords = int64_t(readBytes / 4),
                writtenWords = int64_t(writtenBytes / 4);
  const int64_t programs = std::max<int64_t>(
      1, llvm::divideCeilSigned(std::max(readWords, writtenWords) * 4, perProgram));
  if (std::max(readWords, writtenWords) > INT32_MAX)
    return llvm::createStringError("stream floor: more than 2^31 words");
  runtime::Kernel kernel(jit, makeKernelSpec(*specialized->def, specialized->spec));
  if (auto err = kernel.prepare())
    return std::move(err);
  auto stream = Stream::create(jit.device());
  if (!stream)
    return stream.takeError();
  auto sums = jit.allocate(programs * 4);
  if (!sums)
    return sums.takeError();
  // Enough distinct buffers that together they are several times the L2
  // (about 50 MB), so every launch streams from HBM; at least two.
  const size_t perLaunch = std::max<size_t>(readBytes + writtenBytes, 1);
  const int copies =
      std::clamp<int>(int(llvm::divideCeil(256u << 20, perLaunch)), 2, launches);
  std::vector<std::pair<DeviceBuffer, DeviceBuffer>> buffers;
  for (int i = 0; i < copies; ++i) {
    auto source = jit.allocate(std::max<size_t>(readBytes, 4));
    auto destination = jit.allocate(std::max<size_t>(writtenBytes, 4));
    if (!source || !destination)
      return llvm::joinErrors(source.takeError(), destination.takeError());
    if (auto err = jit.device().fill(source->address(), uint8_t(i + 1), source->size(),
                                     stream->handle()))
      return std::move(err);
    buffers.emplace_back(std::move(*source), std::move(*destination));
  }
  if (auto err = jit.beginCapture(*stream))
    return std::move(err);
  llvm::Error launchErr = llvm::Error::success();
  for (int i = 0; i < launches && !launchErr; ++i) {
    auto &[source, destination] = buffers[i % copies];
    launchErr = kernel.launch(
        *stream, {uint32_t(programs), 1, 1},
        {KernelArg::pointer(source.address()), KernelArg::pointer(destination.address()),
         KernelArg::pointer(sums->address()), KernelArg::i32(int32_t(readWords)),
         KernelArg::i32(int32_t(writtenWords))});
  }
  auto graph = jit.endCapture(*stream);
  if (launchErr)
    return llvm::joinErrors(std::move(launchErr), graph.takeError());
  if (!graph)
    return graph.takeError();
  auto ms = replayTimes(jit.device(), *graph, *stream, replays);
  if (!ms)
    return ms.takeError();
  return ms->median * 1e3 / launches;
}

llvm::Expected<std::vector<KernelTime>> timeKernels(GpuRunner &runner,
                                                    const KernelRegistry &registry,
                                                    int launches, int replays) {
  const StepPlan &plan = runner.plan();
  std::set<std::tuple<std::string, std::string, std::string>> seen;
  std::vector<KernelTime> times;
  for (size_t i = 0; i < plan.launches.size(); ++i) {
    const PlannedLaunch &launch = plan.launches[i];
    if (!seen.insert({launch.kernel, launch.role, launch.variant}).second)
      continue;
    KernelTime t;
    t.launch = i;
    t.kernel = launch.kernel;
    t.role = launch.role;
    t.variant = launch.variant;
    t.sums = runner.launchSums(i);
    t.bytesRead = launch.bytesRead;
    t.bytesWritten = launch.bytesWritten;
    auto us = runner.timeLaunch(i, launches, replays);
    if (!us)
      return us.takeError();
    t.us = *us;
    auto floor = timeStreamFloor(runner.jit(), registry, size_t(t.bytesRead),
                                 size_t(t.bytesWritten), launches, replays);
    if (!floor)
      return floor.takeError();
    t.floorUs = *floor;
    times.push_back(std::move(t));
  }
  return times;
}

KernelSum sumKernelTimes(const StepPlan &plan, llvm::ArrayRef<KernelTime> times) {
  KernelSum sum;
  for (const PlannedLaunch &launch : plan.launches) {
    auto it = llvm::find_if(times, [&](const KernelTime &t) {
      return t.kernel == launch.kernel && t.role == launch.role &&
             t.variant == launch.variant;
    });
    if (it == times.end()) {
      ++sum.untimed;
      continue;
    }
    sum.us += it->us;
    sum.floorUs += it->floorUs;
  }
  return sum;
}

} // namespace tilejit::models
