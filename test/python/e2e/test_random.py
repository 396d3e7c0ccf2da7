"""Random ops (rand, randn, dropout, bernoulli, randint, uniform, normal, exponential,
geometric, log_normal, cauchy, rrelu, multinomial, randperm) compiled with no fallback: right distributions (statistical checks with wide margins, fixed seeds), fresh
numbers per call, runs reproduced by torch.manual_seed, dropout's backward through its mask,
and distinct numbers for distinct ops of one graph."""
from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

lamina_backend = pytest.importorskip("lamina.backend")

N = (400, 250)   # 100k samples: a mean is within ~4 sigma = 0.004 std-units


def _compiled(fn):
    torch._dynamo.reset()
    return torch.compile(fn, backend="lamina", options={"strict": True})


def _check_moments(t, mean, std, lo=None, hi=None):
    t = t.double()
    n = t.numel()
    assert abs(t.mean().item() - mean) < 5 * std / math.sqrt(n) + 1e-12
    assert abs(t.std().item() - std) < 0.02 * std + 1e-12
    if lo is not None:
        assert t.min().item() >= lo and t.max().item() < hi


@pytest.mark.parametrize("name,fn,moments", [
    ("rand", lambda x: torch.rand(*N), (0.5, math.sqrt(1 / 12), 0.0, 1.0)),
    ("rand_like_f64", lambda x: torch.rand_like(x, dtype=torch.float64), (0.5, math.sqrt(1 / 12), 0.0, 1.0)),
    ("randn", lambda x: torch.randn(*N), (0.0, 1.0, None, None)),
    ("uniform", lambda x: torch.empty(*N).uniform_(-2.0, 3.0), (0.5, 5 / math.sqrt(12), -2.0, 3.0)),
    ("normal", lambda x: torch.normal(torch.full(N, 3.0), 2.0), (3.0, 2.0, None, None)),
    ("bernoulli", lambda x: torch.bernoulli(torch.full(N, 0.25)), (0.25, math.sqrt(0.25 * 0.75), 0.0, 1.01)),
    ("randint", lambda x: torch.randint(3, 10, N).double(), (6.0, math.sqrt((7 ** 2 - 1) / 12), 3.0, 9.5)),
    ("dropout", lambda x: F.dropout(x, 0.3, training=True), (1.0, math.sqrt(0.3 / 0.7), 0.0, 1.5)),
    ("normal_", lambda x: torch.empty(*N).normal_(-1.0, 0.5), (-1.0, 0.5, None, None)),
    ("normal_float_float", lambda x: torch.normal(2.0, 3.0, N), (2.0, 3.0, None, None)),
    ("exponential", lambda x: torch.empty(*N).exponential_(2.0), (0.5, 0.5, 0.0, 20.0)),
    ("exponential_bf16", lambda x: torch.empty(*N, dtype=torch.bfloat16).exponential_(), (1.0, 1.0, 0.0, 20.0)),
    ("geometric", lambda x: torch.empty(*N).geometric_(0.25), (4.0, math.sqrt(0.75) / 0.25, 1.0, 200.0)),
    ("log_normal_log", lambda x: torch.log(torch.empty(*N).log_normal_(0.5, 0.75)), (0.5, 0.75, None, None)),
    ("randint_wide", lambda x: torch.randint(0, 2 ** 40, N).double() / 2 ** 40, (0.5, math.sqrt(1 / 12), 0.0, 1.0)),
])
def test_distribution_reproducibility_freshness(name, fn, moments):
    x = torch.ones(*N)
    f = _compiled(fn)
    torch.manual_seed(0)
    a, b = f(x), f(x)
    torch.manual_seed(0)
    c = f(x)
    assert torch.equal(a, c), "torch.manual_seed must reproduce a run"
    assert not torch.equal(a, b), "every call must draw fresh numbers"
    _check_moments(a, *moments)
    assert lamina_backend.last_report()["fallback_ops"] == []


def test_randint_covers_every_value_uniformly():
    out = _compiled(lambda x: torch.randint(0, 5, (100000,)))(torch.ones(1))
    counts = torch.bincount(out, minlength=5).double() / out.numel()
    assert out.dtype == torch.int64 and torch.all((counts - 0.2).abs() < 0.01)


def test_two_ops_in_one_graph_are_independent():
    a, b = _compiled(lambda x: (torch.rand(*N), torch.rand(*N)))(torch.ones(1))
    assert not torch.equal(a, b)
    corr = torch.corrcoef(torch.stack([a.flatten(), b.flatten()]))[0, 1]
    assert abs(corr.item()) < 0.02


def test_uniform_bits_are_not_correlated_along_the_counter():
    u = _compiled(lambda x: torch.rand(200001))(torch.ones(1)).double()
    lag1 = torch.corrcoef(torch.stack([u[:-1], u[1:]]))[0, 1]
    assert abs(lag1.item()) < 0.01


def test_dropout_backward_uses_the_forward_mask():
    torch.manual_seed(1)
    x = torch.randn(64, 32, requires_grad=True)
    out = _compiled(lambda x: F.dropout(x, 0.4, training=True) * 2)(x)
    out.sum().backward()
    kept = out != 0
    torch.testing.assert_close(x.grad, kept.float() * 2 / 0.6)
    assert all(r["fallback_ops"] == [] for r in lamina_backend.reports()[-2:])


def test_dropout_eval_and_p0_are_identity():
    x = torch.randn(10, 10)
    torch.testing.assert_close(_compiled(lambda x: F.dropout(x, 0.0, training=True))(x), x)
    torch.testing.assert_close(_compiled(lambda x: F.dropout(x, 0.5, training=False) + 0)(x), x)


def test_symbolic_size():
    f = torch.compile(lambda x: torch.rand_like(x) + x * 0, backend="lamina", dynamic=True, options={"strict": True})
    torch._dynamo.reset()
    for n in (1000, 1500):
        u = f(torch.ones(n, 20))
        assert u.shape == (n, 20) and 0.47 < u.mean().item() < 0.53


def test_randint_reaches_values_beyond_24_bits():
    out = _compiled(lambda x: torch.randint(0, 2 ** 30, (100000,)))(torch.ones(1))
    assert (out % 64 != 0).any() and out.min() >= 0 and out.max() < 2 ** 30


def test_cauchy_quartiles():
    c = _compiled(lambda x: torch.empty(*N).cauchy_(1.0, 2.0))(torch.ones(1)).double().flatten()
    q = torch.quantile(c[:100000], torch.tensor([0.25, 0.5, 0.75], dtype=torch.float64))
    torch.testing.assert_close(q, torch.tensor([-1.0, 1.0, 3.0], dtype=torch.float64), atol=0.05, rtol=0)


def test_rrelu_training_slopes_and_gradient():
    x = torch.cat([-torch.rand(50000) - 0.1, torch.rand(50000) + 0.1]).requires_grad_()
    out = _compiled(lambda x: F.rrelu(x, 0.1, 0.3, training=True))(x)
    slope = out[:50000] / x[:50000]
    _check_moments(slope.detach(), 0.2, 0.2 / math.sqrt(12), 0.1 - 1e-6, 0.3 + 1e-6)
    torch.testing.assert_close(out[50000:], x[50000:])
    out.sum().backward()
    torch.testing.assert_close(x.grad[:50000], slope.detach())
    torch.testing.assert_close(x.grad[50000:], torch.ones(50000))
    assert all(r["fallback_ops"] == [] for r in lamina_backend.reports()[-2:])
    eval_out = _compiled(lambda x: F.rrelu(x, 0.1, 0.3, training=False))(x.detach())
    torch.testing.assert_close(eval_out, F.leaky_relu(x.detach(), 0.2))


@pytest.mark.parametrize("replacement", [False, True])
def test_multinomial_frequencies(replacement):
    p = torch.tensor([[0.0, 1.0, 2.0, 0.0, 5.0, 2.0], [3.0, 0.0, 0.0, 1.0, 0.0, 0.0]])
    f = _compiled(lambda p: torch.multinomial(p, 1 if not replacement else 20000, replacement=replacement))
    if replacement:
        out = f(p)
        assert out.shape == (2, 20000) and out.dtype == torch.int64
        freq = torch.stack([torch.bincount(r, minlength=6) for r in out]).double() / 20000
    else:
        freq = sum(torch.nn.functional.one_hot(f(p)[:, 0], 6).double() for _ in range(4000)) / 4000
    want = p.double() / p.sum(-1, keepdim=True)
    assert torch.all((freq - want).abs() < 0.025) and torch.all(freq[want == 0] == 0)
    assert lamina_backend.last_report()["fallback_ops"] == []


def test_multinomial_without_replacement_draws_distinct_positive_categories():
    p = torch.rand(64, 40) * (torch.rand(64, 40) > 0.3)
    p[:, :8] += 0.1   # at least 8 positive categories a row
    out = _compiled(lambda p: torch.multinomial(p, 8))(p)
    assert out.shape == (64, 8)
    assert all(len(set(r.tolist())) == 8 for r in out)
    assert torch.all(p.gather(1, out) > 0)


def test_randperm_is_a_uniform_permutation():
    f = _compiled(lambda x: torch.randperm(10, dtype=torch.int32) + 0)
    perms = torch.stack([f(torch.ones(1)) for _ in range(3000)])
    assert perms.dtype == torch.int32
    assert torch.equal(perms.sort(-1).values, torch.arange(10, dtype=torch.int32).expand(3000, 10))
    first = torch.bincount(perms[:, 0].long(), minlength=10).double() / 3000
    assert torch.all((first - 0.1).abs() < 0.03)
    big = _compiled(lambda x: torch.randperm(100000))(torch.ones(1))
    assert torch.equal(big.sort().values, torch.arange(100000))
