"""lamina.igamma_series -> an elementwise linalg.generic computing one of the sums torch's
igamma / igammac are made of (ATen's calc_igamma, after SciPy and Cephes), per element:

    lower_series        1 + x/(a+1) + x^2/((a+1)(a+2)) + ...        (DLMF 8.11.4)
    upper_series        sum_(n>=1) (-x)^n / (n! (a + n))            (DLMF 8.7.3)
    continued_fraction  the convergents of DLMF 8.9.2, rescaled when they grow past BIG
    asymptotic          Temme's sum_k c_k(eta) a^-k, c_k a polynomial in eta (DLMF 8.12.3)

The first three are an scf.while per element that stops when its last term is below the
type's epsilon (relative), after at most 2000 steps, as ATen's loops; an element whose
`active` is false starts with its step count at the limit and runs none (the importer,
importer/incomplete_gamma.py, asks each element for the one sum its regime needs). In the
asymptotic sum each c_k is a Horner polynomial of degree 24 in eta (ATen sums the powers,
stopping at a term below epsilon: the same value to rounding), and the sum over k stops,
through a flag, at the first term that grows or falls below epsilon, as ATen's; it runs in
a loop of one step where active (of none elsewhere), so other elements skip its ~1,300 flops.
"""
from __future__ import annotations

from mlir import ir
from mlir.dialects import arith, math, scf

from .igamma_coefficients import D
from .to_linalg import _const, _elementwise, _rt, lowering

_MAX_STEPS = 2000
_EPSILON = {"f32": 5.9604644775390625e-08, "f64": 1.11022302462515654042e-16}
_BIG = {"f32": 16777216.0, "f64": 4.503599627370496e15}
_BIG_INVERSE = {"f32": 5.9604644775390625e-08, "f64": 2.22044604925031308085e-16}


class _Scalar:
    """Builders of one float type's scalars (and the i64 step counter)."""

    def __init__(self, t: ir.Type):
        self.t, self.i64 = t, ir.IntegerType.get_signless(64)
        self.eps = self.f(_EPSILON[str(t)])

    def f(self, v: float) -> ir.Value:
        return _const(self.t, v)

    def i(self, v: int) -> ir.Value:
        return _const(self.i64, v)

    def true(self) -> ir.Value:
        return _const(ir.IntegerType.get_signless(1), 1)

    def cmpf(self, pred: str, a, b):
        return arith.cmpf(getattr(arith.CmpFPredicate, pred), a, b)

    def first_step(self, active: ir.Value, first: int) -> ir.Value:
        """The loop's first step number, or the limit (no step) where inactive."""
        return arith.select(active, self.i(first), self.i(_MAX_STEPS))

    def next_step(self, step: ir.Value, converged: ir.Value) -> ir.Value:
        return arith.select(converged, self.i(_MAX_STEPS), arith.addi(step, self.i(1)))


def _loop(s: _Scalar, inits: list[ir.Value], step_fn) -> list[ir.Value]:
    """scf.while over (step, *state) while step < 2000; step_fn(step, *state) -> (state, converged)."""
    types = [s.i64] + [v.type for v in inits[1:]]
    loop = scf.WhileOp(types, inits)
    before = loop.before.blocks.append(*types)
    with ir.InsertionPoint(before):
        go = arith.cmpi(arith.CmpIPredicate.slt, before.arguments[0], s.i(_MAX_STEPS))
        scf.ConditionOp(go, list(before.arguments))
    after = loop.after.blocks.append(*types)
    with ir.InsertionPoint(after):
        step, *state = after.arguments
        new, converged = step_fn(step, *state)
        scf.YieldOp([s.next_step(step, converged)] + list(new))
    return list(loop.results[1:])


def lower_series(s: _Scalar, a, x, active):
    """ATen's _igam_helper_series loop: ans = 1 + c_1 + c_2 + ..., c_i = c_(i-1) x / (a + i)."""
    def step(_, r, c, ans):
        r = arith.addf(r, s.f(1.0))
        c = arith.mulf(c, arith.divf(x, r))
        ans = arith.addf(ans, c)
        return [r, c, ans], s.cmpf("OLE", c, arith.mulf(s.eps, ans))
    return _loop(s, [s.first_step(active, 0), a, s.f(1.0), s.f(1.0)], step)[2]


def upper_series(s: _Scalar, a, x, active):
    """ATen's _igamc_helper_series loop: sum_(n>=1) fac_n / (a + n), fac_n = fac_(n-1) (-x / n)."""
    def step(n, fac, total):
        nf = arith.sitofp(s.t, n)
        fac = arith.mulf(fac, arith.divf(arith.negf(x), nf))
        term = arith.divf(fac, arith.addf(a, nf))
        total = arith.addf(total, term)
        return [fac, total], s.cmpf("OLE", math.absf(term), arith.mulf(s.eps, math.absf(total)))
    return _loop(s, [s.first_step(active, 1), s.f(1.0), s.f(0.0)], step)[1]


def continued_fraction(s: _Scalar, a, x, active):
    """ATen's _igamc_helper_continued_fraction loop: the last convergent p_k / q_k."""
    big, big_inverse = s.f(_BIG[str(s.t)]), s.f(_BIG_INVERSE[str(s.t)])
    y = arith.subf(s.f(1.0), a)
    z = arith.addf(arith.addf(x, y), s.f(1.0))
    pkm1, qkm1 = arith.addf(x, s.f(1.0)), arith.mulf(z, x)

    def step(_, c, y, z, pkm2, pkm1, qkm2, qkm1, ans):
        c, y, z = arith.addf(c, s.f(1.0)), arith.addf(y, s.f(1.0)), arith.addf(z, s.f(2.0))
        yc = arith.mulf(y, c)
        pk = arith.subf(arith.mulf(pkm1, z), arith.mulf(pkm2, yc))
        qk = arith.subf(arith.mulf(qkm1, z), arith.mulf(qkm2, yc))
        nonzero = s.cmpf("UNE", qk, s.f(0.0))
        r = arith.divf(pk, qk)
        t = arith.select(nonzero, math.absf(arith.divf(arith.subf(ans, r), r)), s.f(1.0))
        ans = arith.select(nonzero, r, ans)
        rescale = s.cmpf("OGT", math.absf(pk), big)
        shift = [pkm1, pk, qkm1, qk]   # pkm2, pkm1, qkm2, qkm1
        shift = [arith.select(rescale, arith.mulf(v, big_inverse), v) for v in shift]
        return [c, y, z, *shift, ans], s.cmpf("OLE", t, s.eps)
    inits = [s.first_step(active, 0), s.f(0.0), y, z, s.f(1.0), pkm1, x, qkm1, arith.divf(pkm1, qkm1)]
    return _loop(s, inits, step)[-1]


def asymptotic(s: _Scalar, a, eta, active):
    """ATen's sum over k < 25 of c_k(eta) a^-k, stopping before a term larger than the last,
    and after one below epsilon relative to the sum. Its 25 polynomials cost ~1,300 flops:
    they sit in a loop of one step (none where inactive), a branch on the CPU."""
    def once(_, total):
        total, afac, last, going = s.f(0.0), s.f(1.0), s.f(float("inf")), s.true()
        for row in D:
            ck = s.f(row[-1])
            for coefficient in reversed(row[:-1]):
                ck = arith.addf(arith.mulf(ck, eta), s.f(coefficient))
            term = arith.mulf(ck, afac)
            size = math.absf(term)
            going = arith.andi(going, s.cmpf("ULE", size, last))   # (stop where the term grew)
            total = arith.select(going, arith.addf(total, term), total)
            going = arith.andi(going, arith.xori(s.cmpf("OLT", size, arith.mulf(s.eps, math.absf(total))), s.true()))
            last = size
            afac = arith.divf(afac, a)
        return [total], s.true()
    return _loop(s, [s.first_step(active, 0), s.f(0.0)], once)[0]


_SUMS = {"lower_series": lower_series, "upper_series": upper_series,
         "continued_fraction": continued_fraction, "asymptotic": asymptotic}


@lowering("igamma_series")
def _lower_igamma_series(op: ir.Operation) -> ir.Value:
    fn = _SUMS[ir.StringAttr(op.attributes["kind"]).value]
    return _elementwise(list(op.operands), _rt(op.results[0]),
                        lambda a, v, active: fn(_Scalar(a.type), a, v, active))
