"""lamina.orthogonal_polynomial -> one elementwise linalg.generic whose body runs the
three-term recurrence as an scf.while per element, as torch's kernels (ATen/native/Math.h)
do, special cases first:

    n < 0 -> 0;  the edge values at |x| == 1 (x == 0 / 1 shifted; x == 0 Laguerre);
    the closed forms cos(n acos y) ... for |y| < 1 above a degree (Chebyshev kinds);
    n == 0 -> 1;  n == 1 -> q0;  Hermite above degree 128 (f32) / 512 (f64) -> NaN;
    else p, q = 1, q0 and n - 1 steps r = a_k q - b_k p (/ c_k), stopping at a NaN q
    (Hermite runs every step), the result the last r.

n is the element's degree as torch takes it: trunc(n) as an int64, NaN and out-of-range
values negative (-> 0). An element a special case answers runs zero steps, so a large n
costs only where the recurrence is the answer. The loop is what makes this op a body with
a region: lamina-tile-cpu keeps such generics scalar (no vectorizer for loops in a body)
and the cuda target runs the loop over a block for as many steps as its largest trip count,
masking lanes that are done (codegen/cuda/triton_program.py).
"""
from __future__ import annotations

from mlir import ir
from mlir.dialects import arith, math, scf

from .to_linalg import _const, _elementwise, _rt, lowering

_CLOSED_FORM_ABOVE = {"chebyshev_t": 6, "chebyshev_u": 8, "chebyshev_v": 8, "chebyshev_w": 8,
                      "shifted_chebyshev_t": 6, "shifted_chebyshev_u": 6, "shifted_chebyshev_v": 6,
                      "shifted_chebyshev_w": 4}
_HERMITE_LIMIT = {"f32": 128, "f64": 512}


class _B:
    """Scalar builders of one element type."""

    def __init__(self, t: ir.Type):
        self.t, self.i64, self.i1 = t, ir.IntegerType.get_signless(64), ir.IntegerType.get_signless(1)

    def f(self, v: float) -> ir.Value:
        return _const(self.t, v)

    def i(self, v: int) -> ir.Value:
        return _const(self.i64, v)

    def fi(self, k: ir.Value) -> ir.Value:
        """An int64 as the float type (C++'s conversion in `n + 1` returned as T, `k * p`)."""
        return arith.sitofp(self.t, k)

    def cmpf(self, pred: str, a, b):
        return arith.cmpf(getattr(arith.CmpFPredicate, pred), a, b)

    def cmpi(self, pred: str, a, b):
        return arith.cmpi(getattr(arith.CmpIPredicate, pred), a, b)

    def sel(self, c, a, b):
        return arith.select(c, a, b)


def _degree(b: _B, n: ir.Value) -> ir.Value:
    """static_cast<int64_t>(n): truncation; NaN, infinities and |n| >= 2^63 give a negative
    degree (x86's conversion gives INT64_MIN there: the result is 0 either way)."""
    ok = arith.andi(b.cmpf("OEQ", n, n), b.cmpf("OLT", math.absf(n), b.f(9.2e18)))
    return b.sel(ok, arith.fptosi(b.i64, b.sel(ok, n, b.f(0.0))), b.i(-1))


def _sign_by_parity(b: _B, ni, v):
    """v where n is even, -v where odd."""
    even = b.cmpi("eq", arith.remsi(ni, b.i(2)), b.i(0))
    return b.sel(even, v, arith.negf(v))


def _edge(kind: str, b: _B, x, ni, nf):
    """(condition, value) of the edge case, or None."""
    one, two_n1 = b.f(1.0), b.fi(arith.addi(arith.addi(ni, ni), b.i(1)))
    n1 = b.fi(arith.addi(ni, b.i(1)))
    if kind == "laguerre_l":
        return b.cmpf("OEQ", math.absf(x), b.f(0.0)), one
    if kind in ("chebyshev_t", "chebyshev_u", "chebyshev_v", "chebyshev_w", "legendre_p"):
        cond = b.cmpf("OEQ", math.absf(x), one)
        pos = b.cmpf("OGT", x, b.f(0.0))
        even = b.cmpi("eq", arith.remsi(ni, b.i(2)), b.i(0))
        pos_or_even = arith.ori(pos, even)
        if kind in ("chebyshev_t", "legendre_p"):
            return cond, b.sel(pos_or_even, one, b.f(-1.0))
        if kind == "chebyshev_u":
            return cond, b.sel(pos_or_even, n1, arith.negf(n1))
        if kind == "chebyshev_v":
            return cond, b.sel(pos, one, _sign_by_parity(b, ni, two_n1))
        return cond, b.sel(pos, two_n1, _sign_by_parity(b, ni, one))
    if kind.startswith("shifted_chebyshev"):
        at1, at0 = b.cmpf("OEQ", x, one), b.cmpf("OEQ", x, b.f(0.0))
        v1, v0 = {"shifted_chebyshev_t": (one, _sign_by_parity(b, ni, one)),
                  "shifted_chebyshev_u": (n1, _sign_by_parity(b, ni, n1)),
                  "shifted_chebyshev_v": (one, _sign_by_parity(b, ni, two_n1)),
                  "shifted_chebyshev_w": (two_n1, _sign_by_parity(b, ni, one))}[kind]
        return arith.ori(at1, at0), b.sel(at1, v1, v0)
    return None


def _closed_form(kind: str, b: _B, x, y, ni, nf):
    """(condition, value) of the trigonometric form of a Chebyshev kind, or None."""
    if kind not in _CLOSED_FORM_ABOVE:
        return None
    cond = arith.andi(b.cmpi("sgt", ni, b.i(_CLOSED_FORM_ABOVE[kind])), b.cmpf("OLT", math.absf(y), b.f(1.0)))
    theta = math.acos(y)
    base = kind.removeprefix("shifted_")
    if base == "chebyshev_t":
        return cond, math.cos(arith.mulf(nf, theta))
    if base == "chebyshev_u":
        n1 = b.fi(arith.addi(ni, b.i(1)))
        s = math.sin(theta)
        regular = arith.divf(math.sin(arith.mulf(n1, theta)), s)
        limit = arith.divf(arith.mulf(n1, math.cos(arith.mulf(n1, theta))), y)
        return cond, b.sel(b.cmpf("UNE", s, b.f(0.0)), regular, limit)
    half = arith.addf(nf, b.f(0.5))
    two_n1 = b.fi(arith.addi(arith.addi(ni, ni), b.i(1)))
    if base == "chebyshev_v":
        guard = math.sin(arith.divf(theta, b.f(2.0)))
        regular = arith.divf(math.cos(arith.mulf(half, theta)), math.cos(arith.divf(theta, b.f(2.0))))
        return cond, b.sel(b.cmpf("UNE", guard, b.f(1.0)), regular, _sign_by_parity(b, ni, two_n1))
    guard = math.cos(arith.divf(theta, b.f(2.0)))
    regular = arith.divf(math.sin(arith.mulf(half, theta)), math.sin(arith.divf(theta, b.f(2.0))))
    at_limit = _sign_by_parity(b, ni, b.f(1.0))
    if kind == "chebyshev_w":
        at_limit = b.sel(b.cmpf("OGT", x, b.f(0.0)), two_n1, at_limit)
    return cond, b.sel(b.cmpf("UNE", guard, b.f(1.0)), regular, at_limit)


def _first(kind: str, b: _B, x, y):
    """q0: the degree-1 value the recurrence starts from."""
    if kind in ("chebyshev_t", "shifted_chebyshev_t", "hermite_he", "legendre_p"):
        return y if kind.endswith("_t") else x
    if kind.endswith("chebyshev_u") or kind == "hermite_h":
        base = y if kind.endswith("chebyshev_u") else x
        return arith.addf(base, base)
    if kind.endswith("chebyshev_v"):
        return arith.subf(arith.addf(y, y), b.f(1.0))
    if kind.endswith("chebyshev_w"):
        return arith.addf(arith.addf(y, y), b.f(1.0))
    return arith.subf(b.f(1.0), x)   # laguerre_l


def _step(kind: str, b: _B, x, y, j, p, q):
    """r of step j (1-based), as Math.h writes it (its k: j, or 2j for hermite_h)."""
    if "chebyshev" in kind:
        return arith.subf(arith.mulf(arith.addf(y, y), q), p)
    if kind == "hermite_h":
        k = b.fi(arith.addi(j, j))
        return arith.subf(arith.mulf(arith.addf(x, x), q), arith.mulf(k, p))
    k = b.fi(j)
    if kind == "hermite_he":
        return arith.subf(arith.mulf(x, q), arith.mulf(k, p))
    k1 = b.fi(arith.addi(j, b.i(1)))
    if kind == "laguerre_l":
        a = arith.addf(b.fi(arith.addi(j, j)), arith.subf(b.f(1.0), x))
        return arith.divf(arith.subf(arith.mulf(a, q), arith.mulf(k, p)), k1)
    a = b.fi(arith.addi(arith.addi(j, j), b.i(1)))   # legendre_p
    return arith.divf(arith.subf(arith.mulf(arith.mulf(a, x), q), arith.mulf(k, p)), k1)


def _recurrence(kind: str, b: _B, x, y, q0, steps):
    """q after `steps` steps (fewer when q turns NaN, except Hermite's) from p = 1, q = q0."""
    t, i64 = b.t, b.i64
    loop = scf.WhileOp([i64, t, t], [b.i(1), b.f(1.0), q0])
    before = loop.before.blocks.append(i64, t, t)
    with ir.InsertionPoint(before):
        j, _, q = before.arguments
        go = b.cmpi("sle", j, steps)
        if not kind.startswith("hermite"):
            go = arith.andi(go, b.cmpf("ORD", q, q))
        scf.ConditionOp(go, list(before.arguments))
    after = loop.after.blocks.append(i64, t, t)
    with ir.InsertionPoint(after):
        j, p, q = after.arguments
        r = _step(kind, b, x, y, j, p, q)
        scf.YieldOp([arith.addi(j, b.i(1)), q, r])
    return loop.results[2]


def polynomial(kind: str, x: ir.Value, n: ir.Value) -> ir.Value:
    """The scalar value of `kind` at x of degree n (both of the float type)."""
    b = _B(x.type)
    ni = _degree(b, n)
    nf = b.fi(ni)
    y = arith.subf(arith.addf(x, x), b.f(1.0)) if kind.startswith("shifted") else x
    q0 = _first(kind, b, x, y)
    special = [(b.cmpi("slt", ni, b.i(0)), b.f(0.0))]
    edge = _edge(kind, b, x, ni, nf)
    if edge is not None:
        special.append(edge)
    closed = _closed_form(kind, b, x, y, ni, nf)
    if closed is not None:
        special.append(closed)
    special += [(b.cmpi("eq", ni, b.i(0)), b.f(1.0)), (b.cmpi("eq", ni, b.i(1)), q0)]
    if kind.startswith("hermite"):
        limit = _HERMITE_LIMIT.get(str(b.t), 1024)
        special.append((b.cmpi("sgt", ni, b.i(limit)), b.f(float("nan"))))
    # the recurrence only where no special case answers: its trip count is 0 elsewhere
    answered = special[0][0]
    for c, _ in special[1:]:
        answered = arith.ori(answered, c)
    steps = b.sel(answered, b.i(0), arith.subi(ni, b.i(1)))
    result = _recurrence(kind, b, x, y, q0, steps)
    for c, v in reversed(special):   # the first case that holds wins
        result = b.sel(c, v, result)
    return result


@lowering("orthogonal_polynomial")
def _lower_orthogonal_polynomial(op: ir.Operation) -> ir.Value:
    kind = ir.StringAttr(op.attributes["kind"]).value
    return _elementwise(list(op.operands), _rt(op.results[0]), lambda x, n: polynomial(kind, x, n))
