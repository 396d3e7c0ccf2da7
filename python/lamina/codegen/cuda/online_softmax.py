"""Online softmax pairs: a max M over a row and a sum of exp(x - M) over the same row and the
same x (softmax, log_softmax, cross entropy). A looped or split Triton program computes the
two in one pass over x (a running max and a sum rescaled whenever the max grows: Milakov and
Gimelshein, "Online normalizer calculation for softmax", 2018) instead of one pass for the max
and a second one for the sum (triton_program._online_softmax).

The match is on the kernel's linalg: the sum's element, followed through the elementwise
generics that produce it, must be exactly `math.exp(arith.subf(x, M))`, with x the max's
element (followed the same way) and M the max's result read at the sum's row.
"""
from __future__ import annotations

from mlir import ir

from .triton_ir import _kinds, _maps, _owner

_MAX_DEPTH = 24   # producers followed per element (a guard: elementwise chains are short)


def online_softmax_pairs_of(emitter) -> dict:
    """online_softmax_pairs of the emitter's kernel (computed once a kernel)."""
    pairs = getattr(emitter, "_online_softmax_pairs", None)
    if pairs is None:
        pairs = emitter._online_softmax_pairs = online_softmax_pairs(emitter.k.func)
    return pairs


def online_softmax_pairs(func) -> dict:
    """{op: (max op, sum op)} for both ops of every pair in `func` (see the module's text)."""
    maxes, sums = [], []

    def visit(o):
        g = o.operation
        if g.name == "linalg.generic" and "reduction" in _kinds(g):
            if _max_element(g) is not None:
                maxes.append(g)
            elif sum_element(g) is not None:
                sums.append(g)
        return ir.WalkResult.ADVANCE
    func.operation.walk(visit)
    pairs: dict = {}
    for mx in maxes:
        x = _element_term(mx, _max_element(mx))
        if x is None or not _spans_every_loop(x, len(_kinds(mx))):
            continue
        row = ("in", mx.results[0], tuple(str(e) for e in _maps(mx)[-1].results))
        for sm in sums:
            if sm in pairs or _kinds(sm) != _kinds(mx) or _rows_of(sm) != _rows_of(mx):
                continue
            if _exp_of_difference(_element_term(sm, sum_element(sm))) == (x, row):
                pairs[mx] = pairs[sm] = (mx, sm)
                break
    return pairs


def _rows_of(g) -> list[str]:
    """The loops a reduction's output is indexed by, in order (keepdim's constant 0 left out):
    two reductions with the same loops and the same rows reduce into the same row values."""
    return [str(e) for e in _maps(g)[-1].results if not isinstance(e, ir.AffineConstantExpr)]


def _float_result(g) -> bool:
    return str(ir.RankedTensorType(g.results[0].type).element_type) in ("f32", "f64")


def _max_element(g):
    """The element a single-result float max reduction (arith.maximumf: NaN propagates)
    combines, or None."""
    if len(g.results) != 1 or not _float_result(g):
        return None
    block = g.regions[0].blocks[0]
    acc = block.arguments[len(block.arguments) - 1]
    y = next(o for o in block.operations if o.operation.name == "linalg.yield").operands[0]
    comb = _owner(y)
    if comb is None or comb.name != "arith.maximumf" or acc not in list(comb.operands):
        return None
    return [v for v in comb.operands if v != acc][0]


def sum_element(g):
    """The element a float sum reduction adds (a plain sum that yields its addition, or
    lamina-to-linalg's compensated pair), or None (also triton_program's Welford roles)."""
    if not _float_result(g):
        return None
    block = g.regions[0].blocks[0]
    acc = block.arguments[len(block.arguments) - 1]
    comb = next((o.operation for o in block.operations if acc in list(o.operands)), None)
    if comb is None or comb.name != "arith.addf":
        return None
    compensated = "lamina.accumulate" in g.attributes and \
        ir.StringAttr(g.attributes["lamina.accumulate"]).value == "compensated"
    y = next(o for o in block.operations if o.operation.name == "linalg.yield")
    if len(g.results) != (2 if compensated else 1) or (not compensated and y.operands[0] != comb.results[0]):
        return None
    return [v for v in comb.operands if v != acc][0]


def _element_term(g, v):
    """`v`, a value of reduction `g`'s body, as a nested tuple over g's loops, or None."""
    if v is None:
        return None
    n = len(_kinds(g))
    identity = ir.AffineMap.get_identity(n)
    return _term(g, v, identity, 0)


def _term(g, v, coords: ir.AffineMap, depth: int):
    """`v` of generic g's body, g's loops placed at `coords` (a map from the reduction's
    loops): ("in", tensor, indices) for an element of a tensor no elementwise generic
    produces, (op name, attributes, operand terms) for a body op; None when v reads an
    output, an index or a region op."""
    if depth > _MAX_DEPTH:
        return None
    block = g.regions[0].blocks[0]
    args = list(block.arguments)
    n_in = len(g.operands) - len(g.results)
    if isinstance(v, ir.BlockArgument):
        if v not in args[:n_in]:
            return None
        k = args.index(v)
        idx = [e.compose(coords) for e in _maps(g)[k].results]
        return _operand_term(g.operands[k], idx, coords.n_dims, depth)
    op = _owner(v)
    if op is None or op.regions or len(op.results) != 1 or op.name in ("linalg.index", "linalg.yield"):
        return None
    if op.name == "arith.constant":
        return ("const", str(op.attributes["value"]))
    operands = tuple(_term(g, x, coords, depth + 1) for x in op.operands)
    if any(t is None for t in operands):
        return None
    attrs = tuple(sorted((name, str(op.attributes[name])) for name in op.attributes))
    return (op.name, attrs, operands)


def _operand_term(t: ir.Value, idx: list, n_dims: int, depth: int):
    """The element of tensor `t` at `idx`: followed into the body of the elementwise generic
    that produces it (all loops parallel, one result, written in loop order)."""
    g = _owner(t)
    if g is not None and g.name == "linalg.generic" and len(g.results) == 1 \
            and all(k == "parallel" for k in _kinds(g)) and _maps(g)[-1] == ir.AffineMap.get_identity(len(_kinds(g))):
        y = next(o for o in g.regions[0].blocks[0].operations if o.operation.name == "linalg.yield").operands[0]
        return _term(g, y, ir.AffineMap.get(n_dims, 0, idx), depth + 1)
    return ("in", t, tuple(str(e) for e in idx))


def _spans_every_loop(term, n: int) -> bool:
    """Some tensor element of `term` is read at every loop as a plain index (so the tensor's
    shape fixes the loops' extents: two terms equal in it run over the same domain)."""
    def leaves(t):
        if t[0] == "in":
            yield t
        elif t[0] != "const":
            for x in t[2]:
                yield from leaves(x)
    return any(all(f"d{i}" in t[2] for i in range(n)) for t in leaves(term))


def _exp_of_difference(term):
    """(a, b) when `term` is exp(a - b) (whatever their fastmath flags), else None."""
    if term is None or term[0] != "math.exp" or term[2][0][0] != "arith.subf":
        return None
    return term[2][0][2]
