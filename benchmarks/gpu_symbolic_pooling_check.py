"""Pooling over symbolic spatial sizes on the cuda target, on a GPU (CUDA tensors; needs the
MLIR bundle on PYTHONPATH as benchmarks/gpu.sh sets it up):

    python3 benchmarks/gpu_symbolic_pooling_check.py

Every case of test_pooling with dynamic=True over four sizes, forward and backward, fp32 and
bf16 against eager on the same device; a pooled network (eval and train); float-scaled
upsampling and chunk. Prints one row per case and "BAD <n>" (0: all within tolerance)."""
import sys, torch, torch.nn.functional as F
sys.path.insert(0, "test/python/e2e")
import lamina.backend
import test_pooling as tp
import test_dynamic_shapes as td
dev = "cuda"
bad = 0
for name, fn, shape in tp.CASES:
    for dtype in (torch.float32, torch.bfloat16):
        torch._dynamo.reset()
        c = torch.compile(fn, backend="lamina", dynamic=True, options={"strict": True})
        n0 = len(lamina.backend.reports()); worst = 0.0; err = ""
        try:
            for by in (0, 1, 2, 3):
                x = torch.randn(*tp._grown(shape, by), device=dev, dtype=torch.float64, requires_grad=True)
                xl = x.detach().to(dtype).requires_grad_()
                xe = x.detach().to(dtype).requires_grad_()
                out, ref = c(xl), fn(xe)
                g = torch.randn_like(ref)
                out.backward(g); ref.backward(g)
                tol = 1e-5 if dtype == torch.float32 else 2e-2
                e1 = ((out.float() - ref.float()).abs().max() / (1 + ref.float().abs().max())).item()
                e2 = ((xl.grad.float() - xe.grad.float()).abs().max() / (1 + xe.grad.float().abs().max())).item()
                worst = max(worst, e1, e2)
            if worst > tol: bad += 1
        except Exception as e:
            err = f"{type(e).__name__}: {str(e)[:200]}"; bad += 1
        recs = lamina.backend.reports()[n0:]
        print(f"{name:26s} {str(dtype)[6:]:9s} worst={worst:.1e} graphs={len(recs)} targets={sorted(set(r.get('target') for r in recs))} fallback={sum(len(r['fallback_ops']) for r in recs)} {err}", flush=True)
for train in (False, True):
    torch._dynamo.reset(); torch.manual_seed(0)
    m, ref = td._PooledNet().to(dev).train(train), td._PooledNet().to(dev).train(train)
    ref.load_state_dict(m.state_dict())
    c = torch.compile(m, backend="lamina", dynamic=True, options={"strict": True})
    worst = 0.0
    for n, h, w in ((2, 20, 17), (3, 13, 22), (2, 31, 29)):
        x = torch.randn(n, 3, h, w, device=dev)
        with torch.set_grad_enabled(train):
            got, want = c(x), ref(x)
        worst = max(worst, (got - want).abs().max().item())
        if train:
            got.square().sum().backward(); want.square().sum().backward()
            for p, q in zip(m.parameters(), ref.parameters()):
                worst = max(worst, ((p.grad - q.grad).abs().max() / (1 + q.grad.abs().max())).item()); p.grad = q.grad = None
    print(f"_PooledNet train={train} worst={worst:.1e}", flush=True)
def upsample(x):
    return (F.interpolate(x, scale_factor=1.5, mode="bicubic"), F.interpolate(x, scale_factor=0.5, mode="bilinear"),
            F.interpolate(x, scale_factor=2.5, mode="nearest"), torch.cat(torch.chunk(x, 2, -1)[::-1], -1))
torch._dynamo.reset()
c = torch.compile(upsample, backend="lamina", dynamic=True, options={"strict": True})
for shape in ((2, 3, 9, 12), (1, 2, 13, 10)):
    x = torch.randn(shape, device=dev)
    print("upsample/chunk", shape, max((a - b).abs().max().item() for a, b in zip(c(x), upsample(x))))
print("BAD", bad)
sys.exit(1 if bad else 0)
