// tilejit compile --meta: the launch metadata the runtime records, as JSON
// (keys in name order): a plain kernel, one that waits for its predecessors,
// and a persistent TMA kernel whose grid and tensor maps the launcher supplies.
// RUN: tilejit compile vector_add --arch sm_90a -o %t.plain.ptx --meta %t.plain.json
// RUN: FileCheck %s --check-prefix=PLAIN --input-file %t.plain.json
// RUN: tilejit compile gated_rmsnorm --arch sm_90a -o %t.waits.ptx --meta %t.waits.json
// RUN: FileCheck %s --check-prefix=WAITS --input-file %t.waits.json
// RUN: tilejit compile gemm_e4m3 --arch sm_90a --set producer=1 --set persistent=8 --set warps=4 --set block_m=64 -o %t.tma.ptx --meta %t.tma.json
// RUN: FileCheck %s --check-prefix=TMA --input-file %t.tma.json

// PLAIN:      "arch": "sm_90a",
// PLAIN-NEXT: "entry": "vector_add",
// PLAIN-NEXT: "params": [
// PLAIN-NEXT:   {
// PLAIN-NEXT:     "kind": "ptr",
// PLAIN-NEXT:     "name": "x"
// PLAIN:          "kind": "i32",
// PLAIN-NEXT:     "name": "n"
// PLAIN-NEXT:   }
// PLAIN-NEXT: ],
// PLAIN-NEXT: "programs_per_sm": 1,
// PLAIN-NEXT: "shared_bytes": 0,
// PLAIN-NEXT: "sums": "exact",
// PLAIN-NEXT: "threads": 128,
// PLAIN-NEXT: "waits_for_predecessors": false

// WAITS: "entry": "gated_rmsnorm",
// WAITS: "waits_for_predecessors": true

// TMA:      "entry": "gemm_e4m3",
// TMA:          "kind": "f32",
// TMA-NEXT:     "name": "scale"
// TMA-NEXT:   },
// TMA-NEXT:   {
// TMA-NEXT:     "grid_axis": 0,
// TMA-NEXT:     "kind": "i32",
// TMA-NEXT:     "name": "grid_x"
// TMA-NEXT:   },
// TMA-NEXT:   {
// TMA-NEXT:     "grid_axis": 1,
// TMA-NEXT:     "kind": "i32",
// TMA-NEXT:     "name": "grid_y"
// TMA-NEXT:   },
// TMA-NEXT:   {
// TMA-NEXT:     "base": 0,
// TMA-NEXT:     "box": [
// TMA-NEXT:       64,
// TMA-NEXT:       128
// TMA-NEXT:     ],
// TMA-NEXT:     "element_bytes": 1,
// TMA-NEXT:     "kind": "tensormap",
// TMA-NEXT:     "name": "a.tensormap",
// TMA-NEXT:     "row_stride": 4096,
// TMA-NEXT:     "size_args": [
// TMA-NEXT:       3,
// TMA-NEXT:       -1
// TMA-NEXT:     ],
// TMA-NEXT:     "sizes": [
// TMA-NEXT:       -1,
// TMA-NEXT:       4096
// TMA-NEXT:     ]
// TMA-NEXT:   },
// TMA-NEXT:   {
// TMA-NEXT:     "base": 1,
// TMA:          "name": "w.tensormap",
// TMA:        "programs_per_sm": 2,
// TMA-NEXT:   "shared_bytes": 91392,
// TMA-NEXT:   "sums": "reduced",
// TMA-NEXT:   "threads": 256,
// TMA-NEXT:   "waits_for_predecessors": false
