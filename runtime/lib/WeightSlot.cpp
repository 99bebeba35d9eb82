// Weight slots: named device parts uploaded once; destruction evicts the slot's
// modules before its memory is freed.
#include "tilejit/runtime/WeightSlot.h"

#include "tilejit/runtime/Jit.h"

#include "tilejit/support/Timing.h"

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

std::string WeightSlot::packedPart(StringRef part, const WeightLayout &layout) {
  return layout.packed() ? (part + "@" + layout.name()).str() : part.str();
}

Expected<DevicePtr> WeightSlot::uploadPacked(StringRef part, const WeightLayout &layout,
                                             ArrayRef<uint8_t> rowMajor, int64_t rows,
                                             int64_t rowBytes) {
  const std::string name = packedPart(part, layout);
  if (has(name))
    return address(name);
  auto start = std::chrono::steady_clock::now();
  Expected<std::vector<uint8_t>> packed = packWeight(layout, rowMajor, rows, rowBytes);
  if (!packed)
    return createStringError(inconvertibleErrorCode(),
                             formatv("packing '{0}' of weight slot '{1}': {2}", part,
                                     slotName, toString(packed.takeError())));
  if (layout.packed())
    runtime.stats().addPacked(packed->size(), support::msSince(start));
  return upload(name, *packed);
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
