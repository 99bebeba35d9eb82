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
  let useDefaultTypePrinterParser = 1;
  let useDefaultAttributePrinterParser = 1;
  let hasConstantMaterializer = 1;
  let dependentDialects = ["::mlir::arith::ArithDialect"];
}

class Tile_Op<string mnemonic, list<Trait> traits = []>
    : Op<Tile_Dialect, mnemonic, traits>;

#endif // TILEJIT_TILE_DIALECT_TD
