// What a kernel parameter holds, shared by the compiler (which reports each
// parameter's kind) and the runtime (which checks launch arguments against
// it). Names exist for messages and cache entries only.
#ifndef TILEJIT_SUPPORT_PARAMKIND_H
#define TILEJIT_SUPPORT_PARAMKIND_H

#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <optional>

namespace tilejit {

/// Pointers are device addresses; a tensor map is a 128-byte TMA descriptor
/// the runtime builds at launch; every other kind is a scalar passed by value.
enum class ParamKind : uint8_t {
  Pointer,
  I8,
  I16,
  I32,
  I64,
  F16,
  BF16,
  F32,
  F64,
  TensorMap
};

/// "ptr", "i32", "bf16", ...: the spelling used in messages and cache entries.
llvm::StringRef paramKindName(ParamKind kind);
/// The kind spelled `name` by paramKindName; std::nullopt for anything else.
std::optional<ParamKind> parseParamKind(llvm::StringRef name);
/// The size in bytes of a value of `kind` (8 for a pointer).
uint32_t paramKindSize(ParamKind kind);

} // namespace tilejit

#endif // TILEJIT_SUPPORT_PARAMKIND_H
