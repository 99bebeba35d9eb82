
tile.kernel @convert_saturate_n.t_e4m3(%s: f32) {
  %x = tile.splat %s : tensor<64xf32>
   tile.return}

