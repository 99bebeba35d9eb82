// The capture guard and the owning graph wrapper.
#include "tilejit/runtime/Capture.h"

#include "llvm/Support/FormatVariadic.h"

using namespace llvm;

namespace tilejit::runtime {

Graph &Graph::operator=(Graph &&other) noexcept {
  if (this != &other) {
    if (graph)
      reportUnhandled(device->destroyGraph(graph));
    device = std::exchange(other.device, nullptr);
    graph = std::exchange(other.graph, {});
  }
  return *this;
}

Graph::~Graph() {
  if (graph)
    reportUnhandled(device->destroyGraph(graph));
}

Error CaptureGuard::begin(const Stream &stream) {
  if (Error err = device.beginCapture(stream.handle()))
    return err;
  std::lock_guard<std::mutex> lock(mutex);
  capturing.insert(stream.handle().raw);
  return Error::success();
}

Expected<Graph> CaptureGuard::end(const Stream &stream) {
  {
    std::lock_guard<std::mutex> lock(mutex);
    capturing.erase(stream.handle().raw);
  }
  Expected<GraphHandle> graph = device.endCapture(stream.handle());
  if (!graph)
    return graph.takeError();
  return Graph(device, *graph);
}

bool CaptureGuard::anyCapturing() const {
  std::lock_guard<std::mutex> lock(mutex);
  return !capturing.empty();
}

Error CaptureGuard::refuseDuringCapture(StringRef action, StringRef remedy,
                                        std::optional<StreamHandle> stream) const {
  bool underWay = anyCapturing();
  if (!underWay && stream) {
    Expected<bool> driverSays = device.isCapturing(*stream);
    if (!driverSays)
      return driverSays.takeError();
    underWay = *driverSays;
  }
  if (!underWay)
    return Error::success();
  return createStringError(
      inconvertibleErrorCode(),
      formatv("cannot {0} during CUDA graph capture: {1}", action, remedy));
}

} // namespace tilejit::runtime
