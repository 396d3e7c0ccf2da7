"""Channels-last library convolutions on the CPU (part of lamina-tile-cpu, after the choice
of library or loop nest: codegen/conv_library.py).

oneDNN, which runs the library convolutions, is much faster on NHWC operands than on NCHW
ones. On the project's 2-core AVX-512 host (f32, 8x64x56x56 input, medians of interleaved
rounds in one process, `torch.ops.aten.mkldnn_convolution`): a 3x3 convolution 12.1 ms on
NCHW tensors against 7.8 on NHWC ones, a 1x1 to 128 channels 19.3 against 3.4, a depthwise
3x3 12.9 against 0.8. This rewrite runs a convolution channels-last inside its kernel: the
kernel transposes its input and its result with the 8x8 vector tiles lamina-tile-cpu gives
a transpose of the last two dims:

    %xp = insert_slice %x into fill(0)           x [N, C, H, W] zero-padded
    %c  = generic {lamina.conv} ins(%xp, %w) outs(fill(0) [N, F, Ho, Wo])
  ->
    %xt = expand(transpose(collapse(%x) [N, C, H*W]) [N, H*W, C]) [N, H, W, C]
    %xp = insert_slice %xt into fill(0)          [N, Hp, Wp, C]
    %c' = generic {lamina.conv} ins(%xp, %w) outs(fill(0) [N, Ho, Wo, F])
    %c  = expand(transpose(collapse(%c') [N, Ho*Wo, F]) [N, F, Ho*Wo]) [N, F, Ho, Wo]

(grouped: x [N, Hp, Wp, G, Cg], the result [N, Ho, Wo, G, Fg]). The weight stays [F, Cg,
*K]: it is small, and oneDNN reorders it anyway. The generic's indexing maps show the layout
(channels the last result of the x and output maps), lamina-convolution-to-library passes
it to the call (its zero padding still folded into the call), and the callback views the
buffers as channels-last [N, C, *S] tensors. It runs after the kernel's elementwise fusion,
whose reshape propagation would fold the reshapes into 4-d transposes without vector tiles.

The choice is an attribute, `lamina.conv_layout = "channels_last" | "channels_first"` on the
convolution, set when absent; a convolution marked channels_last whose maps are still
channels-first is rewritten. channels_last needs an f32 convolution with 2 or 3 spatial dims
and static sizes but the batch, and is then the default (LAMINA_CONV_LAYOUT=channels_first
turns it off). bf16 and f16 stay channels-first: their transposes have no vector tiles yet.

What it costs: two transposes per convolution (the result's back to NCHW before the
epilogue), each a pass over the activation. They pay for themselves only with
lamina-cache-large-allocations (codegen/cached_allocations.py): without it the temporaries
they need came from fresh pages on every call. The result's transpose is folded into the
epilogue (lowering/transposed_epilogues.py), and between two convolutions the activation
stays NHWC across the kernel boundary (lowering/conv_activation_layouts.py), so that only a
graph's inputs and outputs are transposed.
"""
from __future__ import annotations

import os

from mlir import ir
from mlir.dialects import arith, linalg, tensor

from ..codegen.blas import is_library, is_zero_fill
from ..transforms.common import rebuild_generic
from ..transforms.registry import register_pass
from .to_linalg import _collapse, _expand, _one

LAYOUT_ATTR = "lamina.conv_layout"
CHANNELS_LAST, CHANNELS_FIRST = "channels_last", "channels_first"


def _conv_params(op) -> tuple[int, int]:
    """(spatial rank r, groups) of a lamina.conv generic."""
    conv = ir.DictAttr(op.attributes["lamina.conv"])
    return len(ir.DenseI64ArrayAttr(conv["stride"])), ir.IntegerAttr(conv["groups"]).value


def _channel_dims(op) -> int:
    """How many leading dims after the batch the channels take in x and the output: 1, or 2
    with groups ([G, Cg])."""
    return 2 if _conv_params(op)[1] > 1 else 1


def _maps(op) -> list[ir.AffineMap]:
    return [ir.AffineMapAttr(m).value for m in ir.ArrayAttr(op.attributes["indexing_maps"])]


def is_channels_last(op) -> bool:
    """The output map has the channels last: (d0, o..., d1[, d2])."""
    return str(_maps(op)[2].results[1]) != "d1"


def _default_layout(op) -> str:
    forced = os.environ.get("LAMINA_CONV_LAYOUT", "").strip().lower()
    if forced:
        if forced not in (CHANNELS_LAST, CHANNELS_FIRST):
            raise ValueError(f"LAMINA_CONV_LAYOUT={forced!r}: expected channels_last or channels_first")
        return forced if forced == CHANNELS_FIRST or _rewritable(op) else CHANNELS_FIRST
    return CHANNELS_LAST if _rewritable(op) else CHANNELS_FIRST


def _static_but_batch(v: ir.Value) -> bool:
    t = ir.RankedTensorType(v.type)
    return all(not t.is_dynamic_dim(i) for i in range(1, t.rank))


def _rewritable(op) -> bool:
    r, _ = _conv_params(op)
    x, _, out = list(op.operands)[:3]
    return (r in (2, 3) and str(ir.RankedTensorType(x.type).element_type) == "f32"
            and _static_but_batch(x) and _static_but_batch(out) and _fill_of_empty(out) is not None)


def _fill_of_empty(v: ir.Value):
    """The linalg.fill of a tensor.empty that `v` is, else None."""
    fill = v.owner if isinstance(v, ir.OpResult) else None
    if fill is None or fill.name != "linalg.fill":
        return None
    empty = fill.operands[1]
    return fill if isinstance(empty, ir.OpResult) and empty.owner.name == "tensor.empty" else None


def choose_layouts(library_convs) -> None:
    """Record the layout of every library convolution (a user's attribute wins)."""
    for op in library_convs:
        if LAYOUT_ATTR in op.attributes:
            layout = ir.StringAttr(op.attributes[LAYOUT_ATTR]).value
            if layout not in (CHANNELS_LAST, CHANNELS_FIRST):
                raise ValueError(f"{LAYOUT_ATTR} = {layout!r}: expected \"channels_last\" or \"channels_first\"")
            if layout == CHANNELS_LAST and not is_channels_last(op) and not _rewritable(op):
                raise ValueError(f"{LAYOUT_ATTR} = \"channels_last\" on a convolution lamina cannot run channels-last "
                                 "(f32, 2 or 3 spatial dims, static sizes but the batch, an init filled)")
        else:
            layout = CHANNELS_LAST if is_channels_last(op) else _default_layout(op)
            op.attributes[LAYOUT_ATTR] = ir.StringAttr.get(layout)


# ---- the rewrite --------------------------------------------------------------------------------

def _sizes(v: ir.Value) -> list:
    """Sizes of v: ints, and an index Value for a dynamic dim."""
    t = ir.RankedTensorType(v.type)
    out = []
    for i in range(t.rank):
        if t.is_dynamic_dim(i):
            out.append(tensor.dim(v, arith.constant(ir.IndexType.get(), i)))
        else:
            out.append(t.get_dim_size(i))
    return out


def _type(sizes, elem) -> ir.RankedTensorType:
    return ir.RankedTensorType.get([s if isinstance(s, int) else ir.ShapedType.get_dynamic_size() for s in sizes],
                                   elem)


def _expand_to(v: ir.Value, sizes, groups) -> ir.Value:
    """tensor.expand_shape of `v` to `sizes` (ints, or index Values for dynamic dims)."""
    return _expand(v, _type(sizes, ir.RankedTensorType(v.type).element_type), groups, sizes)


def _swap_last_two(v: ir.Value) -> ir.Value:
    """[A, B, C] -> [A, C, B] as a linalg.transpose (8x8 vector tiles in lamina-tile-cpu)."""
    a, b, c = _sizes(v)
    elem = ir.RankedTensorType(v.type).element_type
    init = tensor.empty([a, c, b], elem)
    return _one(linalg.transpose(v, outs=[init], permutation=[0, 2, 1]))


def _move_channels(sizes_or_exprs: list, nch: int, to_last: bool) -> list:
    """[N, ch..., s...] <-> [N, s..., ch...] (nch channel entries)."""
    if to_last:
        return [sizes_or_exprs[0]] + sizes_or_exprs[1 + nch:] + sizes_or_exprs[1:1 + nch]
    k = len(sizes_or_exprs) - nch
    return [sizes_or_exprs[0]] + sizes_or_exprs[k:] + sizes_or_exprs[1:k]


def _padded_source(xp: ir.Value):
    """(x, lo, hi) when xp is x inserted into a zero fill (lowering/convolution.py's padding),
    else (xp, 0s, 0s)."""
    rank = ir.RankedTensorType(xp.type).rank
    zeros = [0] * (rank - 2)
    ins = xp.owner if isinstance(xp, ir.OpResult) else None
    pad = _fill_of_empty(ins.operands[1]) if ins is not None and ins.name == "tensor.insert_slice" else None
    if pad is None or not is_zero_fill(pad):   # (the library pads with +0.0 only)
        return xp, zeros, zeros
    offsets = list(ir.DenseI64ArrayAttr(ins.attributes["static_offsets"]))
    strides = list(ir.DenseI64ArrayAttr(ins.attributes["static_strides"]))
    dyn = ir.ShapedType.get_dynamic_stride_or_offset()
    if any(o == dyn or o < 0 for o in offsets) or offsets[:2] != [0, 0] or any(s != 1 for s in strides):
        return xp, zeros, zeros
    x = ins.operands[0]
    xs, ps = ir.RankedTensorType(x.type), ir.RankedTensorType(xp.type)
    if any(xs.is_dynamic_dim(i) or ps.is_dynamic_dim(i) for i in range(2, rank)):
        return xp, zeros, zeros
    lo = offsets[2:]
    hi = [ps.get_dim_size(i) - xs.get_dim_size(i) - lo[i - 2] for i in range(2, rank)]
    return x, lo, hi


def _to_channels_last(x: ir.Value, r: int) -> ir.Value:
    """x [N, C, *S] -> [N, *S, C] (collapse, transpose of the last two dims, expand)."""
    s = _sizes(x)
    flat = _collapse(x, [[0], [1], list(range(2, 2 + r))])
    t = _swap_last_two(flat)
    return _expand_to(t, [s[0]] + s[2:] + [s[1]], [[0], list(range(1, 1 + r)), [1 + r]])


def _to_channels_first(v: ir.Value, r: int, nch: int) -> ir.Value:
    """v [N, *O, ch...] -> [N, ch..., *O] (collapse, transpose of the last two dims, expand)."""
    s = _sizes(v)
    flat = _collapse(v, [[0], list(range(1, 1 + r)), list(range(1 + r, 1 + r + nch))])
    t = _swap_last_two(flat)
    return _expand_to(t, _move_channels(s, nch, to_last=False),
                      [[0], list(range(1, 1 + nch)), list(range(1 + nch, 1 + nch + r))])


def rewrite_channels_last(op) -> None:
    """Rebuild one channels-first library convolution generic in channels-last form."""
    r, groups = _conv_params(op)
    nch = _channel_dims(op)
    xin, w, init = list(op.operands)[:3]
    elem_x = ir.RankedTensorType(xin.type).element_type
    with ir.InsertionPoint(op), op.location:
        xp = xin
        if nch == 2:   # the grouped view [N, G, Cg, *S] of the padded [N, C, *S]
            expand = xin.owner
            if not isinstance(xin, ir.OpResult) or expand.name != "tensor.expand_shape":
                raise ValueError("lamina-tile-cpu: a grouped convolution whose input is not an expand_shape")
            xp = expand.operands[0]
        x, lo, hi = _padded_source(xp)
        xcl = _to_channels_last(x, r)
        if any(lo) or any(hi):
            s = _sizes(xcl)
            padded = [s[0]] + [s[1 + i] + lo[i] + hi[i] for i in range(r)] + [s[-1]]
            zero = arith.constant(elem_x, ir.FloatAttr.get(elem_x, 0.0))
            filled = _one(linalg.fill(zero, outs=[tensor.empty(padded, elem_x)]))
            dyn = [v for v in s if not isinstance(v, int)]
            static = [v if isinstance(v, int) else ir.ShapedType.get_dynamic_size() for v in s]
            xcl = tensor.insert_slice(xcl, filled, [], dyn, [], [0] + lo + [0], static, [1] * (r + 2))
        if nch == 2:
            s = _sizes(xcl)
            cg = ir.RankedTensorType(xin.type).get_dim_size(2)
            xcl = _expand_to(xcl, s[:-1] + [groups, cg], [[i] for i in range(1 + r)] + [[1 + r, 2 + r]])
        out_sizes = _move_channels(_sizes(init), nch, to_last=True)
        acc = ir.RankedTensorType(init.type).element_type
        new_init = _one(linalg.fill(_fill_of_empty(init).operands[0], outs=[tensor.empty(out_sizes, acc)]))
        maps = _maps(op)
        x_map, w_map, o_map = maps
        L = x_map.n_dims
        new_maps = [ir.AffineMap.get(L, 0, _move_channels(list(x_map.results), nch, to_last=True)), w_map,
                    ir.AffineMap.get(L, 0, _move_channels(list(o_map.results), nch, to_last=True))]
        new = rebuild_generic(op, [new_init.type], [xcl, w], [new_init], new_maps)
        result = _to_channels_first(new.results[0], r, nch)
    op.results[0].replace_all_uses_with(result)
    op.erase()


def channels_last_convolutions(func_op) -> int:
    """Rewrite the kernel's library convolutions marked channels_last whose maps are still
    channels-first; returns how many were rewritten."""
    from ..codegen.conv_library import is_convolution   # (which imports this module)

    todo = [op for op in func_op.regions[0].blocks[0].operations
            if is_convolution(op) and is_library(op) and LAYOUT_ATTR in op.attributes
            and ir.StringAttr(op.attributes[LAYOUT_ATTR]).value == CHANNELS_LAST and not is_channels_last(op)]
    for op in todo:
        rewrite_channels_last(op)
    return len(todo)


@register_pass("lamina-conv-channels-last", level="L4",
               description="CPU, on kernels (linalg on tensors): record lamina.conv_layout on library convolutions "
                           "and rewrite those marked channels_last (transposed operands; lamina-tile-cpu runs it)")
def conv_channels_last_pass(module: ir.Module, **options) -> None:
    from ..codegen.conv_library import mark_convolutions
    from .kernel_abi import kernel_functions

    for func_op in kernel_functions(module):
        choose_layouts(mark_convolutions(func_op))
        channels_last_convolutions(func_op)
