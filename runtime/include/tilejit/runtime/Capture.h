// Graph-capture discipline (docs/design.md#compile-at-load-never-during-capture): during
// stream capture a launch must find its module ready; compiling, loading a module or
// allocating is refused with an error that says what to do instead. A ready kernel
// captures and replays.
#ifndef TILEJIT_RUNTIME_CAPTURE_H
#define TILEJIT_RUNTIME_CAPTURE_H

#include "tilejit/runtime/DeviceApi.h"
#include "tilejit/runtime/DeviceMemory.h"

#include "llvm/Support/Error.h"

#include <mutex>
#include <optional>
#include <set>

namespace tilejit::runtime {

/// An instantiated CUDA graph owned by one object.
class Graph {
public:
  Graph(DeviceApi &device, GraphHandle graph) : device(&device), graph(graph) {}
  Graph(Graph &&other) noexcept { *this = std::move(other); }
  Graph &operator=(Graph &&other) noexcept;
  ~Graph();

  /// Replays the captured work on `stream`.
  llvm::Error launch(const Stream &stream) {
    return device->launchGraph(graph, stream.handle());
  }
  GraphHandle handle() const { return graph; }

private:
  DeviceApi *device = nullptr;
  GraphHandle graph;
};

/// The streams the runtime is capturing on, and the check that refuses work
/// which must not happen inside a capture.
class CaptureGuard {
public:
  explicit CaptureGuard(DeviceApi &device) : device(device) {}

  /// Starts capturing `stream` (global capture mode).
  llvm::Error begin(const Stream &stream);
  /// Ends the capture of `stream` and instantiates the graph.
  llvm::Expected<Graph> end(const Stream &stream);

  /// Whether the runtime is capturing on any stream.
  bool anyCapturing() const;

  /// Success unless a capture is under way: on `stream` when given (including
  /// a capture begun outside the runtime, which the driver reports), else on
  /// any stream the runtime captures. The error reads "cannot <action> during
  /// CUDA graph capture: <remedy>".
  llvm::Error
  refuseDuringCapture(llvm::StringRef action, llvm::StringRef remedy,
                      std::optional<StreamHandle> stream = std::nullopt) const;

private:
  DeviceApi &device;
  mutable std::mutex mutex;
  std::set<void *> capturing;
};

} // namespace tilejit::runtime

#endif // TILEJIT_RUNTIME_CAPTURE_H
