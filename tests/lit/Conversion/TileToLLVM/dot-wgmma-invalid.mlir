// A #tile.wgmma_operand has no register form: one that tile-pipeline-dots
// cannot stage (here a computed tile, not a loop load) is a diagnostic, not
// a silent mma.sync fallback. tile-assign-layouts never produces this (it
// checks the same staging conditions first); hand-written IR can.
// RUN: tilejit-opt %s --tile-pipeline-dots -verify-diagnostics

#blocked = #tile.blocked<spt = [1, 8], tpw = [8, 4], wpc = [4, 1], order = [1, 0]>
tile.kernel @unstaged(%x: bf16) attributes {config = #tile.config<tile = [64, 64, 64], warps = 4, stages = 3>} {
  %s = tile.splat %x : tensor<64x64xbf16, #blocked>
  // expected-error @+1 {{'tile.convert_layout' op leaves a wgmma operand unstaged: only a loop-loaded tile can reach shared memory for wgmma}}
  %a = tile.convert_layout %s : tensor<64x64xbf16, #blocked> -> tensor<64x64xbf16, #tile.wgmma_operand<opIdx = 0>>
  tile.return
}
