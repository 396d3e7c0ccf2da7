"""Out-of-range indices (backend/index_bounds.py), integer division by zero
(backend/divisor_checks.py) and violated assertions on computed values (runtime_asserts.py)
given to a compiled graph raise eager's exception and message;
in-range ones (negative indices where eager takes them) compute as eager does; strict, no
fallback."""
from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

lamina_backend = pytest.importorskip("lamina.backend")

X = torch.randn(5, 4, generator=torch.Generator().manual_seed(0))

CASES = [
    # (id, fn, index shape maker, in-range index, out-of-range indices)
    ("index_dim0", lambda x, i: x[i] * 2, torch.tensor([0, -5, 4]), [torch.tensor([0, 5]), torch.tensor([-6, 1])]),
    ("index_dim1", lambda x, i: x[:, i] + 1, torch.tensor([3, -1]), [torch.tensor([4])]),
    ("index_two", lambda x, i: x[i, i] + 1, torch.tensor([3, -1]), [torch.tensor([4]), torch.tensor([-5])]),
    ("index_put", lambda x, i: x.index_put((i,), torch.ones(2, 4)), torch.tensor([1, -2]), [torch.tensor([1, 7])]),
    ("embedding", lambda x, i: F.embedding(i, x) * 3, torch.tensor([[0, 4], [2, 2]]), [torch.tensor([5]), torch.tensor([-1])]),
    ("index_select", lambda x, i: torch.index_select(x, 1, i) - 1, torch.tensor([0, 3]), [torch.tensor([4]), torch.tensor([-1])]),
    ("index_select_dim0", lambda x, i: torch.index_select(x, 0, i) - 1, torch.tensor([0, 4]), [torch.tensor([5]), torch.tensor([-1])]),
    ("gather", lambda x, i: torch.gather(x, 1, i) + 1, torch.tensor([[0, 3]] * 5), [torch.tensor([[0, 4]] * 5), torch.tensor([[-1, 0]] * 5)]),
    ("scatter_add", lambda x, i: x.scatter_add(1, i, torch.ones(5, 2)), torch.tensor([[0, 3]] * 5), [torch.tensor([[0, 9]] * 5)]),
]


def _compiled(fn, **kw):
    torch._dynamo.reset()
    return torch.compile(fn, backend="lamina", options={"strict": True}, **kw)


def _eager_error(fn, *args):
    with pytest.raises(Exception) as caught:
        fn(*args)
    return caught.value


@pytest.mark.parametrize("fn,good,bad", [pytest.param(f, g, b, id=i) for i, f, g, b in CASES])
def test_out_of_range_indices_raise_as_eager(fn, good, bad):
    f = _compiled(fn)
    torch.testing.assert_close(f(X, good), fn(X, good))
    assert lamina_backend.last_report()["fallback_ops"] == []
    for idx in bad:
        expected = _eager_error(fn, X, idx)
        with pytest.raises(type(expected)) as got:
            f(X, idx)
        assert str(got.value) == str(expected)
    torch.testing.assert_close(f(X, good), fn(X, good))   # and the graph still works


def test_indices_computed_in_the_graph_are_not_checked_per_call():
    from lamina.backend.index_bounds import index_checks

    def fn(x, y):
        return x[torch.argmax(y, 0)]

    gm = torch.fx.symbolic_trace(fn)
    assert index_checks(gm) == []
    f = _compiled(fn)
    y = torch.randn(5, 3)
    torch.testing.assert_close(f(X, y), fn(X, y))


A = torch.tensor([[7, -7, 0], [5, -9, 8]])
DIVISION_CASES = [
    ("floor_divide", lambda a, b: a // b),
    ("fmod_trunc_remainder", lambda a, b: torch.fmod(a, b) + torch.div(a, b, rounding_mode="trunc") + a % b),
    ("scalar_remainder", lambda a, b: 7 % b + a),
    ("divisor_view", lambda a, b: a.int() // b.view(1, 3)),
]


@pytest.mark.parametrize("fn", [pytest.param(f, id=i) for i, f in DIVISION_CASES])
def test_integer_division_by_zero_raises_as_eager(fn):
    """backend/divisor_checks.py: a zero divisor among the inputs raises eager's error."""
    f = _compiled(fn)
    good = torch.tensor([3, -2, 5])
    torch.testing.assert_close(f(A, good), fn(A, good))
    assert lamina_backend.last_report()["fallback_ops"] == []
    bad = torch.tensor([3, 0, 5])
    expected = _eager_error(fn, A, bad)
    with pytest.raises(type(expected)) as got:
        f(A, bad)
    assert str(got.value) == str(expected) == "ZeroDivisionError"
    torch.testing.assert_close(f(A, good), fn(A, good))


def test_division_checks_follow_eager_exactly():
    """A literal 0 divisor raises; an empty quotient and a float division do not."""
    from lamina.backend.divisor_checks import divisor_checks

    literal = _compiled(lambda a: a // 0 + 1)
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        literal(A)
    empty = _compiled(lambda a, b: a // b)
    zeros = torch.zeros(3, dtype=torch.int64)
    torch.testing.assert_close(empty(A[:0], zeros), A[:0] // zeros)
    true_div = _compiled(lambda a, b: a / b)
    torch.testing.assert_close(true_div(A, zeros), A / zeros, equal_nan=True)
    narrowed = torch.fx.symbolic_trace(lambda a, b: a // b.to(torch.int8))   # 256 -> 0: not the input's zeros
    assert divisor_checks(narrowed) == []


def test_symbolic_int_divisors_are_not_tensors_to_check():
    """A SymInt divisor (dynamic shapes: x % n) is a graph input that is no tensor: no check,
    no crash in the checks."""
    fn = lambda x, n: (x % n) * 2   # noqa: E731
    torch._dynamo.reset()
    x = torch.arange(1, 9)
    compiled = torch.compile(fn, backend="lamina", dynamic=True)
    for n in (3, 5):
        torch.testing.assert_close(compiled(x, n), fn(x, n))


def test_assertions_on_computed_values_raise_as_eager():
    """aten._assert_async in a graph (F.one_hot's class-range checks, torch._assert_async in
    user code) is checked after each run (backend/runtime_asserts.py): a violated one raises
    eager's RuntimeError and message (the decomposition prefixes one_hot's with "one_hot: "),
    inference and training graphs alike."""
    def one_hot(x, i):
        return F.one_hot(i, 5) * x[0, 0]

    def user_assert(x, i):
        torch._assert_async((i < 3).all(), "i must stay below 3")
        return x[:, :2] * i

    for fn, good, bads in [(one_hot, torch.tensor([0, 4, 2]), [torch.tensor([5]), torch.tensor([-1, 0])]),
                           (user_assert, torch.tensor([0, 2]), [torch.tensor([1, 3])])]:
        for x in (X, X.clone().requires_grad_()):
            f = _compiled(fn)
            out = f(x, good)
            torch.testing.assert_close(out, fn(x, good))
            assert lamina_backend.last_report()["fallback_ops"] == []
            if x.requires_grad:
                out.sum().backward()
            for idx in bads:
                expected = _eager_error(fn, x, idx)
                with pytest.raises(RuntimeError) as got:
                    f(x, idx)
                assert str(expected) in str(got.value)
