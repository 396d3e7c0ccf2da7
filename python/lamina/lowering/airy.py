"""lamina.airy_ai -> an elementwise generic computing torch's airy_ai_forward (Cephes,
ATen/native/Math.h) per element: rational approximations in 1/zeta for x >= 2.09 and in
1/zeta^2 (with sin/cos of the phase) for x < -2.09, 0 above 103.892, NaN at +-inf, and
between -2.09 and 2.09 the Maclaurin series summed by an scf.while until a term is below
the type's epsilon relative to the sum (ATen's loop; other elements run no step).
"""
from __future__ import annotations

import math as _pymath

from mlir import ir
from mlir.dialects import arith, math, scf

from .to_linalg import _const, _elementwise, _rt, lowering

# the coefficient tables of ATen's airy_ai_forward, highest power first
_AN = (
    0.346538101525629, 12.007595273964581, 76.27960536152345, 168.08922493463058,
    159.75639135016442, 70.53609068404442, 14.026469116338967, 1.0,
)
_AD = (
    0.5675945326387702, 14.75625625848472, 84.51389701414746, 177.31808814540045,
    164.2346928715297, 71.47784008255756, 14.095913560783403, 1.0,
)
_AFN = (
    -0.1316963234183318, -0.6264565444319123, -0.6931580360369335, -0.2797799815451191,
    -0.04919001326095003, -0.004062659235948854, -0.0001592764962392621, -2.776491081552329e-06,
    -1.6778769848911465e-08,
)
_AFD = (
    13.356042070655324, 32.682503279522464, 26.736704094149957, 9.187074029072596,
    1.4752914677166642, 0.11568717379518804, 0.004402916416152112, 7.547203482874142e-05,
    4.5185009297058035e-07,
)
_AGN = (
    0.01973399320916857, 0.39110302961568827, 1.0657989759959559, 0.9391692298166502,
    0.35146565610554764, 0.06338889196289255, 0.005858041130483885, 0.000282851600836737,
    6.98793669997261e-06, 8.117892395543892e-08, 3.415517847659236e-10,
)
_AGD = (
    9.30892908077442, 19.835292871831214, 15.564662893286462, 5.476860694229755,
    0.9542936116189619, 0.08645808263523921, 0.004126565238242226, 0.00010125908511650914,
    1.1716673321441352e-06, 4.9183457006293e-09,
)
_EPSILON = {"f32": 1.1920928955078125e-07, "f64": 2.220446049250313e-16}


def _horner(coefficients, v, t):
    """ATen's loop: acc = acc * v + c, from acc = 0 (the first step gives c0 exactly)."""
    acc = _const(t, coefficients[0])
    for c in coefficients[1:]:
        acc = arith.addf(arith.mulf(acc, v), _const(t, c))
    return acc


def _series(x, t):
    """f, g of the Maclaurin series (ATen's while loop); it runs where -2.09 <= x < 2.09."""
    c = lambda v: _const(t, v)  # noqa: E731
    in_domain = arith.andi(arith.cmpf(arith.CmpFPredicate.OGE, x, c(-2.09)),
                           arith.cmpf(arith.CmpFPredicate.OLT, x, c(2.09)))
    z = arith.mulf(arith.mulf(x, x), x)
    inits = [c(1.0), c(1.0), x, c(1.0), x, arith.select(in_domain, c(1.0), c(0.0))]   # k, m, n, f, g, t
    loop = scf.WhileOp([t] * 6, inits)
    before = loop.before.blocks.append(*([t] * 6))
    with ir.InsertionPoint(before):
        go = arith.cmpf(arith.CmpFPredicate.OGT, before.arguments[5], c(_EPSILON[str(t)]))
        scf.ConditionOp(go, list(before.arguments))
    after = loop.after.blocks.append(*([t] * 6))
    with ir.InsertionPoint(after):
        k, m, n, f, g, _ = after.arguments
        one = c(1.0)
        m = arith.mulf(m, z)
        k = arith.addf(k, one)
        m = arith.divf(m, k)
        n = arith.mulf(n, z)
        k = arith.addf(k, one)
        n = arith.divf(n, k)
        m = arith.divf(m, k)
        f = arith.addf(f, m)
        k = arith.addf(k, one)
        n = arith.divf(n, k)
        g = arith.addf(g, n)
        scf.YieldOp([k, m, n, f, g, math.absf(arith.divf(m, f))])
    return loop.results[3], loop.results[4]


def airy_ai(x: ir.Value) -> ir.Value:
    t = x.type
    c = lambda v: _const(t, v)  # noqa: E731
    # x < -2.09: the oscillating side
    w = arith.divf(arith.mulf(arith.mulf(c(-2.0), x), math.sqrt(arith.negf(x))), c(3.0))
    z = arith.divf(c(1.0), w)
    zz = arith.mulf(z, z)
    afn, afd, agn, agd = (_horner(k, zz, t) for k in (_AFN, _AFD, _AGN, _AGD))
    phase = arith.addf(w, arith.mulf(c(0.25), c(_pymath.pi)))
    amplitude = arith.divf(c(5.64189583547756286948e-01), math.sqrt(math.sqrt(arith.negf(x))))
    negative = arith.mulf(amplitude, arith.subf(
        arith.mulf(math.sin(phase), arith.addf(c(1.0), arith.divf(arith.mulf(arith.mulf(z, z), afn), afd))),
        arith.mulf(math.cos(phase), arith.divf(arith.mulf(z, agn), agd))))
    # x >= 2.09: the decaying side
    zeta = arith.divf(arith.mulf(arith.mulf(c(2.0), x), math.sqrt(x)), c(3.0))
    inv = arith.divf(c(1.0), zeta)
    an, ad = _horner(_AN, inv, t), _horner(_AD, inv, t)
    positive = arith.divf(arith.mulf(c(5.64189583547756286948e-01), arith.divf(an, ad)),
                          arith.mulf(arith.mulf(c(2.0), math.sqrt(math.sqrt(x))), math.exp(zeta)))
    f, g = _series(x, t)
    result = arith.subf(arith.mulf(c(0.355028053887817239260), f), arith.mulf(c(0.258819403792806798405), g))
    result = arith.select(arith.cmpf(arith.CmpFPredicate.OGE, x, c(2.09)), positive, result)
    result = arith.select(arith.cmpf(arith.CmpFPredicate.OLT, x, c(-2.09)), negative, result)
    result = arith.select(arith.cmpf(arith.CmpFPredicate.OGT, x, c(103.892)), c(0.0), result)
    is_inf = arith.cmpf(arith.CmpFPredicate.OEQ, math.absf(x), c(float("inf")))
    return arith.select(is_inf, c(float("nan")), result)


@lowering("airy_ai")
def _lower_airy_ai(op: ir.Operation) -> ir.Value:
    return _elementwise([op.operands[0]], _rt(op.results[0]), airy_ai)
