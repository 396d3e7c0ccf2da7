"""lamina-decompose (L3): expand composite lamina ops into lamina primitives.

    softmax(x, dim)     = e * reciprocal(reduce_sum(e, [dim], keepdim))     e = exp(x - reduce_max(x, [dim], keepdim))
    log_softmax(x, dim) = s - log(reduce_sum(exp(s), [dim], keepdim))   s = x - reduce_max(x, [dim], keepdim)

Both subtract the max first, so exp never overflows. The new ops take the composite op's
location (and its `lamina.kernel` attribute, so a fused kernel stays one kernel); a
`lamina.accumulate` on the composite op moves to its reduce_sum (lamina-to-linalg decides
from it how the denominator is accumulated).
`lamina-to-linalg` runs this pass itself; it is registered so that it can be run and
inspected on its own (`lamina-opt --lamina-decompose`).

    from lamina.transforms.decompose import decompose
    decompose(module)          # in place
"""
from __future__ import annotations

from mlir import ir

from lamina.dialect import infer, ops
from lamina.transforms.registry import register_pass

COMPOSITE_OPS = ("lamina.softmax", "lamina.log_softmax")
ACCUMULATE = "lamina.accumulate"  # see lamina-to-linalg: compensated or plain float sums


def _softmax_like(op: ir.Operation) -> list[ir.Value]:
    """Build the expansion before `op`; returns every new value, the replacement last."""
    x = op.operands[0]
    rank = ir.RankedTensorType(x.type).rank
    attrs = ops.attributes_of(op)
    dims = [infer.normalize_dim(int(attrs["dim"]), rank)] if rank else []
    m = ops.reduce_max(x, dims=dims, keepdim=True)
    s = ops.sub(x, m)
    e = ops.exp(s)
    z = ops.reduce_sum(e, dims=dims, keepdim=True)
    if op.name == "lamina.softmax":
        # e * (1/z), as ATen's softmax kernels compute it: one division per row, not per element.
        r = ops.reciprocal(z)
        return [m, s, e, z, r, ops.mul(e, r)]
    lz = ops.log(z)
    return [m, s, e, z, lz, ops.sub(s, lz)]


def _composite_ops(module: ir.Module) -> list[ir.Operation]:
    found = []

    def visit(op):
        if op.name in COMPOSITE_OPS:
            found.append(op.operation if hasattr(op, "operation") else op)
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    return found


def decompose(module: ir.Module) -> None:
    """Rewrite every lamina.softmax / lamina.log_softmax of `module` in place."""
    with module.context:
        for op in _composite_ops(module):
            with ir.InsertionPoint(op), op.location:
                new = _softmax_like(op)
            if "lamina.kernel" in op.attributes:
                for v in new:
                    v.owner.attributes["lamina.kernel"] = op.attributes["lamina.kernel"]
            if ACCUMULATE in op.attributes:  # the user's choice for the denominator's sum
                new[3].owner.attributes[ACCUMULATE] = op.attributes[ACCUMULATE]
            op.results[0].replace_all_uses_with(new[-1])
            op.erase()


@register_pass("lamina-decompose", level="L3",
               description="expand composite lamina ops (softmax, log_softmax) into lamina primitives")
def run(module: ir.Module, **options) -> None:
    decompose(module)
