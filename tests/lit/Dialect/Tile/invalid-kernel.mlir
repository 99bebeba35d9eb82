// tile.kernel, tile.return and the grid queries: one case per diagnostic.
// RUN: tilejit-opt %s -split-input-file -verify-diagnostics

// expected-error @+1 {{attribute 'config' failed to satisfy constraint}}
tile.kernel @config_not_a_config() attributes {config = 4 : i32} {
  tile.return
}

// -----

// expected-error @+1 {{'tile.kernel' op kernels return nothing, got 1 result(s)}}
tile.kernel @with_result() -> i32 {
  tile.return
}

// -----

// expected-error @+1 {{'tile.kernel' op parameter 1 must be a !tile.ptr or a scalar (i1, i8, i32, i64, f16, bf16, f32), got tile<4xf32>}}
tile.kernel @tile_param(%n: i32, %t: tensor<4xf32>) {
  tile.return
}

// -----

// expected-error @+1 {{'tile.kernel' op parameter 0 must be a !tile.ptr or a scalar (i1, i8, i32, i64, f16, bf16, f32), got f8E4M3FN}}
tile.kernel @fp8_param(%s: f8E4M3FN) {
  tile.return
}

// -----

tile.kernel @program_id_axis() {
  // expected-error @+1 {{'tile.program_id' op attribute 'axis' failed to satisfy constraint: 32-bit signless integer attribute whose minimum value is 0 whose maximum value is 2}}
  %0 = tile.program_id 3 : i32
  tile.return
}

// -----

tile.kernel @num_programs_axis() {
  // expected-error @+1 {{'tile.num_programs' op attribute 'axis' failed to satisfy constraint: 32-bit signless integer attribute whose minimum value is 0}}
  %0 = tile.num_programs -1 : i32
  tile.return
}

// -----

module @return_outside_kernel {
  // expected-error @+1 {{'tile.return' op expects parent op 'tile.kernel'}}
  tile.return
}

// -----

// The name becomes the PTX .entry verbatim (found by the `pipeline` fuzz
// target: ptxas refused '.t_e4m3').
// expected-error @+1 {{'tile.kernel' op name 'convert.t_e4m3' is not a PTX identifier (a letter, then letters, digits, '_' or '$')}}
tile.kernel @convert.t_e4m3() {
  tile.return
}

// -----

// expected-error @+1 {{'tile.kernel' op name '9lives' is not a PTX identifier}}
tile.kernel @"9lives"() {
  tile.return
}
