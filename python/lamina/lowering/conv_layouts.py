"""lamina-plan-layouts (L4, after lamina-plan-memory): intermediates that only feed
convolutions live channels-last.

A target whose convolution library is fastest on NHWC tensors (cuDNN on an H100: about 2x
on 3x3 convolutions, and NCHW operands cost it a transposition each way) would otherwise
transpose every activation twice between two convolutions. This pass records the layout as
part of the memory plan: the buffer entry of such a result gets `layout = "channels_last"`
(the runtime makes its arena slice an [N, H, W, C] buffer seen as [N, C, H, W]), and the
producer's result and every consumer's argument get `lamina.layout = "strided"` (so
lamina-kernel-abi gives them strided memrefs and the code generator addresses them through
their strides, whatever the runtime passes):

    %0 = call @g_kernel_0(...) {lamina.buffers = [{arena = 0, bytes = 2304, layout = "channels_last"}]}

Conditions: a rank-4 or rank-5 arena buffer (not a graph output: the caller gets eager's
contiguous layout), every reader a kernel argument whose only uses are as the input of
`lamina.convolution`, and producer and readers each called once (the attributes are on the
kernel functions). Layouts are plain IR: `lamina-opt` shows them and a user may add or drop
one (the runtime allocates what the entry says; the strided kernels read any layout).
"""
from __future__ import annotations

from mlir import ir

from ..dialect import symbols as S
from ..transforms.registry import register_pass
from .kernel_abi import LAYOUT_ATTR, graph_functions
from .memory_plan import BUFFERS_ATTR

CHANNELS_LAST = "channels_last"


def _only_convolution_input(arg: ir.BlockArgument) -> bool:
    uses = list(arg.uses)
    return bool(uses) and all(u.owner.name == "lamina.convolution" and u.operand_number == 0 for u in uses)


def plan_layouts(module: ir.Module, graph_func) -> int:
    """Mark the channels-last buffers of one planned graph; returns how many."""
    kernels = {ir.StringAttr(op.attributes["sym_name"]).value: op for op in module.body.operations
               if op.operation.name == "func.func"}
    calls = [op.operation for op in graph_func.regions[0].blocks[0].operations if op.operation.name == "func.call"]

    def callee(c) -> str:
        return ir.FlatSymbolRefAttr(c.attributes["callee"]).value

    sites: dict[str, int] = {}   # (by name: the Python wrappers of one function are not one object)
    for c in calls:
        sites[callee(c)] = sites.get(callee(c), 0) + 1
    marked = 0
    for c in calls:
        producer = kernels.get(callee(c))
        if producer is None or sites[callee(c)] != 1 or BUFFERS_ATTR not in c.attributes:
            continue
        entries = list(ir.ArrayAttr(c.attributes[BUFFERS_ATTR]))
        changed = False
        for ri, r in enumerate(c.results):
            d = ir.DictAttr(entries[ri])
            if "arena" not in d or "layout" in d or not isinstance(r.type, ir.RankedTensorType) \
                    or ir.RankedTensorType(r.type).rank not in (4, 5):
                continue
            readers = []
            for u in r.uses:
                reader = u.owner
                k = kernels.get(callee(reader)) if reader.name == "func.call" else None
                if k is None or sites[callee(reader)] != 1 \
                        or not _only_convolution_input(k.regions[0].blocks[0].arguments[u.operand_number]):
                    readers = None
                    break
                readers.append((k, u.operand_number))
            if not readers:
                continue
            entries[ri] = ir.DictAttr.get({**{a.name: a.attr for a in d}, "layout": ir.StringAttr.get(CHANNELS_LAST)})
            strided = ir.StringAttr.get("strided")
            S.set_argument_attr(producer, ri, LAYOUT_ATTR, strided, kind="res_attrs")
            for k, j in readers:
                S.set_argument_attr(k, j, LAYOUT_ATTR, strided)
            changed = True
            marked += 1
        if changed:
            c.attributes[BUFFERS_ATTR] = ir.ArrayAttr.get(entries)
    return marked


@register_pass("lamina-plan-layouts", level="L4",
               description="after lamina-plan-memory: arena buffers that only feed convolution inputs live "
                           "channels-last (layout = \"channels_last\"; their kernel arguments strided)")
def plan_layouts_pass(module: ir.Module, **options) -> None:
    for g in graph_functions(module):
        plan_layouts(module, g)
