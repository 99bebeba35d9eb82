// Registration of dialects and passes, the named pipelines, and compileToPTX.
#include "tilejit/Pipeline/Pipeline.h"

#include "tilejit/Conversion/TileToLLVM/Passes.h"
#include "tilejit/Dialect/Tile/IR/TileOps.h"
#include "tilejit/Dialect/Tile/Transforms/Passes.h"
#include "tilejit/support/Timing.h"

#include "mlir/Conversion/ArithToLLVM/ArithToLLVM.h"
#include "mlir/Conversion/Passes.h"
#include "mlir/Conversion/ReconcileUnrealizedCasts/ReconcileUnrealizedCasts.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;

namespace tilejit {

void registerCompilerDialects(DialectRegistry &registry) {
  registry.insert<tile::TileDialect, arith::ArithDialect, math::MathDialect,
                  scf::SCFDialect, LLVM::LLVMDialect, NVVM::NVVMDialect>();
  registerPTXTargetTranslations(registry);
}

void buildTileLayoutPipeline(OpPassManager &pm, std::optional<Arch> arch,
                             int64_t sharedBytes) {
  pm.addNestedPass<tile::KernelOp>(createTileVerifyLowerable());
  pm.addNestedPass<tile::KernelOp>(tile::createTilePersistent());
  pm.addNestedPass<tile::KernelOp>(tile::createTileAssignLayouts({arch, sharedBytes}));
  pm.addNestedPass<tile::KernelOp>(tile::createTileRematerialize());
  pm.addNestedPass<tile::KernelOp>(tile::createTileWarpSpecialize({arch}));
  pm.addNestedPass<tile::KernelOp>(tile::createTilePipelineDots());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
}

void buildTileToLLVMPipeline(OpPassManager &pm) {
  pm.addPass(createConvertTileToLLVM());
  pm.addPass(createArithToLLVMConversionPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  // After CSE, whose merged lane indices make repeated shuffles identical;
  // CSE again for what their users now share.
  pm.addPass(createMergeShuffles());
  pm.addPass(createCSEPass());
}

namespace {
struct LayoutPipelineOptions : PassPipelineOptions<LayoutPipelineOptions> {
  Option<std::optional<Arch>> arch{
      *this, "arch", llvm::cl::desc("Target arch whose capabilities pick the dot path"),
      llvm::cl::init(std::nullopt)};
  Option<int64_t> sharedBytes{
      *this, "shared-bytes",
      llvm::cl::desc("Shared memory per program (0: the arch's device profile)"),
      llvm::cl::init(0)};
};
} // namespace

void registerCompilerPasses() {
  registerCanonicalizerPass();
  registerCSEPass();
  registerArithToLLVMConversionPass();
  registerReconcileUnrealizedCastsPass();
  tile::registerTileTransformsPasses();
  registerTileToLLVMPasses();
  PassPipelineRegistration<LayoutPipelineOptions>(
      "tile-layout-pipeline", "tile -> tile with register layouts",
      [](OpPassManager &pm, const LayoutPipelineOptions &options) {
        buildTileLayoutPipeline(pm, options.arch, options.sharedBytes);
      });
  PassPipelineRegistration<>("tile-to-llvm-pipeline",
                             "tile with layouts -> LLVM + NVVM dialects",
                             buildTileToLLVMPipeline);
}

namespace {

std::string print(Operation *op) {
  std::string text;
  llvm::raw_string_ostream os(text);
  op->print(os);
  return text;
}

/// Hands the IR after every pass to CompileOptions::dump.
class DumpAfterEachPass : public PassManager::IRPrinterConfig {
public:
  explicit DumpAfterEachPass(const CompileOptions &opts)
      : IRPrinterConfig(/*printModuleScope=*/true), opts_(opts) {}
  void printAfterIfEnabled(Pass *pass, Operation *op, PrintCallbackFn) override {
    opts_.dump(("mlir." + pass->getArgument()).str(), print(op));
  }

private:
  const CompileOptions &opts_;
};

/// What a parameter of type `t` is to a launch; none for a type a launch
/// cannot pass (i1).
std::optional<ParamKind> paramKind(Type t) {
  if (isa<tile::PointerType>(t))
    return ParamKind::Pointer;
  if (isa<tile::TensorMapType>(t))
    return ParamKind::TensorMap;
  if (t.isBF16())
    return ParamKind::BF16;
  if (t.isF16())
    return ParamKind::F16;
  if (t.isF32())
    return ParamKind::F32;
  if (t.isF64())
    return ParamKind::F64;
  for (auto [bits, kind] : {std::pair{8u, ParamKind::I8},
                            {16u, ParamKind::I16},
                            {32u, ParamKind::I32},
                            {64u, ParamKind::I64}})
    if (t.isInteger(bits))
      return kind;
  return std::nullopt;
}

/// The caller's parameters of `kernel`. Tensor maps and the logical grid's
/// sizes are parameters the pipeline appends itself (tile-warp-specialize,
/// tile-persistent) and the runtime fills at launch; the launch metadata is
/// built on that. A kernel that arrives with them is refused, as a caller
/// cannot pass them.
llvm::Expected<std::vector<CompiledParam>> callerParams(tile::KernelOp kernel) {
  std::vector<CompiledParam> params;
  std::string kernelName = kernel.getSymName().str();
  for (auto [i, t] : llvm::enumerate(kernel.getArgumentTypes())) {
    if (isa<tile::TensorMapType>(t))
      return llvm::createStringError(
          "kernel '%s': parameter %zu is a !tile.tensormap; tensor maps are added by "
          "the pipeline (tile-warp-specialize) and built by the runtime, never passed in",
          kernelName.c_str(), i);
    if (kernel.getGridDim(i))
      return llvm::createStringError(
          "kernel '%s': parameter %zu carries tile.grid_dim; the logical grid's sizes "
          "are added by the pipeline (tile-persistent) and filled by the runtime, never "
          "passed in",
          kernelName.c_str(), i);
    StringAttr name = kernel.getParamName(i);
    std::string paramName = name ? name.str() : "arg" + std::to_string(i);
    std::optional<ParamKind> kind = paramKind(t);
    if (!kind)
      return llvm::createStringError(
          "kernel '%s': parameter %zu ('%s') is %s, which a launch cannot pass (an i8 or "
          "i32 can hold it)",
          kernelName.c_str(), i, paramName.c_str(), tile::describeType(t).c_str());
    params.push_back({paramName, *kind});
  }
  return params;
}

/// The launch metadata convert-tile-to-llvm left on the kernel's function:
/// threads, shared bytes, programs per multiprocessor, sums, and the
/// parameters it appended (the logical grid, the tensor maps).
llvm::Error readLaunchMetadata(LLVM::LLVMFuncOp func, CompiledKernel &out) {
  auto *tileDialect = func.getContext()->getLoadedDialect<tile::TileDialect>();
  out.threads = tileDialect->getThreadsAttrHelper().getAttr(func).getInt();
  out.sharedBytes = tileDialect->getSharedBytesAttrHelper().getAttr(func).getInt();
  out.programsPerSM = tileDialect->getProgramsPerSmAttrHelper().getAttr(func).getInt();
  out.reducedSums =
      tileDialect->getSumsAttrHelper().getAttr(func).getValue() == "reduced";
  if (DenseI64ArrayAttr grid = tileDialect->getGridDimsAttrHelper().getAttr(func)) {
    assert(grid[0] == int64_t(out.params.size()) && grid[1] == grid[0] + 1 &&
           "the grid parameters follow the caller's");
    out.gridParams = grid[0];
    out.params.push_back({"grid_x", ParamKind::I32});
    out.params.push_back({"grid_y", ParamKind::I32});
  }
  ArrayAttr records = tileDialect->getTensormapsAttrHelper().getAttr(func);
  for (Attribute record : records ? records.getValue() : ArrayRef<Attribute>()) {
    auto source = cast<tile::TensorMapSourceAttr>(record);
    TensorMapSpec spec;
    spec.param = uint32_t(*source.getParam());
    spec.base = uint32_t(source.getBase());
    spec.sizes = {source.getSizes()[0], source.getSizes()[1]};
    spec.sizeArgs = {int32_t(source.getSizeArgs()[0]), int32_t(source.getSizeArgs()[1])};
    spec.rowStride = source.getStrides()[0];
    spec.box = {uint32_t(source.getBox()[0]), uint32_t(source.getBox()[1])};
    spec.elementBytes = uint32_t(*source.getElementBytes());
    if (llvm::Error err = spec.validate())
      return err;
    assert(spec.param == out.params.size() && "tensor maps are the last parameters");
    out.params.push_back(
        {out.params[spec.base].name + ".tensormap", ParamKind::TensorMap});
    out.tensorMaps.push_back(spec);
  }
  return llvm::Error::success();
}

/// Collects every diagnostic of a context as text, with its location and
/// notes: what a failed compile returns.
class DiagnosticText {
public:
  explicit DiagnosticText(MLIRContext *ctx)
      : handler(ctx, [this](Diagnostic &diag) {
          llvm::raw_string_ostream os(text);
          os << diag.getLocation() << ": " << diag.str() << "\n";
          for (Diagnostic &note : diag.getNotes())
            os << "  " << note.getLocation() << ": note: " << note.str() << "\n";
          return success();
        }) {}
  const std::string &str() const { return text; }

private:
  std::string text;
  ScopedDiagnosticHandler handler;
};

} // namespace

llvm::Expected<CompiledKernel> compileToPTX(ModuleOp module, const Arch &arch,
                                            const CompileOptions &opts) {
  auto kernels = module.getOps<tile::KernelOp>();
  if (std::distance(kernels.begin(), kernels.end()) != 1)
    return llvm::createStringError(
        "compileToPTX needs a module with exactly one tile.kernel");
  tile::KernelOp kernel = *kernels.begin();
  CompiledKernel out;
  out.name = kernel.getSymName().str();
  llvm::Expected<std::vector<CompiledParam>> params = callerParams(kernel);
  if (!params)
    return params.takeError();
  out.params = std::move(*params);
  // Programmatic dependent launch is refused by name where the arch lacks it.
  bool usesGridDependency = false;
  kernel.walk([&](Operation *op) {
    out.waitsForPredecessors |= isa<tile::GridDepWaitOp>(op);
    usesGridDependency |=
        isa<tile::GridDepWaitOp, tile::GridDepLaunchOp, tile::PrefetchL2Op>(op);
  });
  if (usesGridDependency && !arch.capabilities().gridDependency)
    return llvm::createStringError(
        "kernel '%s' uses programmatic dependent launch (griddepcontrol, "
        "cp.async.bulk.prefetch.L2), which %s does not have",
        out.name.c_str(), arch.name().str().c_str());
  if (opts.dump) {
    std::string tile;
    llvm::raw_string_ostream os(tile);
    module->print(os, OpPrintingFlags().enableDebugInfo());
    opts.dump("tile", tile);
  }

  DiagnosticText diagnostics(module.getContext());
  auto start = std::chrono::steady_clock::now();
  // The shared memory a program may use: the arch's device, or less for a
  // plan sized for a smaller one (GB10's 99 KiB run on an H200).
  const int64_t sharedLimit =
      opts.sharedBytesLimit > 0
          ? std::min<int64_t>(opts.sharedBytesLimit, arch.profile().sharedBytesPerBlock)
          : arch.profile().sharedBytesPerBlock;
  PassManager pm(module.getContext());
  buildTileLayoutPipeline(pm, arch, sharedLimit);
  buildTileToLLVMPipeline(pm);
  if (opts.dump) {
    pm.getContext()->disableMultithreading();
    pm.enableIRPrinting(std::make_unique<DumpAfterEachPass>(opts));
  }
  if (failed(pm.run(module)))
    return llvm::createStringError("lowering kernel '%s' failed:\n%s", out.name.c_str(),
                                   diagnostics.str().c_str());
  out.lowerMs = support::msSince(start);
  if (llvm::Error err =
          readLaunchMetadata(module.lookupSymbol<LLVM::LLVMFuncOp>(out.name), out))
    return std::move(err);
  if (out.sharedBytes > sharedLimit)
    return llvm::createStringError(
        "kernel '%s' needs %lld bytes of shared memory per program, more than the %lld "
        "a program may use on %s (%s): fewer stages or smaller tiles",
        out.name.c_str(), (long long)out.sharedBytes, (long long)sharedLimit,
        arch.name().str().c_str(),
        opts.sharedBytesLimit > 0 ? "the plan's device"
                                  : arch.profile().device.str().c_str());
  if (opts.dump && opts.dumpLLVM) {
    auto ir = translateToLLVMIR(module, arch, opts.ptx);
    if (!ir)
      return ir.takeError();
    opts.dump("llvm", *ir);
  }
  auto ptx = emitPTX(module, arch, opts.ptx, &out.ptxTimings);
  if (!ptx)
    return ptx.takeError();
  out.ptx = std::move(*ptx);
  if (opts.dump)
    opts.dump("ptx", out.ptx);
  return out;
}

} // namespace tilejit
