// -test-tile-dot-paths: whyNotWgmma, the analysis tile-assign-layouts asks of
// every dot on an arch with wgmma: a remark on each dot says wgmma (and
// whether A comes from registers), or mma.sync and why not.
// RUN: tilejit-opt %s --test-tile-dot-paths --verify-diagnostics -o /dev/null

// A K-contiguous e4m3 GEMM whose loop loads both operands.
tile.kernel @wgmma(%a: !tile.ptr<f8E4M3FN>, %w: !tile.ptr<f8E4M3FN>, %c: !tile.ptr<f32>, %m: i32) attributes {config = #tile.config<tile = [128, 64, 128], warps = 4, stages = 3>} {
  %c0 = arith.constant 0 : i32
  %c128 = arith.constant 128 : i32
  %c512 = arith.constant 512 : i32
  %zero = arith.constant dense<0.0> : tensor<128x64xf32>
  %av = tile.make_view %a sizes(%m) : !tile.ptr<f8E4M3FN> -> !tile.view<?x512xf8E4M3FN, strides = [512, 1]>
  %wv = tile.make_view %w : !tile.ptr<f8E4M3FN> -> !tile.view<64x512xf8E4M3FN, strides = [512, 1]>
  %cv = tile.make_view %c sizes(%m) : !tile.ptr<f32> -> !tile.view<?x64xf32, strides = [64, 1]>
  %pid = tile.program_id 0 : i32
  %row = arith.muli %pid, %c128 : i32
  %acc = scf.for %k = %c0 to %c512 step %c128 iter_args(%sum = %zero) -> (tensor<128x64xf32>) : i32 {
    %at = tile.load %av[%row, %k] : !tile.view<?x512xf8E4M3FN, strides = [512, 1]> -> tensor<128x128xf8E4M3FN>
    %wt = tile.load %wv[%c0, %k] : !tile.view<64x512xf8E4M3FN, strides = [512, 1]> -> tensor<64x128xf8E4M3FN>
    %bt = tile.transpose %wt [1, 0] : tensor<64x128xf8E4M3FN> -> tensor<128x64xf8E4M3FN>
    // expected-remark @below {{wgmma}}
    %d = tile.dot %at, %bt, %sum : tensor<128x128xf8E4M3FN>, tensor<128x64xf8E4M3FN> -> tensor<128x64xf32>
    scf.yield %d : tensor<128x64xf32>
  }
  tile.store %acc, %cv[%row, %c0] : tensor<128x64xf32>, !tile.view<?x64xf32, strides = [64, 1]>
  tile.return
}

// B read as [K, N] (N contiguous) with a run-time row stride: the loop
// cannot stage it, and wgmma reads B only from a slot.
tile.kernel @mma_sync(%a: !tile.ptr<bf16>, %b: !tile.ptr<bf16>, %c: !tile.ptr<f32>, %m: i32, %ld: i64) attributes {config = #tile.config<tile = [128, 128, 32], warps = 8, stages = 2>} {
  %c0 = arith.constant 0 : i32
  %c32 = arith.constant 32 : i32
  %c128 = arith.constant 128 : i32
  %c512 = arith.constant 512 : i32
  %zero = arith.constant dense<0.0> : tensor<128x128xf32>
  %av = tile.make_view %a sizes(%m) : !tile.ptr<bf16> -> !tile.view<?x512xbf16, strides = [512, 1]>
  %bv = tile.make_view %b strides(%ld) : !tile.ptr<bf16> -> !tile.view<512x256xbf16, strides = [?, 1]>
  %cv = tile.make_view %c sizes(%m) : !tile.ptr<f32> -> !tile.view<?x256xf32, strides = [256, 1]>
  %pid = tile.program_id 0 : i32
  %row = arith.muli %pid, %c128 : i32
  %acc = scf.for %k = %c0 to %c512 step %c32 iter_args(%sum = %zero) -> (tensor<128x128xf32>) : i32 {
    %at = tile.load %av[%row, %k] : !tile.view<?x512xbf16, strides = [512, 1]> -> tensor<128x32xbf16>
    %bt = tile.load %bv[%k, %c0] : !tile.view<512x256xbf16, strides = [?, 1]> -> tensor<32x128xbf16>
    // expected-remark @below {{mma.sync, since B cannot be staged: its view's rows and row stride are not static multiples of 16 bytes}}
    %d = tile.dot %at, %bt, %sum : tensor<128x32xbf16>, tensor<32x128xbf16> -> tensor<128x128xf32>
    scf.yield %d : tensor<128x128xf32>
  }
  tile.store %acc, %cv[%row, %c0] : tensor<128x128xf32>, !tile.view<?x256xf32, strides = [256, 1]>
  tile.return
}

// A computed in the loop (a chained accumulator, converted to bf16) is not
// staged: a 16-bit one comes from registers; an e4m3 one falls back to
// mma.sync, since wgmma takes only 16-bit A from registers.
tile.kernel @register_a(%k: !tile.ptr<bf16>, %v: !tile.ptr<bf16>, %k8: !tile.ptr<f8E4M3FN>, %c: !tile.ptr<f32>) attributes {config = #tile.config<tile = [64, 64, 64], warps = 4, stages = 2>} {
  %c0 = arith.constant 0 : i32
  %c64 = arith.constant 64 : i32
  %c256 = arith.constant 256 : i32
  %zero = arith.constant dense<0.0> : tensor<64x64xf32>
  %x = arith.constant dense<1.0> : tensor<64x64xbf16>
  %kv = tile.make_view %k : !tile.ptr<bf16> -> !tile.view<256x64xbf16, strides = [64, 1]>
  %vv = tile.make_view %v : !tile.ptr<bf16> -> !tile.view<64x256xbf16, strides = [256, 1]>
  %k8v = tile.make_view %k8 : !tile.ptr<f8E4M3FN> -> !tile.view<64x256xf8E4M3FN, strides = [256, 1]>
  %cv = tile.make_view %c : !tile.ptr<f32> -> !tile.view<64x64xf32, strides = [64, 1]>
  %o:2 = scf.for %j = %c0 to %c256 step %c64 iter_args(%acc = %zero, %acc8 = %zero) -> (tensor<64x64xf32>, tensor<64x64xf32>) : i32 {
    %kt = tile.load %kv[%j, %c0] : !tile.view<256x64xbf16, strides = [64, 1]> -> tensor<64x64xbf16>
    %bt = tile.transpose %kt [1, 0] : tensor<64x64xbf16> -> tensor<64x64xbf16>
    // expected-remark @below {{wgmma, A from registers}}
    %s = tile.dot %x, %bt, %zero : tensor<64x64xbf16>, tensor<64x64xbf16> -> tensor<64x64xf32>
    %p = arith.truncf %s : tensor<64x64xf32> to tensor<64x64xbf16>
    %vt = tile.load %vv[%c0, %j] : !tile.view<64x256xbf16, strides = [256, 1]> -> tensor<64x64xbf16>
    %vb = tile.transpose %vt [1, 0] : tensor<64x64xbf16> -> tensor<64x64xbf16>
    // expected-remark @below {{wgmma, A from registers}}
    %d = tile.dot %p, %vb, %acc : tensor<64x64xbf16>, tensor<64x64xbf16> -> tensor<64x64xf32>
    %p8 = arith.truncf %s : tensor<64x64xf32> to tensor<64x64xf8E4M3FN>
    %w8 = tile.load %k8v[%c0, %j] : !tile.view<64x256xf8E4M3FN, strides = [256, 1]> -> tensor<64x64xf8E4M3FN>
    %b8 = tile.transpose %w8 [1, 0] : tensor<64x64xf8E4M3FN> -> tensor<64x64xf8E4M3FN>
    // expected-remark @below {{mma.sync, since A is not a stageable load, and wgmma takes only 16-bit A from registers}}
    %d8 = tile.dot %p8, %b8, %acc8 : tensor<64x64xf8E4M3FN>, tensor<64x64xf8E4M3FN> -> tensor<64x64xf32>
    scf.yield %d, %d8 : tensor<64x64xf32>, tensor<64x64xf32>
  }
  tile.store %o#0, %cv[%c0, %c0] : tensor<64x64xf32>, !tile.view<64x64xf32, strides = [64, 1]>
  tile.return
}

// B read as [K, N] in rows of 128 bytes (one MN-major swizzle atom): wgmma
// with the transpose immediate; the same for e4m3 stays on mma.sync.
tile.kernel @mn_major_b(%a: !tile.ptr<bf16>, %b: !tile.ptr<bf16>, %a8: !tile.ptr<f8E4M3FN>, %b8: !tile.ptr<f8E4M3FN>, %c: !tile.ptr<f32>) attributes {config = #tile.config<tile = [64, 64, 64], warps = 4, stages = 2>} {
  %c0 = arith.constant 0 : i32
  %c64 = arith.constant 64 : i32
  %c256 = arith.constant 256 : i32
  %zero = arith.constant dense<0.0> : tensor<64x64xf32>
  %av = tile.make_view %a : !tile.ptr<bf16> -> !tile.view<64x256xbf16, strides = [256, 1]>
  %bv = tile.make_view %b : !tile.ptr<bf16> -> !tile.view<256x64xbf16, strides = [64, 1]>
  %av8 = tile.make_view %a8 : !tile.ptr<f8E4M3FN> -> !tile.view<64x256xf8E4M3FN, strides = [256, 1]>
  %bv8 = tile.make_view %b8 : !tile.ptr<f8E4M3FN> -> !tile.view<256x64xf8E4M3FN, strides = [64, 1]>
  %cv = tile.make_view %c : !tile.ptr<f32> -> !tile.view<64x64xf32, strides = [64, 1]>
  %acc:2 = scf.for %k = %c0 to %c256 step %c64 iter_args(%s0 = %zero, %s1 = %zero) -> (tensor<64x64xf32>, tensor<64x64xf32>) : i32 {
    %at = tile.load %av[%c0, %k] : !tile.view<64x256xbf16, strides = [256, 1]> -> tensor<64x64xbf16>
    %bt = tile.load %bv[%k, %c0] : !tile.view<256x64xbf16, strides = [64, 1]> -> tensor<64x64xbf16>
    // expected-remark @below {{wgmma}}
    %d = tile.dot %at, %bt, %s0 : tensor<64x64xbf16>, tensor<64x64xbf16> -> tensor<64x64xf32>
    %at8 = tile.load %av8[%c0, %k] : !tile.view<64x256xf8E4M3FN, strides = [256, 1]> -> tensor<64x64xf8E4M3FN>
    %bt8 = tile.load %bv8[%k, %c0] : !tile.view<256x64xf8E4M3FN, strides = [64, 1]> -> tensor<64x64xf8E4M3FN>
    // expected-remark @below {{mma.sync, since B is loaded [K, N] (N contiguous), which wgmma reads only for 16-bit operands}}
    %d8 = tile.dot %at8, %bt8, %s1 : tensor<64x64xf8E4M3FN>, tensor<64x64xf8E4M3FN> -> tensor<64x64xf32>
    scf.yield %d, %d8 : tensor<64x64xf32>, tensor<64x64xf32>
  }
  tile.store %acc#0, %cv[%c0, %c0] : tensor<64x64xf32>, !tile.view<64x64xf32, strides = [64, 1]>
  tile.return
}
