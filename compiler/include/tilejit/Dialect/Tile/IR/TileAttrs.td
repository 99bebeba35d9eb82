// Attributes of the `tile` dialect: enums and the kernel-level tuning config.
#ifndef TILEJIT_TILE_ATTRS_TD
#define TILEJIT_TILE_ATTRS_TD

include "tilejit/Dialect/Tile/IR/TileDialect.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"

def Tile_ReduceKind : I32EnumAttr<"ReduceKind", "combining function of a reduction or scan", [
    I32EnumAttrCase<"Sum", 0, "sum">,
    I32EnumAttrCase<"Max", 1, "max">,
    I32EnumAttrCase<"Min", 2, "min">]> {
  let cppNamespace = "::tilejit::tile";
}

def Tile_RoundingMode : I32EnumAttr<"RoundingMode", "rounding of a narrowing float conversion", [
    I32EnumAttrCase<"RNE", 0, "rne">,
    I32EnumAttrCase<"RTZ", 1, "rtz">]> {
  let cppNamespace = "::tilejit::tile";
}

def Tile_ConfigAttr : AttrDef<Tile_Dialect, "Config"> {
  let mnemonic = "config";
  let summary = "Tuning choices of a kernel, read by lowering";
  let description = [{
    Tile sizes, warps per program, software-pipelining stages, the vector width
    of global accesses in elements, and the split-K factor. A heuristic or the
    tuner writes it on the `tile.kernel`; lowering only reads it, so tests can
    check what was chosen.

    ```mlir
    #tile.config<tile = [128, 64, 32], warps = 4, stages = 3, vector = 8>
    ```
  }];
  let parameters = (ins
    ArrayRefParameter<"int64_t">:$tile,
    "int64_t":$warps,
    DefaultValuedParameter<"int64_t", "1">:$stages,
    DefaultValuedParameter<"int64_t", "1">:$vector,
    DefaultValuedParameter<"int64_t", "1">:$splitK);
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
}

#endif // TILEJIT_TILE_ATTRS_TD
