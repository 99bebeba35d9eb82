// Round trip of every tile op, type and attribute, through the custom and the
// generic form.
// RUN: tilejit-opt %s | tilejit-opt | FileCheck %s
// RUN: tilejit-opt %s --mlir-print-op-generic | tilejit-opt | FileCheck %s

// CHECK-LABEL: tile.kernel @grid
// CHECK-SAME: (%{{.*}}: i32)
// CHECK-SAME: attributes {config = #tile.config<tile = [128, 64, 32], warps = 4, stages = 3, vector = 8, split_k = 2>}
// CHECK: tile.program_id 0 : i32
// CHECK: tile.program_id 2 : i32
// CHECK: tile.num_programs 1 : i32
// CHECK: tile.return
tile.kernel @grid(%n: i32) attributes {config = #tile.config<tile = [128, 64, 32], warps = 4, stages = 3, vector = 8, split_k = 2>} {
  %pid = tile.program_id 0 : i32
  %pid2 = tile.program_id 2 : i32
  %np = tile.num_programs 1 : i32
  tile.return
}

// Defaulted config entries (stages, vector, split_k = 1) are not printed.
// CHECK-LABEL: tile.kernel @params
// CHECK-SAME: (%{{.*}}: !tile.ptr<f32>, %{{.*}}: !tile.ptr<f8E4M3FN>, %{{.*}}: !tile.ptr<i1>, %{{.*}}: i1, %{{.*}}: i8, %{{.*}}: i64, %{{.*}}: f16, %{{.*}}: bf16)
// CHECK-SAME: attributes {config = #tile.config<tile = [64], warps = 1>}
tile.kernel @params(%a: !tile.ptr<f32>, %b: !tile.ptr<f8E4M3FN>, %c: !tile.ptr<i1>, %d: i1, %e: i8, %f: i64, %g: f16, %h: bf16) attributes {config = #tile.config<tile = [64], warps = 1, stages = 1>} {
  tile.return
}

// CHECK-LABEL: tile.kernel @no_config
// CHECK-NOT: config
// CHECK: tile.return
tile.kernel @no_config() {
  tile.return
}

// CHECK-LABEL: tile.kernel @shapes
// CHECK-SAME: (%[[S:.*]]: f32, %[[P:.*]]: !tile.ptr<bf16>)
// CHECK: %[[T:.*]] = tile.splat %[[S]] : tensor<64xf32>
// CHECK: %[[PT:.*]] = tile.splat %[[P]] : tensor<2x4x8x!tile.ptr<bf16>>
// CHECK: tile.arange 0 to 64 : tensor<64xi32>
// CHECK: tile.arange -8 to 8 : tensor<16xi32>
// CHECK: %[[ROW:.*]] = tile.expand_dims %[[T]] axis 0 : tensor<64xf32> -> tensor<1x64xf32>
// CHECK: tile.expand_dims %[[T]] axis 1 : tensor<64xf32> -> tensor<64x1xf32>
// CHECK: %[[B:.*]] = tile.broadcast %[[ROW]] : tensor<1x64xf32> -> tensor<32x64xf32>
// CHECK: tile.reshape %[[B]] : tensor<32x64xf32> -> tensor<2048xf32>
// CHECK: tile.transpose %[[B]] [1, 0] : tensor<32x64xf32> -> tensor<64x32xf32>
// CHECK: tile.transpose %[[PT]] [2, 0, 1] : tensor<2x4x8x!tile.ptr<bf16>> -> tensor<8x2x4x!tile.ptr<bf16>>
tile.kernel @shapes(%s: f32, %p: !tile.ptr<bf16>) {
  %0 = tile.splat %s : tensor<64xf32>
  %1 = tile.splat %p : tensor<2x4x8x!tile.ptr<bf16>>
  %2 = tile.arange 0 to 64 : tensor<64xi32>
  %3 = tile.arange -8 to 8 : tensor<16xi32>
  %4 = tile.expand_dims %0 axis 0 : tensor<64xf32> -> tensor<1x64xf32>
  %5 = tile.expand_dims %0 axis 1 : tensor<64xf32> -> tensor<64x1xf32>
  %6 = tile.broadcast %4 : tensor<1x64xf32> -> tensor<32x64xf32>
  %7 = tile.reshape %6 : tensor<32x64xf32> -> tensor<2048xf32>
  %8 = tile.transpose %6 [1, 0] : tensor<32x64xf32> -> tensor<64x32xf32>
  %9 = tile.transpose %1 [2, 0, 1] : tensor<2x4x8x!tile.ptr<bf16>> -> tensor<8x2x4x!tile.ptr<bf16>>
  tile.return
}

// CHECK-LABEL: tile.kernel @views
// CHECK-SAME: (%[[P:.*]]: !tile.ptr<bf16>, %[[M:.*]]: i32, %[[N:.*]]: i32, %[[LD:.*]]: i64)
// CHECK: %[[V:.*]] = tile.make_view %[[P]] sizes(%[[M]]) : <bf16> -> <?x4096xbf16, strides = [4096, 1]>
// CHECK: tile.make_view %[[P]] : <bf16> -> <64x32xbf16, strides = [32, 1]>
// CHECK: tile.make_view %[[P]] strides(%[[LD]]) : <bf16> -> <64x32xbf16, strides = [?, 1]>
// CHECK: %[[W:.*]] = tile.make_view %[[P]] sizes(%[[M]], %[[N]]) strides(%[[LD]], %[[LD]]) : <bf16> -> <?x?xbf16, strides = [?, ?]>
// CHECK: %[[C0:.*]] = arith.constant 0 : i32
// CHECK: %[[X:.*]] = tile.load %[[V]][%[[M]], %[[C0]]] : <?x4096xbf16, strides = [4096, 1]> -> tensor<16x128xbf16>
// CHECK: tile.load %[[W]][%[[C0]], %[[N]]] padding(-1.000000e+00 : bf16) : <?x?xbf16, strides = [?, ?]> -> tensor<16x128xbf16>
// CHECK: tile.store %[[X]], %[[W]][%[[M]], %[[C0]]] : tensor<16x128xbf16>, <?x?xbf16, strides = [?, ?]>
tile.kernel @views(%p: !tile.ptr<bf16>, %m: i32, %n: i32, %ld: i64) {
  %v = tile.make_view %p sizes(%m) : !tile.ptr<bf16> -> !tile.view<?x4096xbf16, strides = [4096, 1]>
  %s = tile.make_view %p : !tile.ptr<bf16> -> !tile.view<64x32xbf16, strides = [32, 1]>
  %t = tile.make_view %p strides(%ld) : !tile.ptr<bf16> -> !tile.view<64x32xbf16, strides = [?, 1]>
  %w = tile.make_view %p sizes(%m, %n) strides(%ld, %ld) : !tile.ptr<bf16> -> !tile.view<?x?xbf16, strides = [?, ?]>
  %c0 = arith.constant 0 : i32
  %x = tile.load %v[%m, %c0] : !tile.view<?x4096xbf16, strides = [4096, 1]> -> tensor<16x128xbf16>
  %y = tile.load %w[%c0, %n] padding(-1.0 : bf16) : !tile.view<?x?xbf16, strides = [?, ?]> -> tensor<16x128xbf16>
  tile.store %x, %w[%m, %c0] : tensor<16x128xbf16>, !tile.view<?x?xbf16, strides = [?, ?]>
  tile.return
}

// CHECK-LABEL: tile.kernel @pointers
// CHECK-SAME: (%[[P:.*]]: !tile.ptr<f32>, %[[OFF:.*]]: i64, %[[N:.*]]: i32)
// CHECK: %[[Q:.*]] = tile.addptr %[[P]], %[[OFF]] : !tile.ptr<f32>, i64
// CHECK: %[[PS:.*]] = tile.splat %[[Q]] : tensor<128x!tile.ptr<f32>>
// CHECK: %[[R:.*]] = tile.arange 0 to 128 : tensor<128xi32>
// CHECK: %[[PTRS:.*]] = tile.addptr %[[PS]], %[[R]] : tensor<128x!tile.ptr<f32>>, tensor<128xi32>
// CHECK: %[[MASK:.*]] = arith.cmpi slt
// CHECK: %[[ZERO:.*]] = arith.constant dense<0.000000e+00> : tensor<128xf32>
// CHECK: %[[X:.*]] = tile.ptr_load %[[PTRS]] : tensor<128x!tile.ptr<f32>>
// CHECK: tile.ptr_load %[[PTRS]] mask %[[MASK]] : tensor<128x!tile.ptr<f32>>
// CHECK: tile.ptr_load %[[PTRS]] mask %[[MASK]] other %[[ZERO]] : tensor<128x!tile.ptr<f32>>
// CHECK: %[[SC:.*]] = tile.ptr_load %[[P]] : !tile.ptr<f32>
// CHECK: %[[TRUE:.*]] = arith.constant true
// CHECK: %[[ONE:.*]] = arith.constant 1.000000e+00 : f32
// CHECK: tile.ptr_load %[[Q]] mask %[[TRUE]] other %[[ONE]] : !tile.ptr<f32>
// CHECK: tile.ptr_store %[[PTRS]], %[[X]] mask %[[MASK]] : tensor<128x!tile.ptr<f32>>
// CHECK: tile.ptr_store %[[PTRS]], %[[X]] : tensor<128x!tile.ptr<f32>>
// CHECK: tile.ptr_store %[[Q]], %[[SC]] mask %[[TRUE]] : !tile.ptr<f32>
tile.kernel @pointers(%p: !tile.ptr<f32>, %off: i64, %n: i32) {
  %q = tile.addptr %p, %off : !tile.ptr<f32>, i64
  %ps = tile.splat %q : tensor<128x!tile.ptr<f32>>
  %r = tile.arange 0 to 128 : tensor<128xi32>
  %ptrs = tile.addptr %ps, %r : tensor<128x!tile.ptr<f32>>, tensor<128xi32>
  %ns = tile.splat %n : tensor<128xi32>
  %mask = arith.cmpi slt, %r, %ns : tensor<128xi32>
  %zero = arith.constant dense<0.0> : tensor<128xf32>
  %x = tile.ptr_load %ptrs : tensor<128x!tile.ptr<f32>>
  %y = tile.ptr_load %ptrs mask %mask : tensor<128x!tile.ptr<f32>>
  %z = tile.ptr_load %ptrs mask %mask other %zero : tensor<128x!tile.ptr<f32>>
  %sc = tile.ptr_load %p : !tile.ptr<f32>
  %true = arith.constant true
  %one = arith.constant 1.0 : f32
  %sm = tile.ptr_load %q mask %true other %one : !tile.ptr<f32>
  tile.ptr_store %ptrs, %x mask %mask : tensor<128x!tile.ptr<f32>>
  tile.ptr_store %ptrs, %x : tensor<128x!tile.ptr<f32>>
  tile.ptr_store %q, %sc mask %true : !tile.ptr<f32>
  tile.return
}

// CHECK-LABEL: tile.kernel @converts
// CHECK-SAME: (%[[S:.*]]: f32, %[[H:.*]]: bf16)
// CHECK: %[[X:.*]] = tile.splat %[[S]] : tensor<64xf32>
// CHECK: %[[B:.*]] = tile.convert %[[X]] rounding rne : tensor<64xf32> -> tensor<64xbf16>
// CHECK: tile.convert %[[X]] rounding rtz : tensor<64xf32> -> tensor<64xf16>
// CHECK: %[[Q:.*]] = tile.convert %[[X]] rounding rne saturate : tensor<64xf32> -> tensor<64xf8E4M3FN>
// CHECK: tile.convert %[[B]] rounding rtz saturate : tensor<64xbf16> -> tensor<64xf8E4M3FN>
// CHECK: tile.convert %[[B]] : tensor<64xbf16> -> tensor<64xf32>
// CHECK: tile.convert %[[Q]] : tensor<64xf8E4M3FN> -> tensor<64xbf16>
// CHECK: tile.convert %[[Q]] : tensor<64xf8E4M3FN> -> tensor<64xf16>
// CHECK: tile.convert %[[B]] rounding rne : tensor<64xbf16> -> tensor<64xf16>
// CHECK: tile.convert %[[S]] rounding rne : f32 -> bf16
// CHECK: tile.convert %[[H]] : bf16 -> f32
tile.kernel @converts(%s: f32, %h: bf16) {
  %x = tile.splat %s : tensor<64xf32>
  %b = tile.convert %x rounding rne : tensor<64xf32> -> tensor<64xbf16>
  %f = tile.convert %x rounding rtz : tensor<64xf32> -> tensor<64xf16>
  %q = tile.convert %x rounding rne saturate : tensor<64xf32> -> tensor<64xf8E4M3FN>
  %q2 = tile.convert %b rounding rtz saturate : tensor<64xbf16> -> tensor<64xf8E4M3FN>
  %w = tile.convert %b : tensor<64xbf16> -> tensor<64xf32>
  %wb = tile.convert %q : tensor<64xf8E4M3FN> -> tensor<64xbf16>
  %wh = tile.convert %q : tensor<64xf8E4M3FN> -> tensor<64xf16>
  %bh = tile.convert %b rounding rne : tensor<64xbf16> -> tensor<64xf16>
  %sb = tile.convert %s rounding rne : f32 -> bf16
  %hs = tile.convert %h : bf16 -> f32
  tile.return
}

// CHECK-LABEL: tile.kernel @reductions
// CHECK-SAME: (%[[S:.*]]: f32, %[[I:.*]]: i32)
// CHECK: %[[X:.*]] = tile.splat %[[S]] : tensor<64x128xf32>
// CHECK: %[[R:.*]] = tile.reduce sum %[[X]] axis 1 : tensor<64x128xf32> -> tensor<64xf32>
// CHECK: tile.reduce min %[[X]] axis 0 : tensor<64x128xf32> -> tensor<128xf32>
// CHECK: tile.reduce max %[[R]] axis 0 : tensor<64xf32> -> f32
// CHECK: %[[N:.*]] = tile.splat %[[I]] : tensor<256xi32>
// CHECK: tile.reduce sum %[[N]] axis 0 : tensor<256xi32> -> i32
// CHECK: tile.scan sum %[[X]] axis 1 : tensor<64x128xf32>
// CHECK: tile.scan max %[[N]] axis 0 : tensor<256xi32>
tile.kernel @reductions(%s: f32, %i: i32) {
  %x = tile.splat %s : tensor<64x128xf32>
  %r = tile.reduce sum %x axis 1 : tensor<64x128xf32> -> tensor<64xf32>
  %c = tile.reduce min %x axis 0 : tensor<64x128xf32> -> tensor<128xf32>
  %m = tile.reduce max %r axis 0 : tensor<64xf32> -> f32
  %n = tile.splat %i : tensor<256xi32>
  %t = tile.reduce sum %n axis 0 : tensor<256xi32> -> i32
  %cs = tile.scan sum %x axis 1 : tensor<64x128xf32>
  %cm = tile.scan max %n axis 0 : tensor<256xi32>
  tile.return
}

// CHECK-LABEL: tile.kernel @dots
// CHECK-SAME: (%[[A:.*]]: !tile.ptr<bf16>, %[[B:.*]]: !tile.ptr<f8E4M3FN>)
// CHECK: %[[ACC:.*]] = arith.constant dense<0.000000e+00> : tensor<64x64xf32>
// CHECK: %[[X:.*]] = tile.ptr_load %{{.*}} : tensor<64x32x!tile.ptr<bf16>>
// CHECK: %[[Y:.*]] = tile.ptr_load %{{.*}} : tensor<32x64x!tile.ptr<bf16>>
// CHECK: %[[D:.*]] = tile.dot %[[X]], %[[Y]], %[[ACC]] : tensor<64x32xbf16>, tensor<32x64xbf16> -> tensor<64x64xf32>
// CHECK: %[[U:.*]] = tile.ptr_load %{{.*}} : tensor<64x32x!tile.ptr<f8E4M3FN>>
// CHECK: %[[V:.*]] = tile.ptr_load %{{.*}} : tensor<32x64x!tile.ptr<f8E4M3FN>>
// CHECK: tile.dot %[[U]], %[[V]], %[[D]] : tensor<64x32xf8E4M3FN>, tensor<32x64xf8E4M3FN> -> tensor<64x64xf32>
tile.kernel @dots(%a: !tile.ptr<bf16>, %b: !tile.ptr<f8E4M3FN>) {
  %acc = arith.constant dense<0.0> : tensor<64x64xf32>
  %pa = tile.splat %a : tensor<64x32x!tile.ptr<bf16>>
  %pb = tile.splat %a : tensor<32x64x!tile.ptr<bf16>>
  %x = tile.ptr_load %pa : tensor<64x32x!tile.ptr<bf16>>
  %y = tile.ptr_load %pb : tensor<32x64x!tile.ptr<bf16>>
  %d = tile.dot %x, %y, %acc : tensor<64x32xbf16>, tensor<32x64xbf16> -> tensor<64x64xf32>
  %qa = tile.splat %b : tensor<64x32x!tile.ptr<f8E4M3FN>>
  %qb = tile.splat %b : tensor<32x64x!tile.ptr<f8E4M3FN>>
  %u = tile.ptr_load %qa : tensor<64x32x!tile.ptr<f8E4M3FN>>
  %v = tile.ptr_load %qb : tensor<32x64x!tile.ptr<f8E4M3FN>>
  %e = tile.dot %u, %v, %d : tensor<64x32xf8E4M3FN>, tensor<32x64xf8E4M3FN> -> tensor<64x64xf32>
  tile.return
}

// arith, math and scf apply to tiles unchanged inside a kernel.
// CHECK-LABEL: tile.kernel @elementwise
// CHECK-SAME: (%[[S:.*]]: f32, %[[N:.*]]: i32)
// CHECK: %[[X:.*]] = tile.splat %[[S]] : tensor<128xf32>
// CHECK: %[[E:.*]] = math.exp %[[X]] : tensor<128xf32>
// CHECK: %[[M:.*]] = arith.mulf %[[X]], %[[E]] : tensor<128xf32>
// CHECK: %[[R:.*]] = tile.arange 0 to 128 : tensor<128xi32>
// CHECK: %[[C:.*]] = arith.cmpi slt, %[[R]], %{{.*}} : tensor<128xi32>
// CHECK: %[[SEL:.*]] = arith.select %[[C]], %[[M]], %[[X]] : tensor<128xi1>, tensor<128xf32>
// CHECK: %[[LOOP:.*]] = scf.for %{{.*}} = %{{.*}} to %[[N]] step %{{.*}} iter_args(%[[ACC:.*]] = %[[SEL]]) -> (tensor<128xf32>)  : i32 {
// CHECK:   %[[SQ:.*]] = math.sqrt %[[ACC]] : tensor<128xf32>
// CHECK:   scf.yield %[[SQ]] : tensor<128xf32>
// CHECK: }
// CHECK: tile.reduce sum %[[LOOP]] axis 0 : tensor<128xf32> -> f32
tile.kernel @elementwise(%s: f32, %n: i32) {
  %x = tile.splat %s : tensor<128xf32>
  %e = math.exp %x : tensor<128xf32>
  %m = arith.mulf %x, %e : tensor<128xf32>
  %r = tile.arange 0 to 128 : tensor<128xi32>
  %ns = tile.splat %n : tensor<128xi32>
  %c = arith.cmpi slt, %r, %ns : tensor<128xi32>
  %sel = arith.select %c, %m, %x : tensor<128xi1>, tensor<128xf32>
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %loop = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %sel) -> (tensor<128xf32>) : i32 {
    %sq = math.sqrt %acc : tensor<128xf32>
    scf.yield %sq : tensor<128xf32>
  }
  %sum = tile.reduce sum %loop axis 0 : tensor<128xf32> -> f32
  tile.return
}
