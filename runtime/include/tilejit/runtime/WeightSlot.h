// WeightSlot: owns a weight's device-resident copy and the modules specialized to
// it. Its identity is a process-unique id, never an address
// (docs/design.md#weight-slots).
#ifndef TILEJIT_RUNTIME_WEIGHTSLOT_H
#define TILEJIT_RUNTIME_WEIGHTSLOT_H

#include "tilejit/runtime/DeviceMemory.h"

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
