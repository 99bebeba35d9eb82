// Round trip of Hopper's asynchronous pipeline ops (mbarrier rings, TMA copies,
// tile.warp_specialize) and their types and attributes, then the diagnostics
// of their verifiers.
// RUN: tilejit-opt %s -split-input-file -allow-unregistered-dialect -verify-diagnostics | FileCheck %s

#shared = #tile.shared<vec = 16, perPhase = 1, maxPhase = 8>
// CHECK-LABEL: tile.kernel @pipeline
// CHECK-SAME: %{{.*}}: !tile.tensormap<[64, 128], f8E4M3FN> {tile.name = "a.tensormap", tile.tensormap_source = #tile.tensormap_source<base = 0, sizes = [-1, 4096], size_args = [1, -1], strides = [4096, 1]>}
// CHECK-SAME: #tile.config<tile = [64, 64, 128], warps = 4, stages = 2, producer = 1>
// CHECK: %[[FULL:.*]] = tile.mbarrier_alloc arrivals = 1 : <2>
// CHECK: %[[EMPTY:.*]] = tile.mbarrier_alloc arrivals = 1 : <2>
// CHECK: tile.warp_specialize producer_regs = 40, consumer_regs = 240 producer {
// CHECK: tile.mbarrier_wait %[[EMPTY]][%{{.*}}], %{{.*}} : <2>
// CHECK: tile.mbarrier_expect_tx %[[FULL]][%{{.*}}], 8192 : <2>
// CHECK: tile.tma_copy %{{.*}}[%{{.*}}, %{{.*}}], %{{.*}}[%{{.*}}], %[[FULL]] : <[64, 128], f8E4M3FN>, memref<2x64x128xf8E4M3FN
// CHECK: } consumer {
// CHECK: tile.mbarrier_wait %[[FULL]]
// CHECK: tile.mbarrier_arrive %[[EMPTY]][%{{.*}}] : <2>
tile.kernel @pipeline(%a: !tile.ptr<f8E4M3FN> {tile.name = "a"}, %m: i32,
    %map: !tile.tensormap<[64, 128], f8E4M3FN> {tile.name = "a.tensormap", tile.tensormap_source = #tile.tensormap_source<base = 0, sizes = [-1, 4096], size_args = [1, -1], strides = [4096, 1]>})
    attributes {config = #tile.config<tile = [64, 64, 128], warps = 4, stages = 2, producer = 1>} {
  %c0 = arith.constant 0 : i32
  %buf = tile.shared_alloc : memref<2x64x128xf8E4M3FN, #shared>
  %full = tile.mbarrier_alloc arrivals = 1 : !tile.barriers<2>
  %empty = tile.mbarrier_alloc arrivals = 1 : !tile.barriers<2>
  tile.warp_specialize producer_regs = 40, consumer_regs = 240 producer {
    tile.mbarrier_wait %empty[%c0], %c0 : !tile.barriers<2>
    tile.mbarrier_expect_tx %full[%c0], 8192 : !tile.barriers<2>
    tile.tma_copy %map[%c0, %c0], %buf[%c0], %full : !tile.tensormap<[64, 128], f8E4M3FN>, memref<2x64x128xf8E4M3FN, #shared>, !tile.barriers<2>
  } consumer {
    tile.mbarrier_wait %full[%c0], %c0 : !tile.barriers<2>
    tile.mbarrier_arrive %empty[%c0] : !tile.barriers<2>
  }
  tile.return
}

// -----

// mma.sync consumers: one producer warp, no register budgets, per-warp releases.
// CHECK-LABEL: tile.kernel @warp_producer
// CHECK: tile.warp_specialize producer_warps = 1 producer {
// CHECK: tile.mbarrier_arrive %{{.*}}[%{{.*}}] per_warp : <2>
// CHECK: tile.mbarrier_arrive %{{.*}}[%{{.*}}] if %{{.*}} per_warp : <2>
tile.kernel @warp_producer() attributes {config = #tile.config<tile = [64, 64, 64], warps = 4, stages = 2, producer = 1>} {
  %c0 = arith.constant 0 : i32
  %true = arith.constant true
  %empty = tile.mbarrier_alloc arrivals = 4 : !tile.barriers<2>
  tile.warp_specialize producer_warps = 1 producer {
  } consumer {
    tile.mbarrier_arrive %empty[%c0] per_warp : !tile.barriers<2>
    tile.mbarrier_arrive %empty[%c0] if %true per_warp : !tile.barriers<2>
  }
  tile.return
}

// -----

// producer = 2: one consumer thread issues the copies, in a tile.single_thread.
// CHECK-LABEL: tile.kernel @inline_producer
// CHECK-SAME: producer = 2
// CHECK: tile.single_thread {
// CHECK-NEXT: tile.mbarrier_wait
// CHECK-NEXT: tile.mbarrier_expect_tx
// CHECK-NEXT: tile.tma_copy
// CHECK-NEXT: }
tile.kernel @inline_producer(%a: !tile.ptr<bf16>, %map: !tile.tensormap<[64, 64], bf16> {tile.tensormap_source = #tile.tensormap_source<base = 0, sizes = [64, 64], size_args = [-1, -1], strides = [64, 1]>}) attributes {config = #tile.config<tile = [64, 64, 64], warps = 2, stages = 2, producer = 2>} {
  %c0 = arith.constant 0 : i32
  %buf = tile.shared_alloc : memref<2x64x64xbf16, #tile.shared<vec = 8, perPhase = 1, maxPhase = 8>>
  %full = tile.mbarrier_alloc arrivals = 1 : !tile.barriers<2>
  %empty = tile.mbarrier_alloc arrivals = 2 : !tile.barriers<2>
  tile.single_thread {
    tile.mbarrier_wait %empty[%c0], %c0 : !tile.barriers<2>
    tile.mbarrier_expect_tx %full[%c0], 8192 : !tile.barriers<2>
    tile.tma_copy %map[%c0, %c0], %buf[%c0], %full : !tile.tensormap<[64, 64], bf16>, memref<2x64x64xbf16, #tile.shared<vec = 8, perPhase = 1, maxPhase = 8>>, !tile.barriers<2>
  }
  tile.mbarrier_wait %full[%c0], %c0 : !tile.barriers<2>
  tile.mbarrier_arrive %empty[%c0] per_warp : !tile.barriers<2>
  tile.return
}

// -----

tile.kernel @inline_is_not_warp_specialized() attributes {config = #tile.config<tile = [64, 64, 64], warps = 4, stages = 2, producer = 2>} {
  // expected-error @+1 {{'tile.warp_specialize' op needs a kernel whose #tile.config has producer = 1}}
  tile.warp_specialize producer_warps = 1 producer {
  } consumer {
  }
  tile.return
}

// -----

tile.kernel @budget_on_a_warp() attributes {config = #tile.config<tile = [64, 64, 64], warps = 4, stages = 2, producer = 1>} {
  // expected-error @+1 {{'tile.warp_specialize' op register budgets need a producer warpgroup (setmaxnreg acts per warpgroup), got producer_warps = 1}}
  tile.warp_specialize producer_regs = 40, consumer_regs = 240 producer_warps = 1 producer {
  } consumer {
  }
  tile.return
}

// -----

tile.kernel @two_producer_warps() attributes {config = #tile.config<tile = [64, 64, 64], warps = 4, stages = 2, producer = 1>} {
  // expected-error @+1 {{'tile.warp_specialize' op producer_warps must be 1 (a warp) or 4 (a warpgroup), got 2}}
  tile.warp_specialize producer_warps = 2 producer {
  } consumer {
  }
  tile.return
}

// -----

// expected-error @+1 {{a tensor map's box rows must be 32, 64 or 128 bytes (one swizzle span), got 256}}
"test.op"() {t = !tile.tensormap<[64, 128], bf16>} : () -> ()

// -----

// expected-error @+1 {{a tensor map holds bf16, f16 or f8E4M3FN, got 'f32'}}
"test.op"() {t = !tile.tensormap<[64, 32], f32>} : () -> ()

// -----

// expected-error @+1 {{a ring of mbarriers needs 1 to 32 of them, got 0}}
"test.op"() {t = !tile.barriers<0>} : () -> ()

// -----

// expected-error @+1 {{tensormap source dimension 0 needs a static size or a size parameter, got size -1 and size_arg -1}}
"test.op"() {s = #tile.tensormap_source<base = 0, sizes = [-1, 64], size_args = [-1, -1], strides = [64, 1]>} : () -> ()

// -----

// expected-error @+1 {{config producer = 1 needs warps a multiple of 4 up to 16 (whole consumer warpgroups), got 2}}
"test.op"() {c = #tile.config<tile = [64, 64, 64], warps = 2, producer = 1>} : () -> ()

// -----

// expected-error @+1 {{'tile.kernel' op parameter 1 is a !tile.tensormap without a tile.tensormap_source}}
tile.kernel @unsourced(%a: !tile.ptr<bf16>, %map: !tile.tensormap<[64, 64], bf16>) {
  tile.return
}

// -----

// expected-error @+1 {{'tile.kernel' op tensor map parameter 1 names parameter 0 as its base, which is not a pointer}}
tile.kernel @badbase(%n: i32, %map: !tile.tensormap<[64, 64], bf16> {tile.tensormap_source = #tile.tensormap_source<base = 0, sizes = [64, 64], size_args = [-1, -1], strides = [64, 1]>}) {
  tile.return
}

// -----

tile.kernel @outside(%a: !tile.ptr<bf16>, %map: !tile.tensormap<[64, 64], bf16> {tile.tensormap_source = #tile.tensormap_source<base = 0, sizes = [64, 64], size_args = [-1, -1], strides = [64, 1]>}) {
  %c0 = arith.constant 0 : i32
  %buf = tile.shared_alloc : memref<2x64x64xbf16, #tile.shared<vec = 8, perPhase = 1, maxPhase = 8>>
  %full = tile.mbarrier_alloc arrivals = 1 : !tile.barriers<2>
  // expected-error @+1 {{'tile.tma_copy' op must be in the producer region of a tile.warp_specialize or in a tile.single_thread (one thread issues the copy)}}
  tile.tma_copy %map[%c0, %c0], %buf[%c0], %full : !tile.tensormap<[64, 64], bf16>, memref<2x64x64xbf16, #tile.shared<vec = 8, perPhase = 1, maxPhase = 8>>, !tile.barriers<2>
  tile.return
}

// -----

tile.kernel @mismatch(%a: !tile.ptr<bf16>, %map: !tile.tensormap<[32, 64], bf16> {tile.tensormap_source = #tile.tensormap_source<base = 0, sizes = [64, 64], size_args = [-1, -1], strides = [64, 1]>}) attributes {config = #tile.config<tile = [64, 64, 64], warps = 4, stages = 2, producer = 1>} {
  %c0 = arith.constant 0 : i32
  %buf = tile.shared_alloc : memref<2x64x64xbf16, #tile.shared<vec = 8, perPhase = 1, maxPhase = 8>>
  %full = tile.mbarrier_alloc arrivals = 1 : !tile.barriers<2>
  tile.warp_specialize producer_regs = 40, consumer_regs = 240 producer {
    // expected-error @+1 {{'tile.tma_copy' op box 32x64 differs from the slot 64x64}}
    tile.tma_copy %map[%c0, %c0], %buf[%c0], %full : !tile.tensormap<[32, 64], bf16>, memref<2x64x64xbf16, #tile.shared<vec = 8, perPhase = 1, maxPhase = 8>>, !tile.barriers<2>
  } consumer {
  }
  tile.return
}

// -----

tile.kernel @budget() attributes {config = #tile.config<tile = [64, 64, 64], warps = 8, stages = 2, producer = 1>} {
  // expected-error @+1 {{'tile.warp_specialize' op asks for 68608 registers (128 producer threads x 40 + 256 consumer threads x 248), more than the 65536 of a multiprocessor}}
  tile.warp_specialize producer_regs = 40, consumer_regs = 248 producer {
  } consumer {
  }
  tile.return
}

// -----

tile.kernel @noproducer() attributes {config = #tile.config<tile = [64, 64, 64], warps = 4, stages = 2>} {
  // expected-error @+1 {{'tile.warp_specialize' op needs a kernel whose #tile.config has producer = 1}}
  tile.warp_specialize producer_regs = 40, consumer_regs = 240 producer {
  } consumer {
  }
  tile.return
}

// -----

tile.kernel @notlast() attributes {config = #tile.config<tile = [64, 64, 64], warps = 4, stages = 2, producer = 1>} {
  // expected-error @+1 {{'tile.warp_specialize' op must be the kernel's last op before tile.return: its warps part here}}
  tile.warp_specialize producer_regs = 40, consumer_regs = 240 producer {
  } consumer {
  }
  %c0 = arith.constant 0 : i32
  tile.return
}

// -----

tile.kernel @expectoutside() attributes {config = #tile.config<tile = [64, 64, 64], warps = 4, stages = 2, producer = 1>} {
  %c0 = arith.constant 0 : i32
  %full = tile.mbarrier_alloc arrivals = 1 : !tile.barriers<2>
  tile.warp_specialize producer_regs = 40, consumer_regs = 240 producer {
  } consumer {
    // expected-error @+1 {{'tile.mbarrier_expect_tx' op must be in the producer region of a tile.warp_specialize or in a tile.single_thread (one thread arrives)}}
    tile.mbarrier_expect_tx %full[%c0], 128 : !tile.barriers<2>
  }
  tile.return
}

// -----

tile.kernel @nested() attributes {config = #tile.config<tile = [64, 64, 64], warps = 4, stages = 2, producer = 1>} {
  tile.warp_specialize producer_regs = 40, consumer_regs = 240 producer {
  } consumer {
    // expected-error @+1 {{'tile.mbarrier_alloc' op must be at the top level of a kernel: every thread initializes the ring together}}
    %full = tile.mbarrier_alloc arrivals = 1 : !tile.barriers<2>
  }
  tile.return
}

// -----

#mma = #tile.mma<wpc = [2, 2]>
%a = "test.a"() : () -> tensor<64x32xbf16, #tile.dot_operand<opIdx = 0, parent = #mma, kWidth = 2>>
%b = "test.b"() : () -> tensor<32x64xbf16, #tile.dot_operand<opIdx = 1, parent = #mma, kWidth = 2>>
%c = "test.c"() : () -> tensor<64x64xf32, #mma>
// expected-error @+1 {{'tile.dot_async' op needs #tile.wgmma_operand operands (only wgmma runs asynchronously)}}
%d = tile.dot_async %a, %b, %c : tensor<64x32xbf16, #tile.dot_operand<opIdx = 0, parent = #mma, kWidth = 2>>, tensor<32x64xbf16, #tile.dot_operand<opIdx = 1, parent = #mma, kWidth = 2>> -> tensor<64x64xf32, #mma>

// -----

#mma = #tile.mma<wpc = [4, 1]>
%a = "test.a"() : () -> tensor<64x32xbf16, #tile.wgmma_operand<opIdx = 0>>
%b = "test.b"() : () -> tensor<16x64xbf16, #tile.wgmma_operand<opIdx = 1>>
%c = "test.c"() : () -> tensor<64x64xf32, #mma>
// expected-error @+1 {{'tile.dot_async' op needs a MxK x KxN product of one element type into a MxN accumulator}}
%d = tile.dot_async %a, %b, %c : tensor<64x32xbf16, #tile.wgmma_operand<opIdx = 0>>, tensor<16x64xbf16, #tile.wgmma_operand<opIdx = 1>> -> tensor<64x64xf32, #mma>

// -----

// CHECK: %[[D:.*]] = tile.dot_async
// CHECK: tile.dot_wait {pending = 1 : i32}
// CHECK: tile.dot_wait %[[D]] {pending = 0 : i32}
#mma = #tile.mma<wpc = [4, 1]>
%a = "test.a"() : () -> tensor<64x32xbf16, #tile.wgmma_operand<opIdx = 0>>
%b = "test.b"() : () -> tensor<32x64xbf16, #tile.wgmma_operand<opIdx = 1>>
%c = "test.c"() : () -> tensor<64x64xf32, #mma>
%d = tile.dot_async %a, %b, %c : tensor<64x32xbf16, #tile.wgmma_operand<opIdx = 0>>, tensor<32x64xbf16, #tile.wgmma_operand<opIdx = 1>> -> tensor<64x64xf32, #mma>
tile.dot_wait {pending = 1 : i32}
%e = tile.dot_wait %d {pending = 0 : i32} : tensor<64x64xf32, #mma>

// -----

tile.kernel @waitslot(%x: f32) {
  %full = tile.mbarrier_alloc arrivals = 1 : !tile.barriers<2>
  %c0 = arith.constant 0 : i32
  // expected-error @+1 {{'tile.mbarrier_wait' op operand #1 must be 32-bit signless integer, but got 'f32'}}
  "tile.mbarrier_wait"(%full, %x, %c0) : (!tile.barriers<2>, f32, i32) -> ()
  tile.return
}

// -----

tile.kernel @arrivepredicate(%c: i32) {
  %full = tile.mbarrier_alloc arrivals = 1 : !tile.barriers<2>
  // expected-error @+1 {{'tile.mbarrier_arrive' op operand #2 must be 1-bit signless integer, but got 'i32'}}
  "tile.mbarrier_arrive"(%full, %c, %c) : (!tile.barriers<2>, i32, i32) -> ()
  tile.return
}

// -----

tile.kernel @noarrivals() {
  // expected-error @+1 {{'tile.mbarrier_alloc' op attribute 'arrivals' failed to satisfy constraint: 32-bit signless integer attribute whose minimum value is 1}}
  %full = tile.mbarrier_alloc arrivals = 0 : !tile.barriers<2>
  tile.return
}

// -----

tile.kernel @oddregs() attributes {config = #tile.config<tile = [64, 64, 64], warps = 4, stages = 2, producer = 1>} {
  // expected-error @+1 {{'tile.warp_specialize' op register budgets must be multiples of 8, got 36 and 240}}
  tile.warp_specialize producer_regs = 36, consumer_regs = 240 producer {
  } consumer {
  }
  tile.return
}

// -----

// expected-error @+1 {{config producer must be 0, 1 (a producer warp or warpgroup) or 2 (one consumer thread issues the copies), got 3}}
"test.op"() {c = #tile.config<tile = [64, 64, 64], warps = 4, producer = 3>} : () -> ()
