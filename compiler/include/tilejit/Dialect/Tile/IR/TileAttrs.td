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
    of global accesses in elements, the split-K factor (groups of warps that
    each sum one part of a dot's K: `#tile.mma<..., wpk = split_k>`) and
    `direct` (1: dot operands are loaded from memory straight into their
    mma.sync fragments, `#tile.dot_operand<..., kContig = true>`, with no
    shared-memory staging: for operands each program reads once, such as a
    streamed weight), `producer` (on an arch with TMA, the K loop's dot
    operands are copied by TMA into mbarrier rings that the `warps` consume,
    see `tile-warp-specialize`; 1: the copies are issued by a producer warp
    or warpgroup beyond `warps`; 2: by one thread of the consumers, stages - 1
    K steps ahead, so every register stays the consumers') and `persistent` (G >= 1: a grid of at most one
    program per multiprocessor walks the output tiles, in groups of G along
    grid axis 0, see `tile-persistent`).
    A heuristic or the tuner writes it on the `tile.kernel`; lowering only
    reads it, so tests can check what was chosen.

    ```mlir
    #tile.config<tile = [128, 64, 32], warps = 4, stages = 3, vector = 8>
    #tile.config<tile = [16, 8, 256], warps = 4, split_k = 4, direct = 1>
    #tile.config<tile = [128, 128, 128], warps = 8, stages = 4, producer = 1, persistent = 8>
    ```
  }];
  let parameters = (ins
    ArrayRefParameter<"int64_t">:$tile,
    "int64_t":$warps,
    DefaultValuedParameter<"int64_t", "1">:$stages,
    DefaultValuedParameter<"int64_t", "1">:$vector,
    DefaultValuedParameter<"int64_t", "1">:$splitK,
    DefaultValuedParameter<"int64_t", "0">:$direct,
    DefaultValuedParameter<"int64_t", "0">:$producer,
    DefaultValuedParameter<"int64_t", "0">:$persistent);
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

    With `wpk` > 1 (split K: the kernel config's `split_k`), `wpk` groups of
    such a grid each sum a different part of the dot's K: every group holds a
    partial sum of the whole tile, and the tile's value is the sum of the
    groups' partials. Only `tile.dot` (as accumulator and result) and loop
    carries take such a tile; `tile.convert_layout` to any other layout adds
    the partials, in group order, through shared memory. The operands'
    `#tile.dot_operand` layouts give each group its part of K.

    ```mlir
    tensor<128x128xf32, #tile.mma<wpc = [2, 2]>>
    tensor<16x8xf32, #tile.mma<wpc = [1, 1], wpk = 4>>
    ```
  }];
  let parameters = (ins ArrayRefParameter<"int64_t">:$wpc,
                        DefaultValuedParameter<"int64_t", "1">:$wpk);
  let assemblyFormat = "`<` `wpc` `=` `[` $wpc `]` (`,` `wpk` `=` $wpk^)? `>`";
  let builders = [
    AttrBuilder<(ins "::llvm::ArrayRef<int64_t>":$wpc), [{
      return $_get($_ctxt, wpc, 1);
    }]>
  ];
  let genVerifyDecl = 1;
}

def Tile_DotOperandLayoutAttr : AttrDef<Tile_Dialect, "DotOperandLayout"> {
  let mnemonic = "dot_operand";
  let summary = "The register layout of an mma.sync operand fragment";
  let description = [{
    Operand `opIdx` (0: A, MxK; 1: B, KxN) of a `tile.dot` whose accumulator
    is in the `#tile.mma` layout `parent`, as mma.sync m16n8k16 (bf16/f16) and
    m16n8k32 (e4m3) lay out their A and B fragments: `kWidth` consecutive K
    elements per 32-bit register (2 for 16-bit, 4 for 8-bit elements). A
    thread of warp (wy, wx) of the parent grid holds the A rows and B columns
    of its accumulator tiles, for every K (A is replicated across the warps of
    a row of the grid, B across those of a column). `tile.shared_load` fills
    it with ldmatrix; any other producer reaches it through
    `tile.convert_layout`.

    With `kContig`, a thread holds 16 bytes of consecutive K elements per row
    (A) or column (B) instead of `kWidth`: the dot's K is permuted the same way
    in both operands, which a sum does not see, so a thread reads its fragment
    of a K-contiguous operand from memory in one 16-byte load per row and two
    mma steps (no shared memory, no ldmatrix: `tile-assign-layouts` picks it
    for the operands of a kernel configured with `direct = 1`, loaded straight
    into it). The K extent must be a multiple of 64 bytes per `wpk` group.

    ```mlir
    tensor<128x32xbf16, #tile.dot_operand<opIdx = 0, parent = #tile.mma<wpc = [2, 4]>, kWidth = 2>>
    tensor<16x256xf8E4M3FN, #tile.dot_operand<opIdx = 0, parent = #tile.mma<wpc = [1, 1], wpk = 4>, kWidth = 4, kContig = true>>
    ```
  }];
  let parameters = (ins "int64_t":$opIdx, "MmaLayoutAttr":$parent, "int64_t":$kWidth,
                        DefaultValuedParameter<"bool", "false">:$kContig);
  let assemblyFormat = [{
    `<` `opIdx` `=` $opIdx `,` `parent` `=` $parent `,` `kWidth` `=` $kWidth
        (`,` `kContig` `=` $kContig^)? `>`
  }];
  let builders = [
    AttrBuilder<(ins "int64_t":$opIdx, "MmaLayoutAttr":$parent, "int64_t":$kWidth), [{
      return $_get($_ctxt, opIdx, parent, kWidth, false);
    }]>
  ];
  let genVerifyDecl = 1;
}

def Tile_WgmmaOperandLayoutAttr : AttrDef<Tile_Dialect, "WgmmaOperandLayout"> {
  let mnemonic = "wgmma_operand";
  let summary = "A dot operand the tensor cores read from shared memory (wgmma)";
  let description = [{
    Operand `opIdx` (0: A, MxK; 1: B, KxN) of a `tile.dot` that lowers to
    Hopper's warpgroup MMA (`wgmma.mma_async`, sm_90a): no thread holds its
    elements; the tensor cores read them from a `tile.shared_alloc` slot
    through a matrix descriptor. `tile-assign-layouts` chooses it, on an arch
    whose capabilities include wgmma, for dots whose operands
    `tile-pipeline-dots` will stage with K contiguous (or, a 16-bit B, with N
    contiguous: wgmma's MN-major B); only `tile.shared_load` may produce it. The accumulator is then `#tile.mma<wpc = [warps, 1]>`:
    each warpgroup owns 64-row blocks, as wgmma m64nNk lays them out.

    ```mlir
    tensor<128x128xf8E4M3FN, #tile.wgmma_operand<opIdx = 0>>
    ```
  }];
  let parameters = (ins "int64_t":$opIdx);
  let assemblyFormat = "`<` `opIdx` `=` $opIdx `>`";
  let genVerifyDecl = 1;
}

//===----------------------------------------------------------------------===//
// Shared-memory layouts (memory space of tile.shared_alloc buffers)
//===----------------------------------------------------------------------===//

def Tile_SharedLayoutAttr : AttrDef<Tile_Dialect, "SharedLayout"> {
  let mnemonic = "shared";
  let summary = "A swizzled shared-memory layout of a tile";
  let description = [{
    The memory space of a `tile.shared_alloc` buffer `memref<S x R x C x T>`:
    S slots, each an R x C tile stored row-major with C contiguous, in
    `vec`-element (16-byte) chunks. The chunk of element (r, c) is XORed with
    the row's phase, so that 8 consecutive rows read at one column (ldmatrix,
    one 16-byte row per lane) hit distinct banks:

      offset(r, c) = r * C + ((c / vec) ^ ((r / perPhase) % maxPhase)) * vec + c % vec

    `perPhase` rows share a phase (128-byte lines hold 128 / (C * bytes)
    rows); `maxPhase` is the number of phases. `maxPhase = 1` is unswizzled.
    Rows wider than 128 bytes are stored as 128-byte column blocks of all R
    rows, one block after the other (each block a column of wgmma swizzle
    atoms): with o = (offset(r, c) - r * C) * bytes, the byte of (r, c) in
    the row's image above, the element is at byte
    (o / 128) * R * 128 + r * 128 + o % 128 of the slot.

    ```mlir
    memref<3x128x32xbf16, #tile.shared<vec = 8, perPhase = 2, maxPhase = 4>>
    ```
  }];
  let parameters = (ins "int64_t":$vec, "int64_t":$perPhase, "int64_t":$maxPhase);
  let assemblyFormat = [{
    `<` `vec` `=` $vec `,` `perPhase` `=` $perPhase `,` `maxPhase` `=` $maxPhase `>`
  }];
  let genVerifyDecl = 1;
}

//===----------------------------------------------------------------------===//
// TMA descriptors (kernel parameters the runtime builds)
//===----------------------------------------------------------------------===//

def Tile_TensorMapSourceAttr : AttrDef<Tile_Dialect, "TensorMapSource"> {
  let mnemonic = "tensormap_source";
  let summary = "The global view a `!tile.tensormap` parameter describes";
  let description = [{
    The argument attribute `tile.tensormap_source` of a `!tile.tensormap`
    kernel parameter, which `tile-warp-specialize` adds: the runtime builds
    the descriptor at launch from the caller's arguments. `base` is the index
    of the pointer parameter; per dimension (row-major, the last contiguous)
    `sizes` holds a static size or -1, and then `size_args` the index of the
    i32 parameter holding it (else -1); `strides` are static, in elements.

    ```mlir
    #tile.tensormap_source<base = 0, sizes = [-1, 4096], size_args = [3, -1], strides = [4096, 1]>
    ```

    On the `llvm.func` that `convert-tile-to-llvm` makes, the parameter is a
    plain pointer, so each record of its `tile.tensormaps` adds what the
    `!tile.tensormap` type said: `param`, the parameter's index, `box`, the
    rows and columns one copy moves, and `element_bytes`. The runtime decodes
    the records by these names (`CompiledKernel::tensorMaps`).

    ```mlir
    #tile.tensormap_source<param = 5, base = 0, sizes = [-1, 4096], size_args = [3, -1], strides = [4096, 1], box = [128, 64], element_bytes = 2>
    ```
  }];
  let parameters = (ins OptionalParameter<"std::optional<int64_t>">:$param,
                        "int64_t":$base, ArrayRefParameter<"int64_t">:$sizes,
                        ArrayRefParameter<"int64_t">:$sizeArgs,
                        ArrayRefParameter<"int64_t">:$strides,
                        OptionalArrayRefParameter<"int64_t">:$box,
                        OptionalParameter<"std::optional<int64_t>">:$elementBytes);
  let assemblyFormat = [{
    `<` (`param` `=` $param^ `,` ` `)? `base` `=` $base `,` `sizes` `=` `[` $sizes `]` `,`
        `size_args` `=` `[` $sizeArgs `]` `,` `strides` `=` `[` $strides `]`
        (`,` `box` `=` `[` $box^ `]`)? (`,` `element_bytes` `=` $elementBytes^)? `>`
  }];
  let builders = [
    AttrBuilder<(ins "int64_t":$base, "::llvm::ArrayRef<int64_t>":$sizes,
                     "::llvm::ArrayRef<int64_t>":$sizeArgs,
                     "::llvm::ArrayRef<int64_t>":$strides), [{
      return $_get($_ctxt, std::nullopt, base, sizes, sizeArgs, strides,
                   ::llvm::ArrayRef<int64_t>(), std::nullopt);
    }]>
  ];
  let extraClassDeclaration = [{
    /// Whether this is an llvm.func's record: param, box and element_bytes
    /// are there (a kernel parameter's source has none of them).
    bool isLaunchRecord() const {
      return getParam().has_value() && !getBox().empty() &&
             getElementBytes().has_value();
    }
    /// The record of parameter `param`, whose copies move `box` of
    /// `elementBytes`-byte elements.
    TensorMapSourceAttr withLaunchFields(int64_t param, ::llvm::ArrayRef<int64_t> box,
                                         int64_t elementBytes) const {
      return get(getContext(), param, getBase(), getSizes(), getSizeArgs(),
                 getStrides(), box, elementBytes);
    }
  }];
  let genVerifyDecl = 1;
}

#endif // TILEJIT_TILE_ATTRS_TD
