// Operations of the `tile` dialect.
//
// Semantics shared by every op:
// - Tiles are statically shaped ranked tensors held by one program (a CTA);
//   `arith` and `math` ops apply to them elementwise. Integer arithmetic wraps
//   (two's complement) exactly as `arith` specifies; nothing here traps.
// - Views (`!tile.view`) carry bounds. `tile.load` and `tile.store` at an
//   offset touch only the tile elements whose every index lies in
//   `[0, size)` of the view: masked loads yield the op's padding value (zero
//   when absent) and masked stores write nothing. An offset may be negative or
//   past the end; it is never undefined behaviour, only masking. Offsets and
//   sizes are i32 (a static size is at most 2^31 - 1), strides i64; each
//   address is formed in i64 (index sign-extended, times its stride), and the
//   byte offset of the last element of a view's static dimensions fits i64.
// - Pointer loads and stores (`tile.ptr_load`, `tile.ptr_store`) are guarded
//   by an explicit i1 mask alone: an unmasked out-of-range pointer is the
//   caller's error (the interpreter reports it; on the GPU it is undefined).
// - Conversions round as stated: `rne` is IEEE round-to-nearest-even, `rtz`
//   truncates. A conversion to f8E4M3FN must saturate: finite values beyond
//   +-448 become +-448 (e4m3fn has no infinity); NaN stays NaN. bf16 and f16
//   conversions keep IEEE overflow to infinity.
// - Reductions and dot accumulate in the element type of their result; the
//   order of accumulation is unspecified (f32 results may differ by rounding
//   from a sequential sum).
#ifndef TILEJIT_TILE_OPS_TD
#define TILEJIT_TILE_OPS_TD

include "tilejit/Dialect/Tile/IR/TileDialect.td"
include "tilejit/Dialect/Tile/IR/TileTypes.td"
include "tilejit/Dialect/Tile/IR/TileAttrs.td"
include "mlir/IR/BuiltinAttributeInterfaces.td"
include "mlir/IR/OpAsmInterface.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/Interfaces/ControlFlowInterfaces.td"
include "mlir/Interfaces/FunctionInterfaces.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"

def Tile_NumericTile : Tile_TileOf<[Tile_AnyFloat, Tile_AnyInt]>;

//===----------------------------------------------------------------------===//
// Kernel structure
//===----------------------------------------------------------------------===//

def Tile_KernelOp : Tile_Op<"kernel", [FunctionOpInterface, IsolatedFromAbove]> {
  let summary = "A GPU kernel: one program of a grid";
  let description = [{
    The body runs once per program of a 1- to 3-dimensional grid. Parameters
    are pointers (`!tile.ptr<T>`) and scalars (integers, floats); there are no
    results. The optional `config` holds the tuning choices lowering reads.

    ```mlir
    tile.kernel @vadd(%x: !tile.ptr<f32>, %y: !tile.ptr<f32>, %n: i32)
        attributes {config = #tile.config<tile = [1024], warps = 4, vector = 4>} {
      tile.return
    }
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name,
                       TypeAttrOf<FunctionType>:$function_type,
                       OptionalAttr<DictArrayAttr>:$arg_attrs,
                       OptionalAttr<DictArrayAttr>:$res_attrs,
                       OptionalAttr<Tile_ConfigAttr>:$config);
  let regions = (region SizedRegion<1>:$body);
  let hasCustomAssemblyFormat = 1;
  let hasVerifier = 1;
  let builders = [OpBuilder<(ins "::llvm::StringRef":$name,
                                 "::mlir::FunctionType":$type)>];
  let extraClassDeclaration = [{
    ::mlir::Region *getCallableRegion() { return &getBody(); }
    ::llvm::ArrayRef<::mlir::Type> getArgumentTypes() {
      return getFunctionType().getInputs();
    }
    ::llvm::ArrayRef<::mlir::Type> getResultTypes() {
      return getFunctionType().getResults();
    }
    // The parameter attributes of TileDialect's discardableAttrs, by index.
    /// The parameter's `tile.name`; null when it has none.
    ::mlir::StringAttr getParamName(unsigned index);
    void setParamName(unsigned index, ::llvm::StringRef name);
    /// Whether the parameter is `tile.invariant` memory.
    bool isInvariantParam(unsigned index);
    /// The `tile.tensormap_source` of a `!tile.tensormap` parameter.
    TensorMapSourceAttr getTensorMapSource(unsigned index);
    /// The axis of the logical grid a parameter tile-persistent appended
    /// holds (`tile.grid_dim`); null for any other parameter.
    ::mlir::IntegerAttr getGridDim(unsigned index);
  }];
}

def Tile_ReturnOp : Tile_Op<"return", [
    Pure, Terminator, ReturnLike, HasParent<"KernelOp">]> {
  let summary = "Ends a kernel";
  let description = [{
    ```mlir
    tile.return
    ```
  }];
  let assemblyFormat = "attr-dict";
}

class Tile_GridQueryOp<string mnemonic, string what> : Tile_Op<mnemonic, [Pure]> {
  let summary = "The " # what # " along one grid axis";
  let description = [{
    Axis 0, 1 or 2 of the launch grid.

    ```mlir
    %pid = tile.}] # mnemonic # [{ 0 : i32
    ```
  }];
  let arguments = (ins ConfinedAttr<I32Attr, [IntMinValue<0>, IntMaxValue<2>]>:$axis);
  let results = (outs I32:$result);
  let assemblyFormat = "$axis attr-dict `:` type($result)";
}

def Tile_ProgramIdOp : Tile_GridQueryOp<"program_id", "index of this program">;
def Tile_NumProgramsOp : Tile_GridQueryOp<"num_programs", "number of programs">;

//===----------------------------------------------------------------------===//
// Tile creation and shape manipulation
//===----------------------------------------------------------------------===//

def Tile_SplatOp : Tile_Op<"splat", [Pure,
    TypesMatchWith<"source is the element type of the result", "result", "src",
                   "::mlir::getElementTypeOrSelf($_self)">]> {
  let summary = "A tile with every element equal to a scalar";
  let description = [{
    ```mlir
    %t = tile.splat %s : tensor<128xf32>
    ```
  }];
  let arguments = (ins Tile_Element:$src);
  let results = (outs Tile_Tile:$result);
  let assemblyFormat = "$src attr-dict `:` type($result)";
  let hasFolder = 1;
}

def Tile_ArangeOp : Tile_Op<"arange", [Pure]> {
  let summary = "The integers start, start+1, ..., end-1 as a 1-D tile";
  let description = [{
    ```mlir
    %r = tile.arange 0 to 128 : tensor<128xi32>
    ```
  }];
  let arguments = (ins I32Attr:$start, I32Attr:$end);
  let results = (outs Tile_TileOf<[I32]>:$result);
  let assemblyFormat = "$start `to` $end attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Tile_BroadcastOp : Tile_Op<"broadcast", [Pure, SameOperandsAndResultElementType]> {
  let summary = "Repeats a tile along its unit dimensions";
  let description = [{
    Source and result have the same rank; each source dimension equals the
    result's or is 1 (then repeated).

    ```mlir
    %b = tile.broadcast %x : tensor<1x64xf32> -> tensor<128x64xf32>
    ```
  }];
  let arguments = (ins Tile_Tile:$src);
  let results = (outs Tile_Tile:$result);
  let assemblyFormat = "$src attr-dict `:` type($src) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
  let hasCanonicalizer = 1;
}

def Tile_ExpandDimsOp : Tile_Op<"expand_dims", [Pure, SameOperandsAndResultElementType]> {
  let summary = "Inserts a unit dimension";
  let description = [{
    ```mlir
    %e = tile.expand_dims %x axis 1 : tensor<64xf32> -> tensor<64x1xf32>
    ```
  }];
  let arguments = (ins Tile_Tile:$src, I32Attr:$axis);
  let results = (outs Tile_Tile:$result);
  let assemblyFormat = "$src `axis` $axis attr-dict `:` type($src) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
  let hasCanonicalizer = 1;
}

def Tile_ReshapeOp : Tile_Op<"reshape", [Pure, SameOperandsAndResultElementType]> {
  let summary = "Reinterprets a tile's elements (row-major order) in a new shape";
  let description = [{
    ```mlir
    %r = tile.reshape %x : tensor<8x512xf32> -> tensor<4096xf32>
    ```
  }];
  let arguments = (ins Tile_Tile:$src);
  let results = (outs Tile_Tile:$result);
  let assemblyFormat = "$src attr-dict `:` type($src) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
  let hasCanonicalizer = 1;
}

def Tile_TransposeOp : Tile_Op<"transpose", [Pure, SameOperandsAndResultElementType]> {
  let summary = "Permutes a tile's dimensions";
  let description = [{
    Result dimension i is source dimension `order[i]`.

    ```mlir
    %t = tile.transpose %x [1, 0] : tensor<64x32xbf16> -> tensor<32x64xbf16>
    ```
  }];
  let arguments = (ins Tile_Tile:$src, DenseI32ArrayAttr:$order);
  let results = (outs Tile_Tile:$result);
  let assemblyFormat = "$src $order attr-dict `:` type($src) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Tile_ConvertLayoutOp : Tile_Op<"convert_layout", [Pure,
    SameOperandsAndResultShape, SameOperandsAndResultElementType]> {
  let summary = "Moves a tile to another register layout";
  let description = [{
    Inserted by `tile-assign-layouts` where a producer's layout differs from
    what its consumer needs. Lowering moves registers when the two layouts
    hold the same elements per thread, and goes through shared memory
    otherwise.

    ```mlir
    %m = tile.convert_layout %x : tensor<64x64xf32, #blocked> -> tensor<64x64xf32, #mma>
    ```
  }];
  let arguments = (ins Tile_Tile:$src);
  let results = (outs Tile_Tile:$result);
  let assemblyFormat = "$src attr-dict `:` type($src) `->` type($result)";
  let hasFolder = 1;
}

//===----------------------------------------------------------------------===//
// Memory
//===----------------------------------------------------------------------===//

def Tile_MakeViewOp : Tile_Op<"make_view", [Pure, AttrSizedOperandSegments]> {
  let summary = "A strided view of global memory from a base pointer";
  let description = [{
    Supplies the view type's `?` sizes (i32) and strides (i64), in order.

    ```mlir
    %v = tile.make_view %p sizes(%m) : !tile.ptr<bf16> -> !tile.view<?x4096xbf16, strides = [4096, 1]>
    ```
  }];
  let arguments = (ins Tile_PointerType:$base, Variadic<I32>:$sizes,
                       Variadic<I64>:$strides);
  let results = (outs Tile_ViewType:$result);
  let assemblyFormat = [{
    $base (`sizes` `(` $sizes^ `)`)? (`strides` `(` $strides^ `)`)? attr-dict
        `:` type($base) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Tile_LoadOp : Tile_Op<"load", [MemoryEffects<[MemRead]>]> {
  let summary = "Loads a tile at an offset into a view, masked by its bounds";
  let description = [{
    Element `i` of the result is `view[offsets + i]` when that index is inside
    the view in every dimension, else `padding` (zero when absent).

    ```mlir
    %t = tile.load %v[%row, %c0] padding(0.0 : bf16) : !tile.view<?x4096xbf16, strides = [4096, 1]> -> tensor<16x128xbf16>
    ```
  }];
  let arguments = (ins Tile_ViewType:$view, Variadic<I32>:$offsets,
                       OptionalAttr<TypedAttrInterface>:$padding);
  let results = (outs Tile_Tile:$result);
  let assemblyFormat = [{
    $view `[` $offsets `]` (`padding` `(` $padding^ `)`)? attr-dict
        `:` type($view) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Tile_StoreOp : Tile_Op<"store", [MemoryEffects<[MemWrite]>]> {
  let summary = "Stores a tile at an offset into a view, masked by its bounds";
  let description = [{
    Elements whose index falls outside the view are not written.

    ```mlir
    tile.store %t, %v[%row, %c0] : tensor<16x128xbf16>, !tile.view<?x4096xbf16, strides = [4096, 1]>
    ```
  }];
  let arguments = (ins Tile_Tile:$value, Tile_ViewType:$view, Variadic<I32>:$offsets);
  let assemblyFormat = [{
    $value `,` $view `[` $offsets `]` attr-dict `:` type($value) `,` type($view)
  }];
  let hasVerifier = 1;
}

def Tile_AddPtrOp : Tile_Op<"addptr", [Pure, AllTypesMatch<["ptr", "result"]>]> {
  let summary = "Advances pointers by element offsets";
  let description = [{
    `ptr + offset * sizeof(pointee)`, elementwise for tiles (same shape).

    ```mlir
    %q = tile.addptr %p, %offs : tensor<128x!tile.ptr<f32>>, tensor<128xi32>
    ```
  }];
  let arguments = (ins Tile_PtrOrPtrTile:$ptr, AnyTypeOf<[Tile_Offset, Tile_IndexTile]>:$offset);
  let results = (outs Tile_PtrOrPtrTile:$result);
  let assemblyFormat = "$ptr `,` $offset attr-dict `:` type($ptr) `,` type($offset)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Tile_PtrLoadOp : Tile_Op<"ptr_load", [MemoryEffects<[MemRead]>,
    AttrSizedOperandSegments,
    TypesMatchWith<"result is the pointee of ptrs", "ptrs", "result",
                   "::tilejit::tile::getPointeeType($_self)">,
    OptionalTypesMatchWith<"mask is i1 of the shape of ptrs", "ptrs", "mask",
                           "::tilejit::tile::getMaskType($_self)">,
    OptionalTypesMatchWith<"other has the result type", "ptrs", "other",
                           "::tilejit::tile::getPointeeType($_self)">]> {
  let summary = "Loads through a pointer or a tile of pointers, under a mask";
  let description = [{
    Where `mask` is false the element is `other` (zero when absent) and memory
    is not touched.

    ```mlir
    %x = tile.ptr_load %ptrs mask %m other %zero : tensor<128x!tile.ptr<f32>>
    %s = tile.ptr_load %p : !tile.ptr<f32>
    ```
  }];
  let arguments = (ins Tile_PtrOrPtrTile:$ptrs,
                       Optional<AnyTypeOf<[I1, Tile_MaskTile]>>:$mask,
                       Optional<AnyTypeOf<[Tile_Scalar, Tile_NumericTile]>>:$other);
  let results = (outs AnyTypeOf<[Tile_Scalar, Tile_NumericTile]>:$result);
  let assemblyFormat = [{
    $ptrs (`mask` $mask^)? (`other` $other^)? attr-dict `:` type($ptrs)
  }];
  let builders = [OpBuilder<(ins "::mlir::Value":$ptrs,
      CArg<"::mlir::Value", "{}">:$mask, CArg<"::mlir::Value", "{}">:$other)>];
}

def Tile_PtrStoreOp : Tile_Op<"ptr_store", [MemoryEffects<[MemWrite]>,
    TypesMatchWith<"value is the pointee of ptrs", "ptrs", "value",
                   "::tilejit::tile::getPointeeType($_self)">,
    OptionalTypesMatchWith<"mask is i1 of the shape of ptrs", "ptrs", "mask",
                           "::tilejit::tile::getMaskType($_self)">]> {
  let summary = "Stores through a pointer or a tile of pointers, under a mask";
  let description = [{
    ```mlir
    tile.ptr_store %ptrs, %x mask %m : tensor<128x!tile.ptr<f32>>
    ```
  }];
  let arguments = (ins Tile_PtrOrPtrTile:$ptrs,
                       AnyTypeOf<[Tile_Scalar, Tile_NumericTile]>:$value,
                       Optional<AnyTypeOf<[I1, Tile_MaskTile]>>:$mask);
  let assemblyFormat = "$ptrs `,` $value (`mask` $mask^)? attr-dict `:` type($ptrs)";
}

//===----------------------------------------------------------------------===//
// Conversion
//===----------------------------------------------------------------------===//

def Tile_ConvertOp : Tile_Op<"convert", [Pure]> {
  let summary = "Converts floats between formats with explicit rounding";
  let description = [{
    A widening conversion (to f32; e4m3 to bf16 or f16) is exact and takes no
    rounding. A narrowing one states its rounding; a conversion to f8E4M3FN
    also states `saturate` (finite values beyond +-448 become +-448).

    ```mlir
    %b = tile.convert %x rounding rne : tensor<64xf32> -> tensor<64xbf16>
    %q = tile.convert %x rounding rne saturate : tensor<64xf32> -> tensor<64xf8E4M3FN>
    %f = tile.convert %b : tensor<64xbf16> -> tensor<64xf32>
    ```
  }];
  let arguments = (ins AnyTypeOf<[Tile_AnyFloat, Tile_FloatTile]>:$src,
                       OptionalAttr<Tile_RoundingMode>:$rounding,
                       UnitAttr:$saturate);
  let results = (outs AnyTypeOf<[Tile_AnyFloat, Tile_FloatTile]>:$result);
  let assemblyFormat = [{
    $src (`rounding` $rounding^)? (`saturate` $saturate^)? attr-dict
        `:` type($src) `->` type($result)
  }];
  let hasVerifier = 1;
  let hasFolder = 1;
}

//===----------------------------------------------------------------------===//
// Reductions, scans, matrix product
//===----------------------------------------------------------------------===//

def Tile_ReduceOp : Tile_Op<"reduce", [Pure]> {
  let summary = "Reduces a tile along one axis with sum, max or min";
  let description = [{
    The result drops `axis`; reducing a 1-D tile yields a scalar.

    ```mlir
    %s = tile.reduce sum %x axis 1 : tensor<64x128xf32> -> tensor<64xf32>
    %m = tile.reduce max %v axis 0 : tensor<512xf32> -> f32
    ```
  }];
  let arguments = (ins Tile_ReduceKind:$kind, Tile_NumericTile:$src, I32Attr:$axis);
  let results = (outs AnyTypeOf<[Tile_NumericTile, Tile_Scalar]>:$result);
  let assemblyFormat = "$kind $src `axis` $axis attr-dict `:` type($src) `->` type($result)";
  let hasVerifier = 1;
}

def Tile_ScanOp : Tile_Op<"scan", [Pure, SameOperandsAndResultType]> {
  let summary = "Inclusive prefix scan along one axis";
  let description = [{
    `out[..., i, ...] = combine(x[..., 0, ...], ..., x[..., i, ...])` along
    `axis`; `sum` gives the inclusive cumulative sum the SSD chunk scan needs.

    ```mlir
    %c = tile.scan sum %x axis 0 : tensor<128xf32>
    ```
  }];
  let arguments = (ins Tile_ReduceKind:$kind, Tile_NumericTile:$src, I32Attr:$axis);
  let results = (outs Tile_NumericTile:$result);
  let assemblyFormat = "$kind $src `axis` $axis attr-dict `:` type($src)";
  let hasVerifier = 1;
}

def Tile_DotOp : Tile_Op<"dot", [Pure, AllTypesMatch<["acc", "result"]>]> {
  let summary = "Tile matrix product with an f32 accumulator: acc + a x b";
  let description = [{
    `a` is MxK, `b` is KxN, both of one element type (bf16, f16, f8E4M3FN or
    f32); `acc` and the result are MxN f32. Products are formed exactly and
    summed in f32.

    ```mlir
    %d = tile.dot %a, %b, %acc : tensor<64x32xbf16>, tensor<32x64xbf16> -> tensor<64x64xf32>
    ```
  }];
  let arguments = (ins Tile_DotOperandTile:$a, Tile_DotOperandTile:$b, Tile_AccTile:$acc);
  let results = (outs Tile_AccTile:$result);
  let assemblyFormat = "$a `,` $b `,` $acc attr-dict `:` type($a) `,` type($b) `->` type($result)";
  let hasVerifier = 1;
}

include "tilejit/Dialect/Tile/IR/TileSharedOps.td"
include "tilejit/Dialect/Tile/IR/TileAsyncOps.td"
include "tilejit/Dialect/Tile/IR/TileLaunchOps.td"

#endif // TILEJIT_TILE_OPS_TD
