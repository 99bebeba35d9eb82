// The value types of the compiler interface: argument checks against a
// kernel's signature, canonical options.
#include "tilejit/runtime/CompilerInterface.h"
#include "cache/CacheEntry.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/SHA256.h"

#include <cassert>
#include <cstring>

using namespace llvm;

namespace tilejit::runtime {

KernelArg KernelArg::bits(ParamKind kind, uint64_t pattern) {
  assert(kind != ParamKind::TensorMap &&
         "a tensor map is passed by KernelArg::tensorMap");
  uint32_t size = paramKindSize(kind);
  uint64_t mask = size == 8 ? ~uint64_t(0) : (uint64_t(1) << (8 * size)) - 1;
  return KernelArg(kind, pattern & mask);
}

KernelArg KernelArg::f32(float v) {
  uint32_t pattern;
  std::memcpy(&pattern, &v, sizeof(v));
  return bits(ParamKind::F32, pattern);
}

KernelArg KernelArg::f64(double v) {
  uint64_t pattern;
  std::memcpy(&pattern, &v, sizeof(v));
  return bits(ParamKind::F64, pattern);
}

std::string formatSignature(ArrayRef<KernelParam> params) {
  std::string text = "(";
  for (const KernelParam &param : params) {
    if (param.isSupplied())
      continue;
    if (text.size() > 1)
      text += ", ";
    text += formatv("{0}: {1}", param.name, paramKindName(param.kind));
  }
  return text + ")";
}

Error checkArguments(StringRef kernel, ArrayRef<KernelParam> allParams,
                     ArrayRef<KernelArg> args) {
  ArrayRef<KernelParam> params =
      allParams.take_while([](const KernelParam &p) { return !p.isSupplied(); });
  if (params.size() != args.size())
    return createStringError(inconvertibleErrorCode(),
                             formatv("kernel '{0}' takes {1} arguments {2}, got {3}",
                                     kernel, params.size(), formatSignature(params),
                                     args.size()));
  for (auto [index, param, arg] : llvm::enumerate(params, args)) {
    if (param.kind == arg.kind() && param.size == arg.size()) {
      // The emitter's vector accesses assume 16-byte aligned base pointers
      // (MemoryEmitters.cpp); on a GPU a null or misaligned one faults and
      // leaves the context unusable, so it is refused here.
      if (param.kind == ParamKind::Pointer && arg.pattern() == 0)
        return createStringError(inconvertibleErrorCode(),
                                 formatv("kernel '{0}': argument {1} ('{2}') is a null "
                                         "pointer",
                                         kernel, index, param.name));
      if (param.kind == ParamKind::Pointer && arg.pattern() % 16 != 0)
        return createStringError(
            inconvertibleErrorCode(),
            formatv("kernel '{0}': argument {1} ('{2}') is {3:x}, not 16-byte aligned",
                    kernel, index, param.name, arg.pattern()));
      continue;
    }
    return createStringError(
        inconvertibleErrorCode(),
        formatv(
            "kernel '{0}': argument {1} ('{2}') expects {3} ({4} bytes), got {5} ({6} "
            "bytes)",
            kernel, index, param.name, paramKindName(param.kind), param.size,
            paramKindName(arg.kind()), arg.size()));
  }
  return Error::success();
}

std::string CompileOptions::canonical() const {
  std::string text = formatv("O{0}", optLevel);
  if (sharedBytesLimit > 0)
    text += formatv(";shared-bytes={0}", sharedBytesLimit);
  if (!weightLayouts.empty())
    text += ";layouts=" + weightLayouts;
  return text;
}

StringRef sumPrecisionName(SumPrecision sums) {
  return sums == SumPrecision::Reduced ? "reduced" : "exact";
}

std::string codeFingerprint(const CompiledKernel &kernel) {
  std::string bytes = cache::kernelBytes(kernel);
  return toHex(SHA256::hash(arrayRefFromStringRef(bytes)), /*LowerCase=*/true);
}

double CompiledKernel::totalMs() const {
  double total = 0;
  for (const StageTiming &timing : timings)
    total += timing.ms;
  return total;
}

KernelCompiler::~KernelCompiler() = default;

} // namespace tilejit::runtime
