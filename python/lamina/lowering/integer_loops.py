"""lamina.gcd -> one elementwise linalg.generic whose body is Euclid's loop (an scf.while
per element), as torch's calc_gcd (ATen/native/Math.h):

    a, b = |a|, |b|;  while a != 0: a, b = b % a, a;  result b

(|INT_MIN| stays INT_MIN, as C++'s std::abs gives it; gcd(0, 0) = 0). Like the orthogonal
polynomials' recurrence, the loop makes the generic a body with a region: lamina-tile-cpu
keeps it scalar and the cuda target runs it for a block's largest trip count, masking the
lanes that are done.
"""
from __future__ import annotations

from mlir import ir
from mlir.dialects import arith, math, scf

from .to_linalg import _const, _elementwise, _rt, lowering


def gcd(a: ir.Value, b: ir.Value) -> ir.Value:
    t = a.type
    zero = _const(t, 0)
    loop = scf.WhileOp([t, t], [math.absi(a), math.absi(b)])
    before = loop.before.blocks.append(t, t)
    with ir.InsertionPoint(before):
        x, _ = before.arguments
        scf.ConditionOp(arith.cmpi(arith.CmpIPredicate.ne, x, zero), list(before.arguments))
    after = loop.after.blocks.append(t, t)
    with ir.InsertionPoint(after):
        x, y = after.arguments
        scf.YieldOp([arith.remsi(y, x), x])
    return loop.results[1]


@lowering("gcd")
def _lower_gcd(op: ir.Operation) -> ir.Value:
    return _elementwise(list(op.operands), _rt(op.results[0]), gcd)
