tile.kernel @k(%a: !tile.ptr<bf16> {tile.name = "a"}, %m: i32, %map: !tile.tensormap<[64, 64], bf16> {tile.tensormap_source = #tile.tensormap_source<base = 0, sizes = [-1, 64], size_args = [1, -1], strides = [64, 1]>}) attributes {config = #tile.config<tile = [128], warps = 4>} {
  tile.return
}
