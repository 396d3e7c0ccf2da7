"""Dense linear algebra as library calls (dialect/library_callees.py): LAPACK through torch's
routines on the kernels' buffers, the ops around them compiled and fused as usual. Strict (no
fallback) against eager, both targets (the cuda target's launcher calls the routine, its
programs run under TRITON_INTERPRET in CI); edge cases: batches, transposed and sliced
operands, an empty batch, several outputs of one routine, a singular matrix (eager's error),
and the backward graphs."""
from __future__ import annotations

import pytest
import torch

lamina_backend = pytest.importorskip("lamina.backend")

_G = torch.Generator().manual_seed(0)
A = torch.randn(3, 4, 4, generator=_G, dtype=torch.float64) + 4 * torch.eye(4, dtype=torch.float64)
B = torch.randn(3, 4, 2, generator=_G, dtype=torch.float64)
SPD = A @ A.mT + torch.eye(4, dtype=torch.float64)


def _lu_solve(a, b):
    lu, piv = torch.linalg.lu_factor(a)
    return torch.linalg.lu_solve(lu, piv, b) * 2


def _svd(a):
    u, s, vh = torch.linalg.svd(a)
    return (u * s[..., None, :]) @ vh - a, s.sum(-1)


CASES = [
    ("det", lambda a: torch.linalg.det(a) * 2 + 1, (A,)),
    ("inv", lambda a, b: torch.linalg.inv(a) @ b + 1, (A, B)),
    ("solve", lambda a, b: torch.linalg.solve(a.mT, b).relu(), (A, B)),   # a transposed operand
    ("qr", lambda a: torch.linalg.qr(a[:, :, :3]), (A,)),                  # a sliced one
    ("svd", _svd, (A,)),
    ("eigh", lambda s: torch.linalg.eigvalsh(s).exp(), (SPD,)),
    ("cholesky", lambda s, b: torch.cholesky_solve(b, torch.linalg.cholesky(s)), (SPD, B)),
    ("lu", _lu_solve, (A, B)),
    ("slogdet", lambda a: torch.linalg.slogdet(a), (A,)),
    ("triangular", lambda a, b: torch.linalg.solve_triangular(a.triu(), b, upper=True), (A, B)),
    ("pinv", lambda a: torch.linalg.pinv(a[:, :3]) * 3, (A,)),
    ("matrix_exp", lambda a: torch.linalg.matrix_exp(a * 0.1), (A,)),
]


def _compile(fn):
    torch._dynamo.reset()
    return torch.compile(fn, backend="lamina", options={"strict": True})


# every case in float64; a few in float32 too (the routines are the same library's)
_RUNS = [(c, torch.float64) for c in CASES] + [(c, torch.float32) for c in CASES if c[0] in ("inv", "svd", "lu")]


@pytest.mark.parametrize("case,dtype", _RUNS, ids=[f"{c[0]}-{str(d)[6:]}" for c, d in _RUNS])
def test_routines_match_eager(case, dtype):
    name, fn, args = case
    args = tuple(a.to(dtype) for a in args)
    got = _compile(fn)(*args)
    want = fn(*args)
    got, want = (got, want) if isinstance(got, tuple) else ((got,), (want,))
    tol = dict(rtol=1e-10, atol=1e-10) if dtype == torch.float64 else dict(rtol=1e-4, atol=1e-4)
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w, **tol)
    report = lamina_backend.last_report()
    assert report["fallback_ops"] == [] and report["kernels"] >= 1


def test_empty_batch_and_size_one():
    fn = lambda a: (torch.linalg.inv(a) + 1, torch.linalg.det(a))   # noqa: E731
    for a in (A[:0], A[:1, :1, :1]):
        got, want = _compile(fn)(a), fn(a)
        for g, w in zip(got, want):
            torch.testing.assert_close(g, w)


def test_singular_matrix_raises_eagers_error():
    fn = lambda a: torch.linalg.inv(a) * 2   # noqa: E731
    g = _compile(fn)
    torch.testing.assert_close(g(A), fn(A))
    singular = A.clone()
    singular[1, :, 2] = 0
    with pytest.raises(torch.linalg.LinAlgError) as want:
        fn(singular)
    with pytest.raises(torch.linalg.LinAlgError) as got:
        g(singular)
    assert str(got.value) == str(want.value)
    torch.testing.assert_close(g(A + 1), fn(A + 1))   # and the graph still runs afterwards


def test_backward_through_routines():
    def loss(a, b):
        return torch.linalg.det(a).sum() + (torch.linalg.inv(a) @ b).square().sum()
    a, b = A.clone().requires_grad_(), B.clone()
    a2 = A.clone().requires_grad_()
    torch._dynamo.reset()
    out = torch.compile(loss, backend="lamina", options={"strict": True})(a, b)
    out.backward()
    ref = loss(a2, b)
    ref.backward()
    torch.testing.assert_close(out, ref)
    torch.testing.assert_close(a.grad, a2.grad)
    assert all(r["fallback_ops"] == [] for r in lamina_backend.reports()[-2:])


def test_symbolic_shapes():
    """Library calls on buffers of symbolic size (the routine reads the sizes off its
    operands; a symbolic result is allocated at its symbol's value): one compile serves every
    matrix size, with no fallback."""
    fns = [lambda a: torch.linalg.det(a) + 1, lambda a: torch.linalg.qr(a).R.sum(-1),
           lambda a: torch.linalg.solve(a, a.sum(-1, keepdim=True)), lambda a: torch.linalg.svdvals(a) * 2]
    for fn in fns:
        torch._dynamo.reset()
        g = torch.compile(fn, backend="lamina", dynamic=True, options={"strict": True})
        before = len(lamina_backend.reports())
        for n in (3, 5, 8):
            a = torch.randn(2, n, n, dtype=torch.float64, generator=torch.Generator().manual_seed(n)) \
                + n * torch.eye(n, dtype=torch.float64)
            torch.testing.assert_close(g(a), fn(a), rtol=1e-9, atol=1e-9)
        reports = lamina_backend.reports()[before:]
        assert len(reports) == 1 and reports[0]["dynamic"] and reports[0]["fallback_ops"] == [], reports
