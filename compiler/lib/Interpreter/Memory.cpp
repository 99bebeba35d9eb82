// Checked host memory of one interpreter run: the argument buffers, the
// containment test every pointer access goes through, and element encoding
// (bf16 / f16 / e4m3 bit patterns <-> the f32 values slots hold).
#include "InterpreterImpl.h"

#include "tilejit/support/FloatFormats.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <array>
#include <cstring>

namespace tilejit::interp::detail {

void Memory::addBuffer(const Arg &arg, unsigned argIndex) {
  int64_t begin = int64_t(reinterpret_cast<uintptr_t>(arg.getData()));
  buffers.push_back({begin, begin + int64_t(arg.getBytes()), argIndex, arg.isWritable()});
}

const Memory::Buffer *Memory::holding(int64_t address, uint64_t bytes, bool write) const {
  for (const Buffer &b : buffers) {
    uint64_t size = uint64_t(b.end - b.begin);
    if (address >= b.begin && bytes <= size &&
        uint64_t(address - b.begin) <= size - bytes && (b.writable || !write))
      return &b;
  }
  return nullptr;
}

bool Memory::contains(int64_t address, uint64_t bytes, bool write) const {
  return holding(address, bytes, write) != nullptr;
}

std::optional<uint64_t> Memory::offsetInBuffer(int64_t address, uint64_t bytes) const {
  if (const Buffer *b = holding(address, bytes, /*write=*/false))
    return uint64_t(address - b->begin);
  return std::nullopt;
}

std::string Memory::describe(int64_t address, unsigned bytes, bool write) const {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << (write ? "writes " : "reads ") << bytes << " byte(s) at address "
     << llvm::format_hex(uint64_t(address), 2);
  const Buffer *nearest = nullptr;
  uint64_t nearestDistance = ~uint64_t(0);
  for (const Buffer &b : buffers) {
    if (address >= b.begin &&
        uint64_t(address - b.begin) + bytes <= uint64_t(b.end - b.begin)) {
      os << ", inside read-only argument " << b.argIndex << " at byte offset "
         << (address - b.begin);
      return text;
    }
    // Distance to the buffer's byte range (0 when the access straddles its end).
    uint64_t distance = address < b.begin ? uint64_t(b.begin) - uint64_t(address)
                        : address < b.end ? 0
                                          : uint64_t(address) - uint64_t(b.end) + 1;
    if (distance < nearestDistance)
      nearestDistance = distance, nearest = &b;
  }
  os << ", outside every buffer argument";
  if (nearest)
    os << " (nearest: argument " << nearest->argIndex << " of "
       << (nearest->end - nearest->begin) << " bytes, at byte offset "
       << (address - nearest->begin) << " from its start)";
  return text;
}

llvm::Error Memory::check(const OpSite &site, const int64_t *addresses,
                          const int64_t *active, size_t count, unsigned bytes,
                          bool write) const {
  // Fast path: the span of all active accesses lies in one buffer.
  int64_t lo = INT64_MAX, hi = INT64_MIN;
  for (size_t k = 0; k < count; ++k)
    if (!active || active[k]) {
      lo = std::min(lo, addresses[k]);
      hi = std::max(hi, addresses[k]);
    }
  uint64_t span = uint64_t(hi) - uint64_t(lo);
  if (lo > hi || (span < (uint64_t(1) << 62) && contains(lo, span + bytes, write)))
    return llvm::Error::success();
  for (size_t k = 0; k < count; ++k)
    if ((!active || active[k]) && !contains(addresses[k], bytes, write))
      return siteError(site, "element " + std::to_string(k) + " " +
                                 describe(addresses[k], bytes, write));
  return llvm::Error::success();
}

static const std::array<float, 256> &e4m3Table() {
  static const std::array<float, 256> table = [] {
    std::array<float, 256> t;
    for (unsigned code = 0; code < 256; ++code)
      t[code] = e4m3ToF32(uint8_t(code));
    return t;
  }();
  return table;
}

template <typename T> static T load(int64_t address) {
  T value;
  std::memcpy(&value, reinterpret_cast<const void *>(address), sizeof(T));
  return value;
}

template <typename T> static void store(int64_t address, T value) {
  std::memcpy(reinterpret_cast<void *>(address), &value, sizeof(T));
}

float readFloat(const ValueType &element, int64_t address) {
  switch (element.element) {
  case DType::F16:
    return f16ToF32(load<uint16_t>(address));
  case DType::BF16:
    return bf16ToF32(load<uint16_t>(address));
  case DType::F8E4M3:
    return e4m3Table()[load<uint8_t>(address)];
  default:
    return load<float>(address);
  }
}

void writeFloat(const ValueType &element, int64_t address, float value) {
  switch (element.element) {
  case DType::F16:
    return store(address, f32ToF16(value));
  case DType::BF16:
    return store(address, f32ToBF16(value));
  case DType::F8E4M3:
    return store(address, f32ToE4M3(value));
  default:
    return store(address, value);
  }
}

int64_t readInt(const ValueType &element, int64_t address) {
  uint64_t raw = 0;
  std::memcpy(&raw, reinterpret_cast<const void *>(address), element.memoryBytes());
  if (element.element == DType::I1) // a byte in memory: non-zero is true
    return raw & 0xFF ? -1 : 0;
  return signExtend(raw, element.bitWidth());
}

void writeInt(const ValueType &element, int64_t address, int64_t value) {
  uint64_t raw = zeroExtend(value, element.bitWidth());
  std::memcpy(reinterpret_cast<void *>(address), &raw, element.memoryBytes());
}

void roundInPlace(DType type, float *data, size_t count) {
  switch (type) {
  case DType::BF16:
    for (size_t k = 0; k < count; ++k)
      data[k] = roundToBF16(data[k]);
    break;
  case DType::F16:
    for (size_t k = 0; k < count; ++k)
      data[k] = roundToF16(data[k]);
    break;
  case DType::F8E4M3:
    for (size_t k = 0; k < count; ++k)
      data[k] = roundToE4M3(data[k]);
    break;
  default:
    break;
  }
}

} // namespace tilejit::interp::detail
