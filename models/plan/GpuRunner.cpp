// A StepPlan on the GPU: one weight slot per layer (every parameter uploaded
// once), the kernels a launch names specialized to that layer's slot, all
// kernels compiled in parallel and loaded at creation, the step captured as
// one graph.
#include "tilejit/jit/JitCompiler.h"
#include "tilejit/models/plan/Runners.h"
#include "tilejit/models/plan/Timing.h"
#include "tilejit/runtime/Jit.h"
#include "tilejit/tuning/TunedLookup.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <map>
#include <memory>
#include <set>
#include <tuple>

namespace tilejit::models {

using namespace tilejit::runtime;

struct GpuRunner::Impl {
  JitRuntime &jit;
  StepPlan plan;
  std::shared_ptr<GpuSharedState> shared;      // weight slots and pages
  std::map<std::string, DeviceBuffer> buffers; // the other non-weight buffers
  /// By kernel, constants and weight slot (-1: none).
  std::map<std::tuple<std::string, ConstantValues, int64_t>,
           std::unique_ptr<runtime::Kernel>>
      kernels;
  std::vector<runtime::Kernel *> launchKernels; // per plan launch
  std::vector<int32_t> deviceSlots;             // what the "slots" buffer holds
  std::optional<Stream> stream;
  std::optional<Graph> graph;
  /// Recorded on the caller's stream after a step there; upload, download and
  /// step() wait for it, since they run on the decoder's own stream.
  std::optional<Event> callerStepDone;
  bool callerStepPending = false;

  Impl(JitRuntime &jit, StepPlan plan, std::shared_ptr<GpuSharedState> shared)
      : jit(jit), plan(std::move(plan)), shared(std::move(shared)) {}

  /// Non-weight buffer `name` (a page from the shared state), or null.
  DeviceBuffer *buffer(const std::string &name) {
    auto it = buffers.find(name);
    if (it != buffers.end())
      return &it->second;
    auto page = shared->pages.find(name);
    return page != shared->pages.end() ? &page->second : nullptr;
  }

  /// The device address of a buffer argument (a weight: its layer's slot
  /// part in the layout the launch reads it in).
  llvm::Expected<DevicePtr> address(const PlanArg &arg) {
    const PlanBuffer &buffer = plan.buffers.at(arg.buffer);
    if (buffer.role == PlanBuffer::Role::Weight)
      return shared->slots.at(buffer.layer)
          ->address(WeightSlot::packedPart(arg.buffer, arg.layout));
    return this->buffer(arg.buffer)->address();
  }

  /// Uploads weight `name` into its layer's slot, once in each of `layouts`
  /// (the launches' reads of it; row-major when none), unless a runner
  /// sharing the slot did.
  llvm::Error addWeight(const std::string &name, const PlanBuffer &buffer,
                        std::set<WeightLayout> layouts) {
    auto &slot = shared->slots[buffer.layer];
    if (!slot)
      slot = jit.createWeightSlot(llvm::formatv("layer {0}", buffer.layer).str());
    llvm::ArrayRef<uint8_t> bytes = buffer.hostWeight;
    if (bytes.size() != buffer.bytes)
      return llvm::createStringError(
          llvm::formatv("plan: weight '{0}' has {1} bytes, the plan expects {2}", name,
                        bytes.size(), buffer.bytes));
    if (layouts.empty())
      layouts.insert(WeightLayout{});
    auto [rows, rowBytes] = weightMatrix(buffer);
    for (const WeightLayout &layout : layouts)
      if (auto address = slot->uploadPacked(name, layout, bytes, rows, rowBytes);
          !address)
        return address.takeError();
    return llvm::Error::success();
  }

  /// Allocates non-weight buffer `name`; a page is taken from the shared
  /// state when a runner sharing it allocated one.
  llvm::Error addBuffer(const std::string &name, const PlanBuffer &buffer) {
    const bool page = buffer.role == PlanBuffer::Role::State;
    if (page)
      if (auto it = shared->pages.find(name); it != shared->pages.end()) {
        if (it->second.size() == buffer.bytes)
          return llvm::Error::success();
        return llvm::createStringError(llvm::formatv(
            "plan: page '{0}' has {1} bytes in the shared state, the plan expects {2}",
            name, it->second.size(), buffer.bytes));
      }
    auto device = jit.allocate(buffer.bytes);
    if (!device)
      return device.takeError();
    (page ? shared->pages : buffers).emplace(name, std::move(*device));
    return llvm::Error::success();
  }

  llvm::Expected<std::vector<KernelArg>> arguments(const PlannedLaunch &launch) {
    std::vector<KernelArg> args;
    for (const PlanArg &arg : launch.args) {
      switch (arg.kind) {
      case PlanArg::Kind::Int:
        args.push_back(KernelArg::i32(int32_t(arg.intValue)));
        break;
      case PlanArg::Kind::Float:
        args.push_back(KernelArg::f32(float(arg.floatValue)));
        break;
      case PlanArg::Kind::Buffer: {
        auto ptr = address(arg);
        if (!ptr)
          return ptr.takeError();
        args.push_back(KernelArg::pointer(*ptr));
      }
      }
    }
    return args;
  }

  static Dim3 grid(const PlannedLaunch &launch) {
    return {uint32_t(launch.grid[0]), uint32_t(launch.grid[1]), uint32_t(launch.grid[2])};
  }

  llvm::Error waitForCallerStep() {
    if (!callerStepPending)
      return llvm::Error::success();
    callerStepPending = false;
    return callerStepDone->synchronize();
  }

  /// Captures `body` on the stream into a graph.
  llvm::Expected<Graph> capture(llvm::function_ref<llvm::Error()> body) {
    if (auto err = jit.beginCapture(*stream))
      return std::move(err);
    llvm::Error bodyErr = body();
    auto captured = jit.endCapture(*stream);
    if (bodyErr)
      return llvm::joinErrors(std::move(bodyErr), captured.takeError());
    return captured;
  }
};

GpuRunner::GpuRunner(std::unique_ptr<Impl> impl) : impl(std::move(impl)) {}
GpuRunner::~GpuRunner() = default;

llvm::Expected<std::unique_ptr<GpuRunner>>
GpuRunner::create(JitRuntime &jit, const KernelRegistry &registry, const StepPlan &plan,
                  llvm::raw_ostream &log, std::shared_ptr<GpuSharedState> shared) {
  auto impl = std::make_unique<Impl>(
      jit, plan, shared ? std::move(shared) : std::make_shared<GpuSharedState>());
  auto stream = Stream::create(jit.device());
  if (!stream)
    return stream.takeError();
  impl->stream.emplace(std::move(*stream));

  std::map<std::string, std::set<WeightLayout>> weightLayouts;
  for (const PlannedLaunch &launch : plan.launches)
    for (const PlanArg &arg : launch.args)
      if (arg.kind == PlanArg::Kind::Buffer)
        weightLayouts[arg.buffer].insert(arg.layout);
  for (const auto &[name, buffer] : plan.buffers)
    if (auto err = buffer.role == PlanBuffer::Role::Weight
                       ? impl->addWeight(name, buffer, weightLayouts[name])
                       : impl->addBuffer(name, buffer))
      return err;

  for (const PlannedLaunch &launch : plan.launches) {
    const WeightSlot *slot = launch.weightSlot >= 0
                                 ? impl->shared->slots.at(launch.weightSlot).get()
                                 : nullptr;
    auto &kernel = impl->kernels[{launch.kernel, launch.spec.values(),
                                  slot ? launch.weightSlot : -1}];
    if (!kernel) {
      auto def = findPlanKernel(registry, launch.kernel);
      if (!def)
        return def.takeError();
      KernelSpec kernelSpec = makeKernelSpec(**def, launch.spec);
      kernelSpec.weightSlot = slot;
      kernel = std::make_unique<runtime::Kernel>(jit, std::move(kernelSpec));
    }
    impl->launchKernels.push_back(kernel.get());
  }
  std::vector<runtime::Kernel *> all;
  for (auto &[key, kernel] : impl->kernels)
    all.push_back(kernel.get());
  auto report = jit.compileAll(all);
  if (!report)
    return report.takeError();
  report->print(log);

  Impl &self = *impl;
  auto graph = impl->capture([&]() -> llvm::Error {
    for (size_t i = 0; i < self.plan.launches.size(); ++i) {
      auto args = self.arguments(self.plan.launches[i]);
      if (!args)
        return args.takeError();
      if (auto err = self.launchKernels[i]->launch(
              *self.stream, Impl::grid(self.plan.launches[i]), *args))
        return err;
    }
    return llvm::Error::success();
  });
  if (!graph)
    return graph.takeError();
  impl->graph.emplace(std::move(*graph));
  return std::unique_ptr<GpuRunner>(new GpuRunner(std::move(impl)));
}

llvm::Error GpuRunner::upload(const HostBuffers &buffers) {
  auto slots = buffers.find("slots");
  if (slots == buffers.end())
    return llvm::createStringError("plan: no 'slots' buffer");
  if (slots->second.size() != size_t(impl->plan.rows) * sizeof(int32_t))
    return llvm::createStringError(
        llvm::formatv("plan: buffer 'slots' has {0} bytes, the plan expects {1}",
                      slots->second.size(), impl->plan.rows * sizeof(int32_t)));
  const auto *first = reinterpret_cast<const int32_t *>(slots->second.data());
  if (auto err = checkSlots({first, size_t(impl->plan.rows)}, impl->plan.numSlots))
    return err;
  for (const auto &[name, bytes] : buffers) {
    DeviceBuffer *device = impl->buffer(name);
    if (!device)
      return llvm::createStringError("plan: no buffer '" + name + "'");
    if (bytes.size() != device->size())
      return llvm::createStringError(
          llvm::formatv("plan: buffer '{0}' has {1} bytes, the plan expects {2}", name,
                        bytes.size(), device->size()));
  }
  if (auto err = impl->waitForCallerStep())
    return err;
  impl->deviceSlots.assign(first, first + impl->plan.rows);
  for (const auto &[name, bytes] : buffers)
    if (auto err = impl->buffer(name)->upload(bytes, impl->stream->handle()))
      return err;
  return impl->stream->synchronize();
}

llvm::Error GpuRunner::download(HostBuffers &buffers) {
  if (auto err = impl->waitForCallerStep())
    return err;
  for (auto &[name, bytes] : buffers) {
    DeviceBuffer *device = impl->buffer(name);
    if (!device)
      return llvm::createStringError("plan: no buffer '" + name + "'");
    bytes.resize(device->size());
    if (auto err = device->download(bytes, impl->stream->handle()))
      return err;
  }
  return impl->stream->synchronize();
}

const StepPlan &GpuRunner::plan() const { return impl->plan; }
JitRuntime &GpuRunner::jit() const { return impl->jit; }

llvm::Error GpuRunner::step() {
  if (auto err = impl->waitForCallerStep())
    return err;
  if (auto err = impl->graph->launch(*impl->stream))
    return err;
  return impl->stream->synchronize();
}

llvm::Error GpuRunner::runLaunch(size_t index) {
  if (auto err = impl->waitForCallerStep())
    return err;
  const PlannedLaunch &launch = impl->plan.launches.at(index);
  auto args = impl->arguments(launch);
  if (!args)
    return args.takeError();
  if (auto err =
          impl->launchKernels[index]->launch(*impl->stream, Impl::grid(launch), *args))
    return err;
  return impl->stream->synchronize();
}

SumPrecision GpuRunner::launchSums(size_t index) const {
  return impl->launchKernels.at(index)->compiled()->sums;
}

llvm::Error GpuRunner::step(const TensorRef &hidden, llvm::ArrayRef<int32_t> slots,
                            const TensorRef &out, StreamHandle stream,
                            const HostBuffers &inputs) {
  const StepPlan &plan = impl->plan;
  const std::string input = StepPlan::activation(0),
                    output = StepPlan::activation(plan.numLayers);
  DeviceApi &device = impl->jit.device();
  const int ordinal = device.info().ordinal;
  if (auto err = checkPlanTensor(plan, input, "hidden", hidden, ordinal))
    return err;
  if (auto err = checkPlanTensor(plan, output, "out", out, ordinal))
    return err;
  if (slots.size() != size_t(plan.rows))
    return llvm::createStringError(
        llvm::formatv("step: {0} slots for {1} rows", slots.size(), plan.rows));
  if (auto err = checkSlots(slots, plan.numSlots))
    return err;
  for (const auto &[name, bytes] : inputs) {
    auto it = plan.buffers.find(name);
    if (it == plan.buffers.end() || it->second.role != PlanBuffer::Role::Input ||
        it->second.bytes != bytes.size())
      return llvm::createStringError(
          llvm::formatv("step: no input buffer '{0}' of {1} bytes", name, bytes.size()));
  }
  if (!impl->callerStepDone) {
    auto event = Event::create(device);
    if (!event)
      return event.takeError();
    impl->callerStepDone.emplace(std::move(*event));
  }
  if (!llvm::equal(slots, impl->deviceSlots)) {
    DeviceBuffer &deviceSlots = impl->buffers.at("slots");
    if (auto err = deviceSlots.upload({reinterpret_cast<const uint8_t *>(slots.data()),
                                       slots.size() * sizeof(int32_t)},
                                      stream))
      return err;
    impl->deviceSlots.assign(slots.begin(), slots.end());
  }
  for (const auto &[name, bytes] : inputs)
    if (auto err = impl->buffers.at(name).upload(bytes, stream))
      return err;
  if (auto err = device.copyOnDevice(impl->buffers.at(input).address(), hidden.address,
                                     impl->buffers.at(input).size(), stream))
    return err;
  if (auto err = device.launchGraph(impl->graph->handle(), stream))
    return err;
  if (auto err = device.copyOnDevice(out.address, impl->buffers.at(output).address(),
                                     impl->buffers.at(output).size(), stream))
    return err;
  if (auto err = device.recordEvent(impl->callerStepDone->handle(), stream))
    return err;
  impl->callerStepPending = true;
  return llvm::Error::success();
}

llvm::Expected<DevicePtr> GpuRunner::bufferAddress(llvm::StringRef name) const {
  const DeviceBuffer *device = impl->buffer(name.str());
  if (!device)
    return llvm::createStringError("plan: no non-weight buffer '" + name + "'");
  return device->address();
}

llvm::Expected<StepTimes> GpuRunner::time(int replays) {
  if (auto err = impl->waitForCallerStep())
    return std::move(err);
  auto ms = replayTimes(impl->jit.device(), *impl->graph, *impl->stream, replays);
  if (!ms)
    return ms.takeError();
  return StepTimes{ms->median * 1e3, ms->min * 1e3, ms->max * 1e3, replays};
}

llvm::Expected<double> GpuRunner::timeLaunch(size_t index, int launches, int replays) {
  if (auto err = impl->waitForCallerStep())
    return std::move(err);
  const PlannedLaunch &launch = impl->plan.launches.at(index);
  // Distinct copies of the launch's weights, so every launch streams them
  // from HBM rather than L2.
  std::vector<std::map<std::string, DeviceBuffer>> copies(launches);
  // The host bytes outlive the stream's uploads.
  std::map<std::string, std::vector<uint8_t>> hostBytes;
  for (auto &copy : copies)
    for (const PlanArg &arg : launch.args)
      if (arg.kind == PlanArg::Kind::Buffer &&
          impl->plan.buffers.at(arg.buffer).role == PlanBuffer::Role::Weight) {
        if (!hostBytes.count(arg.buffer)) {
          auto bytes = packPlanWeight(impl->plan.buffers.at(arg.buffer), arg.layout);
          if (!bytes)
            return bytes.takeError();
          hostBytes[arg.buffer] = std::move(*bytes);
        }
        auto buffer = impl->jit.allocate(hostBytes[arg.buffer].size());
        if (!buffer)
          return buffer.takeError();
        if (auto err = buffer->upload(hostBytes[arg.buffer], impl->stream->handle()))
          return std::move(err);
        copy.emplace(arg.buffer, std::move(*buffer));
      }
  auto args = impl->arguments(launch);
  if (!args)
    return args.takeError();
  Impl &self = *impl;
  auto graph = impl->capture([&]() -> llvm::Error {
    for (auto &copy : copies) {
      std::vector<KernelArg> copyArgs = *args;
      for (size_t a = 0; a < launch.args.size(); ++a)
        if (auto it = copy.find(launch.args[a].buffer); it != copy.end())
          copyArgs[a] = KernelArg::pointer(it->second.address());
      if (auto err = self.launchKernels[index]->launch(*self.stream, Impl::grid(launch),
                                                       copyArgs))
        return err;
    }
    return llvm::Error::success();
  });
  if (!graph)
    return graph.takeError();
  auto ms = replayTimes(impl->jit.device(), *graph, *impl->stream, replays);
  if (!ms)
    return ms.takeError();
  return ms->median * 1e3 / launches;
}

TunedConstants tunedFromDatabase(runtime::JitRuntime &jit, const KernelRegistry &registry,
                                 tuning::NamedValues shape, llvm::raw_ostream &log) {
  auto db = std::make_shared<tuning::TuneDb>(tuning::loadTuneDb(jit));
  auto said = std::make_shared<std::set<std::string>>();
  // Every layer plans the same instances: each is keyed (its IR built and
  // hashed) once.
  auto found = std::make_shared<std::map<std::string, ConstantValues>>();
  return [&jit, &registry, shape = std::move(shape), db, said, found, &log](
             llvm::StringRef kernel, const ConstantValues &geometry) -> ConstantValues {
    const std::string instance = (kernel + " " + formatConstants(geometry)).str();
    if (auto it = found->find(instance); it != found->end())
      return it->second;
    const KernelDef *def = registry.find(kernel);
    if (!def || def->tuningKey.empty())
      return {};
    // The plan's values of the launch sizes the kernel is tuned by.
    tuning::NamedValues at;
    for (const std::string &axis : def->tuningKey) {
      auto it = shape.find(axis);
      if (it == shape.end() || it->second <= 0)
        return {};
      at.insert(*it);
    }
    auto base = tuning::tuningBase(*def, geometry);
    if (!base) {
      llvm::consumeError(base.takeError());
      return {};
    }
    tuning::TunedChoice choice = tuning::lookupTuned(jit, *db, *def, *base, at);
    if (!choice.message.empty() && said->insert(choice.key.id()).second)
      log << choice.message << "\n";
    return (*found)[instance] = choice.config;
  };
}

} // namespace tilejit::models
