"""Norms and softmaxes on a GPU where lamina's row programs had gaps: group norms over
[N, C, H, W] (statistics a group, read per element) and rows of an odd length (not 16-byte
aligned: one-element accesses). Eager, Inductor and lamina on the same inputs, each cell the
kernels' own time per call in ms (torch.profiler, after lamina's background compiles), then
its share of the copy bandwidth measured in the same run (input + output bytes).

    python3 benchmarks/gpu_row_norms.py [--dtype bfloat16] [--cases group,odd]   (the bundle on PYTHONPATH)
"""
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
os.environ.setdefault("LAMINA_COMPILE_IN_PROCESS", "1")
os.environ.setdefault("LAMINA_CACHE", "0")

import torch

import lamina.backend  # noqa: F401  (registers the backend)
from gpu_column_reductions import kernel_ms
from lamina.backend import wait_for_background_compiles
from lamina.testing.models import RMSNorm

DEV = "cuda"


def _group_norms():
    out = []
    for n, c, h, w, g in [(16, 256, 64, 64, 32), (16, 64, 128, 128, 8), (32, 128, 32, 32, 32), (8, 512, 32, 32, 32),
                          (128, 64, 16, 16, 4), (16, 320, 64, 64, 32), (2, 64, 256, 256, 16)]:
        out.append((f"GroupNorm({g},{c}) {n}x{c}x{h}x{w}", lambda g=g, c=c: torch.nn.GroupNorm(g, c), (n, c, h, w)))
    out.append(("GroupNorm(32,256)+SiLU 16x256x64x64",
                lambda: torch.nn.Sequential(torch.nn.GroupNorm(32, 256), torch.nn.SiLU()), (16, 256, 64, 64)))
    out.append(("Conv3x3+GroupNorm(8,64) 16x32x128x128",
                lambda: torch.nn.Sequential(torch.nn.Conv2d(32, 64, 3, padding=1), torch.nn.GroupNorm(8, 64)),
                (16, 32, 128, 128)))
    return out


def _odd_rows():
    out = []
    for rows, lanes in [(3001, 5001), (4001, 3001), (8001, 999), (2001, 8191), (1001, 12001), (5001, 3002)]:
        out.append((f"LayerNorm {rows}x{lanes}", lambda n=lanes: torch.nn.LayerNorm(n), (rows, lanes)))
        out.append((f"RMSNorm {rows}x{lanes}", lambda n=lanes: RMSNorm(n), (rows, lanes)))
        out.append((f"softmax {rows}x{lanes}", lambda: torch.nn.Softmax(-1), (rows, lanes)))
    return out


CASES = {"group": _group_norms, "odd": _odd_rows}


def main():
    dtype = getattr(torch, sys.argv[sys.argv.index("--dtype") + 1]) if "--dtype" in sys.argv else torch.float32
    kinds = sys.argv[sys.argv.index("--cases") + 1].split(",") if "--cases" in sys.argv else list(CASES)
    src = torch.randn(16 * 1024 * 1024, device=DEV)
    copy_ms = kernel_ms(lambda: src.clone(), ())
    copy = src.numel() * 8 / copy_ms / 1e9   # TB/s
    print(f"{torch.cuda.get_device_name()}, {str(dtype)[6:]}; copy of 64 MiB {copy_ms:.4f} ms, {copy:.2f} TB/s", flush=True)
    for kind in kinds:
        for name, make, shape in CASES[kind]():
            torch.manual_seed(0)
            fn = make().to(DEV, dtype)
            x = torch.randn(*shape, device=DEV, dtype=dtype)
            row = {}
            with torch.no_grad():
                want = fn(x).float()
                row["eager"] = kernel_ms(fn, (x,))
                for backend in ("inductor", "lamina"):
                    torch._dynamo.reset()
                    f = torch.compile(fn, backend=backend, options={"strict": True} if backend == "lamina" else None)
                    for _ in range(3):
                        f(x)
                    wait_for_background_compiles()
                    row[backend + "_err"] = (f(x).float() - want).abs().max().item()
                    row[backend] = kernel_ms(f, (x,))
            tb = x.numel() * x.element_size() * 2 / 1e9
            cells = " ".join(f"{k} {row[k]:.4f} ({tb / row[k] / copy * 100:.0f}%)" for k in ("eager", "inductor", "lamina"))
            print(f"{name:40s} {cells}  lamina vs Inductor {row['inductor'] / row['lamina']:.2f}x"
                  f"  max |err| Inductor {row['inductor_err']:.1e} lamina {row['lamina_err']:.1e}", flush=True)


if __name__ == "__main__":
    main()
