"""The cuda target's two kernel generators on a GPU (CUDA tensors; needs the MLIR bundle on
PYTHONPATH as benchmarks/gpu.sh sets it up):

    python3 benchmarks/gpu_codegen_check.py        # OUT=<dir> for the JSON (default /tmp)

1. numerics of gpu_codegen="nvvm" on edge cases (dtypes, strided / expanded / misaligned
   inputs, size-1 dims, nan/inf, row reductions): the error of lamina and of eager against
   an fp64 reference, per output; OK when lamina's is within 4x eager's (+1e-6) and the
   non-finite values agree;
2. GB/s of a few memory-bound graphs: eager, lamina with Triton, lamina with NVVM and
   Inductor, CUDA events around back-to-back calls (median), with a copy's GB/s.
"""
import json
import os
import warnings

import torch

import lamina.backend as lb
out = os.environ.get("OUT", "/tmp")
dev = "cuda"
warnings.simplefilter("ignore")
F = torch.nn.functional
def mk(*shape, dtype=torch.float32):
    return torch.randn(*shape, device=dev).to(dtype)
cases = {
 "bias_relu": (lambda x, b: torch.relu(x + b) * 2, [mk(64, 100), mk(100)]),
 "flat1d": (lambda x: torch.sigmoid(x) * x, [mk(1 << 20)]),
 "gelu": (lambda x: F.gelu(x), [mk(4096, 1024)]),
 "gelu_tanh_bf16": (lambda x: F.gelu(x, approximate="tanh"), [mk(512, 768, dtype=torch.bfloat16)]),
 "fp16_silu": (lambda x: F.silu(x) + 1, [mk(333, 77, dtype=torch.float16)]),
 "f64": (lambda x: torch.exp(x) * torch.sin(x), [mk(1000, dtype=torch.float64)]),
 "sin_cos": (lambda x: torch.sin(x) ** 2 + torch.cos(x), [mk(64, 1024)]),
 "sin_cos_large": (lambda x: torch.sin(x * 1e5) - torch.cos(x * 3e6), [mk(4096)]),
 "sin_cos_special": (lambda x: torch.sin(x) + torch.cos(x), [torch.tensor([0.0, -0.0, float("inf"), -float("inf"), float("nan"), 1e30, -1e-30, 3.14159265], device=dev)]),
 "4d": (lambda x, y: x * y + 1, [mk(2, 3, 5, 7), mk(1, 3, 1, 7)]),
 "5d": (lambda x: x * 2, [mk(2, 3, 4, 5, 6)]),
 "transpose": (lambda x: x.t().contiguous() + 1, [mk(300, 200)]),
 "noncontig_in": (lambda x: x * 3 + 1, [mk(200, 300).t()]),
 "expanded_in": (lambda x, y: x + y, [mk(1, 1).expand(6, 5000), mk(6, 5000)]),
 "offset_in": (lambda x: torch.tanh(x) , [mk(1000)[7:507]]),
 "int": (lambda x, y: (x * y) % 7, [torch.randint(0, 100, (1000,), device=dev), torch.randint(1, 100, (1000,), device=dev)]),
 "uint8": (lambda x: (x >> 1) ^ 3, [torch.randint(0, 255, (4097,), device=dev, dtype=torch.uint8)]),
 "where": (lambda x: torch.where(x > 0, x, torch.exp(x)), [mk(33, 65)]),
 "cmp_bool": (lambda x: x > 0.5, [mk(77, 3)]),
 "two_out": (lambda x: (x + 1, x * 2), [mk(128, 128)]),
 "size1": (lambda x: x * 2 + 1, [mk(1, 1, 5)]),
 "nan_inf": (lambda x: torch.nan_to_num(x * 1e38 * 10) + torch.isnan(x), [torch.tensor([float("nan"), float("inf"), -float("inf"), 1.0, -2.0], device=dev)]),
 "softmax": (lambda x: torch.softmax(x, -1), [mk(64, 128)]),
 "softmax_big": (lambda x: torch.softmax(x * 3, -1), [mk(512, 4096)]),
 "softmax_bf16": (lambda x: torch.softmax(x, -1), [mk(64, 1024, dtype=torch.bfloat16)]),
 # long rows: segmented ([S, T, V] per row, gpu_row_segments.py)
 "softmax_long_bf16": (lambda x: torch.softmax(x, -1), [mk(32, 8192, dtype=torch.bfloat16)]),
 "layernorm_long": (lambda x, w, b: F.layer_norm(x, (4096,), w, b), [mk(2, 32, 4096) * 5 + 3, mk(4096), mk(4096)]),
 "rmsnorm_3000": (lambda x, w: x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w, [mk(16, 3000), mk(3000)]),
 "logsoftmax_2048_inf": (lambda x: torch.log_softmax(x.masked_fill(x > 2.5, float("-inf")), -1), [mk(24, 2048)]),
 "var_long": (lambda x: x.var(-1, keepdim=True), [mk(8, 16384) + 100]),
 "softmax_3d_long": (lambda x: torch.softmax(x, -1), [mk(2, 4, 4096)]),
 "softmax_f64_long": (lambda x: torch.softmax(x, -1), [mk(8, 4096, dtype=torch.float64)]),
 "softmax_f16_long": (lambda x: torch.softmax(x, -1), [mk(8, 4096, dtype=torch.float16)]),
 "rowsum_i64_long": (lambda x: x.sum(-1), [torch.randint(-9, 9, (8, 8192), device=dev)]),
 "softmax_transposed": (lambda x: torch.softmax(x.t(), -1), [mk(4096, 8)]),
 "rmsnorm_bf16_8k": (lambda x, w: x * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + 1e-6).to(x.dtype) * w,
                     [mk(4, 8192, dtype=torch.bfloat16), mk(8192, dtype=torch.bfloat16)]),
 "layernorm": (lambda x, w, b: F.layer_norm(x, (768,), w, b), [mk(8, 64, 768), mk(768), mk(768)]),
 "rowsum": (lambda x: x.sum(-1), [mk(64, 1000)]),
 "rowsum_prime": (lambda x: x.sum(-1), [mk(33, 1009)]),
 "rmsnorm": (lambda x, w: x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w, [mk(4, 33, 768), mk(768)]),
 "logsoftmax": (lambda x: torch.log_softmax(x, -1), [mk(8, 16, 300)]),
 "var": (lambda x: x.var(-1), [mk(50, 77)]),
 "amax": (lambda x: x.amax(-1) + x.amin(-1), [mk(40, 500)]),
 "mean_keepdim_nan": (lambda x: x.mean(-1, keepdim=True), [torch.tensor([[1.0, float("nan"), 2.0], [float("inf"), 1.0, 2.0]], device=dev)]),
 "large_mag": (lambda x: torch.softmax(x * 1e4, -1), [mk(16, 256)]),
 "mlp": (lambda x, w, b: F.gelu(x @ w + b), [mk(256, 512), mk(512, 1024), mk(1024)]),
}
rows = []
for name, (fn, args) in cases.items():
    torch._dynamo.reset()
    n = len(lb.reports())
    try:
        c = torch.compile(fn, backend="lamina", options={"gpu_codegen": "nvvm", "strict": True})
        got = c(*args)
        exp = fn(*args)
        ref = fn(*[a.double() if a.is_floating_point() else a for a in args])
        got = got if isinstance(got, tuple) else (got,)
        exp = exp if isinstance(exp, tuple) else (exp,)
        ref = ref if isinstance(ref, tuple) else (ref,)
        def err(a, r):
            a, r = a.double(), r.double()
            fin = torch.isfinite(r)
            same_nonfinite = bool(((a == r) | (a.isnan() & r.isnan()) | fin).all())
            return (a[fin] - r[fin]).abs().max().item() if fin.any() else 0.0, same_nonfinite
        errs = [(err(g, r), err(e, r)) for g, e, r in zip(got, exp, ref)]
        ok = all(g.dtype == e.dtype and g.shape == e.shape for g, e in zip(got, exp)) and all(
            gn and ge <= 4 * ee + 1e-6 for (ge, gn), (ee, _) in errs)
        r = lb.reports()[n:]
        cg = {k.split("_kernel_")[-1]: v for rep in r for k, v in rep.get("gpu_codegen", {}).items()}
        rows.append((name, ok, cg))
        print(f"{name:16s} {'OK' if ok else 'MISMATCH'} {cg} err lamina/eager vs fp64: "
              + ", ".join(f"{ge:.2e}/{ee:.2e}" for (ge, _), (ee, _) in errs), flush=True)
    except Exception as e:
        rows.append((name, False, repr(e)[:300]))
        print(f"{name:16s} ERROR {type(e).__name__}: {str(e)[:400]}", flush=True)

# bandwidth
def bench(f, args, reps=50):
    for _ in range(3): f(*args)
    torch.cuda.synchronize()
    ts = []
    for _ in range(reps):
        s, e = torch.cuda.Event(True), torch.cuda.Event(True)
        s.record(); f(*args); e.record(); torch.cuda.synchronize()
        ts.append(s.elapsed_time(e))
    ts.sort(); return ts[len(ts) // 2]
bw = []
for label, fn, args in [
    ("add_relu 16M f32", lambda x, y: torch.relu(x + y), [mk(1 << 24), mk(1 << 24)]),
    ("bias_gelu 4096x4096", lambda x, b: F.gelu(x + b), [mk(4096, 4096), mk(4096)]),
    ("bf16 silu*y 8192x2048", lambda x, y: F.silu(x) * y, [mk(8192, 2048, dtype=torch.bfloat16), mk(8192, 2048, dtype=torch.bfloat16)]),
    ("small 1000", lambda x: x * 2 + 1, [mk(1000)]),
    ("softmax 8192x1024", lambda x: torch.softmax(x, -1), [mk(8192, 1024)]),
    ("layernorm 8192x1024", lambda x, w, b: F.layer_norm(x, (1024,), w, b), [mk(8192, 1024), mk(1024), mk(1024)]),
    ("softmax 4096x4096 bf16", lambda x: torch.softmax(x, -1), [mk(4096, 4096, dtype=torch.bfloat16)]),
    ("softmax 4096x4096", lambda x: torch.softmax(x, -1), [mk(4096, 4096)]),
    ("layernorm 4096x4096", lambda x, w, b: F.layer_norm(x, (4096,), w, b), [mk(4096, 4096), mk(4096), mk(4096)]),
    ("rmsnorm 2048x8192", lambda x, w: x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w, [mk(2048, 8192), mk(8192)]),
]:
    nbytes = 2 * args[0].numel() * args[0].element_size() + sum(a.numel() * a.element_size() for a in args[1:] if a.numel() == args[0].numel())
    res = {}
    for be, opts in [("eager", None), ("triton", {}), ("nvvm", {"gpu_codegen": "nvvm"}), ("inductor", "inductor")]:
        torch._dynamo.reset()
        f = fn if opts is None else (torch.compile(fn) if opts == "inductor" else torch.compile(fn, backend="lamina", options=opts))
        res[be] = bench(f, args)
    x = args[0]
    cp = bench(lambda a: a.clone(), [x])
    copy_gbs = 2 * x.numel() * x.element_size() / cp / 1e6
    line = {k: round(nbytes / v / 1e6, 1) for k, v in res.items()}
    print(label, "GB/s", line, "copy", round(copy_gbs, 1), "ms", {k: round(v, 4) for k, v in res.items()}, flush=True)
    bw.append((label, line, copy_gbs, res))
json.dump({"rows": rows, "bw": bw}, open(os.path.join(out, "nvvm.json"), "w"), default=str)
