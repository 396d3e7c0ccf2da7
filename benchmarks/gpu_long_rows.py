"""Reductions over long rows on a GPU: rows longer than a persistent program holds (looped
programs), few long rows (split across programs), rows read again to store per lane, rows
not 16-byte aligned, and symbolic sizes. Eager, Inductor and lamina on the same inputs, each
cell the kernels' own time per call in ms (torch.profiler, after lamina's background
compiles), then its share of the copy bandwidth measured in the same run (input bytes once
plus output bytes: what a kernel that reads each element once must move).

    python3 benchmarks/gpu_long_rows.py [--dtype bfloat16] [--only sum,softmax]   (the bundle on PYTHONPATH)
"""
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
os.environ.setdefault("LAMINA_COMPILE_IN_PROCESS", "1")
os.environ.setdefault("LAMINA_CACHE", "0")

import torch
import torch.nn.functional as F

import lamina.backend  # noqa: F401  (registers the backend)
from gpu_column_reductions import kernel_ms
from lamina.backend import wait_for_background_compiles

DEV = "cuda"


def _rms(x):
    return x * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + 1e-6).to(x.dtype)


def _cross_entropy(x):
    return F.cross_entropy(x, torch.arange(x.shape[0], device=x.device) % x.shape[1])


# (name, function, shape, dynamic)
CASES = [
    ("sum 512x100000", lambda x: x.sum(-1), (512, 100000), False),
    ("sum 64x1000000 (split)", lambda x: x.sum(-1), (64, 1000000), False),
    ("sum 1024x50257 (unaligned)", lambda x: x.sum(-1), (1024, 50257), False),
    ("var 1024x65536", lambda x: x.var(-1), (1024, 65536), False),
    ("var 1024x65573 (unaligned)", lambda x: x.var(-1), (1024, 65573), False),
    ("logsumexp 512x100000", lambda x: torch.logsumexp(x, -1), (512, 100000), False),
    ("layer_norm 256x65536 (split)", lambda x: F.layer_norm(x, (65536,)), (256, 65536), False),
    ("layer_norm 512x100000", lambda x: F.layer_norm(x, (100000,)), (512, 100000), False),
    ("RMS norm 512x100000", _rms, (512, 100000), False),
    ("softmax 256x65536 (split)", lambda x: torch.softmax(x, -1), (256, 65536), False),
    ("softmax 512x131072", lambda x: torch.softmax(x, -1), (512, 131072), False),
    ("log_softmax 1024x50257 (unaligned)", lambda x: torch.log_softmax(x, -1), (1024, 50257), False),
    ("cross_entropy 2048x50257", _cross_entropy, (2048, 50257), False),
    ("GroupNorm(8) 16x64x128x128", lambda x: F.group_norm(x, 8), (16, 64, 128, 128), False),
    ("BatchNorm2d training 32x64x112x112", lambda x: F.batch_norm(x, None, None, training=True),
     (32, 64, 112, 112), False),
    ("sum 512x100000, dynamic", lambda x: x.sum(-1), (512, 100000), True),
    ("layer_norm 256x65536, dynamic", lambda x: F.layer_norm(x, (65536,)), (256, 65536), True),
]


def main():
    dtype = getattr(torch, sys.argv[sys.argv.index("--dtype") + 1]) if "--dtype" in sys.argv else torch.float32
    only = sys.argv[sys.argv.index("--only") + 1].split(",") if "--only" in sys.argv else None
    src = torch.randn(16 * 1024 * 1024, device=DEV)
    copy_ms = kernel_ms(lambda: src.clone(), ())
    copy = src.numel() * 8 / copy_ms / 1e9   # TB/s (bytes read and written, per ms / 1e9)
    print(f"{torch.cuda.get_device_name()}, {str(dtype)[6:]}; copy of 64 MiB {copy_ms:.4f} ms, {copy:.2f} TB/s",
          flush=True)
    for name, fn, shape, dynamic in CASES:
        if only and not any(o in name for o in only):
            continue
        torch.manual_seed(0)
        x = torch.randn(*shape, device=DEV, dtype=dtype)
        row = {}
        with torch.no_grad():
            want = fn(x.double())
            row["eager"] = kernel_ms(fn, (x,))
            for backend in ("inductor", "lamina"):
                torch._dynamo.reset()
                f = torch.compile(fn, backend=backend, dynamic=dynamic,
                                  options={"strict": True} if backend == "lamina" else None)
                for _ in range(3):
                    out = f(x)
                wait_for_background_compiles()
                row[backend + "_err"] = (f(x).double() - want).abs().max().item()
                row[backend] = kernel_ms(f, (x,))
        tb = (x.numel() * x.element_size() + out.numel() * out.element_size()) / 1e9   # per ms -> TB/s
        cells = " ".join(f"{k} {row[k]:.4f} ({tb / row[k] / copy * 100:.0f}%)" for k in ("eager", "inductor", "lamina"))
        print(f"{name:38s} {cells}  lamina vs Inductor {row['inductor'] / row['lamina']:.2f}x, vs eager "
              f"{row['eager'] / row['lamina']:.2f}x  max |err| Inductor {row['inductor_err']:.1e} "
              f"lamina {row['lamina_err']:.1e}", flush=True)


if __name__ == "__main__":
    main()
