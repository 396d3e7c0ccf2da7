"""lamina.scatter -> an scf.for over the updates (the indirect data movement family of
lamina-to-linalg; gathers are linalg.generic with tensor.extract, in to_linalg.py).

A scatter writes where its index says, so its iterations are not independent (duplicate
indices combine in order): it is a sequential loop carrying the destination tensor,

    scf.for %i = 0 to len(updates) iter_args(%d = dest) {
      %j = index[%i], %v = updates[%i]
      %d' = tensor.insert(reduce(%d[%j], %v), %d[%j])
    } {lamina.scatter = "<reduce>"}

which bufferizes in place on the CPU (one copy of dest, then the loop). The attribute
names the loop for targets that run it elsewhere (the cuda target: torch's index_put_ /
scatter_reduce_ in its launcher).
"""
from __future__ import annotations

from mlir import ir
from mlir.dialects import arith, scf, tensor

from lamina.dialect import ops

from .to_linalg import _dim, _idx, _is_float, _rt, _st, lowering

SCATTER_ATTR = "lamina.scatter"


def _combine(reduce: str, old: ir.Value, new: ir.Value) -> ir.Value:
    if reduce == "none":
        return new
    if _is_float(old.type):
        fn = {"add": arith.addf, "mul": arith.mulf, "max": arith.maximumf, "min": arith.minimumf}[reduce]
    else:
        fn = {"add": arith.addi, "mul": arith.muli, "max": arith.maxsi, "min": arith.minsi}[reduce]
    return fn(old, new)


@lowering("scatter")
def _lower_scatter(op: ir.Operation) -> ir.Value:
    dest, idx, upd = (_st(v) for v in op.operands)
    reduce = str(ops.attributes_of(op)["reduce"])
    n = _dim(upd, 0) if _rt(upd).is_dynamic_dim(0) else _idx(_rt(upd).shape[0])
    loop = scf.ForOp(_idx(0), n, _idx(1), [dest])
    with ir.InsertionPoint(loop.body):
        i = loop.induction_variable
        acc = loop.inner_iter_args[0]
        j = arith.index_cast(ir.IndexType.get(), tensor.extract(idx, [i]))
        v = tensor.extract(upd, [i])
        value = v if reduce == "none" else _combine(reduce, tensor.extract(acc, [j]), v)
        scf.YieldOp([tensor.insert(value, acc, [j])])
    loop.operation.attributes[SCATTER_ATTR] = ir.StringAttr.get(reduce)
    return loop.results[0]
