// The `kernels` target: every registered kernel (the model's and the examples')
// specialized with constants drawn from the input, built, and compiled to PTX
// for the arch the input picks. Each input must end in an error (a refused
// constant, a builder or lowering diagnostic) or in PTX that ptxas assembles.
// Input: a kernel byte, an arch byte, then per constant in declaration order a
// mode byte and its operand bytes (keep the default, take a candidate, scale
// the default by a power of two, a small signed value, or any 64-bit value);
// missing bytes keep defaults. Seeds: every kernel at its defaults.
#include "FuzzContext.h"
#include "FuzzTargets.h"
#include "Ptxas.h"

#include "tilejit/Builder/KernelRegistry.h"
#include "tilejit/Pipeline/Pipeline.h"
#include "tilejit/models/examples/ExampleKernels.h"
#include "tilejit/models/mamba2/Kernels.h"

#include "llvm/Support/Endian.h"

namespace tilejit::fuzz {
namespace {

const char *const archs[] = {"sm_90", "sm_90a", "sm_110a", "sm_121a"};
constexpr unsigned numArchs = sizeof(archs) / sizeof(archs[0]);
constexpr unsigned inputsPerContext = 100;

const KernelRegistry &registry() {
  static const KernelRegistry *kernels = [] {
    auto *r = new KernelRegistry();
    check(!llvm::errorToBool(models::registerModelKernels(*r)) &&
              !llvm::errorToBool(models::registerExampleKernels(*r)),
          "the kernels do not register");
    return r;
  }();
  return *kernels;
}

/// Reads the input front to back; past its end every read is 0.
struct Reader {
  llvm::ArrayRef<uint8_t> bytes;
  size_t at = 0;
  uint8_t byte() { return at < bytes.size() ? bytes[at++] : 0; }
  int64_t word() {
    uint8_t raw[8] = {};
    for (uint8_t &b : raw)
      b = byte();
    return int64_t(llvm::support::endian::read64le(raw));
  }
};

/// A value for `c` as mode byte `mode` (and its operands) says.
int64_t valueFor(const KernelConstant &c, uint8_t mode, Reader &in) {
  switch (mode % 8) {
  case 4:
    return c.candidates.empty() ? c.defaultValue
                                : c.candidates[in.byte() % c.candidates.size()];
  case 5: {
    int shift = int(in.byte() % 17) - 8;
    int64_t v = c.defaultValue;
    return shift >= 0 ? (v << shift) : (v >> -shift);
  }
  case 6:
    return int8_t(in.byte());
  case 7:
    return in.word();
  default:
    return c.defaultValue;
  }
}

} // namespace

void runKernels(llvm::ArrayRef<uint8_t> input) {
  static FuzzContext contexts(inputsPerContext, [] {
    mlir::DialectRegistry dialects;
    registerCompilerDialects(dialects);
    return std::make_unique<mlir::MLIRContext>(dialects,
                                               mlir::MLIRContext::Threading::DISABLED);
  });
  mlir::MLIRContext &context = contexts.next();
  Reader in{input};
  std::vector<const KernelDef *> kernels = registry().all();
  const KernelDef &def = *kernels[in.byte() % kernels.size()];
  auto arch = Arch::parse(archs[in.byte() % numArchs]);
  check(bool(arch), "a listed arch does not parse");
  ConstantValues overrides;
  for (const KernelConstant &c : def.constants)
    overrides[c.name] = valueFor(c, in.byte(), in);
  auto spec = def.specialize(overrides);
  if (!spec) {
    check(llvm::StringRef(llvm::toString(spec.takeError())).contains(def.name),
          "a refused constant's error does not name its kernel");
    return;
  }
  auto module = def.build(context, *spec);
  if (!module) {
    llvm::consumeError(module.takeError());
    return;
  }
  auto compiled = compileToPTX(**module, *arch);
  if (!compiled) {
    llvm::consumeError(compiled.takeError());
    return;
  }
  checkPtxAssembles(compiled->ptx, arch->name());
}

Seeds kernelSeeds(llvm::StringRef) {
  Seeds seeds;
  std::vector<const KernelDef *> kernels = registry().all();
  for (size_t k = 0; k < kernels.size(); ++k)
    seeds[kernels[k]->name + ".defaults"] = std::string{char(k), char(k % numArchs)};
  return seeds;
}

} // namespace tilejit::fuzz
