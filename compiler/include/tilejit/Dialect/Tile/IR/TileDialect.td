// The `tile` dialect: a tile-level IR for GPU kernels (dialect definition only).
#ifndef TILEJIT_TILE_DIALECT_TD
#define TILEJIT_TILE_DIALECT_TD

include "mlir/IR/OpBase.td"

def Tile_Dialect : Dialect {
  let name = "tile";
  let cppNamespace = "::tilejit::tile";
  let summary = "Tile-level IR for JIT-compiled GPU kernels";
  let description = [{
    A kernel is a `tile.kernel` whose body computes on *tiles*: statically
    shaped values held by a whole program (a CTA on the GPU). Tiles are builtin
    ranked tensors of static shape, so `arith` and `math` ops apply to them
    elementwise unchanged. Memory is reached through typed views
    (`!tile.view`: base pointer + shape + strides) or through tiles of
    pointers with explicit masks. See TileOps.td for the semantics of masking,
    out-of-bounds accesses, overflow and rounding.
  }];
  // The discardable attributes tilejit's passes and builder set, each with a
  // generated TileDialect::<Name>AttrHelper; DiscardableAttrs.cpp verifies
  // them (docs/tile-dialect.md, "Discardable attributes").
  let discardableAttrs = (ins
    // On tile.kernel parameters.
    "::mlir::StringAttr":$name,
    "::mlir::UnitAttr":$invariant,
    "::mlir::ArrayAttr":$shape,
    "::mlir::IntegerAttr":$grid_dim,
    "TensorMapSourceAttr":$tensormap_source,
    // On tile-persistent's loop over a program's tiles (an scf.for).
    "::mlir::UnitAttr":$tile_loop,
    // On the llvm.func convert-tile-to-llvm makes: the launch metadata.
    "::mlir::IntegerAttr":$threads,
    "::mlir::IntegerAttr":$shared_bytes,
    "::mlir::IntegerAttr":$programs_per_sm,
    "::mlir::StringAttr":$sums,
    "::mlir::DenseI64ArrayAttr":$grid_dims,
    "::mlir::ArrayAttr":$tensormaps
  );
  let hasOperationAttrVerify = 1;
  let hasRegionArgAttrVerify = 1;
  let useDefaultTypePrinterParser = 1;
  let useDefaultAttributePrinterParser = 1;
  let hasConstantMaterializer = 1;
  let dependentDialects = ["::mlir::arith::ArithDialect"];
}

class Tile_Op<string mnemonic, list<Trait> traits = []>
    : Op<Tile_Dialect, mnemonic, traits>;

#endif // TILEJIT_TILE_DIALECT_TD
