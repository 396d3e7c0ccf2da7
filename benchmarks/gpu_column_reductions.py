"""Reductions along a non-contiguous dim on a GPU (column rows: means, norms and softmaxes
over H, W of NHWC tensors, of convolution results) and in-graph transposes: eager, Inductor
and lamina on the same inputs, lamina as committed (`lamina`) and with every column group
of long rows split across programs (`split_all`). Each column
is "kernel time / do_bench" in ms: the kernels' own time per call (torch.profiler), then
`do_bench`'s median (host time included where it shows); GB/s of the largest input by the
best lamina kernel time. Compiles in this process (the variants patch module constants),
without lamina's compile cache.

    python3 benchmarks/gpu_column_reductions.py [OUT.json]   (the bundle on PYTHONPATH)
"""
import json
import os
import sys

os.environ.setdefault("LAMINA_COMPILE_IN_PROCESS", "1")
os.environ.setdefault("LAMINA_CACHE", "0")

import torch
import triton

import lamina.backend  # noqa: F401  (registers the backend)
from lamina.codegen.cuda import triton_emit

DEV = "cuda"
torch.backends.cudnn.benchmark = False


def nhwc_mean(shape):
    # an NHWC tensor viewed NCHW, mean over H, W (rows along C)
    def fn(x):
        return x.permute(0, 3, 1, 2).mean((2, 3))
    n, c, h, w = shape
    return fn, lambda dt: (torch.randn(n, h, w, c, device=DEV, dtype=dt),), n * c * h * w


def nhwc_instance_norm(shape):
    def fn(x):
        return torch.nn.functional.instance_norm(x.permute(0, 3, 1, 2))
    n, c, h, w = shape
    return fn, lambda dt: (torch.randn(n, h, w, c, device=DEV, dtype=dt),), n * c * h * w


def column_sum(shape):
    def fn(x):
        return x.sum(0)
    return fn, lambda dt: (torch.randn(*shape, device=DEV, dtype=dt),), shape[0] * shape[1]


def conv_gelu_mean(shape):
    n, c, h, w = shape
    conv = torch.nn.Conv2d(c, 2 * c, 3, padding=1).to(DEV)

    def fn(x):
        return torch.nn.functional.gelu(conv(x)).mean((2, 3))
    return fn, lambda dt: (conv.to(dt) and torch.randn(n, c, h, w, device=DEV, dtype=dt),), n * 2 * c * h * w


def convt_mul_mean(shape):
    # KernelBench level 2, 44: ConvTranspose2d, multiply, global mean twice
    n, c, h, w = shape
    convt = torch.nn.ConvTranspose2d(c, 128, 3, stride=2, padding=1, output_padding=1).to(DEV)

    def fn(x):
        y = convt(x) * 0.5
        return y.mean((2, 3), keepdim=True).mean((2, 3), keepdim=True)
    return fn, lambda dt: (convt.to(dt) and torch.randn(n, c, h, w, device=DEV, dtype=dt),), n * 128 * 4 * h * w


def nhwc_spatial_softmax(shape):
    def fn(x):
        return x.permute(0, 3, 1, 2).flatten(2).softmax(-1)
    n, c, h, w = shape
    return fn, lambda dt: (torch.randn(n, h, w, c, device=DEV, dtype=dt),), n * c * h * w


def nhwc_to_nchw(shape):
    def fn(x):
        return x.permute(0, 3, 1, 2) * 2 + 1
    n, c, h, w = shape
    return fn, lambda dt: (torch.randn(n, h, w, c, device=DEV, dtype=dt),), n * c * h * w


def transpose_add(shape):
    def fn(x, y):
        return x.t() + y
    return fn, lambda dt: (torch.randn(*shape, device=DEV, dtype=dt), torch.randn(*shape, device=DEV, dtype=dt)), \
        shape[0] * shape[1]


def conv_instance_norm(shape):
    n, c, h, w = shape
    conv = torch.nn.Conv2d(c, 2 * c, 3, padding=1).to(DEV)
    norm = torch.nn.InstanceNorm2d(2 * c)

    def fn(x):
        return norm(conv(x))
    return fn, lambda dt: (conv.to(dt) and torch.randn(n, c, h, w, device=DEV, dtype=dt),), n * 2 * c * h * w


CASES = [
    ("nhwc mean 16x128x128x128", nhwc_mean((16, 128, 128, 128))),
    ("nhwc mean 32x256x64x64", nhwc_mean((32, 256, 64, 64))),
    ("nhwc mean 4x256x128x128", nhwc_mean((4, 256, 128, 128))),
    ("nhwc mean 2x64x256x256", nhwc_mean((2, 64, 256, 256))),
    ("nhwc mean 64x512x16x16", nhwc_mean((64, 512, 16, 16))),
    ("nhwc instance norm 16x128x128x128", nhwc_instance_norm((16, 128, 128, 128))),
    ("nhwc instance norm 32x256x64x64", nhwc_instance_norm((32, 256, 64, 64))),
    ("nhwc spatial softmax 4x64x128x128", nhwc_spatial_softmax((4, 64, 128, 128))),
    ("nhwc -> nchw 16x128x128x128", nhwc_to_nchw((16, 128, 128, 128))),
    ("transpose add 4096x4096", transpose_add((4096, 4096))),
    ("sum dim 0 16384x4096", column_sum((16384, 4096))),
    ("conv3x3 gelu mean 16x64x128x128", conv_gelu_mean((16, 64, 128, 128))),
    ("conv3x3 instance norm 16x64x128x128", conv_instance_norm((16, 64, 128, 128))),
    ("convT mul mean 16x64x64x64", convt_mul_mean((16, 64, 64, 64))),
]

# "lamina": as committed; "split_all": every column group of long rows split across
# programs (triton_emit.COLUMN_MIN_PROGRAMS patched, at emit time), however many there are
VARIANTS = {
    "lamina": {},
    "split_all": {(triton_emit, "COLUMN_MIN_PROGRAMS"): 1 << 40},
}


def bench(fn, xs):
    return triton.testing.do_bench(lambda: fn(*xs), warmup=25, rep=100, return_mode="median")


def kernel_ms(fn, xs, calls=20, top=None):
    """The GPU kernels' own time per call (torch.profiler), not the host's; with `top`, also
    the costliest `top` kernels' names and times."""
    from torch.profiler import ProfilerActivity, profile
    fn(*xs)
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            fn(*xs)
        torch.cuda.synchronize()
    events = [e for e in prof.key_averages() if e.device_time_total > 0]
    total = sum(e.device_time_total for e in events) / calls / 1e3
    if top is None:
        return total
    costly = sorted(events, key=lambda e: -e.device_time_total)[:top]
    return total, "; ".join(f"{e.key[:48]} {e.device_time_total / calls / 1e3:.3f}" for e in costly)


def reference(fn, xs):
    """fp32 without TF32 (eager's convolutions use it by default): the errors below are
    against this."""
    flags = torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32
    torch.backends.cudnn.allow_tf32 = torch.backends.cuda.matmul.allow_tf32 = False
    try:
        return fn(*xs).float()
    finally:
        torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32 = flags


def max_err(got, ref):
    return (got.float() - ref).abs().max().item()


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else None
    rows = []
    print(torch.cuda.get_device_name(), flush=True)
    for dt in (torch.float32, torch.bfloat16):
        for name, (fn, make, numel) in CASES:
            torch.manual_seed(0)
            xs = make(dt)
            with torch.no_grad():
                ref = reference(fn, xs)
                r = {"case": name, "dtype": str(dt)[6:], "eager": kernel_ms(fn, xs), "eager_bench": bench(fn, xs),
                     "eager_err": max_err(fn(*xs), ref)}
                torch._dynamo.reset()
                f = torch.compile(fn, backend="inductor")
                r["inductor_err"] = max_err(f(*xs), ref)
                r["inductor"], r["inductor_bench"] = kernel_ms(f, xs), bench(f, xs)
                for vname, patch in VARIANTS.items():
                    saved = {k: getattr(*k) for k in patch}
                    for (mod, attr), val in patch.items():
                        setattr(mod, attr, val)
                    try:
                        torch._dynamo.reset()
                        f = torch.compile(fn, backend="lamina", options={"strict": True})
                        r[vname + "_err"] = err = max_err(f(*xs), ref)
                        tol = 3e-2 if dt == torch.bfloat16 else 1e-4
                        r[vname + "_ok"] = err <= max(4 * r["eager_err"], 4 * r["inductor_err"], tol)
                        r[vname], r[vname + "_bench"] = kernel_ms(f, xs), bench(f, xs)
                        if vname == "lamina":
                            r["lamina_kernels"] = kernel_ms(f, xs, top=4)[1]
                    except Exception as e:  # noqa: BLE001  (a row, not the run)
                        r[vname] = None
                        r[vname + "_failed"] = f"{type(e).__name__}: {str(e)[:200]}"
                    finally:
                        for (mod, attr), val in saved.items():
                            setattr(mod, attr, val)
            gbs = numel * xs[0].element_size() / 1e6
            cols = " ".join(f"{k}={r[k]:.3f}/{r[k + '_bench']:.3f}" + ("" if r.get(k + "_ok", True) else "(BAD)")
                            for k in ("eager", "inductor", *VARIANTS) if isinstance(r.get(k), float))
            errs = " ".join(f"{k}: {r[k]}" for k in r if k.endswith("_failed"))
            errs += " max errors: " + " ".join(f"{k[:-4]} {r[k]:.1e}" for k in r if k.endswith("_err"))
            best = min(v for k, v in r.items() if k in VARIANTS and isinstance(v, float)) if any(
                isinstance(r.get(k), float) for k in VARIANTS) else float("nan")
            print(f"{name:38s} {r['dtype']:8s} {cols}  best lamina {gbs / best:.0f} GB/s {errs}", flush=True)
            print(f"    lamina's kernels: {r.get('lamina_kernels')}", flush=True)
            rows.append(r)
    if out:
        with open(out, "w") as fh:
            json.dump(rows, fh, indent=1)


if __name__ == "__main__":
    main()
