// Lending: runtime::Stream::create asks the device for a stream; while a borrow is
// under way on this thread the device answers with the borrowed handle, and it
// never destroys a handle it lent.
#include "StreamLendingDevice.h"

namespace tilejit::python {

namespace {
/// The stream being handed out by borrow() on this thread.
thread_local std::optional<runtime::StreamHandle> lending;
/// The borrowed stream alive on this thread (destroyStream leaves it alone).
thread_local std::optional<runtime::StreamHandle> lent;
} // namespace

llvm::Expected<runtime::Stream>
StreamLendingDevice::borrow(runtime::StreamHandle stream) {
  if (lent)
    return llvm::createStringError("a borrowed stream is already alive on this thread");
  lending = stream;
  llvm::Expected<runtime::Stream> wrapped = runtime::Stream::create(*this);
  lending.reset();
  // ~Stream destroys only non-null handles: the legacy default stream (null)
  // needs no guard.
  if (wrapped && stream)
    lent = stream;
  return wrapped;
}

llvm::Expected<runtime::StreamHandle> StreamLendingDevice::createStream() {
  if (lending)
    return *lending;
  return device->createStream();
}

llvm::Error StreamLendingDevice::destroyStream(runtime::StreamHandle stream) {
  if (lent && *lent == stream) {
    lent.reset();
    return llvm::Error::success();
  }
  return device->destroyStream(stream);
}

} // namespace tilejit::python
