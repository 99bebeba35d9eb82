// KernelModule: a verified kernel's IR text, its stages down to PTX and its runs on
// the CPU interpreter; the registered kernels; bit-exact float conversions.
#include "CoreInternal.h"

#include "tilejit/Builder/KernelRegistry.h"
#include "tilejit/Pipeline/Pipeline.h"
#include "tilejit/models/session/Session.h"
#include "tilejit/models/mamba2/OpChecks.h"
#include "tilejit/support/FloatFormats.h"

#include "mlir/IR/OperationSupport.h"
#include "llvm/Support/raw_ostream.h"

namespace tilejit::python {

Error::~Error() = default;

void throwError(ErrorKind kind, llvm::Error err) {
  // The caller's mistake, found below the core, stays the caller's.
  if (err.isA<models::ArgumentError>())
    kind = ErrorKind::Argument;
  throw Error(kind, llvm::toString(std::move(err)));
}

std::unique_ptr<mlir::MLIRContext> makeCompilerContext() {
  mlir::DialectRegistry dialects;
  registerCompilerDialects(dialects);
  // Python drives one kernel at a time; an MLIR thread pool per context would
  // only add threads.
  return std::make_unique<mlir::MLIRContext>(dialects,
                                             mlir::MLIRContext::Threading::DISABLED);
}

tile::KernelOp kernelOf(mlir::ModuleOp module) {
  auto kernels = module.getOps<tile::KernelOp>();
  assert(!kernels.empty() && "the builder makes one tile.kernel per module");
  return *kernels.begin();
}

std::vector<Param> paramsOf(tile::KernelOp kernel) {
  std::vector<Param> params;
  auto types = kernel.getFunctionType().getInputs();
  for (auto [i, type] : llvm::enumerate(types)) {
    Param p;
    if (auto name = kernel.getArgAttrOfType<mlir::StringAttr>(i, "tile.name"))
      p.name = name.getValue().str();
    else
      p.name = "arg" + std::to_string(i);
    mlir::Type element = type;
    if (auto ptr = llvm::dyn_cast<tile::PointerType>(type)) {
      p.pointer = true;
      element = ptr.getPointeeType();
    }
    std::optional<DType> dtype = fromMlirType(element);
    assert(dtype && "the builder declares parameters of DTypes only");
    p.type = *dtype;
    if (auto shape = kernel.getArgAttrOfType<mlir::ArrayAttr>(i, "tile.shape"))
      for (mlir::Attribute d : shape) {
        if (auto size = llvm::dyn_cast<mlir::IntegerAttr>(d))
          p.shape.emplace_back(size.getInt());
        else
          p.shape.emplace_back(llvm::cast<mlir::StringAttr>(d).getValue().str());
      }
    params.push_back(std::move(p));
  }
  return params;
}

std::shared_ptr<KernelModule> makeKernelModule(std::unique_ptr<mlir::MLIRContext> ctx,
                                               mlir::OwningOpRef<mlir::ModuleOp> module) {
  auto state = std::make_unique<KernelModule::State>();
  tile::KernelOp kernel = kernelOf(*module);
  state->name = kernel.getSymName().str();
  state->params = paramsOf(kernel);
  llvm::raw_string_ostream os(state->canonical);
  module->print(os, mlir::OpPrintingFlags().printGenericOpForm());
  state->ctx = std::move(ctx);
  state->module = std::move(module);
  return std::make_shared<KernelModule>(std::move(state));
}

KernelModule::KernelModule(std::unique_ptr<State> state) : state(std::move(state)) {}
KernelModule::~KernelModule() {
  // The module must die before the context that holds it.
  state->module = nullptr;
}

const std::string &KernelModule::name() const { return state->name; }
const std::vector<Param> &KernelModule::params() const { return state->params; }
const std::string &KernelModule::canonicalIR() const { return state->canonical; }

std::string KernelModule::tileIR(bool locations) const {
  std::lock_guard<std::mutex> lock(state->mutex);
  std::string text;
  llvm::raw_string_ostream os(text);
  mlir::OpPrintingFlags flags;
  if (locations)
    flags.enableDebugInfo();
  state->module->print(os, flags);
  return text;
}

PTXResult KernelModule::compilePTX(const std::string &archName, unsigned optLevel,
                                   bool stages) const {
  Arch arch = unwrap(Arch::parse(archName), ErrorKind::Argument);
  if (optLevel > 3)
    throw Error(ErrorKind::Argument,
                "optimization level " + std::to_string(optLevel) + " (expected 0 to 3)");
  std::lock_guard<std::mutex> lock(state->mutex);
  PTXResult result;
  CompileOptions opts;
  opts.ptx.optLevel = optLevel;
  if (stages) {
    opts.dumpLLVM = true;
    opts.dump = [&](llvm::StringRef name, llvm::StringRef text) {
      result.stages.push_back({name.str(), text.str()});
    };
  }
  // compileToPTX lowers in place: the module itself stays tile IR.
  mlir::OwningOpRef<mlir::ModuleOp> copy = state->module->clone();
  auto compiled = compileToPTX(*copy, arch, opts);
  if (!compiled)
    throwError(ErrorKind::Compile, compiled.takeError());
  result.entry = compiled->name;
  result.ptx = compiled->ptx;
  result.threads = compiled->threads;
  result.sharedBytes = compiled->sharedBytes;
  result.sums = compiled->reducedSums ? "reduced" : "exact";
  for (const CompiledParam &param : compiled->params)
    result.params.emplace_back(param.name, paramKindName(param.kind).str());
  result.lowerMs = compiled->lowerMs;
  result.translateMs = compiled->ptxTimings.translateMs;
  result.optimizeMs = compiled->ptxTimings.optimizeMs;
  result.codegenMs = compiled->ptxTimings.codegenMs;
  return result;
}

void KernelModule::run(const std::array<int64_t, 3> &grid,
                       const std::vector<HostArg> &args) const {
  const interp::CompiledKernel *kernel;
  {
    std::lock_guard<std::mutex> lock(state->mutex);
    if (!state->interpreted)
      state->interpreted.emplace(unwrap(
          interp::CompiledKernel::compile(kernelOf(*state->module)), ErrorKind::Compile));
    kernel = &*state->interpreted;
  }
  std::vector<interp::Arg> interpArgs;
  for (const HostArg &a : args) {
    switch (a.kind) {
    case HostArg::Kind::Buffer:
      interpArgs.push_back(a.writable ? interp::Arg::buffer(a.data, a.bytes)
                                      : interp::Arg::readOnlyBuffer(a.data, a.bytes));
      break;
    case HostArg::Kind::Int:
      interpArgs.push_back(interp::Arg::intScalar(a.integer));
      break;
    case HostArg::Kind::Float:
      interpArgs.push_back(interp::Arg::floatScalar(a.number));
      break;
    }
  }
  // Runs of one translation may proceed concurrently (Interpreter.h).
  if (llvm::Error err = kernel->run(grid, interpArgs))
    throwError(ErrorKind::Run, std::move(err));
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
