// The core's shared parts (Core.h): its errors, the registered kernels and the
// bit-exact float conversions.
#include "CoreInternal.h"

#include "tilejit/Builder/KernelRegistry.h"
#include "tilejit/models/mamba2/OpChecks.h"
#include "tilejit/models/session/Backend.h"
#include "tilejit/support/FloatFormats.h"

namespace tilejit::python {

Error::~Error() = default;

void throwError(ErrorKind kind, llvm::Error err) {
  // The caller's mistake, found below the core, stays the caller's.
  if (err.isA<models::ArgumentError>())
    kind = ErrorKind::Argument;
  throw Error(kind, llvm::toString(std::move(err)));
}

const KernelRegistry &registry() {
  return unwrap(models::modelKernels(), ErrorKind::Build);
}

std::vector<RegisteredKernel> registeredKernels() {
  std::vector<RegisteredKernel> out;
  for (const KernelDef *def : registry().all()) {
    RegisteredKernel k{def->name, def->summary, {}};
    for (const KernelConstant &c : def->constants)
      k.constants.push_back({c.name, c.defaultValue, c.help});
    out.push_back(std::move(k));
  }
  return out;
}

std::shared_ptr<KernelModule>
buildRegistered(const std::string &name,
                const std::map<std::string, int64_t> &constants) {
  const KernelDef *def = registry().find(name);
  if (!def)
    throw Error(ErrorKind::Argument, "no registered kernel '" + name + "'");
  Specialization spec = unwrap(def->specialize(constants), ErrorKind::Argument);
  auto ctx = makeCompilerContext();
  auto module = unwrap(def->build(*ctx, spec), ErrorKind::Build);
  return makeKernelModule(std::move(ctx), std::move(module));
}

std::map<std::string, int64_t> opErrorCodes() {
  std::map<std::string, int64_t> codes;
  for (auto [error, name] : models::kOpErrorNames)
    codes[name] = int64_t(error);
  return codes;
}

void f32ToBF16(const float *in, uint16_t *out, size_t n) {
  for (size_t i = 0; i < n; ++i)
    out[i] = tilejit::f32ToBF16(in[i]);
}
void bf16ToF32(const uint16_t *in, float *out, size_t n) {
  for (size_t i = 0; i < n; ++i)
    out[i] = tilejit::bf16ToF32(in[i]);
}
void f32ToE4M3(const float *in, uint8_t *out, size_t n) {
  for (size_t i = 0; i < n; ++i)
    out[i] = tilejit::f32ToE4M3(in[i]);
}
void e4m3ToF32(const uint8_t *in, float *out, size_t n) {
  for (size_t i = 0; i < n; ++i)
    out[i] = tilejit::e4m3ToF32(in[i]);
}

} // namespace tilejit::python
