tile.kernel @k(%a: !tile.ptr<bf16> {tile.name = "a"}, %m: i32 {tile.grid_dim = 0 : i64}) attributes {config = #tile.config<tile = [128], warps = 4>} {
  tile.return
}
