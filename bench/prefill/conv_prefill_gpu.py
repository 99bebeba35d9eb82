#!/usr/bin/env python3
"""conv_prefill on the GPU: correctness against a plain torch f64 reference, then
timing per docs/design.md#measuring-method, with torch measured in the same run.

PTX + JSON come from `tilejit compile conv_prefill --arch sm_90a --set ... -o V.ptx
--meta V.json`, one pair per variant listed in DIR/variants.json (name -> its
constants, at least block_t and block_c), e.g.
  {"base": {"block_t": 64, "block_c": 1024}, "fast": {"block_t": 64, "block_c": 1024}}
for `tilejit compile conv_prefill --arch sm_90a -o DIR/base.ptx --meta DIR/base.json`
and the same with `--set fast_silu=1` for DIR/fast.*.

Checks (every variant):
  * L = 8192, one sequence continuing from its slot, full NemotronH geometry
    (zxbcdt [8192, 10304] bf16, xBC = columns [4096, 10240) read in place);
  * a varlen batch: sequences of 1, 2, 3 tokens, shorter than a chunk, exactly a
    chunk, a ragged tail, a padding sequence, fresh and continued ones, and 4
    spare chunks (sequence -1) after the real ones.
  Output vs bf16(silu(conv)) computed in f64: |got - want| <= 1e-5 + 2^-7 |want|
  (one bf16 ulp; the GPU's FMA and ex2.approx move the f32 value by ~1e-6).
  Counterfactual printed: the same band applied to a reference with the initial
  state dropped must report many elements outside. Pages: bit-exact (the state
  is raw inputs), untouched slots byte-identical; padding rows exactly 0.
Timing: `launches` back-to-back launches in one CUDA graph, each over its own
copy of zxbcdt and out (so nothing is served from the 50 MB L2), median / min /
max over `replays` replays, divided by the launch count. Bytes = xBC read +
out written (+ weights, bias, pages: < 0.1 MB). Compared in the same run with:
  * torch copy floor: out.copy_(xBC view) (same bytes read and written);
  * torch conv1d(groups=C) + silu path a torch user writes (cat old state,
    transpose to [C, L], conv1d, silu, transpose back to [L, C], state update).

Usage: python3 bench/prefill/conv_prefill_gpu.py DIR [--launches 20] [--replays 30]
"""
import argparse
import json
import math
import statistics
import sys
from pathlib import Path

import cupy as cp
import numpy as np
import torch
import torch.nn.functional as F

INNER, CHANNELS, HEADS = 4096, 6144, 64
STRIDE = INNER + CHANNELS + HEADS
dev = "cuda"
results = []


def load_variant(directory, name):
    meta = json.loads((directory / f"{name}.json").read_text())
    module = cp.RawModule(path=str(directory / f"{name}.ptx"))
    fn = module.get_function(meta["entry"])
    if meta["shared_bytes"] > 48 * 1024:
        fn.max_dynamic_shared_size_bytes = meta["shared_bytes"]
    return fn, meta


def metadata(lengths, slots, init, block_t, spare=0):
    """cu_seqlens, slots, init and the chunks of block_t tokens (as prefillMetadata),
    followed by `spare` spare chunks (sequence -1, no tokens) that must do nothing."""
    cu = [0]
    for n in lengths:
        assert n > 0
        cu.append(cu[-1] + n)
    seq, begin, end = [], [], []
    for s in range(len(lengths)):
        for b in range(cu[s], cu[s + 1], block_t):
            seq.append(s)
            begin.append(b)
            end.append(min(b + block_t, cu[s + 1]))
    seq += [-1] * spare
    begin += [0] * spare
    end += [0] * spare
    assert len(set(x for x in slots if x >= 0)) == len([x for x in slots if x >= 0])
    t = lambda v: torch.tensor(v, dtype=torch.int32, device=dev)
    return dict(cu=t(cu), slots=t(slots), init=t(init), seq=t(seq), begin=t(begin),
                end=t(end), chunks=len(seq), cu_list=cu)


PARAMS = ["zxbcdt", "weight", "bias", "cu_seqlens", "slots", "init", "chunk_seq",
          "chunk_begin", "chunk_end", "conv_state", "out", "num_slots"]


class Launcher:
    def __init__(self, fn, meta, consts):
        self.fn, self.meta, self.consts = fn, meta, consts
        names = [p["name"] for p in meta["params"]]
        assert names == PARAMS, f"kernel parameters {names}, this script passes {PARAMS}"
        self.kinds = [p["kind"] for p in meta["params"]]

    def args(self, zxbcdt, weight, bias, md, page, out):
        values = [zxbcdt, weight, bias, md["cu"], md["slots"], md["init"], md["seq"],
                  md["begin"], md["end"], page, out, page.shape[0]]
        assert len(values) == len(self.kinds), (len(values), self.kinds)
        conv = []
        for kind, v in zip(self.kinds, values):
            if kind == "ptr":
                assert v.is_contiguous() and v.data_ptr() % 16 == 0
                conv.append(np.uint64(v.data_ptr()))
            elif kind == "i32":
                conv.append(np.int32(v))
            else:
                raise ValueError(kind)
        return tuple(conv)

    def grid(self, md):
        return (math.ceil(CHANNELS / self.consts["block_c"]), md["chunks"], 1)

    def __call__(self, zxbcdt, weight, bias, md, page, out):
        self.fn(self.grid(md), (self.meta["threads"], 1, 1),
                self.args(zxbcdt, weight, bias, md, page, out),
                shared_mem=self.meta["shared_bytes"])


def reference(xbc, weight, bias, page, lengths, slots, init, cu):
    """f64 R3 per sequence: silu(conv) [T, C] (0 for padding) and the new page."""
    want = torch.zeros(xbc.shape[0], CHANNELS, dtype=torch.float64, device=dev)
    new_page = page.clone()
    w = weight.double().unsqueeze(1)  # [C, 1, 4]
    for s, n in enumerate(lengths):
        if slots[s] < 0:
            continue
        old = page[slots[s]].double().t() if init[s] else torch.zeros(
            3, CHANNELS, dtype=torch.float64, device=dev)  # [3, C], oldest first
        u = torch.cat([old, xbc[cu[s]:cu[s + 1]].double()], 0)  # [3 + n, C]
        pre = F.conv1d(u.t().unsqueeze(0), w, bias.double(), groups=CHANNELS)[0].t()
        want[cu[s]:cu[s + 1]] = F.silu(pre)
        src = torch.cat([page[slots[s]].t() if init[s] else torch.zeros(
            3, CHANNELS, dtype=torch.bfloat16, device=dev), xbc[cu[s]:cu[s + 1]]], 0)
        new_page[slots[s]] = src[-3:].t()
    return want, new_page


def record(name, ok, detail):
    results.append((name, ok))
    print(f"{'PASS' if ok else 'FAIL'} {name}: {detail}", flush=True)


def check_batch(label, launch, lengths, slots, init, num_slots, seed, spare=0):
    torch.manual_seed(seed)
    T = sum(lengths)
    zxbcdt = torch.randn(T, STRIDE, device=dev).bfloat16()
    xbc = zxbcdt[:, INNER:INNER + CHANNELS]  # a strided view, as the kernel reads it
    weight = (torch.rand(CHANNELS, 4, device=dev) * 2 - 1).bfloat16()
    bias = (torch.rand(CHANNELS, device=dev) - 0.5).bfloat16()
    page = torch.randn(num_slots, CHANNELS, 3, device=dev).bfloat16()
    before = page.clone()
    out = torch.full((T, CHANNELS), float("nan"), dtype=torch.bfloat16, device=dev)
    md = metadata(lengths, slots, init, launch.consts["block_t"], spare)
    launch(zxbcdt, weight, bias, md, page, out)
    torch.cuda.synchronize()
    cu = md["cu_list"]
    want, want_page = reference(xbc, weight, bias, before, lengths, slots, init, cu)
    live = torch.zeros(T, dtype=torch.bool, device=dev)
    for s in range(len(lengths)):
        live[cu[s]:cu[s + 1]] = slots[s] >= 0
    wr = want.bfloat16().double()
    got = out.double()
    band = 1e-5 + 2.0 ** -7 * wr.abs()
    err = (got - wr).abs()
    n_live = int(live.sum()) * CHANNELS
    bad = int((~(err[live] <= band[live])).sum())
    worst = float((err[live] / band[live]).max()) if n_live else 0.0
    pad_rows = out[~live]
    pad_nonzero = int((pad_rows.view(torch.int16) != 0).sum())
    examined = n_live + pad_rows.numel()
    page_bad = int((page.view(torch.int16) != want_page.view(torch.int16)).sum())
    untouched = [i for i in range(num_slots) if i not in slots]
    untouched_bad = sum(int((page[i].view(torch.int16) != before[i].view(torch.int16)).sum())
                        for i in untouched)
    # Counterfactual: the initial states dropped.
    cf, _ = reference(xbc, weight, bias, before, lengths, slots, [0] * len(lengths), cu)
    cf_outside = int((~((cf.bfloat16().double() - wr).abs() <= band))[live].sum())
    ok = (bad == 0 and pad_nonzero == 0 and page_bad == 0 and untouched_bad == 0
          and examined == T * CHANNELS)
    record(label, ok,
           f"T={T}, {n_live} live elements, {bad} outside 1e-5 + 2^-7|want| "
           f"(max err/band {worst:.3g}); {pad_rows.numel()} padding elements, "
           f"{pad_nonzero} nonzero; page {page.numel()} elements, {page_bad} differ; "
           f"untouched slots {untouched}: {untouched_bad} elements differ; "
           f"counterfactual (initial state dropped): {cf_outside} outside")


def graph_time_us(launch_one, launches, replays):
    """Per-launch µs of `launches` back-to-back launches captured in one CUDA
    graph, median/min/max over `replays` replays. Where capture fails, the same
    launches issued on a stream between two events (labelled)."""
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        for i in range(launches):  # warm-up outside the capture
            launch_one(i)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    try:
        with torch.cuda.graph(graph, stream=stream):
            for i in range(launches):
                launch_one(i)
        run = graph.replay
    except Exception as e:  # noqa: BLE001 - report and time without the graph
        print(f"  (graph capture failed: {str(e).splitlines()[0]}; timing a stream of "
              f"{launches} launches between events instead)", flush=True)
        torch.cuda.synchronize()

        def run():
            with torch.cuda.stream(stream):
                for i in range(launches):
                    launch_one(i)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    run()
    torch.cuda.synchronize()
    times = []
    for _ in range(replays):
        start.record(stream)
        with torch.cuda.stream(stream):
            run()
        end.record(stream)
        end.synchronize()
        times.append(start.elapsed_time(end) * 1e3 / launches)
    return statistics.median(times), min(times), max(times)


def report(label, t, nbytes):
    med, lo, hi = t
    print(f"PERF {label}: median {med:.2f} us (min {lo:.2f}, max {hi:.2f}) per launch; "
          f"{nbytes / 1e6:.1f} MB moved -> {nbytes / med / 1e6:.2f} TB/s", flush=True)
    return med


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("dir")
    parser.add_argument("--launches", type=int, default=20)
    parser.add_argument("--replays", type=int, default=30)
    parser.add_argument("--check-only", action="store_true", help="no timing")
    parser.add_argument("--varlen-only", action="store_true", help="skip the L=8192 check")
    parser.add_argument("--variant", action="append", help="only these variants")
    args = parser.parse_args()
    directory = Path(args.dir)
    variants = json.loads((directory / "variants.json").read_text())
    if args.variant:
        variants = {k: v for k, v in variants.items() if k in args.variant}
    print(f"torch {torch.__version__}, cupy {cp.__version__} on {torch.cuda.get_device_name()}; "
          f"{args.launches} launches per graph over distinct buffers, median of "
          f"{args.replays} replays", flush=True)
    launchers = {}
    for name, consts in variants.items():
        fn, meta = load_variant(directory, name)
        launchers[name] = Launcher(fn, meta, consts)
        print(f"variant {name}: {consts}, {meta['threads']} threads, "
              f"{meta['shared_bytes']} B shared", flush=True)

    # Correctness: every variant, L = 8192 and a varlen batch.
    varlen = ([1, 2, 3, 100, 5, 4000, 64, 65, 129, 7],
              [3, 0, 7, 1, -1, 2, 9, 4, 5, 8],
              [1, 0, 1, 1, 0, 1, 0, 1, 1, 1])
    for name, launch in launchers.items():
        if not args.varlen_only:
            check_batch(f"{name} L=8192", launch, [8192], [1], [1], 3, 1)
        check_batch(f"{name} varlen (+4 spare chunks)", launch, *varlen, 11, 2, spare=4)

    if args.check_only:
        return finish()

    # Timing at L = 8192, one sequence continuing from slot 0.
    L = 8192
    copies = args.launches
    torch.manual_seed(3)
    zs = [torch.randn(L, STRIDE, device=dev).bfloat16() for _ in range(copies)]
    outs = [torch.empty(L, CHANNELS, dtype=torch.bfloat16, device=dev) for _ in range(copies)]
    weight = (torch.rand(CHANNELS, 4, device=dev) * 2 - 1).bfloat16()
    bias = (torch.rand(CHANNELS, device=dev) - 0.5).bfloat16()
    page = torch.randn(2, CHANNELS, 3, device=dev).bfloat16()
    nbytes = 2 * (L * CHANNELS * 2)  # xBC read + out written
    print(f"bytes counted: xBC {L * CHANNELS * 2 / 1e6:.1f} MB read + out "
          f"{L * CHANNELS * 2 / 1e6:.1f} MB written (weights/bias/page < 0.1 MB); "
          f"{copies} copies of zxbcdt ({copies * L * STRIDE * 2 / 1e9:.1f} GB)", flush=True)
    best = None
    for name, launch in launchers.items():
        md = metadata([L], [0], [1], launch.consts["block_t"])
        grid = launch.grid(md)
        block = (launch.meta["threads"], 1, 1)
        argsets = [launch.args(zs[i], weight, bias, md, page, outs[i]) for i in range(copies)]

        def one(i, launch=launch, grid=grid, block=block, argsets=argsets):
            with cp.cuda.ExternalStream(torch.cuda.current_stream().cuda_stream):
                launch.fn(grid, block, argsets[i], shared_mem=launch.meta["shared_bytes"])

        med = report(f"conv_prefill {name} grid={grid[:2]}",
                     graph_time_us(one, copies, args.replays), nbytes)
        if best is None or med < best[1]:
            best = (name, med)

    floor = report("torch copy floor out.copy_(xBC view)",
                   graph_time_us(lambda i: outs[i].copy_(zs[i][:, INNER:INNER + CHANNELS]),
                                 copies, args.replays), nbytes)
    w = weight.unsqueeze(1)

    def torch_conv(i):
        x = zs[i][:, INNER:INNER + CHANNELS]
        u = torch.cat([page[0].t(), x], 0).t().unsqueeze(0)  # [1, C, 3 + L]
        y = F.silu(F.conv1d(u, w, bias, groups=CHANNELS))   # [1, C, L]
        outs[i].copy_(y[0].t())
        page[1].copy_(u[0, :, -3:])

    ref = report("torch cat + conv1d(groups=C) + silu + transpose back + state",
                 graph_time_us(torch_conv, copies, args.replays), nbytes)
    print(f"PERF best variant {best[0]}: {best[1]:.2f} us = {best[1] / floor:.2f}x the copy "
          f"floor, {ref / best[1]:.2f}x faster than the torch conv1d path; target <= 60 us: "
          f"{'MET' if best[1] <= 60 else 'MISSED'}", flush=True)
    finish()


def finish():
    failed = [r for r in results if not r[1]]
    print(f"{len(results) - len(failed)} passed, {len(failed)} failed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
