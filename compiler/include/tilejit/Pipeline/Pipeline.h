// Named pipelines and registration shared by tilejit-opt, the CLI and the JIT:
// tile IR -> tile with layouts -> LLVM + NVVM dialects -> LLVM IR -> PTX.
#ifndef TILEJIT_PIPELINE_PIPELINE_H
#define TILEJIT_PIPELINE_PIPELINE_H

#include "tilejit/Target/PTX/PTXTarget.h"
#include "tilejit/support/ParamKind.h"
#include "tilejit/support/TensorMap.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Pass/PassManager.h"

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace tilejit {

/// Registers every dialect a tile kernel may contain at any stage, and the
/// LLVM IR translations the PTX stage needs.
void registerCompilerDialects(mlir::DialectRegistry &registry);

/// Registers tilejit's passes, its named pipelines and the upstream passes
/// they use, so tilejit-opt can run each of them by name.
void registerCompilerPasses();

/// tile -> tile with layouts: tile-verify-lowerable, tile-persistent
/// (persistent = G), tile-assign-layouts
/// (matrix path from `arch`'s capability table; none: mma.sync; `sharedBytes`
/// per program, 0: the arch's device profile), tile-rematerialize,
/// tile-warp-specialize (producer = 1: TMA, refused where the arch has none),
/// tile-pipeline-dots, canonicalize, cse.
void buildTileLayoutPipeline(mlir::OpPassManager &pm,
                             std::optional<Arch> arch = std::nullopt,
                             int64_t sharedBytes = 0);
/// tile with layouts -> LLVM + NVVM: convert-tile-to-llvm,
/// convert-arith-to-llvm, reconcile-unrealized-casts, canonicalize, cse.
void buildTileToLLVMPipeline(mlir::OpPassManager &pm);

/// One parameter of a compiled kernel, as its PTX declares it.
struct CompiledParam {
  std::string name;
  ParamKind kind;
};

/// A kernel compiled to PTX, with what its launch needs.
struct CompiledKernel {
  std::string name; ///< PTX entry
  std::string ptx;
  int64_t threads = 0;     ///< per program (CTA)
  int64_t sharedBytes = 0; ///< dynamic shared memory per program
  /// Programs a multiprocessor holds at once by the kernel's register split
  /// (a persistent grid launches this many per multiprocessor).
  int64_t programsPerSM = 1;
  /// Whether some dot adds its products with fewer bits than f32 (e4m3
  /// wgmma): its outputs are held to R1h's band, not R1's one ulp.
  bool reducedSums = false;
  /// Whether the kernel waits for the kernels before it (tile.grid_dep_wait),
  /// so the runtime may launch it before they end.
  bool waitsForPredecessors = false;
  /// Parameters in order. The caller's come first; the lowering's follow and
  /// the runtime fills them at launch: a persistent kernel's logical grid
  /// (`gridParams`), then the tensor maps it builds from `tensorMaps`.
  std::vector<CompiledParam> params;
  /// Index of a persistent kernel's grid_x parameter (grid_y follows): the
  /// launch runs at most one program per multiprocessor (tile-persistent).
  std::optional<unsigned> gridParams;
  std::vector<TensorMapSpec> tensorMaps;
  double lowerMs = 0; ///< the MLIR pipelines
  PTXTimings ptxTimings;
};

struct CompileOptions {
  PTXOptions ptx;
  /// Shared memory a program may use (0: the arch's device profile): less for
  /// a plan sized for a smaller device than the one it is compiled for. A
  /// kernel needing more is an error.
  int64_t sharedBytesLimit = 0;
  /// Called with each stage's text: "tile", then "mlir.<pass-argument>" after
  /// every pass, "llvm" (only when `dumpLLVM`) and "ptx".
  std::function<void(llvm::StringRef stage, llvm::StringRef text)> dump;
  bool dumpLLVM = false;
};

/// Lowers a module holding one verified tile.kernel (in place) and compiles it
/// to PTX for `arch`. Errors carry the diagnostics with their locations.
llvm::Expected<CompiledKernel> compileToPTX(mlir::ModuleOp module, const Arch &arch,
                                            const CompileOptions &opts = {});

} // namespace tilejit

#endif // TILEJIT_PIPELINE_PIPELINE_H
