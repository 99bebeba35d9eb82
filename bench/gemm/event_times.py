"""CUDA-event times of a launch: the GEMM benches' one timer."""
import torch


def event_times(f, reps):
    """f(i) 5 times to warm up, then `reps` times, each between two CUDA events
    (f(i) picks its operands by i, so copies rotate); µs per call."""
    for i in range(5):
        f(i)
    ts = []
    for i in range(reps):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        f(i)
        e.record()
        e.synchronize()
        ts.append(s.elapsed_time(e) * 1e3)
    return ts
