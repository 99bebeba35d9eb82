"""One launch of each named variant (and of the library on the same shape),
after warm-ups, for Nsight Compute: ncu --clock-control none -k regex:... python3
one_launch.py DIR M NAME... (DIR from build_shapes.sh; the variants of one shape)."""
import json
import sys
from pathlib import Path

import torch

from hopper import grid_args
from tma_launch import Kernel

D, M, names = Path(sys.argv[1]), int(sys.argv[2]), sys.argv[3:]
cfgs = {n: json.loads((D / f"{n}.cfg").read_text()) for n in names}
first = cfgs[names[0]]
N, K, fp8 = first["n"], first["k"], first.get("fp8", 1)
dtype = torch.float8_e4m3fn if fp8 else torch.bfloat16
A = (torch.randn(M, K, device="cuda") * 2).to(dtype)
W = (torch.randn(N, K, device="cuda") * 2).to(dtype)
C = torch.empty(M, N, device="cuda", dtype=torch.bfloat16)
s = torch.tensor(0.01, device="cuda")
one = torch.tensor(1.0, device="cuda")
lib = (lambda: torch._scaled_mm(A, W.T, s, one, out_dtype=torch.bfloat16)) if fp8 else \
    (lambda: torch.matmul(A, W.T))
kernels = {n: Kernel(D, n) for n in names}
for _ in range(3):
    lib()
    for n, k in kernels.items():
        k.launch(*grid_args(cfgs[n], M, N, A, W, C, 0.01))
torch.cuda.synchronize()
lib()
for n, k in kernels.items():
    k.launch(*grid_args(cfgs[n], M, N, A, W, C, 0.01))
torch.cuda.synchronize()
print("done", names)
