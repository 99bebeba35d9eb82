// WeightSlot: owns a weight's device-resident copy and the modules specialized to
// it. Its identity is a process-unique id, never an address
// (docs/design.md#weight-slots).
#ifndef TILEJIT_RUNTIME_WEIGHTSLOT_H
#define TILEJIT_RUNTIME_WEIGHTSLOT_H

#include "tilejit/runtime/DeviceMemory.h"
#include "tilejit/support/WeightLayout.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <map>
#include <string>

namespace tilejit::runtime {

class JitRuntime;

/// One weight on the device, in named parts ("weight", "scales", ...), each
/// uploaded once. Created by JitRuntime::createWeightSlot. Destroying the slot
/// unloads every module specialized to it, then frees its device memory, so a
/// later slot (even one whose host data sits at the same addresses) never sees
/// either. Not thread-safe; must not outlive its JitRuntime.
class WeightSlot {
public:
  WeightSlot(const WeightSlot &) = delete;
  WeightSlot &operator=(const WeightSlot &) = delete;
  ~WeightSlot();

  /// Process-unique, never reused, never 0.
  uint64_t id() const { return slotId; }
  llvm::StringRef name() const { return slotName; }

  /// Allocates device memory for `part` and copies `bytes` into it; counted
  /// in LoadStats::bytesUploaded. A part uploads once: a second upload of the
  /// same part is an error. Refused during graph capture.
  llvm::Expected<DevicePtr> upload(llvm::StringRef part, llvm::ArrayRef<uint8_t> bytes);
  /// Uploads `rowMajor` ([rows, rowBytes] bytes) re-packed into `layout` as
  /// part packedPart(part, layout), unless that part is already held (a
  /// weight packs once per layout, however many kernels read it so); the
  /// packing is counted in LoadStats::bytesPacked and packMs. A row-major
  /// layout uploads the bytes as they are.
  llvm::Expected<DevicePtr> uploadPacked(llvm::StringRef part, const WeightLayout &layout,
                                         llvm::ArrayRef<uint8_t> rowMajor, int64_t rows,
                                         int64_t rowBytes);
  /// The part a weight in `layout` is held as: "PART" row-major, else
  /// "PART@LAYOUT", so a slot may hold a weight in several layouts.
  static std::string packedPart(llvm::StringRef part, const WeightLayout &layout);
  /// The device address of an uploaded part.
  llvm::Expected<DevicePtr> address(llvm::StringRef part) const;
  /// Whether `part` has been uploaded.
  bool has(llvm::StringRef part) const { return parts.count(part) != 0; }
  /// Bytes held on the device over all parts.
  uint64_t deviceBytes() const;

private:
  friend class JitRuntime;
  WeightSlot(JitRuntime &runtime, uint64_t id, std::string name)
      : runtime(runtime), slotId(id), slotName(std::move(name)) {}

  JitRuntime &runtime;
  uint64_t slotId;
  std::string slotName;
  std::map<std::string, DeviceBuffer, std::less<>> parts;
};

} // namespace tilejit::runtime

#endif // TILEJIT_RUNTIME_WEIGHTSLOT_H
