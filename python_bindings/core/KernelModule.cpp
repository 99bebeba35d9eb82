// KernelModule: a verified kernel's IR text, its parameters, its stages down to
// PTX and its runs on the CPU interpreter.
#include "CoreInternal.h"

#include "tilejit/Pipeline/Pipeline.h"

#include "mlir/IR/OperationSupport.h"
#include "llvm/Support/raw_ostream.h"

namespace tilejit::python {

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
    if (mlir::StringAttr name = kernel.getParamName(i))
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
    if (auto shape = kernel.getArgAttrOfType<mlir::ArrayAttr>(
            i, tile::TileDialect::ShapeAttrHelper::getNameStr()))
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

} // namespace tilejit::python
