// Static pruning of one candidate: the problem's constraints, then the candidate's
// tile IR after layout assignment and pipelining (the MLIR part of compiling, a few
// ms) against the target's limits. No LLVM code generation, no device.
#include "tilejit/tuning/Candidates.h"

#include "tilejit/Dialect/Tile/IR/Layouts.h"
#include "tilejit/Dialect/Tile/IR/TileOps.h"
#include "tilejit/Pipeline/Pipeline.h"

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OperationSupport.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MathExtras.h"

namespace tilejit::tuning {
namespace {

/// The matrix path a dot with these operand elements needs, or why it has none.
std::string checkDotCapability(mlir::Type element, const ArchCapabilities &caps,
                               const Arch &arch) {
  if (element.isBF16())
    return caps.mmaSyncBf16
               ? ""
               : llvm::formatv("{0} has no bf16 mma.sync", arch.name()).str();
  if (llvm::isa<mlir::Float8E4M3FNType>(element))
    return caps.mmaSyncE4m3
               ? ""
               : llvm::formatv("{0} has no e4m3 mma.sync", arch.name()).str();
  return {};
}

} // namespace

void pruneCandidate(const KernelDef &def, const TuneProblem *problem,
                    const NamedValues &shape, const StaticLimits &limits,
                    const Arch &arch, Candidate &candidate) {
  if (problem) {
    candidate.pruned = checkShapeConstraints(*problem, candidate.spec, shape);
    if (!candidate.pruned.empty())
      return;
  }
  mlir::DialectRegistry dialects;
  registerCompilerDialects(dialects);
  mlir::MLIRContext ctx(dialects, mlir::MLIRContext::Threading::DISABLED);
  std::string diagnostics;
  mlir::ScopedDiagnosticHandler handler(&ctx, [&](mlir::Diagnostic &diag) {
    if (diagnostics.empty())
      diagnostics = diag.str();
  });
  auto module = def.build(ctx, candidate.spec);
  if (!module) {
    candidate.pruned = "does not build: " + llvm::toString(module.takeError());
    return;
  }
  {
    std::string text;
    llvm::raw_string_ostream os(text);
    (*module)->print(os, mlir::OpPrintingFlags().printGenericOpForm());
    candidate.irHash = hashKernelIR(text);
  }
  mlir::PassManager pm(&ctx);
  // With the arch: the TMA forms (out_proj's producer) check it there.
  buildTileLayoutPipeline(pm, arch);
  if (mlir::failed(pm.run(**module))) {
    candidate.pruned = "no layout: " + diagnostics;
    return;
  }
  auto kernels = (*module)->getOps<tile::KernelOp>();
  if (kernels.empty()) {
    candidate.pruned = "the module holds no tile.kernel";
    return;
  }
  tile::KernelOp kernel = *kernels.begin();
  candidate.threads = tile::getNumWarps(kernel) * 32;
  // Shared buffers are laid out as the emitter does: 128-byte aligned, in order.
  int64_t shared = 0;
  int64_t words = 0;
  std::string capability;
  bool asyncCopies = false;
  kernel.walk([&](mlir::Operation *op) {
    if (auto alloc = llvm::dyn_cast<tile::SharedAllocOp>(op)) {
      auto type = llvm::cast<mlir::ShapedType>(alloc.getResult().getType());
      shared = llvm::alignTo(
          shared + type.getNumElements() *
                       std::max<int64_t>(1, type.getElementTypeBitWidth() / 8),
          128);
    }
    if (llvm::isa<tile::AsyncCopyOp>(op))
      asyncCopies = true;
    if (auto dot = llvm::dyn_cast<tile::DotOp>(op))
      if (capability.empty())
        capability = checkDotCapability(
            llvm::cast<mlir::ShapedType>(dot.getA().getType()).getElementType(),
            limits.caps, arch);
    for (mlir::Value result : op->getResults())
      if (auto tileType = llvm::dyn_cast<mlir::RankedTensorType>(result.getType()))
        if (tileType.hasStaticShape() && tileType.getElementType().isIntOrFloat())
          words = std::max<int64_t>(
              words, llvm::divideCeil(tileType.getNumElements() *
                                          tileType.getElementTypeBitWidth(),
                                      32 * candidate.threads));
  });
  candidate.sharedBytes = shared;
  candidate.tileWordsPerThread = words;
  if (!capability.empty())
    candidate.pruned = capability;
  else if (asyncCopies && !limits.caps.cpAsync)
    candidate.pruned = llvm::formatv(
        "stages={0} needs cp.async, which {1} lacks",
        candidate.spec.values().count("stages") ? candidate.spec.get("stages") : 0,
        arch.name());
  else if (candidate.threads > limits.maxThreadsPerBlock)
    candidate.pruned = llvm::formatv("{0} threads per program; the limit is {1}",
                                     candidate.threads, limits.maxThreadsPerBlock);
  else if (shared > limits.maxSharedBytes)
    candidate.pruned = llvm::formatv("{0} bytes of shared memory; the limit is {1}",
                                     shared, limits.maxSharedBytes);
  else if (words > limits.maxTileWordsPerThread)
    candidate.pruned =
        llvm::formatv("a tile value takes {0} registers per thread; the budget is {1}",
                      words, limits.maxTileWordsPerThread);
}

} // namespace tilejit::tuning
