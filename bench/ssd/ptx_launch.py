"""What the PTX-launching GPU scripts (ssd_prefill_gpu.py, ssd_span_probe.py) share:
a kernel from `tilejit compile` output (NAME.ptx + NAME.json launch metadata)
as a CuPy function, its arguments from torch tensors and numbers, and the time
per launch of a CUDA graph of launches."""
import json
import statistics

import cupy as cp
import numpy as np
import torch


def load(folder, name):
    """(function, metadata) of folder/NAME.ptx with its dynamic shared memory set."""
    meta = json.loads((folder / f"{name}.json").read_text())
    fn = cp.RawModule(path=str(folder / f"{name}.ptx")).get_function(meta["entry"])
    if meta["shared_bytes"] > 48 * 1024:
        fn.max_dynamic_shared_size_bytes = meta["shared_bytes"]
    return fn, meta


def args_of(meta, vals):
    """The launch arguments in the metadata's parameter kinds (tensors by address)."""
    return tuple(np.uint64(a.data_ptr()) if p["kind"] == "ptr" else
                 np.int32(a) if p["kind"] == "i32" else np.float32(a)
                 for p, a in zip(meta["params"], vals))


def time_graph(launch, per=10, reps=25):
    """Median, min and max µs per launch: `per` launches in one CUDA graph,
    replayed `reps` times between events."""
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        launch(); torch.cuda.synchronize()
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g, stream=s):
            for _ in range(per):
                launch()
    ts = []
    for _ in range(reps):
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record(); g.replay(); e1.record(); torch.cuda.synchronize()
        ts.append(e0.elapsed_time(e1) * 1000 / per)
    return statistics.median(ts), min(ts), max(ts)
