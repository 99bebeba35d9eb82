// Types of the `tile` dialect and the type constraints its ops share.
#ifndef TILEJIT_TILE_TYPES_TD
#define TILEJIT_TILE_TYPES_TD

include "tilejit/Dialect/Tile/IR/TileDialect.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/BuiltinTypeInterfaces.td"
include "mlir/IR/CommonTypeConstraints.td"

class Tile_Type<string name, string typeMnemonic, list<Trait> traits = []>
    : TypeDef<Tile_Dialect, name, traits> {
  let mnemonic = typeMnemonic;
}

def Tile_PointerType : Tile_Type<"Pointer", "ptr"> {
  let summary = "A global-memory pointer to elements of one type";
  let description = [{
    A 64-bit address in global memory. The pointee type fixes the element size
    used by `tile.addptr` (offsets count elements, not bytes).

    ```mlir
    !tile.ptr<bf16>
    ```
  }];
  let parameters = (ins "::mlir::Type":$pointeeType);
  let builders = [
    TypeBuilderWithInferredContext<(ins "::mlir::Type":$pointeeType), [{
      return $_get(pointeeType.getContext(), pointeeType);
    }]>
  ];
  let skipDefaultBuilders = 1;
  let assemblyFormat = "`<` $pointeeType `>`";
  let genVerifyDecl = 1;
}

def Tile_ViewType : Tile_Type<"View", "view"> {
  let summary = "A typed strided view of global memory";
  let description = [{
    A base pointer plus a shape and strides, counted in elements. Static sizes
    and strides are part of the type; `?` marks one supplied at run time by
    `tile.make_view`. The view's bounds mask loads and stores: elements of a
    tile that fall outside `[0, size)` in any dimension are neither read nor
    written. A static unit stride marks the contiguous dimension, which lets
    loads and stores vectorize without analysis.

    ```mlir
    !tile.view<?x4096xbf16, strides = [4096, 1]>
    ```
  }];
  let parameters = (ins
    ArrayRefParameter<"int64_t">:$shape,
    "::mlir::Type":$elementType,
    ArrayRefParameter<"int64_t">:$strides);
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    int64_t getRank() const { return getShape().size(); }
    /// Number of `?` entries in shape and strides: the run-time operands that
    /// `tile.make_view` must supply (sizes first, then strides).
    unsigned getNumDynamicSizes() const;
    unsigned getNumDynamicStrides() const;
    /// The dimension with a static unit stride, if any.
    std::optional<unsigned> getContiguousDim() const;
  }];
}

def Tile_BarriersType : Tile_Type<"Barriers", "barriers"> {
  let summary = "A ring of mbarriers in shared memory";
  let description = [{
    `count` hardware barriers (PTX `mbarrier`, 8 bytes each) that track the
    arrivals of threads and the bytes of asynchronous copies (TMA) for a ring
    of `count` shared-memory slots: barrier i guards slot i. A barrier
    completes a phase when its expected arrivals and bytes are all in; waits
    name the phase by its parity. Made by `tile.mbarrier_alloc`.

    ```mlir
    !tile.barriers<4>
    ```
  }];
  let parameters = (ins "int64_t":$count);
  let assemblyFormat = "`<` $count `>`";
  let genVerifyDecl = 1;
}

def Tile_TensorMapType : Tile_Type<"TensorMap", "tensormap"> {
  let summary = "A TMA tensor map of a 2-D view (a by-value kernel parameter)";
  let description = [{
    The 128-byte descriptor the tensor-memory accelerator (TMA,
    `cp.async.bulk.tensor`, sm_90) copies with: a 2-D global view and the
    `box` (rows x columns) one copy moves into a shared-memory slot, with the
    slot's swizzle (rows of 32, 64 or 128 bytes: that many bytes' swizzle,
    as `#tile.shared` lays out a staged dot operand). Out-of-bounds elements
    of a box are filled with zeros. A kernel receives it as a parameter that
    the runtime builds at launch (`cuTensorMapEncodeTiled`) from the view its
    `tile.tensormap_source` argument attribute describes; callers never pass
    it.

    ```mlir
    !tile.tensormap<[128, 128], f8E4M3FN>
    ```
  }];
  let parameters = (ins ArrayRefParameter<"int64_t">:$box, "::mlir::Type":$elementType);
  let assemblyFormat = "`<` `[` $box `]` `,` $elementType `>`";
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// Bytes one copy of the box moves (the mbarrier's expected transaction).
    int64_t getBoxBytes() const;
  }];
}

// Element types a tile may hold.
def Tile_AnyFloat : AnyTypeOf<[F32, F16, BF16, F8E4M3FN]>;
def Tile_AnyInt : AnyTypeOf<[I1, I8, I32, I64]>;
def Tile_Element : AnyTypeOf<[Tile_AnyFloat, Tile_AnyInt, Tile_PointerType]>;

// A tile: a statically shaped ranked tensor of the element types above.
class Tile_TileOf<list<Type> allowed>
    : Type<And<[TensorOf<allowed>.predicate, HasStaticShapePred,
                CPred<"::llvm::isa<::mlir::RankedTensorType>($_self)">]>,
           "tile of " # AnyTypeOf<allowed>.summary,
           "::mlir::RankedTensorType">;

def Tile_Tile : Tile_TileOf<[Tile_Element]>;
def Tile_FloatTile : Tile_TileOf<[Tile_AnyFloat]>;
def Tile_IntTile : Tile_TileOf<[Tile_AnyInt]>;
def Tile_IndexTile : Tile_TileOf<[I32, I64]>;
def Tile_MaskTile : Tile_TileOf<[I1]>;
def Tile_PtrTile : Tile_TileOf<[Tile_PointerType]>;
def Tile_DotOperandTile : Tile_TileOf<[F32, F16, BF16, F8E4M3FN]>;
def Tile_AccTile : Tile_TileOf<[F32]>;

// Kernel parameters: pointers and scalars.
def Tile_Scalar : AnyTypeOf<[Tile_AnyFloat, Tile_AnyInt]>;
def Tile_PtrOrPtrTile : AnyTypeOf<[Tile_PointerType, Tile_PtrTile]>;
def Tile_Offset : AnyTypeOf<[I32, I64]>;

#endif // TILEJIT_TILE_TYPES_TD
