"""Complex tensors (backend/complex_pairs.py: complex values as real pairs, FFTs and eig as
library routines): FFTs, eig, complex arithmetic and views compile with no fallback and match eager,
including eager's complex division at zeros, infinities and NaNs, conjugate, non-contiguous
and offset inputs, complex128, and gradients through FFTs; strict."""
from __future__ import annotations

import pytest
import torch

lamina_backend = pytest.importorskip("lamina.backend")

G = torch.Generator().manual_seed(0)
X = torch.randn(4, 16, generator=G)
Z = torch.randn(4, 16, generator=G, dtype=torch.complex64)


def _compiled(fn, **kw):
    torch._dynamo.reset()
    return torch.compile(fn, backend="lamina", options={"strict": True}, **kw)


def _check(fn, *args, rtol=1e-5, atol=1e-5):
    before = len(lamina_backend.reports())
    out = _compiled(fn)(*args)
    torch.testing.assert_close(out, fn(*args), rtol=rtol, atol=atol, equal_nan=True)
    reports = lamina_backend.reports()[before:]
    assert reports and all(not r["fallback_ops"] for r in reports), reports
    return out


CASES = [
    ("rfft_abs", lambda s: torch.fft.rfft(s).abs(), X),
    ("fft2_of_real", lambda s: torch.fft.fft2(s), X),
    ("ifft_ortho", lambda s: torch.fft.ifft(s, norm="ortho"), Z),
    ("fftn_padded", lambda s: torch.fft.fftn(s, s=(5, 20)), Z),
    ("irfft_of_product", lambda a, k: torch.fft.irfft(torch.fft.rfft(a) * torch.fft.rfft(k, n=16), n=16),
     X, torch.randn(4, 5, generator=G)),
    ("hfft", lambda s: torch.fft.hfft(s), Z),
    ("stft_magnitude", lambda s: torch.stft(s, 8, window=torch.hann_window(8), return_complex=True).abs(),
     torch.randn(64, generator=G)),
    ("arithmetic", lambda a, b: (a * b + a / b - a.conj() * 2j).exp().angle() + (a - 1.5).abs(), Z, Z.flip(0)),
    ("polar_complex_views", lambda m, t: torch.view_as_real(torch.polar(m, t) + torch.complex(t, m)), X.abs(), X),
    ("matmul_and_reductions", lambda a, b: (a @ b).sum(1) + a.mean(), Z, Z.T.contiguous()),
    ("eig", lambda a: tuple(torch.linalg.eig(a * 2)), torch.randn(2, 5, 5, generator=G)),   # LAPACK's geev
]


@pytest.mark.parametrize("fn,args", [pytest.param(f, a, id=i) for i, f, *a in CASES])
def test_complex_graphs_match_eager(fn, args):
    _check(fn, *args)


def test_complex_edge_cases():
    # c10::complex division: a zero divisor gives eager's inf/nan, an inf numerator eager's nan
    num = torch.tensor([1 + 1j, 0j, float("inf") + 0j, float("nan") * 1j, 3 - 4j])
    den = torch.tensor([0j, 0j, 1 + 1j, 2j, 1e-30 + 1e30j])
    _check(lambda a, b: a / b, num, den)
    _check(lambda s: torch.fft.fft(s) * 1j, Z.T)                      # non-contiguous
    _check(lambda s: s * 2 + 1, Z.conj())                             # a conjugate view
    _check(lambda s: torch.fft.ifft(s), Z[1:, 3:])                    # a storage offset
    _check(lambda s: torch.fft.fft(s).angle(), torch.randn(3, 8, generator=G, dtype=torch.complex128),
           rtol=1e-12, atol=1e-12)
    _check(lambda s: torch.fft.fft(s), torch.randn(1, 8, generator=G, dtype=torch.complex64).expand(3, 8))
    out = _check(lambda s: torch.view_as_complex(s) * (1 + 2j), torch.randn(5, 2, generator=G))
    assert out.dtype == torch.complex64


def test_gradients_through_ffts():
    for fn, x in [(lambda s: torch.fft.irfft(torch.fft.rfft(s) * 2).abs(), X), (lambda s: torch.fft.fft(s) * 2, Z)]:
        xe, xc = x.clone().requires_grad_(), x.clone().requires_grad_()
        before = len(lamina_backend.reports())
        out = _compiled(fn)(xc)
        expected = fn(xe)
        torch.testing.assert_close(out, expected, rtol=1e-5, atol=1e-5)
        (out.abs() if out.is_complex() else out).sum().backward()
        (expected.abs() if expected.is_complex() else expected).sum().backward()
        torch.testing.assert_close(xc.grad, xe.grad, rtol=1e-5, atol=1e-5)
        reports = lamina_backend.reports()[before:]
        assert len(reports) == 2 and all(not r["fallback_ops"] for r in reports), reports   # forward, backward


def test_the_rewritten_graph_is_real():
    """No complex value is left; FFTs are lamina's library routines on pairs; a complex input
    is taken as its view_as_real, a complex output returned through view_as_complex."""
    from torch.fx.experimental.proxy_tensor import make_fx

    from lamina.backend.complex_pairs import to_real_pairs

    gm = make_fx(lambda z: (torch.fft.fft(z) * z.conj(), torch.fft.ifft(z).abs()))(Z)
    real_gm, inputs, complex_in, complex_out = to_real_pairs(gm, [Z])
    assert (complex_in, complex_out) == ([0], [0])
    assert inputs[0].shape == (4, 16, 2) and inputs[0].dtype == torch.float32
    vals = [n.meta["val"] for n in real_gm.graph.nodes if isinstance(n.meta.get("val"), torch.Tensor)]
    assert vals and not any(v.dtype.is_complex for v in vals)
    targets = {n.target for n in real_gm.graph.nodes if n.op == "call_function"}
    assert torch.ops.lamina.fft_c2c.default in targets


SYMBOLIC_CASES = [
    ("rfft_abs", lambda s: torch.fft.rfft(s).abs(), [(4, 16), (3, 23)]),
    ("fftn_to_a_fixed_size", lambda s: torch.fft.fftn(s.to(torch.complex64), s=(5, 20)), [(4, 16), (6, 25)]),
    ("stft_magnitude", lambda s: torch.stft(s, 8, window=torch.hann_window(8), return_complex=True).abs(),
     [(64,), (90,)]),
    ("rotary_embedding", lambda x: torch.view_as_real(
        torch.view_as_complex(x.reshape(*x.shape[:-1], -1, 2))
        * torch.polar(torch.ones(x.shape[1], x.shape[-1] // 2),
                      torch.outer(torch.arange(x.shape[1]).float(), torch.linspace(0, 1, x.shape[-1] // 2)))[None, :, None]
    ).flatten(3), [(2, 6, 2, 16), (3, 9, 2, 16)]),
]


@pytest.mark.parametrize("fn,shapes", [pytest.param(f, s, id=i) for i, f, s in SYMBOLIC_CASES])
def test_symbolic_shapes(fn, shapes):
    """Complex values over symbolic sizes (dynamic=True): the graph is rewritten on the
    graph's own symbolic fake values, so one compile serves every size."""
    torch._dynamo.reset()
    compiled = torch.compile(fn, backend="lamina", dynamic=True, options={"strict": True})
    for shape in shapes:
        x = torch.randn(shape, generator=G)
        torch.testing.assert_close(compiled(x), fn(x), rtol=1e-5, atol=1e-5)


def test_symbolic_fft_size_argument_falls_back_reported():
    """hfft's output length from a symbolic size is an argument the library call cannot
    take yet: that op runs eagerly, reported (strict raises), with eager's results."""
    torch._dynamo.reset()
    fn = torch.compile(lambda s: torch.fft.hfft(s), backend="lamina", dynamic=True)
    with pytest.warns(lamina_backend.LaminaFallbackWarning):
        torch.testing.assert_close(fn(Z), torch.fft.hfft(Z))
    assert "lamina.fft_c2r.default" in lamina_backend.last_report()["fallback_ops"]
