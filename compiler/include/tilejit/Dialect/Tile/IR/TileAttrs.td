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

//===----------------------------------------------------------------------===//
// Register layouts (tensor encodings set by tile-assign-layouts)
//===----------------------------------------------------------------------===//

def Tile_BlockedLayoutAttr : AttrDef<Tile_Dialect, "BlockedLayout"> {
  let mnemonic = "blocked";
  let summary = "Tile elements distributed over registers, lanes and warps in blocks";
  let description = [{
    Along each dimension a thread holds `spt` consecutive elements, a warp's
    32 lanes cover `tpw` such blocks and the program's warps `wpc` warp blocks;
    the pattern repeats (more registers) when the tile is larger, and
    replicates (several threads hold one element) when it is smaller.
    `order` lists dimensions fastest first. Shape-independent, so a broadcast
    keeps its operand's layout and costs no data movement.

    ```mlir
    tensor<64x128xbf16, #tile.blocked<spt = [1, 8], tpw = [2, 16], wpc = [4, 1], order = [1, 0]>>
    ```
  }];
  let parameters = (ins ArrayRefParameter<"int64_t">:$spt,
                        ArrayRefParameter<"int64_t">:$tpw,
                        ArrayRefParameter<"int64_t">:$wpc,
                        ArrayRefParameter<"int64_t">:$order);
  let assemblyFormat = [{
    `<` `spt` `=` `[` $spt `]` `,` `tpw` `=` `[` $tpw `]` `,` `wpc` `=` `[` $wpc `]`
        `,` `order` `=` `[` $order `]` `>`
  }];
  let genVerifyDecl = 1;
}

def Tile_SliceLayoutAttr : AttrDef<Tile_Dialect, "SliceLayout"> {
  let mnemonic = "slice";
  let summary = "The layout of a parent with one dimension removed";
  let description = [{
    What a reduction along `dim` leaves, and what `tile.expand_dims` at `dim`
    turns back into the parent at no cost.

    ```mlir
    tensor<64xf32, #tile.slice<dim = 1, parent = #tile.blocked<spt = [1, 4], tpw = [4, 8], wpc = [4, 1], order = [1, 0]>>>
    ```
  }];
  let parameters = (ins "int64_t":$dim, "::mlir::Attribute":$parent);
  let assemblyFormat = "`<` `dim` `=` $dim `,` `parent` `=` $parent `>`";
}

def Tile_MmaLayoutAttr : AttrDef<Tile_Dialect, "MmaLayout"> {
  let mnemonic = "mma";
  let summary = "The accumulator layout of mma.sync m16n8 tiles";
  let description = [{
    Warps form a `wpc[0]` x `wpc[1]` grid; each holds 16x8 accumulator tiles
    as mma.sync m16n8k16 (bf16) / m16n8k32 (e4m3) defines them, repeating
    with strides 16*wpc[0] and 8*wpc[1].

    ```mlir
    tensor<128x128xf32, #tile.mma<wpc = [2, 2]>>
    ```
  }];
  let parameters = (ins ArrayRefParameter<"int64_t">:$wpc);
  let assemblyFormat = "`<` `wpc` `=` `[` $wpc `]` `>`";
}

#endif // TILEJIT_TILE_ATTRS_TD
