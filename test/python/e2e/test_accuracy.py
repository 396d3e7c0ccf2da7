"""Accuracy of float additive reductions against an fp64 reference (compiled vs eager).

Every case compiles `fn` with lamina (strict: no eager fallback), runs it, runs eager, and
runs `fn` in fp64 on the same inputs upcast; both errors are max|y - ref| / max|ref| and

    lamina_err <= 10 * max(eager_err, FLOOR)

must hold. Rows go up to 2^24 elements and inputs like rand + 100 (a large mean: a plain
sequential f32 sum of 2^24 of them is 17% off) as well as randn. Covered: sum (all, dim),
mean, var, std, softmax, log_softmax, logsumexp, layer_norm, an RMS norm (mean + rsqrt),
and the backward (.backward()) of sum / softmax / layer_norm; fp32, fp16 and bf16 inputs
(lamina accumulates in f32). These guard any later change of how reductions are
scheduled (vectorized, split, parallel): see lamina.lowering.to_linalg (compensated sums).

    pytest -q test/python/e2e/test_accuracy.py               # the checks
    python test/python/e2e/test_accuracy.py                  # the table (op, n, dtype, errors)
"""
from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

import lamina  # noqa: F401  (registers the backend)

# Below the unit roundoff of the output type (half an epsilon) both errors are the rounding
# of the output itself: eager's 2e-8 on a sum is luck of that rounding, not its accumulation.
FLOOR = {"fp32": 2.0 ** -24, "fp16": 2.0 ** -11, "bf16": 2.0 ** -8}

# ---- the functions (forward: fn(x) -> tensor or tuple; backward: loss(x) -> scalar) ------

FWD = {
    "sum_all": lambda x: x.sum(),
    "sum_dim": lambda x: x.sum(dim=-1),
    "mean": lambda x: x.mean(dim=-1),
    "var": lambda x: torch.var(x, dim=-1, correction=1),
    "std": lambda x: torch.std(x, dim=-1),
    "softmax": lambda x: torch.softmax(x, dim=-1),
    "log_softmax": lambda x: torch.log_softmax(x, dim=-1),
    "logsumexp": lambda x: torch.logsumexp(x, dim=-1),
    "layer_norm": lambda x: F.layer_norm(x, x.shape[-1:]),
    "rms_norm": lambda x: x * torch.rsqrt((x * x).mean(dim=-1, keepdim=True) + 1e-6),
}
BWD = {
    # w has x's shape (a w constant along rows would make these gradients exactly 0); the
    # saved row sums reach the gradient of sum: d/dx sum(m * s^2) = 2 s m, m = w.mean(-1).
    "sum_bwd": lambda x, w: (w.mean(dim=-1) * x.sum(dim=-1) ** 2).sum(),
    "softmax_bwd": lambda x, w: (w * torch.softmax(x, dim=-1)).sum(),
    "layer_norm_bwd": lambda x, w: (w * F.layer_norm(x, x.shape[-1:])).sum(),
}
DTYPES = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}


def _inputs(kind: str, rows: int, n: int, dtype, seed: int = 0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    if kind == "rand+100":
        x = torch.rand(rows, n, generator=g) + 100.0
    else:
        x = torch.randn(rows, n, generator=g)
    return x.to(dtype)


def _cases():
    """(op, rows, n, dtype name, input kind): the long rows on the cheap ops only (2 cores)."""
    out = []
    for op in ("sum_all", "sum_dim", "mean", "var"):
        out.append((op, 1, 1 << 24, "fp32", "rand+100"))
    out.append(("softmax", 1, 1 << 24, "fp32", "randn"))
    out.append(("mean", 1, 1 << 24, "bf16", "rand+100"))
    for op in FWD:
        for dt in DTYPES:
            # 2^20 values near 100 sum past f16's max (65504): randn for f16 sums.
            kind = "randn" if dt == "fp16" and op.startswith("sum") else "rand+100"
            out.append((op, 2, 1 << 20, dt, kind))
        out.append((op, 4, 1 << 16, "fp32", "randn"))
    for op in BWD:
        for dt in DTYPES:
            out.append((op, 8, 1 << 14, dt, "randn"))
    return out


def _rel(y: torch.Tensor, ref: torch.Tensor) -> float:
    scale = ref.abs().max().item()
    return (y.double() - ref).abs().max().item() / (scale if scale else 1.0)


def _errors(op: str, rows: int, n: int, dt: str, kind: str) -> tuple[float, float]:
    torch._dynamo.reset()
    x = _inputs(kind, rows, n, DTYPES[dt])
    if op in FWD:
        fn = FWD[op]
        compiled = torch.compile(fn, backend="lamina", dynamic=False, options={"strict": True})
        got, eager, ref = compiled(x), fn(x), fn(x.double())
        return _rel(got, ref), _rel(eager, ref)
    fn = BWD[op]
    w = torch.randn(rows, n, generator=torch.Generator().manual_seed(1)).to(x.dtype)
    compiled = torch.compile(fn, backend="lamina", dynamic=False, options={"strict": True})

    def grad(f, xx, ww):
        xx = xx.detach().requires_grad_(True)
        f(xx, ww).backward()
        return xx.grad
    got, eager, ref = grad(compiled, x, w), grad(fn, x, w), grad(fn, x.double(), w.double())
    return _rel(got, ref), _rel(eager, ref)


@pytest.mark.parametrize("op,rows,n,dt,kind", _cases(),
                         ids=lambda v: str(v) if not isinstance(v, int) or v < 1024 else f"2^{v.bit_length() - 1}")
def test_accuracy(op, rows, n, dt, kind):
    lamina_err, eager_err = _errors(op, rows, n, dt, kind)
    print(f"\n{op:15s} {rows}x2^{n.bit_length() - 1:<3d} {dt:5s} {kind:9s} lamina {lamina_err:.2e}  eager {eager_err:.2e}")
    # Eager f16 logsumexp / log_softmax overflow (inf): then only the floor bounds lamina.
    eager = eager_err if math.isfinite(eager_err) else 0.0
    assert lamina_err <= 10 * max(eager, FLOOR[dt]), (lamina_err, eager_err)


def test_issue_snippets():
    """The reported programs: long rows near 100 (sum/mean 4 x 2^22; var over two dims with
    correction=2 and std over 2^11, 2 x 2 x 512 x 2048)."""
    def f(x):
        return x.sum(), x.mean(dim=-1)

    def g(x):
        return torch.var(x, dim=[2, 3], correction=2), torch.std(x, dim=-1)

    gen = torch.Generator().manual_seed(0)
    for fn, x in ((f, torch.rand(4, 1 << 22, generator=gen) + 100.0),
                  (g, torch.rand(2, 2, 512, 2048, generator=gen) + 100.0)):
        torch._dynamo.reset()
        got = torch.compile(fn, backend="lamina", options={"strict": True})(x)
        eager, ref = fn(x), fn(x.double())
        for a, e, r in zip(got, eager, ref):
            assert _rel(a, r) <= 10 * max(_rel(e, r), FLOOR["fp32"]), (_rel(a, r), _rel(e, r))


@pytest.mark.parametrize("op", ["sum_dim", "var", "softmax", "layer_norm", "rms_norm"])
def test_fp64_row_reductions(op):
    """fp64 rows reduce in f64 vectors (4 lanes where f32 has 8), compensated like f32: on
    rows with a mean of 1e4 and a length that leaves a masked tail, lamina matches eager's
    fp64 result to ~1e-12 (the cancellation of x - mean bounds both)."""
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(3, 4099, generator=gen, dtype=torch.float64) + 1e4
    fn = FWD[op]
    torch._dynamo.reset()
    got = torch.compile(fn, backend="lamina", options={"strict": True})(x)
    want = fn(x)
    assert got.dtype == torch.float64
    assert _rel(got, want) <= 1e-12, _rel(got, want)


def main() -> None:
    print(f"| op | elements | dtype | input | lamina err | eager err |\n|---|---|---|---|---|---|")
    for case in _cases():
        op, rows, n, dt, kind = case
        le, ee = _errors(*case)
        print(f"| {op} | {rows} x 2^{n.bit_length() - 1} | {dt} | {kind} | {le:.1e} | {ee:.1e} |", flush=True)


if __name__ == "__main__":
    main()
