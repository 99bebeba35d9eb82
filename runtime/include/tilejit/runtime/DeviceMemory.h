// Owning wrappers over device objects: a buffer of device memory, a stream, an
// event. Each frees its object on destruction; a failure there is reported on
// stderr, since a destructor cannot return it.
#ifndef TILEJIT_RUNTIME_DEVICEMEMORY_H
#define TILEJIT_RUNTIME_DEVICEMEMORY_H

#include "tilejit/runtime/DeviceApi.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/Error.h"

namespace tilejit::runtime {

/// Reports an error that has no caller to go to (a destructor's) on stderr.
void reportUnhandled(llvm::Error err);

/// Device memory owned by one object; moves, never copies.
class DeviceBuffer {
public:
  /// Allocates `bytes` on `device`. JitRuntime::allocate is the entry point
  /// that also refuses allocation during stream capture.
  static llvm::Expected<DeviceBuffer> allocate(DeviceApi &device, size_t bytes);

  DeviceBuffer() = default;
  DeviceBuffer(DeviceBuffer &&other) noexcept { *this = std::move(other); }
  DeviceBuffer &operator=(DeviceBuffer &&other) noexcept;
  ~DeviceBuffer();

  DevicePtr address() const { return ptr; }
  size_t size() const { return bytes; }
  explicit operator bool() const { return ptr != 0; }

  /// Copies `data` (at most size() bytes) to the start of the buffer.
  llvm::Error upload(llvm::ArrayRef<uint8_t> data, StreamHandle stream = {});
  /// Copies the first `out.size()` bytes of the buffer to `out`.
  llvm::Error download(llvm::MutableArrayRef<uint8_t> out, StreamHandle stream = {});
  /// Frees now; the buffer becomes empty.
  llvm::Error release();

private:
  DeviceBuffer(DeviceApi &device, DevicePtr ptr, size_t bytes)
      : device(&device), ptr(ptr), bytes(bytes) {}

  DeviceApi *device = nullptr;
  DevicePtr ptr = 0;
  size_t bytes = 0;
};

/// A stream owned by one object.
class Stream {
public:
  static llvm::Expected<Stream> create(DeviceApi &device);

  Stream(Stream &&other) noexcept { *this = std::move(other); }
  Stream &operator=(Stream &&other) noexcept;
  ~Stream();

  StreamHandle handle() const { return stream; }
  llvm::Error synchronize() { return device->synchronize(stream); }

private:
  Stream(DeviceApi &device, StreamHandle stream) : device(&device), stream(stream) {}

  DeviceApi *device = nullptr;
  StreamHandle stream;
};

/// An event owned by one object, for timing a region of a stream.
class Event {
public:
  static llvm::Expected<Event> create(DeviceApi &device);

  Event(Event &&other) noexcept { *this = std::move(other); }
  Event &operator=(Event &&other) noexcept;
  ~Event();

  EventHandle handle() const { return event; }
  llvm::Error record(const Stream &stream) {
    return device->recordEvent(event, stream.handle());
  }
  llvm::Error synchronize() { return device->synchronizeEvent(event); }
  /// Milliseconds between `start` and `end`, both recorded and complete.
  static llvm::Expected<float> elapsedMs(const Event &start, const Event &end);

private:
  Event(DeviceApi &device, EventHandle event) : device(&device), event(event) {}

  DeviceApi *device = nullptr;
  EventHandle event;
};

} // namespace tilejit::runtime

#endif // TILEJIT_RUNTIME_DEVICEMEMORY_H
