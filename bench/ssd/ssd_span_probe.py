#!/usr/bin/env python3
"""What a chunk-parallel SSD schedule would buy, measured before building it: the
one-program-per-(p block, head) ssd_prefill walks every chunk of the stream, so at
T = 8192 its 128 programs each run 256 dependent chunk steps. The same number of
chunk steps split over 16x more programs is what a schedule of spans (each span a
range of chunks starting from a passed state) runs. This times ssd_prefill compiled
for 16x the heads (H = 1024, G = 128) on T = 512 tokens (16 chunks of 32): the
same chunk steps as H = 64 on T = 8192, over 2048 programs instead of 128.

Usage: ssd_span_probe.py DIR   (DIR/variants.txt: "NAME CHUNK BLOCK_P" per line,
DIR/NAME.ptx + .json from `tilejit compile ssd_prefill --set heads=1024 --set
groups=128 --set dt_stride=1024 --set dt_col=0 ...`; names starting with r_ are
compiled at the real H = 64 geometry and run on T = 8192 and T = 512.)"""
import sys
from pathlib import Path
import cupy as cp, torch
from ptx_launch import args_of, load, time_graph

DIR = Path(sys.argv[1])
dev = "cuda"
P, N = 64, 128
torch.manual_seed(0)


def setup(name, H, G, T, q, bp):
    fn, meta = load(DIR, name)
    Cd = H * P + 2 * G * N
    xbc = (torch.rand(T, Cd, device=dev) * 2 - 1).bfloat16()
    dt = (torch.rand(T, H, device=dev) * 3 - 4).bfloat16()
    a_log = torch.rand(H, device=dev) * 2.5 - 2
    dt_bias = torch.rand(H, device=dev) - 1
    d = torch.rand(H, device=dev) * 2 - 1
    i32 = lambda v: torch.tensor(v, dtype=torch.int32, device=dev)
    beg = list(range(0, T, q))
    cu, slots, init = i32([0, T]), i32([0]), i32([0])
    seq, cb, ce = i32([0] * len(beg)), i32(beg), i32([min(b + q, T) for b in beg])
    page = torch.zeros(1, H, P, N, device=dev)
    y = torch.empty(T, H * P, dtype=torch.bfloat16, device=dev)
    vals = (xbc, dt, a_log, dt_bias, d, cu, slots, init, seq, cb, ce, page, y, len(beg), 0.0,
            float("inf"))
    args = args_of(meta, vals)
    keep = (xbc, dt, a_log, dt_bias, d, cu, slots, init, seq, cb, ce, page, y)

    def launch():
        with cp.cuda.ExternalStream(torch.cuda.current_stream().cuda_stream):
            fn((P // bp, H, 1), (meta["threads"], 1, 1), args, shared_mem=meta["shared_bytes"])
    return launch, keep, meta


for line in (DIR / "variants.txt").read_text().splitlines():
    if not line.strip():
        continue
    name, q, bp = line.split()[:3]
    q, bp = int(q), int(bp)
    shapes = [(64, 8, 8192), (64, 8, 512)] if name.startswith("r_") else [(1024, 128, 512)]
    for H, G, T in shapes:
        launch, keep, meta = setup(name, H, G, T, q, bp)
        med, lo, hi = time_graph(launch)
        steps = (P // bp) * H * (T // q)
        print(f"{name} H={H} T={T}: {(P // bp) * H} programs x {T // q} chunks, "
              f"{meta['threads']} threads, {meta['shared_bytes']} B shared: median {med:.1f} us "
              f"(min {lo:.1f}, max {hi:.1f}), n=25x10; {med * 1000 / steps:.1f} ns per chunk step",
              flush=True)
        del keep
