"""Stage-1 configurations of split column reductions (launch.column_split) on a GPU: a mean
(or an instance norm: its statistics a Welford pair) over H, W of an NHWC tensor viewed
NCHW, every long column group split, for programs per SM x rows per program (XBLOCK) x
lanes per step (RBLOCK) x warps; kernel times (torch.profiler), Inductor's in the same run.

    python3 benchmarks/gpu_column_split_sweep.py [mean|instance_norm] [SHAPES]
        (the bundle on PYTHONPATH; SHAPES as 16x128x128x128,4x256x128x128: N x C x H x W)
"""
import sys
import os

os.environ.setdefault("LAMINA_COMPILE_IN_PROCESS", "1")
os.environ.setdefault("LAMINA_CACHE", "0")

import torch

import lamina.backend  # noqa: F401  (registers the backend)
from lamina.codegen.cuda import launch, triton_emit

DEV = "cuda"
SHAPES = [(16, 128, 128, 128), (4, 256, 128, 128), (32, 256, 64, 64), (8, 512, 32, 32)]
CONFIGS = [(32, 32, 4), (32, 64, 4), (32, 16, 4), (64, 32, 4), (64, 32, 8), (64, 64, 8), (128, 16, 8), (128, 32, 8)]


def mean_hw(x):
    return x.permute(0, 3, 1, 2).mean((2, 3))


def instance_norm(x):
    return torch.nn.functional.instance_norm(x.permute(0, 3, 1, 2))


def bench(fn, xs):
    """The kernels' own time per call (torch.profiler)."""
    from torch.profiler import ProfilerActivity, profile
    fn(*xs)
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(20):
            fn(*xs)
        torch.cuda.synchronize()
    return sum(e.device_time_total for e in prof.key_averages()) / 20 / 1e3


def split_with(per_sm, rblock, warps):
    def column_split(tiles, lanes, width=1):
        split = min(1024, max(1, per_sm * launch._sm_count() // max(tiles, 1)), lanes // 512)
        if split <= 1:
            return 1, 0, rblock, warps
        chunk = -(-lanes // split)
        chunk = -(-chunk // rblock) * rblock
        return -(-lanes // chunk), chunk, rblock, warps
    return column_split


def sweep(fn, shapes):
    triton_emit.COLUMN_MIN_PROGRAMS = 1 << 40
    for dt in (torch.float32, torch.bfloat16):
        for n, c, h, w in shapes:
            x = torch.randn(n, h, w, c, device=DEV, dtype=dt)
            ref = fn(x).float()
            torch._dynamo.reset()
            res = {"eager": bench(fn, (x,)), "inductor": bench(torch.compile(fn), (x,))}
            torch._dynamo.reset()
            res["lamina_default"] = None
            for per_sm in (4, 8, 16):
                for xb, rb, wp in CONFIGS:
                    triton_emit.COLUMN_SPLIT_XBLOCK = xb
                    launch.column_split = split_with(per_sm, rb, wp)
                    torch._dynamo.reset()
                    f = torch.compile(fn, backend="lamina", options={"strict": True})
                    ok = torch.allclose(f(x).float(), ref, rtol=2e-2, atol=2e-2)
                    res[f"{per_sm}/{xb}/{rb}/{wp}" + ("" if ok else " BAD")] = bench(f, (x,))
            best = sorted((v, k) for k, v in res.items() if "/" in k)[:6]
            gb = x.numel() * x.element_size() / 1e6
            print(f"{fn.__name__} {str(dt)[6:]:8s} {n}x{c}x{h}x{w}: eager {res['eager']:.4f} inductor {res['inductor']:.4f} "
                  f"({gb / res['inductor']:.0f} GB/s); best split: " + ", ".join(f"{k} {v:.4f}" for v, k in best), flush=True)
            print("   all: " + " ".join(f"{k}={v:.4f}" for k, v in res.items() if "/" in k), flush=True)


if __name__ == "__main__":
    print(torch.cuda.get_device_name(), flush=True)
    fn = {"mean": mean_hw, "instance_norm": instance_norm}[sys.argv[1] if len(sys.argv) > 1 else "mean"]
    shapes = [tuple(int(v) for v in s.split("x")) for s in sys.argv[2].split(",")] if len(sys.argv) > 2 else SHAPES
    sweep(fn, shapes)
