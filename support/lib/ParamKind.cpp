// The parameter kinds' names and sizes (see ParamKind.h).
#include "tilejit/support/ParamKind.h"

#include "llvm/Support/ErrorHandling.h"

namespace tilejit {

namespace {
struct KindRow {
  ParamKind kind;
  const char *name;
  uint32_t size;
};
constexpr KindRow kindTable[] = {
    {ParamKind::Pointer, "ptr", 8}, {ParamKind::I8, "i8", 1},
    {ParamKind::I16, "i16", 2},     {ParamKind::I32, "i32", 4},
    {ParamKind::I64, "i64", 8},     {ParamKind::F16, "f16", 2},
    {ParamKind::BF16, "bf16", 2},   {ParamKind::F32, "f32", 4},
    {ParamKind::F64, "f64", 8},     {ParamKind::TensorMap, "tensormap", 128},
};

const KindRow &row(ParamKind kind) {
  for (const KindRow &r : kindTable)
    if (r.kind == kind)
      return r;
  llvm_unreachable("ParamKind missing from kindTable");
}
} // namespace

llvm::StringRef paramKindName(ParamKind kind) { return row(kind).name; }

uint32_t paramKindSize(ParamKind kind) { return row(kind).size; }

std::optional<ParamKind> parseParamKind(llvm::StringRef name) {
  for (const KindRow &r : kindTable)
    if (name == r.name)
      return r.kind;
  return std::nullopt;
}

} // namespace tilejit
