"""Session 40's changes on a GPU (the cuda target), each row against eager on the same GPU:
random ops that are decompositions now (exponential, geometric, log_normal, cauchy, normal_,
rrelu, multinomial, randperm: distributions, no fallback), complex graphs over symbolic
sizes (FFTs, stft, a complex rotary embedding), pads by symbolic amounts and unfolds along a
symbolic dim (forward and backward). One line a row: OK/BAD, detail, fallback ops.

    python3 benchmarks/gpu_session40_check.py      (the bundle on PYTHONPATH: benchmarks/gpu.sh)
"""
import math

import torch
import torch.nn.functional as F

from check_rows import DEV, compiled, device_line, row, summary


def moments(name, fn, mean, std):
    out = compiled(fn)(torch.ones(1, device=DEV)).double()
    m, s = out.mean().item(), out.std().item()
    row(name, abs(m - mean) < 5 * std / math.sqrt(out.numel()) + 1e-9 and abs(s - std) < 0.03 * std,
        f"mean {m:.4f} ({mean:.4f}) std {s:.4f} ({std:.4f})")


def random_rows():
    n = (500, 400)
    moments("exponential", lambda x: torch.empty(n, device=DEV).exponential_(2.0), 0.5, 0.5)
    moments("exponential bf16", lambda x: torch.empty(n, device=DEV, dtype=torch.bfloat16).exponential_(), 1.0, 1.0)
    moments("geometric", lambda x: torch.empty(n, device=DEV).geometric_(0.25), 4.0, math.sqrt(0.75) / 0.25)
    moments("log(log_normal)", lambda x: torch.log(torch.empty(n, device=DEV).log_normal_(0.5, 0.75)), 0.5, 0.75)
    moments("normal_", lambda x: torch.empty(n, device=DEV).normal_(-1.0, 0.5), -1.0, 0.5)
    moments("randint 2^40", lambda x: torch.randint(0, 2 ** 40, n, device=DEV).double() / 2 ** 40, 0.5,
            math.sqrt(1 / 12))
    c = compiled(lambda x: torch.empty(n, device=DEV).cauchy_(1.0, 2.0))(torch.ones(1, device=DEV)).double().flatten()
    q = torch.quantile(c[:100000].cpu(), torch.tensor([0.25, 0.5, 0.75], dtype=torch.float64))
    row("cauchy quartiles", bool(((q - torch.tensor([-1.0, 1.0, 3.0], dtype=torch.float64)).abs() < 0.05).all()),
        str([round(v, 3) for v in q.tolist()]))
    x = torch.cat([-torch.rand(50000, device=DEV) - 0.1, torch.rand(50000, device=DEV) + 0.1]).requires_grad_()
    out = compiled(lambda x: F.rrelu(x, 0.1, 0.3, training=True))(x)
    slope = (out[:50000] / x[:50000]).detach()
    out.sum().backward()
    row("rrelu train slopes + grad", bool(0.1 - 1e-6 <= slope.min() and slope.max() <= 0.3 + 1e-6
                                         and torch.allclose(x.grad[:50000], slope)
                                         and abs(slope.mean().item() - 0.2) < 0.002), f"mean {slope.mean().item():.4f}")
    p = torch.tensor([[0.0, 1.0, 2.0, 0.0, 5.0, 2.0], [3.0, 0.0, 0.0, 1.0, 0.0, 0.0]], device=DEV)
    want = p.double() / p.sum(-1, keepdim=True)
    out = compiled(lambda p: torch.multinomial(p, 20000, replacement=True))(p)
    freq = torch.stack([torch.bincount(r, minlength=6) for r in out]).double() / 20000
    row("multinomial replacement", bool((freq - want).abs().max() < 0.025 and (freq[want == 0] == 0).all()),
        f"max dev {(freq - want).abs().max().item():.4f}")
    f = compiled(lambda p: torch.multinomial(p, 1))
    freq = sum(F.one_hot(f(p)[:, 0], 6).double() for _ in range(2000)) / 2000
    row("multinomial no replacement", bool((freq - want).abs().max() < 0.04 and (freq[want == 0] == 0).all()),
        f"max dev {(freq - want).abs().max().item():.4f}")
    p = torch.rand(64, 40, device=DEV) * (torch.rand(64, 40, device=DEV) > 0.3)
    p[:, :8] += 0.1
    out = compiled(lambda p: torch.multinomial(p, 8))(p)
    row("multinomial distinct", all(len(set(r.tolist())) == 8 for r in out) and bool((p.gather(1, out) > 0).all()))
    perm = compiled(lambda x: torch.randperm(100000, device=DEV))(torch.ones(1, device=DEV))
    row("randperm 100000", torch.equal(perm.sort().values, torch.arange(100000, device=DEV)))
    f = compiled(lambda x: x[torch.randperm(x.shape[0], device=DEV)], dynamic=True)
    ok = True
    for rows in (50, 77):
        x = torch.arange(rows * 3, device=DEV, dtype=torch.float32).view(rows, 3)
        y = f(x)
        ok &= torch.equal(y[y[:, 0].argsort()], x)
    row("randperm symbolic n", ok)


def close(a, b, tol=1e-4):
    return all(torch.allclose(x, y, rtol=tol, atol=tol, equal_nan=True) for x, y in
               zip(a if isinstance(a, tuple) else (a,), b if isinstance(b, tuple) else (b,)))


def symbolic_rows():
    g = torch.Generator(device=DEV).manual_seed(0)
    cases = [
        ("complex rfft abs", lambda s: torch.fft.rfft(s).abs(), [(4, 16), (3, 23)]),
        ("complex fftn to fixed size", lambda s: torch.fft.fftn(s.to(torch.complex64), s=(5, 20)), [(4, 16), (6, 25)]),
        ("complex stft magnitude", lambda s: torch.stft(s, 8, window=torch.hann_window(8, device=DEV),
                                                        return_complex=True).abs(), [(64,), (90,)]),
        ("complex rotary embedding", lambda x: torch.view_as_real(
            torch.view_as_complex(x.reshape(*x.shape[:-1], -1, 2))
            * torch.polar(torch.ones(x.shape[1], x.shape[-1] // 2, device=DEV),
                          torch.outer(torch.arange(x.shape[1], device=DEV).float(),
                                      torch.linspace(0, 1, x.shape[-1] // 2, device=DEV)))[None, :, None]).flatten(3),
         [(2, 6, 2, 16), (3, 9, 2, 16)]),
        ("pad to a symbolic length", lambda x: F.pad(x, (1, 24 - x.shape[-1]), value=-2.5), [(3, 11), (5, 17)]),
        ("pad of either sign", lambda x: F.pad(x, (3 - x.shape[-1] // 2, 0)), [(3, 11), (2, 1)]),
        ("unfold symbolic dim", lambda x: x.unfold(-1, 4, 3) * torch.arange(4.0, device=DEV), [(2, 13), (3, 20)]),
    ]
    for name, fn, shapes in cases:
        f = compiled(fn, dynamic=True)
        ok = True
        for shape in shapes:
            x = torch.randn(shape, device=DEV, generator=g)
            ok &= close(f(x), fn(x))
        row(name, ok)
    fn = lambda x: (F.pad(x, (2, 20 - x.shape[-1])).square().sum(-1), x.unfold(-1, 4, 3).square().sum())  # noqa: E731
    f = compiled(fn, dynamic=True)
    ok = True
    for cols in (7, 12):
        xc = torch.randn(3, cols, device=DEV, requires_grad=True)
        xe = xc.detach().clone().requires_grad_()
        a, b = f(xc), fn(xe)
        ok &= close(a, b)
        (a[0].sum() + a[1]).backward()
        (b[0].sum() + b[1]).backward()
        ok &= close(xc.grad, xe.grad)
    row("pad + unfold backward, symbolic", ok)


if __name__ == "__main__":
    print(device_line())
    random_rows()
    symbolic_rows()
    print(summary())
