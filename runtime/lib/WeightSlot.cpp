// Weight slots: named device parts uploaded once; destruction evicts the slot's
// modules before its memory is freed.
#include "tilejit/runtime/WeightSlot.h"

#include "tilejit/runtime/Jit.h"

#include "llvm/Support/FormatVariadic.h"

using namespace llvm;

namespace tilejit::runtime {

WeightSlot::~WeightSlot() {
  // Modules first: one specialized to this weight may embed its addresses.
  runtime.releaseWeightSlot(slotId);
  parts.clear();
}

Expected<DevicePtr> WeightSlot::upload(StringRef part, ArrayRef<uint8_t> bytes) {
  if (parts.count(part))
    return createStringError(
        inconvertibleErrorCode(),
        formatv("weight slot #{0} ('{1}') already holds '{2}': a weight "
                "uploads once",
                slotId, slotName, part));
  Expected<DeviceBuffer> buffer = runtime.allocate(bytes.size());
  if (!buffer)
    return createStringError(inconvertibleErrorCode(),
                             formatv("uploading '{0}' of weight slot '{1}': {2}", part,
                                     slotName, toString(buffer.takeError())));
  if (Error err = buffer->upload(bytes))
    return createStringError(inconvertibleErrorCode(),
                             formatv("uploading '{0}' of weight slot '{1}': {2}", part,
                                     slotName, toString(std::move(err))));
  runtime.stats().addUpload(bytes.size());
  DevicePtr address = buffer->address();
  parts.emplace(part.str(), std::move(*buffer));
  return address;
}

Expected<DevicePtr> WeightSlot::address(StringRef part) const {
  auto it = parts.find(part);
  if (it == parts.end())
    return createStringError(
        inconvertibleErrorCode(),
        formatv("weight slot #{0} ('{1}') holds no '{2}'", slotId, slotName, part));
  return it->second.address();
}

uint64_t WeightSlot::deviceBytes() const {
  uint64_t total = 0;
  for (const auto &[name, buffer] : parts)
    total += buffer.size();
  return total;
}

} // namespace tilejit::runtime
