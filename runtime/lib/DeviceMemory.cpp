// The owning wrappers of DeviceMemory.h.
#include "tilejit/runtime/DeviceMemory.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include <utility>

using namespace llvm;

namespace tilejit::runtime {

void reportUnhandled(Error err) {
  handleAllErrors(std::move(err), [](const ErrorInfoBase &info) {
    errs() << "tilejit: warning: " << info.message() << "\n";
  });
}

Expected<DeviceBuffer> DeviceBuffer::allocate(DeviceApi &device, size_t bytes) {
  Expected<DevicePtr> ptr = device.allocate(bytes);
  if (!ptr)
    return ptr.takeError();
  return DeviceBuffer(device, *ptr, bytes);
}

DeviceBuffer &DeviceBuffer::operator=(DeviceBuffer &&other) noexcept {
  if (this != &other) {
    reportUnhandled(release());
    device = std::exchange(other.device, nullptr);
    ptr = std::exchange(other.ptr, 0);
    bytes = std::exchange(other.bytes, 0);
  }
  return *this;
}

DeviceBuffer::~DeviceBuffer() { reportUnhandled(release()); }

Error DeviceBuffer::upload(ArrayRef<uint8_t> data, StreamHandle stream) {
  if (data.size() > bytes)
    return createStringError(
        inconvertibleErrorCode(),
        formatv("cannot upload {0} bytes into a buffer of {1}", data.size(), bytes));
  return device->copyToDevice(ptr, data.data(), data.size(), stream);
}

Error DeviceBuffer::download(MutableArrayRef<uint8_t> out, StreamHandle stream) {
  if (out.size() > bytes)
    return createStringError(
        inconvertibleErrorCode(),
        formatv("cannot download {0} bytes from a buffer of {1}", out.size(), bytes));
  return device->copyToHost(out.data(), ptr, out.size(), stream);
}

Error DeviceBuffer::release() {
  if (!ptr)
    return Error::success();
  DevicePtr address = std::exchange(ptr, 0);
  bytes = 0;
  return device->free(address);
}

Expected<Stream> Stream::create(DeviceApi &device) {
  Expected<StreamHandle> stream = device.createStream();
  if (!stream)
    return stream.takeError();
  return Stream(device, *stream);
}

Stream &Stream::operator=(Stream &&other) noexcept {
  if (this != &other) {
    if (stream)
      reportUnhandled(device->destroyStream(stream));
    device = std::exchange(other.device, nullptr);
    stream = std::exchange(other.stream, {});
  }
  return *this;
}

Stream::~Stream() {
  if (stream)
    reportUnhandled(device->destroyStream(stream));
}

Expected<Event> Event::create(DeviceApi &device) {
  Expected<EventHandle> event = device.createEvent();
  if (!event)
    return event.takeError();
  return Event(device, *event);
}

Event &Event::operator=(Event &&other) noexcept {
  if (this != &other) {
    if (event)
      reportUnhandled(device->destroyEvent(event));
    device = std::exchange(other.device, nullptr);
    event = std::exchange(other.event, {});
  }
  return *this;
}

Event::~Event() {
  if (event)
    reportUnhandled(device->destroyEvent(event));
}

Expected<float> Event::elapsedMs(const Event &start, const Event &end) {
  return start.device->elapsedMs(start.event, end.event);
}

} // namespace tilejit::runtime
