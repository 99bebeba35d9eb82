// The tile dialect's discardable attributes (TileDialect.td): each is checked
// for its kind and where it may appear. One case per diagnostic.
// RUN: tilejit-opt %s -split-input-file -verify-diagnostics

// expected-error @+1 {{attribute 'tile.name' must be a string, got 3 : i64}}
tile.kernel @name_not_string(%p: !tile.ptr<f32> {tile.name = 3}) {
  tile.return
}

// -----

// expected-error @+1 {{tile.shape of parameter 0 must list sizes and parameter names, got [64, 1.000000e+00 : f32]}}
tile.kernel @shape_float(%p: !tile.ptr<f32> {tile.shape = [64, 1.0 : f32]}) {
  tile.return
}

// -----

// expected-error @+1 {{tile.grid_dim marks an i32 parameter holding axis 0 or 1 of the logical grid, got 2 : i64 on parameter 0}}
tile.kernel @grid_dim_axis(%g: i32 {tile.grid_dim = 2 : i64}) {
  tile.return
}

// -----

// expected-error @+1 {{tile.grid_dim marks an i32 parameter holding axis 0 or 1 of the logical grid, got 0 : i64 on parameter 0}}
tile.kernel @grid_dim_type(%g: i64 {tile.grid_dim = 0 : i64}) {
  tile.return
}

// -----

// expected-error @+1 {{parameter 1 has a tile.tensormap_source but is not a !tile.tensormap}}
tile.kernel @source_on_pointer(%a: !tile.ptr<bf16>, %b: !tile.ptr<bf16> {tile.tensormap_source = #tile.tensormap_source<base = 0, sizes = [64, 64], size_args = [-1, -1], strides = [64, 1]>}) {
  tile.return
}

// -----

// expected-error @+1 {{the tile.tensormap_source of parameter 1 names no param, box or element_bytes: its position and type give them}}
tile.kernel @source_with_record_fields(%a: !tile.ptr<bf16>, %map: !tile.tensormap<[64, 64], bf16> {tile.tensormap_source = #tile.tensormap_source<param = 1, base = 0, sizes = [64, 64], size_args = [-1, -1], strides = [64, 1], box = [64, 64], element_bytes = 2>}) {
  tile.return
}

// -----

// expected-error @+1 {{'tile.threads' is not a parameter attribute of the tile dialect}}
tile.kernel @launch_attr_on_parameter(%p: !tile.ptr<f32> {tile.threads = 128 : i64}) {
  tile.return
}

// -----

// expected-error @+1 {{'tile.name' belongs on a kernel parameter}}
tile.kernel @parameter_attr_on_op() attributes {tile.name = "k"} {
  tile.return
}

// -----

// expected-error @+1 {{'tile.unrolled' is not an attribute of the tile dialect}}
tile.kernel @unknown_attr() attributes {tile.unrolled} {
  tile.return
}

// -----

// expected-error @+1 {{tile.tile_loop marks an scf.for (tile-persistent's loop over tiles)}}
tile.kernel @tile_loop_on_kernel() attributes {tile.tile_loop} {
  tile.return
}

// -----

// expected-error @+1 {{attribute 'tile.threads' must be at least 1, got 0}}
llvm.func @no_threads() attributes {tile.threads = 0 : i64} {
  llvm.return
}

// -----

// expected-error @+1 {{attribute 'tile.shared_bytes' must be an integer, got "4096"}}
llvm.func @shared_bytes_string() attributes {tile.shared_bytes = "4096"} {
  llvm.return
}

// -----

// expected-error @+1 {{tile.sums must be "exact" or "reduced", got "approximate"}}
llvm.func @sums_unknown() attributes {tile.sums = "approximate"} {
  llvm.return
}

// -----

// expected-error @+1 {{tile.grid_dims must name two of the function's 2 parameters, got array<i64: 1>}}
llvm.func @grid_dims_one(%x: i32, %y: i32) attributes {tile.grid_dims = array<i64: 1>} {
  llvm.return
}

// -----

// expected-error @+1 {{attribute 'tile.tensormaps' holds a record that is not a #tile.tensormap_source with param, box and element_bytes: #tile.tensormap_source<base = 0, sizes = [64, 64], size_args = [-1, -1], strides = [64, 1]>}}
llvm.func @record_without_launch_fields(%a: !llvm.ptr<1>, %map: !llvm.ptr) attributes {tile.tensormaps = [#tile.tensormap_source<base = 0, sizes = [64, 64], size_args = [-1, -1], strides = [64, 1]>]} {
  llvm.return
}

// -----

// expected-error @+1 {{tile.tensormaps names parameter 2 of a function of 2 parameters}}
llvm.func @record_past_parameters(%a: !llvm.ptr<1>, %map: !llvm.ptr) attributes {tile.tensormaps = [#tile.tensormap_source<param = 2, base = 0, sizes = [64, 64], size_args = [-1, -1], strides = [64, 1], box = [64, 64], element_bytes = 2>]} {
  llvm.return
}

// -----

// expected-error @+1 {{tensormap source needs box and element_bytes together}}
llvm.func @record_box_alone() attributes {tile.tensormaps = [#tile.tensormap_source<param = 0, base = 0, sizes = [64, 64], size_args = [-1, -1], strides = [64, 1], box = [64, 64]>]} {
  llvm.return
}

// -----

// expected-error @+1 {{tensormap source element_bytes must be 1 or 2, got 4}}
llvm.func @record_wide_elements() attributes {tile.tensormaps = [#tile.tensormap_source<param = 0, base = 0, sizes = [64, 64], size_args = [-1, -1], strides = [64, 1], box = [64, 32], element_bytes = 4>]} {
  llvm.return
}

// -----

// expected-error @+1 {{tensormap source param must be a parameter index, got -1}}
llvm.func @record_negative_param() attributes {tile.tensormaps = [#tile.tensormap_source<param = -1, base = 0, sizes = [64, 64], size_args = [-1, -1], strides = [64, 1], box = [64, 64], element_bytes = 2>]} {
  llvm.return
}

// -----

// expected-error @+1 {{a tensor map's box rows must be 32, 64 or 128 bytes (one swizzle span), got 96}}
llvm.func @record_box_rows() attributes {tile.tensormaps = [#tile.tensormap_source<param = 0, base = 0, sizes = [64, 64], size_args = [-1, -1], strides = [64, 1], box = [64, 48], element_bytes = 2>]} {
  llvm.return
}
