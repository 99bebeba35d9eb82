// A kernel's parameter list as the launcher sees it (kinds and byte sizes), and the
// argument values a launch passes, checked against it before the driver sees them.
#ifndef TILEJIT_RUNTIME_KERNELSIGNATURE_H
#define TILEJIT_RUNTIME_KERNELSIGNATURE_H

#include "tilejit/support/ParamKind.h"
#include "tilejit/support/TensorMap.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <optional>
#include <string>

namespace tilejit::runtime {

/// An address in device memory (a CUdeviceptr).
using DevicePtr = uint64_t;

// The kinds are support's: the compiler reports them, the launcher checks
// arguments against them.
using tilejit::ParamKind;
using tilejit::paramKindName;
using tilejit::paramKindSize;
using tilejit::parseParamKind;

/// The bytes of one TMA descriptor (CUtensorMap: 128 bytes, 64-byte aligned).
struct alignas(64) TensorMapBytes {
  uint8_t bytes[128] = {};
};

/// One parameter of a compiled kernel, in declaration order.
struct KernelParam {
  std::string name;
  ParamKind kind;
  /// Size in bytes as the kernel's PTX declares it.
  uint32_t size;
  /// For a tensor map: what the runtime builds it from. Callers pass no
  /// argument for it; the launcher appends it.
  std::optional<TensorMapSpec> tensorMap = std::nullopt;
  /// For a persistent kernel's logical grid (an i32): the axis (0 or 1) of the
  /// caller's grid it holds. Appended by the launcher, which then runs at most
  /// one program per multiprocessor.
  std::optional<uint8_t> gridAxis = std::nullopt;

  /// Whether the launcher supplies this parameter (callers pass the others,
  /// which come first).
  bool isSupplied() const { return tensorMap || gridAxis; }

  bool operator==(const KernelParam &other) const = default;
};

/// One argument value of a launch: its kind, its size and up to 8 bytes of
/// payload, so the launcher can check it against the kernel's KernelParam.
class KernelArg {
public:
  static KernelArg pointer(DevicePtr address) {
    return bits(ParamKind::Pointer, address);
  }
  static KernelArg i8(int8_t v) { return bits(ParamKind::I8, static_cast<uint8_t>(v)); }
  static KernelArg i16(int16_t v) {
    return bits(ParamKind::I16, static_cast<uint16_t>(v));
  }
  static KernelArg i32(int32_t v) {
    return bits(ParamKind::I32, static_cast<uint32_t>(v));
  }
  static KernelArg i64(int64_t v) {
    return bits(ParamKind::I64, static_cast<uint64_t>(v));
  }
  static KernelArg f32(float v);
  static KernelArg f64(double v);
  /// A tensor map's 128 bytes, which must outlive the launch call.
  static KernelArg tensorMap(const TensorMapBytes &descriptor) {
    return KernelArg(ParamKind::TensorMap, reinterpret_cast<uintptr_t>(&descriptor));
  }
  /// A value of `kind` given by its bit pattern in the low paramKindSize(kind)
  /// bytes (how f16 and bf16 scalars are passed).
  static KernelArg bits(ParamKind kind, uint64_t pattern);

  ParamKind kind() const { return argKind; }
  uint32_t size() const { return paramKindSize(argKind); }
  /// The bit pattern, zero-extended to 64 bits (a tensor map's: its address).
  uint64_t pattern() const { return payload; }
  /// The address of the value as the driver reads it (little-endian host).
  const void *data() const {
    return argKind == ParamKind::TensorMap ? reinterpret_cast<const void *>(payload)
                                           : &payload;
  }

private:
  KernelArg(ParamKind kind, uint64_t payload) : argKind(kind), payload(payload) {}

  ParamKind argKind;
  uint64_t payload;
};

/// "(x: ptr, n: i32, scale: f32)": a signature for messages (the parameters
/// a caller passes: tensor maps are left out).
std::string formatSignature(llvm::ArrayRef<KernelParam> params);

/// Checks a launch's arguments against the kernel's parameters that callers
/// pass (those before the first the launcher supplies): the count,
/// then each argument's kind and size, and that pointers are non-null and
/// 16-byte aligned (the compiled code's vector accesses assume it). The error
/// names the kernel, the argument (position and name) and both kinds and
/// sizes, e.g.
/// "kernel 'scale': argument 2 ('n') expects i32 (4 bytes), got f32 (4 bytes)".
llvm::Error checkArguments(llvm::StringRef kernel, llvm::ArrayRef<KernelParam> params,
                           llvm::ArrayRef<KernelArg> args);

} // namespace tilejit::runtime

#endif // TILEJIT_RUNTIME_KERNELSIGNATURE_H
