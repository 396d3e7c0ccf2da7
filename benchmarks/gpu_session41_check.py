"""Session 41's changes on a GPU (the cuda target), each row against eager on the same GPU,
under dynamic=True, at two sizes: outputs that are views at symbolic offsets (split, hsplit,
chunk, narrow, views of another output), outputs of different symbolic row counts from one
kernel, scatter_reduce without self, median along a symbolic dim, select at a SymInt index,
and a training step through slices and splits. fp32 and bf16. One line a row: OK/BAD,
fallback ops.

    python3 benchmarks/gpu_session41_check.py      (the bundle on PYTHONPATH: benchmarks/gpu.sh)
"""
import torch

import check_rows
from check_rows import DEV, device_line, summary


def row(name, ok, detail=""):
    check_rows.row(name, ok, detail, width=46)


def compiled(fn):
    return check_rows.compiled(fn, dynamic=True)


def same(a, b, dtype):
    a = a if isinstance(a, (tuple, list)) else (a,)
    b = b if isinstance(b, (tuple, list)) else (b,)
    tol = 2e-2 if dtype == torch.bfloat16 else 1e-5
    return len(a) == len(b) and all(x.shape == y.shape and torch.allclose(x.float(), y.float(), rtol=tol, atol=tol,
                                                                          equal_nan=True) for x, y in zip(a, b))


CASES = [
    ("hsplit", lambda x: torch.hsplit(x, 2), [(10, 6), (14, 8)]),
    ("split sizes", lambda x: torch.split(x, [x.shape[0] - 2, 2]), [(10, 6), (7, 3)]),
    ("chunk of transpose", lambda x: x.t().chunk(2, 1), [(10, 6), (9, 5)]),
    ("narrow", lambda x: x.narrow(1, 1, x.shape[1] - 2), [(10, 6), (4, 9)]),
    ("tail slice", lambda x: x[x.shape[0] // 3:], [(10, 6), (31, 7)]),
    ("views of an output", lambda x: (lambda y: (y, y[y.shape[0] // 2:], y[:, 1:].t()))(x * 2), [(10, 6), (9, 4)]),
    ("select at a SymInt index", lambda x: x.select(1, x.shape[1] // 2) * 3, [(5, 6, 4), (3, 9, 2)]),
    ("median along a symbolic dim", lambda x: x.median(1), [(6, 9), (5, 30)]),
]


def view_rows(dtype):
    g = torch.Generator(device=DEV).manual_seed(0)
    for name, fn, shapes in CASES:
        if "median" in name and dtype == torch.bfloat16:
            continue
        f = compiled(fn)
        ok = True
        for shape in shapes:
            x = torch.randn(shape, device=DEV, generator=g).to(dtype)
            ok &= same(f(x), fn(x), dtype)
        row(f"{name} {str(dtype)[6:]}", ok)
    f = compiled(lambda x, y: (x.exp(), y.tanh()))
    ok = True
    for m, n in ((7, 300), (301, 5)):
        x, y = torch.randn(m, 40, device=DEV, generator=g).to(dtype), torch.randn(n, 40, device=DEV, generator=g).to(dtype)
        ok &= same(f(x, y), (x.exp(), y.tanh()), dtype)
    row(f"outputs of different row counts {str(dtype)[6:]}", ok)


def scatter_rows():
    g = torch.Generator(device=DEV).manual_seed(0)
    for reduce in ("sum", "prod", "mean", "amax", "amin"):
        fn = lambda x, i, s: x.scatter_reduce(0, i, s, reduce, include_self=False)   # noqa: E731
        f = compiled(fn)
        ok = True
        for rows_, cols in ((10, 5), (40, 7)):
            x, s = torch.randn(rows_, cols, device=DEV, generator=g), torch.randn(5, cols, device=DEV, generator=g)
            i = torch.randint(0, rows_, (5, cols), device=DEV, generator=g)
            ok &= same(f(x, i, s), fn(x, i, s), torch.float32)
        row(f"scatter_reduce {reduce} without self", ok)


def training_row():
    def fn(x, w):
        y = (x @ w).relu()
        a, b = y.chunk(2, 1)
        return (a * b[:, : a.shape[1]]).sum() + y[y.shape[0] // 2:].square().mean()
    f = compiled(fn)
    g = torch.Generator(device=DEV).manual_seed(0)
    ok = True
    for n in (12, 33):
        x = torch.randn(n, 16, device=DEV, generator=g)
        wc = torch.randn(16, 10, device=DEV, generator=g, requires_grad=True)
        we = wc.detach().clone().requires_grad_()
        a, b = f(x, wc), fn(x, we)
        a.backward()
        b.backward()
        ok &= same(a, b, torch.float32) and same(wc.grad, we.grad, torch.float32)
    row("chunks and slices, training", ok)


if __name__ == "__main__":
    print(device_line())
    view_rows(torch.float32)
    view_rows(torch.bfloat16)
    scatter_rows()
    training_row()
    print(summary())
