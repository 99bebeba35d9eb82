// A DeviceApi that forwards to a real device and can lend the runtime a stream it
// does not own (a framework's current stream), so runtime::Kernel::launch, which
// takes a runtime::Stream, runs on that stream without a copy or a second stream.
// It counts the bytes of every copy, so tests can show a launch path copies
// nothing through the host.
#ifndef TILEJIT_PYTHON_STREAMLENDINGDEVICE_H
#define TILEJIT_PYTHON_STREAMLENDINGDEVICE_H

#include "tilejit/runtime/DeviceApi.h"
#include "tilejit/runtime/DeviceMemory.h"

#include <atomic>
#include <memory>

namespace tilejit::python {

class StreamLendingDevice final : public runtime::DeviceApi {
public:
  explicit StreamLendingDevice(std::unique_ptr<runtime::DeviceApi> device)
      : device(std::move(device)) {}

  /// A runtime::Stream over `stream`, which stays the caller's: destroying the
  /// returned object does not destroy the driver stream. Only on this thread,
  /// and only while no other borrowed stream of this thread is alive.
  llvm::Expected<runtime::Stream> borrow(runtime::StreamHandle stream);

  /// Bytes copied host -> device, device -> host and device -> device through
  /// this device so far (weights, buffers, pages: every copy).
  struct CopiedBytes {
    uint64_t toDevice = 0, toHost = 0, onDevice = 0;
  };
  CopiedBytes copiedBytes() const { return {toDevice, toHost, onDevice}; }

  const runtime::DeviceInfo &info() const override { return device->info(); }
  uint64_t contextId() const override { return device->contextId(); }
  llvm::Expected<runtime::DevicePtr> allocate(size_t bytes) override {
    return device->allocate(bytes);
  }
  llvm::Error free(runtime::DevicePtr address) override { return device->free(address); }
  llvm::Error copyToDevice(runtime::DevicePtr dst, const void *src, size_t bytes,
                           runtime::StreamHandle stream) override {
    toDevice += bytes;
    return device->copyToDevice(dst, src, bytes, stream);
  }
  llvm::Error copyToHost(void *dst, runtime::DevicePtr src, size_t bytes,
                         runtime::StreamHandle stream) override {
    toHost += bytes;
    return device->copyToHost(dst, src, bytes, stream);
  }
  llvm::Error copyOnDevice(runtime::DevicePtr dst, runtime::DevicePtr src, size_t bytes,
                           runtime::StreamHandle stream) override {
    onDevice += bytes;
    return device->copyOnDevice(dst, src, bytes, stream);
  }
  llvm::Error fill(runtime::DevicePtr dst, uint8_t value, size_t bytes,
                   runtime::StreamHandle stream) override {
    return device->fill(dst, value, bytes, stream);
  }
  llvm::Expected<runtime::StreamHandle> createStream() override;
  llvm::Error destroyStream(runtime::StreamHandle stream) override;
  llvm::Error synchronize(runtime::StreamHandle stream) override {
    return device->synchronize(stream);
  }
  llvm::Expected<runtime::EventHandle> createEvent() override {
    return device->createEvent();
  }
  llvm::Error destroyEvent(runtime::EventHandle event) override {
    return device->destroyEvent(event);
  }
  llvm::Error recordEvent(runtime::EventHandle event,
                          runtime::StreamHandle stream) override {
    return device->recordEvent(event, stream);
  }
  llvm::Error synchronizeEvent(runtime::EventHandle event) override {
    return device->synchronizeEvent(event);
  }
  llvm::Expected<float> elapsedMs(runtime::EventHandle start,
                                  runtime::EventHandle end) override {
    return device->elapsedMs(start, end);
  }
  llvm::Expected<runtime::ModuleHandle> loadModule(llvm::StringRef ptx) override {
    return device->loadModule(ptx);
  }
  llvm::Error unloadModule(runtime::ModuleHandle module) override {
    return device->unloadModule(module);
  }
  llvm::Expected<runtime::FunctionHandle> getFunction(runtime::ModuleHandle module,
                                                      llvm::StringRef entry) override {
    return device->getFunction(module, entry);
  }
  llvm::Error setMaxDynamicSharedBytes(runtime::FunctionHandle function,
                                       uint32_t bytes) override {
    return device->setMaxDynamicSharedBytes(function, bytes);
  }
  llvm::Error encodeTensorMap(const TensorMapSpec &spec, runtime::DevicePtr base,
                              uint64_t rows, uint64_t cols,
                              runtime::TensorMapBytes &out) override {
    return device->encodeTensorMap(spec, base, rows, cols, out);
  }
  llvm::Error launch(runtime::FunctionHandle function,
                     const runtime::LaunchConfig &config,
                     llvm::ArrayRef<runtime::KernelArg> args) override {
    return device->launch(function, config, args);
  }
  llvm::Error beginCapture(runtime::StreamHandle stream) override {
    return device->beginCapture(stream);
  }
  llvm::Expected<runtime::GraphHandle> endCapture(runtime::StreamHandle stream) override {
    return device->endCapture(stream);
  }
  llvm::Expected<bool> isCapturing(runtime::StreamHandle stream) override {
    return device->isCapturing(stream);
  }
  llvm::Error launchGraph(runtime::GraphHandle graph,
                          runtime::StreamHandle stream) override {
    return device->launchGraph(graph, stream);
  }
  llvm::Error destroyGraph(runtime::GraphHandle graph) override {
    return device->destroyGraph(graph);
  }

private:
  std::unique_ptr<runtime::DeviceApi> device;
  std::atomic<uint64_t> toDevice{0}, toHost{0}, onDevice{0};
};

} // namespace tilejit::python

#endif // TILEJIT_PYTHON_STREAMLENDINGDEVICE_H
