// The element types of tiles, scalars, pointees and model buffers, with their
// names and sizes. Plain C++ (no LLVM), so every layer up to the Python core
// names an element type with this one enum.
#ifndef TILEJIT_SUPPORT_DTYPE_H
#define TILEJIT_SUPPORT_DTYPE_H

#include <cstddef>
#include <cstdint>

namespace tilejit {

/// Element types of tiles, scalars and pointees.
enum class DType : uint8_t { F32, F16, BF16, F8E4M3, I1, I8, I32, I64 };

/// "f32", "f16", "bf16", "f8e4m3", "i1", "i8", "i32", "i64": the IR's names.
constexpr const char *dtypeName(DType t) {
  switch (t) {
  case DType::F32:
    return "f32";
  case DType::F16:
    return "f16";
  case DType::BF16:
    return "bf16";
  case DType::F8E4M3:
    return "f8e4m3";
  case DType::I1:
    return "i1";
  case DType::I8:
    return "i8";
  case DType::I32:
    return "i32";
  case DType::I64:
    return "i64";
  }
  return "?";
}

/// Bits of one value: 1 for i1, 8 for e4m3, ...
constexpr unsigned dtypeBits(DType t) {
  switch (t) {
  case DType::I1:
    return 1;
  case DType::F8E4M3:
  case DType::I8:
    return 8;
  case DType::F16:
  case DType::BF16:
    return 16;
  case DType::F32:
  case DType::I32:
    return 32;
  case DType::I64:
    return 64;
  }
  return 0;
}

/// Bytes of one element in memory: whole bytes, so an i1 takes one.
constexpr size_t dtypeBytes(DType t) { return (dtypeBits(t) + 7) / 8; }

constexpr bool isFloat(DType t) {
  return t == DType::F32 || t == DType::F16 || t == DType::BF16 || t == DType::F8E4M3;
}

} // namespace tilejit

#endif // TILEJIT_SUPPORT_DTYPE_H
