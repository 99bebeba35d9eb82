// -test-tile-dot-paths: whyNotWgmma, the analysis tile-assign-layouts asks of
// every dot on an arch with wgmma: a remark on each dot says wgmma, or
// mma.sync and why not.
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

// B read as [K, N] (N contiguous): no wgmma descriptor for it.
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
    // expected-remark @below {{mma.sync, since A is not a load, or B not the only use of a [1, 0] transpose of one}}
    %d = tile.dot %at, %bt, %sum : tensor<128x32xbf16>, tensor<32x128xbf16> -> tensor<128x128xf32>
    scf.yield %d : tensor<128x128xf32>
  }
  tile.store %acc, %cv[%row, %c0] : tensor<128x128xf32>, !tile.view<?x256xf32, strides = [256, 1]>
  tile.return
}
