"""Out-of-range indices raise the error eager raises, instead of a clamped result.

The lowering clamps every index into its dim (importer/indexing.py: no access outside a
tensor, whatever the data), which alone would turn a user's bad index into a wrong result.
So the compiled graph checks, per call, the integer index tensors it takes as inputs (an
embedding's ids, a gather's or x[i]'s index, a scatter's positions: where bad indices come
from) against the size of the dim they index, and raises eager's exception and message.
One `aminmax` per index input (microseconds); CPU tensors only: on the GPU the check would
synchronize every call (Inductor asserts on the device instead), so there the clamp stands.

Indices computed inside the graph (an argmax, an arange, i * 1000) are not checked: they
stay clamped. Where several indices are out of range, the one named is the smallest or the
largest (eager names the first it meets).
"""
from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class IndexCheck:
    arg: int                   # position of the index tensor among the graph's inputs
    size: int                  # the indexed dim's size (static sizes only: else the clamp stands)
    negatives: bool            # -size <= i allowed (x[i], index_put) or not (embedding, gather, ...)
    error: type                # eager's exception type
    message: str               # eager's message ({value}, {size} filled in)

    def __call__(self, args) -> None:
        idx = args[self.arg]
        if idx.device.type != "cpu" or idx.numel() == 0:
            return
        lo, hi = (int(v) for v in torch.aminmax(idx))
        if lo < (-self.size if self.negatives else 0):
            raise self.error(self.message.format(value=lo, size=self.size))
        if hi >= self.size:
            raise self.error(self.message.format(value=hi, size=self.size))


_OUT_OF_BOUNDS = "index {value} is out of bounds for dimension {dim} with size {size}"


def _rules(node):
    """(index node, indexed node, dim, negatives, error, message) of one ATen node."""
    target = str(node.target)
    a = node.args
    if target in ("aten.index.Tensor", "aten.index_put.default", "aten.index_put_.default"):
        given = 0   # (eager numbers the dims among the index tensors given: x[:, i] says "dimension 0")
        for d, i in enumerate(a[1]):
            if i is not None:
                yield i, a[0], d, True, IndexError, _OUT_OF_BOUNDS.replace("{dim}", str(given))
                given += 1
    elif target == "aten.embedding.default":
        yield a[1], a[0], 0, False, IndexError, "index out of range in self"
    elif target == "aten.index_select.default":
        x = a[0].meta.get("val") if isinstance(a[0], torch.fx.Node) else None
        if isinstance(x, torch.Tensor) and x.dim() == 2 and a[1] % 2 == 1:   # (eager's dim-1 kernel)
            yield a[2], a[0], a[1], False, RuntimeError, "INDICES element is out of DATA bounds, id={value} axis_dim={size}"
        else:
            yield a[2], a[0], a[1], False, IndexError, "index out of range in self"
    elif target in ("aten.gather.default", "aten.scatter.src", "aten.scatter.value", "aten.scatter.reduce",
                    "aten.scatter.value_reduce", "aten.scatter_add.default", "aten.scatter_reduce.two"):
        yield a[2], a[0], a[1], False, RuntimeError, _OUT_OF_BOUNDS.replace("{dim}", str(a[1]))


def index_checks(gm: torch.fx.GraphModule) -> list[IndexCheck]:
    """The checks of `gm`'s integer index inputs (placeholders), in graph order."""
    position = {n: k for k, n in enumerate(n for n in gm.graph.nodes if n.op == "placeholder")}
    checks = []
    for node in gm.graph.nodes:
        if node.op != "call_function":
            continue
        for index, indexed, dim, negatives, error, message in _rules(node):
            if not isinstance(index, torch.fx.Node) or index not in position or not isinstance(indexed, torch.fx.Node):
                continue
            iv, xv = index.meta.get("val"), indexed.meta.get("val")
            if not isinstance(iv, torch.Tensor) or not isinstance(xv, torch.Tensor) \
                    or iv.dtype not in (torch.int64, torch.int32) or xv.dim() == 0:
                continue
            size = xv.shape[dim % xv.dim()]
            if isinstance(size, int):
                checks.append(IndexCheck(position[index], size, negatives, error, message))
    return list(dict.fromkeys(checks))
