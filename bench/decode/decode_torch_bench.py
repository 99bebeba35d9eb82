"""What a user would pick instead of tilejit's decode projections, timed the way
`tilejit run` times them (docs/design.md#measuring-method): torch._scaled_mm plus
its static activation quant (FP8 layers) and torch.matmul (bf16 layers) at the NemotronH
in_proj / out_proj shapes, `launches` launches back to back in one CUDA graph,
each over its own weight copy (HBM, not L2), median of `replays` replays.

Usage (GPU host): python3 bench/decode/decode_torch_bench.py [--rows 1]
"""
import argparse
import statistics

import torch

SHAPES = {"in_proj": (10304, 2688), "out_proj": (2688, 4096)}


def graph_time_us(fn_per_copy, launches, replays):
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        for i in range(launches):  # warm-up outside the capture (cuBLAS workspaces)
            fn_per_copy(i)
        torch.cuda.synchronize()
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, stream=stream):
            for i in range(launches):
                fn_per_copy(i)
    graph.replay()
    torch.cuda.synchronize()
    times = []
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    for _ in range(replays):
        start.record()
        graph.replay()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1e3 / launches)
    return statistics.median(times), min(times), max(times)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=1)
    parser.add_argument("--launches", type=int, default=20)
    parser.add_argument("--replays", type=int, default=30)
    args = parser.parse_args()
    torch.manual_seed(0)
    dev = torch.device("cuda")
    print(f"torch {torch.__version__} on {torch.cuda.get_device_name()}, rows={args.rows}, "
          f"{args.launches} launches per graph over distinct weights, median of {args.replays}")
    for name, (n, k) in SHAPES.items():
        x = torch.randn(args.rows, k, device=dev).to(torch.bfloat16)
        s_x = torch.tensor(4.0 / 448, device=dev)
        s_w = torch.tensor(0.02, device=dev)
        weights = [torch.randn(n, k, device=dev).clamp(-448, 448).to(torch.float8_e4m3fn)
                   for _ in range(args.launches)]
        outs = [None] * args.launches

        def fp8(i, pad=False):
            a = (x.float() / s_x).clamp(-448, 448).to(torch.float8_e4m3fn)
            if pad:  # cuBLASLt wants rows in multiples of 16
                a = torch.nn.functional.pad(a.float(), (0, 0, 0, 16 - a.shape[0] % 16)).to(
                    torch.float8_e4m3fn)
            outs[i] = torch._scaled_mm(a, weights[i].t(), scale_a=s_x, scale_b=s_w,
                                       out_dtype=torch.bfloat16)

        pad = False
        try:
            fp8(0)
        except RuntimeError as e:
            print(f"  _scaled_mm refuses {args.rows} rows ({str(e).splitlines()[0]}); padding to 16")
            pad = True
        med, lo, hi = graph_time_us(lambda i: fp8(i, pad), args.launches, args.replays)
        print(f"{name:9s} fp8  quant+_scaled_mm{' (padded)' if pad else ''}: median {med:.2f} us "
              f"(min {lo:.2f}, max {hi:.2f}); weight {n * k / 1e6:.2f} MB")
        del weights
        wb = [torch.randn(n, k, device=dev).to(torch.bfloat16) for _ in range(args.launches)]
        med, lo, hi = graph_time_us(lambda i: torch.matmul(x, wb[i].t()), args.launches,
                                    args.replays)
        print(f"{name:9s} bf16 torch.matmul: median {med:.2f} us (min {lo:.2f}, max {hi:.2f}); "
              f"weight {2 * n * k / 1e6:.2f} MB")
        del wb


if __name__ == "__main__":
    main()
