"""lamina-conv-activations-channels-last (CPU, kernels in linalg on tensors, before the ABI):
an intermediate that only feeds channels-last convolutions crosses the kernel boundary in
[N, *S, C] order.

A channels-last library convolution (conv_channels_last.py) transposes its input to
[N, *S, C] inside its kernel; when that input is another kernel's result, the producer has
just transposed its own channels-last result back to [N, C, *S] (folded into its epilogue,
transposed_epilogues.py). This pass moves the transpose across the boundary:

    K0: ... return %r : [N, C, H, W]          K0: ... return to_channels_last(%r) : [N, H, W, C]
    K1(%x : [N, C, H, W]): conv(pad(%x))  ->  K1(%x' : [N, H, W, C]): conv(pad(to_channels_first(%x')))

(the graph's call of K0 returns the new type; the arena slot keeps its size). lamina-tile-cpu
then cancels K1's pair of transposes (`cancel_transpose_pairs`) and writes K0's epilogue in
NHWC order (`unswap_transposed_outputs`): the activation is transposed neither way.

Conditions: K0 and K1 called once each, the value not a graph output, and every use of it a
K1 argument whose uses are all inputs of library convolutions marked channels_last (their
zero padding and grouped views in between), with static sizes. The decisions
(`lamina.contraction`, `lamina.conv_layout`) are recorded on the convolutions here, as
lamina-tile-cpu would, so that a user's attribute wins in both places.
"""
from __future__ import annotations

from mlir import ir
from mlir.dialects import func

from ..codegen.conv_library import is_convolution, mark_convolutions
from ..transforms.registry import register_pass
from .conv_channels_last import CHANNELS_LAST, LAYOUT_ATTR, _to_channels_first, _to_channels_last, choose_layouts
from .kernel_abi import graph_functions, kernel_functions


def _static(v: ir.Value) -> bool:
    t = ir.RankedTensorType(v.type) if isinstance(v.type, ir.RankedTensorType) else None
    return t is not None and t.rank in (4, 5) and all(not t.is_dynamic_dim(i) for i in range(t.rank)) \
        and str(t.element_type) == "f32"


def _channels_last_conv_input(v: ir.Value, padded: bool = False) -> bool:
    """Every use of `v` is the input of a library convolution marked channels_last, directly
    or through its zero padding (insert_slice into a fill) and then its grouped view
    (expand_shape). A grouped view of the unpadded argument is not taken: the kernel's
    elementwise fusion would fold it into the transpose in front of it, which the
    channels-last rewrite then no longer finds."""
    uses = list(v.uses)
    if not uses:
        return False
    for u in uses:
        op = u.owner
        if is_convolution(op):
            if u.operand_number != 0 or LAYOUT_ATTR not in op.attributes \
                    or ir.StringAttr(op.attributes[LAYOUT_ATTR]).value != CHANNELS_LAST:
                return False
        elif op.name == "tensor.insert_slice" and u.operand_number == 0 and not padded:
            if not _channels_last_conv_input(op.results[0], padded=True):
                return False
        elif op.name == "tensor.expand_shape" and padded:
            if not _channels_last_conv_input(op.results[0], padded=True):
                return False
        else:
            return False
    return True


def _set_function_type(f) -> None:
    block = f.regions[0].blocks[0]
    ret = [o for o in block.operations if o.operation.name == "func.return"][0]
    ftype = ir.FunctionType.get([a.type for a in block.arguments], [v.type for v in ret.operands])
    f.attributes["function_type"] = ir.TypeAttr.get(ftype)


def _retype_call(call, results: list[ir.Type]):
    """A copy of the func.call `call` with new result types (attributes kept); the old one
    is replaced and erased."""
    with ir.InsertionPoint(call), call.location:
        new = func.CallOp(results, ir.FlatSymbolRefAttr(call.attributes["callee"]), list(call.operands))
    for i in range(len(call.attributes)):
        named = call.attributes[i]
        if named.name != "callee":
            new.attributes[named.name] = named.attr
    for old, res in zip(call.results, new.results):
        old.replace_all_uses_with(res)
    call.erase()
    return new.operation


def plan_activation_layouts(module: ir.Module, graph_func) -> int:
    """Move the channels-last transposes of one graph's conv-only intermediates across their
    kernel boundaries; returns how many values were moved."""
    kernels = {ir.StringAttr(k.attributes["sym_name"]).value: k for k in kernel_functions(module)}
    for k in kernels.values():
        choose_layouts(mark_convolutions(k))
    block = graph_func.regions[0].blocks[0]
    calls = [op.operation for op in block.operations if op.operation.name == "func.call"]

    def callee(c) -> str:
        return ir.FlatSymbolRefAttr(c.attributes["callee"]).value

    sites: dict[str, int] = {}
    for c in calls:
        sites[callee(c)] = sites.get(callee(c), 0) + 1
    moved = 0
    for c in calls:
        producer = kernels.get(callee(c))
        if producer is None or sites[callee(c)] != 1:
            continue
        targets = []
        for ri, r in enumerate(c.results):
            if not _static(r):
                continue
            readers = []
            for u in r.uses:
                reader = u.owner
                k = kernels.get(callee(reader)) if reader.name == "func.call" else None
                arg = k.regions[0].blocks[0].arguments[u.operand_number] if k is not None else None
                if k is None or sites[callee(reader)] != 1 or not _channels_last_conv_input(arg):
                    readers = None
                    break
                readers.append(arg)
            if readers:
                targets.append((ri, readers))
        if not targets:
            continue
        ret = [o for o in producer.regions[0].blocks[0].operations if o.operation.name == "func.return"][0]
        for ri, readers in targets:
            r = ir.RankedTensorType(c.results[ri].type).rank - 2
            with ir.InsertionPoint(ret), ret.location:
                ret.operands[ri] = _to_channels_last(ret.operands[ri], r)
            for arg in readers:
                k = arg.owner.owner
                entry = arg.owner
                old_uses = list(arg.uses)
                arg.set_type(ret.operands[ri].type)
                with ir.InsertionPoint.at_block_begin(entry), k.location:
                    nchw = _to_channels_first(arg, r, 1)
                for u in old_uses:
                    u.owner.operands[u.operand_number] = nchw
                _set_function_type(k)
            moved += 1
        _set_function_type(producer)
        ftype = ir.FunctionType(ir.TypeAttr(producer.attributes["function_type"]).value)
        _retype_call(c, list(ftype.results))
    return moved


@register_pass("lamina-conv-activations-channels-last", level="L4",
               description="CPU, kernels in linalg on tensors: an intermediate that only feeds channels-last library "
                           "convolutions crosses the kernel boundary as [N, *S, C] (its producer transposes it, its "
                           "readers' transposes cancel in lamina-tile-cpu)")
def conv_activations_channels_last_pass(module: ir.Module, **options) -> None:
    for g in graph_functions(module):
        plan_activation_layouts(module, g)
