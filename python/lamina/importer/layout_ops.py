"""Layout ops composed of index_select, concat and slice:

    flip(x, dims)               index_select with n-1-iota along each dim
    constant_pad_nd(x, pad, v)  per dim (last first): slice for negative pads, concat with
                                a constant block of v for positive ones; a symbolic amount
                                (of a sign known only at run time) as a gather
"""
from __future__ import annotations

import torch

from ..dialect import ops
from ..dialect import symbols as S
from ..dialect import types as T
from .aten_ops import (_static_args, constant, constant_from_array, elem, meta_type, rank, register, shape, slice_,
                       symbolic_slice)


@register("aten.flip.default")
def _flip(imp, node, a):
    x = a.self
    if rank(x) == 0:
        return x
    for d in sorted({d % rank(x) for d in a.dims}):
        n = shape(x)[d]
        if isinstance(n, int) and n <= 1:
            continue
        i64 = T.element_type("i64")
        iota = ops.iota(result_type=T.tensor_type([n], i64))
        last = constant(n - 1, i64) if isinstance(n, int) else ops.sub(imp.size_value(n), constant(1, i64))
        x = ops.index_select(x, ops.sub(last, iota), dim=d)
    return x


def _size_arg(v) -> int | str:
    """An element of an int-list argument (a pad amount, a repeat count) as a lamina dim (a
    symbolic one arrives as a size node); UNKNOWN for anything else."""
    val = v.meta.get("val") if isinstance(v, torch.fx.Node) else v
    return S.dim_of(val) if isinstance(val, (int, torch.SymInt)) else S.UNKNOWN


def _size_list_check(what: str):
    """A converter check: every element of argument 1 is an int or a size."""
    def check(node):
        if any(_size_arg(v) == S.UNKNOWN for v in node.args[1]):
            return f"{what} that is neither an int nor a size"
        return None
    return check


def _fill_value(value, et):
    return value if T.is_float(et) else (bool(value) if T.is_bool(et) else int(value))


def _symbolic_pad(imp, x, d, lo, hi, value):
    """x padded along d by symbolic amounts of either sign (fft's s=(...) of a symbolic
    input: target - s): out[j] = x[j - lo] where 0 <= j - lo < n, else value, as a gather
    from x with one element of value appended (positions outside read it: nothing is read
    out of range, an empty x included)."""
    n = shape(x)[d]
    out_n = S.combine("+", S.combine("+", n, lo), hi)
    i64 = T.element_type("i64")
    block = list(shape(x))
    block[d] = 1
    padded = ops.concat(x, constant(_fill_value(value, elem(x)), elem(x), block), dim=d)
    src = ops.sub(ops.iota(result_type=T.tensor_type([out_n], i64)), imp.size_value(lo))
    size = imp.size_value(n)
    inside = ops.logical_and(ops.ge(src, constant(0, i64)), ops.lt(src, size))
    return ops.index_select(padded, ops.where(inside, src, size), dim=d)


@register("aten.constant_pad_nd.default", check=_size_list_check("a pad amount"), sizes_only=True)
def _constant_pad_nd(imp, node, a):
    x = a.self
    pad = [_size_arg(p) for p in node.args[1]]
    value = a.value if a.value is not None else 0
    et = elem(x)
    for i in range(len(pad) // 2):
        d = rank(x) - 1 - i
        lo, hi = pad[2 * i], pad[2 * i + 1]
        n = shape(x)[d]
        if isinstance(lo, str) or isinstance(hi, str):
            x = _symbolic_pad(imp, x, d, lo, hi, value)
            continue
        if lo < 0 or hi < 0:   # negative pads cut (torch checks the size stays >= 0)
            x = slice_(x, d, max(-lo, 0), n - max(-hi, 0)) if isinstance(n, int) else \
                symbolic_slice(x, d, str(max(-lo, 0)), str(S.combine("-", n, max(-hi, 0))))
        parts = []
        for amount in (lo, hi):
            if amount > 0:
                s = list(shape(x))
                s[d] = amount
                parts.append(constant(_fill_value(value, et), et, s))
            else:
                parts.append(None)
        if parts[0] is not None:
            x = ops.concat(parts[0], x, dim=d)
        if parts[1] is not None:
            x = ops.concat(x, parts[1], dim=d)
    return x


# ---- repeat, diagonal, unfold -----------------------------------------------------------------
#
#   repeat(x, r)          x reshaped to [1, s0, 1, s1, ...], broadcast to [r0, s0, r1, s1, ...],
#                         reshaped to [r0*s0, r1*s1, ...]
#   diagonal(x, o, d1, d2)  d1, d2 moved last and merged; the diagonal is a strided slice of
#                         that row (step n2 + 1) — static sizes along d1, d2
#   unfold(x, d, size, step)  index_select of the windows' positions along d, split into
#                         [count, size], the window dim moved last

@register("aten.repeat.default", check=_size_list_check("repeat by a count"))
def _repeat(imp, node, a):
    x = a.self
    reps = [_size_arg(r) for r in node.args[1]]   # (InstanceNorm repeats its weight by the batch)
    sizes = [1] * (len(reps) - rank(x)) + list(shape(x))
    et = elem(x)
    interleaved_one, interleaved = [], []
    for r, s in zip(reps, sizes):
        interleaved_one += [1, s]
        interleaved += [r, s]
    y = ops.reshape(x, result_type=T.tensor_type(interleaved_one, et)) if interleaved_one else x
    if interleaved != interleaved_one:
        y = ops.broadcast_to(y, result_type=T.tensor_type(interleaved, et))
    out = [S.combine("*", r, s) for r, s in zip(reps, sizes)]
    return ops.reshape(y, result_type=T.tensor_type(out, et))


@register("aten.diagonal.default")
def _diagonal(imp, node, a):
    x = a.self
    r = rank(x)
    d1, d2, off = a.dim1 % r, a.dim2 % r, int(a.offset)
    n1, n2 = shape(x)[d1], shape(x)[d2]
    want = meta_type(node)
    length = T.dims_of(want)[-1]
    et = elem(x)
    if length == 0:
        return constant(0, et, T.dims_of(want)) if all(isinstance(s, int) for s in T.dims_of(want)) \
            else ops.broadcast_to(constant(0, et), result_type=want)
    rest = [i for i in range(r) if i not in (d1, d2)]
    y = ops.transpose(x, perm=rest + [d1, d2]) if rest + [d1, d2] != list(range(r)) else x
    lead = [shape(x)[i] for i in rest]
    y = ops.reshape(y, result_type=T.tensor_type(lead + [S.combine("*", n1, n2)], et))
    if any(isinstance(n, str) for n in (n1, n2, length)):
        # a gather: the step n2 + 1 of the static sizes' strided slice is symbolic here
        i64 = T.element_type("i64")
        step = ops.add(imp.size_value(n2), constant(1, i64))
        start = constant(off, i64) if off >= 0 else ops.mul(constant(-off, i64), imp.size_value(n2))
        positions = ops.add(ops.mul(ops.iota(result_type=T.tensor_type([length], i64)), step), start)
        return ops.index_select(y, positions, dim=len(lead))
    start = off if off >= 0 else -off * n2
    y = ops.slice(y, dim=len(lead), start=start, end=start + (length - 1) * (n2 + 1) + 1, step=n2 + 1)
    return y


def _window_positions(count, size: int, step: int):
    """Positions along the unfolded dim, window by window ([count * size] i64): a constant
    table for a static count, iota arithmetic for a symbolic one."""
    import numpy as np

    i64 = T.element_type("i64")
    if isinstance(count, int):
        return constant_from_array((np.arange(count)[:, None] * step + np.arange(size)[None, :]).reshape(-1), i64)
    starts = ops.reshape(ops.mul(ops.iota(result_type=T.tensor_type([count], i64)), constant(step, i64)),
                         result_type=T.tensor_type([count, 1], i64))
    within = constant_from_array(np.arange(size).reshape(1, size), i64)
    return ops.reshape(ops.add(starts, within), result_type=T.tensor_type([S.combine("*", count, size)], i64))


@register("aten.unfold.default")
def _unfold(imp, node, a):
    x = a.self
    want = meta_type(node)
    et = elem(x)
    if rank(x) == 0:
        return ops.reshape(x, result_type=want)
    d = a.dimension % rank(x)
    size, step = int(a.size), int(a.step)
    count = T.dims_of(want)[d]
    if count == 0 or size == 0:
        return ops.broadcast_to(constant(0, et), result_type=want)
    y = ops.index_select(x, _window_positions(count, size, step), dim=d)
    sh = list(shape(x))
    y = ops.reshape(y, result_type=T.tensor_type(sh[:d] + [count, size] + sh[d + 1:], et))
    r = rank(y)
    perm = [i for i in range(r) if i != d + 1] + [d + 1]
    return ops.transpose(y, perm=perm) if perm != list(range(r)) else y


def _triangle_indices(lower: bool):
    """triu_indices / tril_indices of static sizes: a constant [2, n] table (row-major pairs,
    torch's order)."""
    def conv(imp, node, a):
        import numpy as np

        row, col, offset = a.row, a.col, a.get("offset", 0)
        rows, cols = (np.tril_indices if lower else np.triu_indices)(row, offset, col)
        table = np.stack([rows, cols]).astype(np.int64).reshape(2, -1)
        return constant_from_array(table, meta_type(node).element_type)
    return conv


register("aten.triu_indices.default", check=_static_args("row", "col", "offset"))(_triangle_indices(lower=False))
register("aten.tril_indices.default", check=_static_args("row", "col", "offset"))(_triangle_indices(lower=True))
