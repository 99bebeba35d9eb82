// R8s's SSM page options (Planner.h): the page's element type and rounding, as
// the front doors name them and as the kernels' element-type constants take
// them; and the page as the checks' reference holds it (CheckOps.h).
#include "CheckOps.h"
#include "LayerBuilder.h"

#include "tilejit/support/FloatFormats.h"

#include "llvm/Support/FormatVariadic.h"

#include <cmath>

namespace tilejit::models {

llvm::Error SsmStateOptions::validate() const {
  if (type != DType::F32 && type != DType::BF16 && type != DType::F16)
    return llvm::createStringError(llvm::formatv(
        "ssm state: the page is f32, bf16 or f16, not {0}", tensorTypeName(type)));
  if (stochastic && type == DType::F32)
    return llvm::createStringError("ssm state: stochastic rounding needs a 16-bit page "
                                   "(bf16 or f16); an f32 page is not rounded");
  return llvm::Error::success();
}

std::string SsmStateOptions::describe() const {
  return tensorTypeName(type).str() + (stochastic ? " (stochastic rounding)" : "");
}

llvm::Expected<DType> SsmStateOptions::parseType(llvm::StringRef name) {
  if (name == "f32")
    return DType::F32;
  if (name == "bf16")
    return DType::BF16;
  if (name == "f16")
    return DType::F16;
  return llvm::createStringError(
      llvm::formatv("ssm state: '{0}' is not a page type (f32, bf16 or f16)", name));
}

namespace detail {

int64_t elementTypeCode(DType type) {
  assert((type == DType::BF16 || type == DType::F16 || type == DType::F32) &&
         "a kernel element type is bf16, f16 or f32");
  return type == DType::BF16 ? 0 : type == DType::F16 ? 1 : 2;
}

void addSsmStateConstants(const SsmStateOptions &state, ConstantValues &geometry,
                          std::initializer_list<const char *> typeConstants) {
  if (state.type == DType::F32)
    return;
  for (const char *name : typeConstants)
    geometry[name] = elementTypeCode(state.type);
}

std::vector<uint8_t> pageBytes(const std::vector<float> &state, DType type) {
  if (type == DType::F32)
    return bytesOf(state);
  std::vector<uint16_t> bits(state.size());
  for (size_t i = 0; i < state.size(); ++i)
    bits[i] = type == DType::BF16 ? f32ToBF16(state[i]) : f32ToF16(state[i]);
  return bytesOf(bits);
}

std::vector<float> pageValues(const std::vector<uint8_t> &bytes, DType type) {
  if (type == DType::F32)
    return tensorOf<float>(bytes, {int64_t(bytes.size() / 4)}).data;
  std::vector<uint16_t> bits =
      tensorOf<uint16_t>(bytes, {int64_t(bytes.size() / 2)}).data;
  std::vector<float> values(bits.size());
  for (size_t i = 0; i < bits.size(); ++i)
    values[i] = type == DType::BF16 ? bf16ToF32(bits[i]) : f16ToF32(bits[i]);
  return values;
}

void roundToPage(std::vector<float> &state, DType type) {
  if (type != DType::F32)
    state = pageValues(pageBytes(state, type), type);
}

double pageUlp(double x, DType type) {
  if (type == DType::F32)
    return 0;
  // mantissa bits and the least normal exponent: below it the spacing stays
  const int mantissa = type == DType::BF16 ? 7 : 10;
  const int least = type == DType::BF16 ? -126 : -14;
  const int exponent = x == 0 ? least : std::max(least, std::ilogb(x));
  return std::ldexp(1.0, exponent - mantissa);
}

} // namespace detail
} // namespace tilejit::models
