"""Converters of the indexing family (torch-mlir's IndirectDataMovement): advanced indexing
(`aten.index.Tensor`) and `gather`, both as one lamina.index_select of a flattened view.

    x[i0, i1]   (i0, i1 broadcast to B; indexed dims d0, d1 adjacent, of sizes n0, n1)
      = index_select(reshape(x, [..., n0 * n1, ...]), i0' * n1 + i1', dim=d0)   -> [..., *B, ...]
    gather(x, d, idx)[p] = flat(x)[idx[p] * stride_d + sum_{e != d} p_e * stride_e]

with i' the index wrapped (negative counts from the end) and clamped to [0, n): an index out
of range reads an element of x, never memory outside it. (Eager raises IndexError there;
lamina does not check yet: docs/ops.md.) Indexed dims that are not adjacent move to the
front first, where torch puts the broadcast index dims too. Sizes may be symbolic: strides
and positions are then computed from the graph's symbols (lamina.size, iotas) instead of
constant tables.
"""
from __future__ import annotations

import math

import numpy as np
import torch
from mlir import ir

from ..dialect import ops
from ..dialect import symbols as S
from ..dialect import types as T
from .aten_ops import cast, constant, constant_from_array, elem, meta_type, rank, register, shape, symbolic_slice, wrap_uint8

_I64 = "i64"


def _index_tensors(node) -> list:
    """The FakeTensors of aten.index.Tensor's `indices` (None where a dim is not indexed)."""
    return [None if t is None else t.meta.get("val") for t in node.args[1]]


def _index_check(node) -> str | None:
    x = node.args[0].meta.get("val")
    idx = _index_tensors(node)
    if any(t is not None and t.dtype in (torch.bool, torch.uint8) for t in idx):
        return "a boolean mask index (the result's size depends on the data)"
    if any(t is not None and not isinstance(t, torch.Tensor) for t in idx):
        return "an index that is not a tensor"
    for d, t in enumerate(idx):
        if t is not None and isinstance(x.shape[d], int) and x.shape[d] == 0 and not _empty(t.shape):
            return "an index into a dim of size 0 (eager raises IndexError)"
    return None


def _wrapped(index, size, imp=None):
    """`index` (any integer type) as i64 in [0, size): negative counts from the end, and an
    index out of range is clamped (a read inside x). A symbolic `size` needs the importer
    `imp` (its value is computed from the graph's symbols)."""
    i = cast(index, T.element_type(_I64))
    n = _size_tensor(imp, size)
    i = ops.where(ops.lt(i, constant(0, _I64)), ops.add(i, n), i)
    last = constant(max(size - 1, 0), _I64) if isinstance(size, int) else \
        ops.maximum(ops.sub(n, constant(1, _I64)), constant(0, _I64))
    return ops.minimum(ops.maximum(i, constant(0, _I64)), last)


def _size_tensor(imp, n) -> ir.Value:
    """A size, static or symbolic, as a rank-0 i64 tensor."""
    return constant(n, _I64) if isinstance(n, int) else imp.size_value(n)


def _strides(sizes) -> list:
    """Row-major strides of `sizes` (ints, or expressions where a size is symbolic)."""
    return [S.product(sizes[d + 1:]) for d in range(len(sizes))]


def _positions_along(imp, d: int, sizes, stride):
    """(position along dim d) * stride, as a [1, .., n_d, .., 1] i64 tensor (a table of
    constants when both are static; else an iota times the stride's value)."""
    r, n = len(sizes), sizes[d]
    line = [n if e == d else 1 for e in range(r)]
    if isinstance(n, int) and isinstance(stride, int):
        return constant_from_array(np.arange(n, dtype=np.int64).reshape(line) * stride, T.element_type(_I64))
    iota = ops.reshape(ops.iota(result_type=T.tensor_type([n], T.element_type(_I64))),
                       result_type=T.tensor_type(line, T.element_type(_I64)))
    return iota if stride == 1 else ops.mul(iota, _size_tensor(imp, stride))


def _empty(sizes) -> bool:
    """A shape known to hold no element (a static 0 among its sizes)."""
    return any(n == 0 for n in sizes if isinstance(n, int))


def _flatten_dims(x, start: int, count: int):
    """x with dims [start, start + count) merged into one."""
    s = shape(x)
    merged = s[:start] + [S.product(s[start:start + count])] + s[start + count:]
    return x if count == 1 else ops.reshape(x, result_type=T.tensor_type(merged, elem(x)))


def _indexed_dims(x, given):
    """(x, indices per dim of x, the indexed dims, perm): when the indexed dims are not
    adjacent, x transposed by `perm` so that they go first (as torch puts the index dims
    of the result first); else perm is None."""
    indices = list(given) + [None] * (rank(x) - len(given))
    positions = [d for d, t in enumerate(indices) if t is not None]
    if not positions or positions == list(range(positions[0], positions[-1] + 1)):
        return x, indices, positions, None
    perm = positions + [d for d in range(rank(x)) if d not in positions]
    return ops.transpose(x, perm=perm), [indices[d] for d in perm], list(range(len(positions))), perm


@register("aten.index.Tensor", check=_index_check)
def _index(imp, node, a):
    x, indices, positions, _ = _indexed_dims(a.self, a.indices)
    if not positions:
        return x
    start, sizes = positions[0], [shape(x)[d] for d in positions]
    flat = None
    for d, size in zip(positions, sizes):   # Horner: ((i0 * n1) + i1) * n2 + i2 ...
        i = _wrapped(indices[d], size, imp)
        flat = i if flat is None else ops.add(ops.mul(flat, _size_tensor(imp, size)), i)
    return ops.index_select(_flatten_dims(x, start, len(positions)), flat, dim=start)


def _gather_check(node) -> str | None:
    x, idx = node.args[0].meta.get("val"), node.args[2].meta.get("val")
    if node.kwargs.get("sparse_grad"):
        return "gather with sparse_grad"
    dim = node.args[1] % max(x.dim(), 1)
    if x.dim() and isinstance(x.shape[dim], int) and x.shape[dim] == 0 and not _empty(idx.shape):
        return "gather from a dim of size 0 (eager raises)"
    return None


@register("aten.gather.default", check=_gather_check)
def _gather(imp, node, a):
    return take_along_dim(a.self, a.index, a.dim, imp)


def take_along_dim(x, idx, dim: int, imp=None):
    """gather(x, dim, idx), indices wrapped and clamped into range (symbolic sizes need the
    importer `imp`)."""
    r = rank(x)
    if r == 0:   # a 0-d x: every index must be 0 (or -1); the value, in idx's shape
        return ops.broadcast_to(x, result_type=T.tensor_type(shape(idx), elem(x)))
    whole = ops.reshape(x, result_type=T.tensor_type([S.product(shape(x))], elem(x)))
    return ops.index_select(whole, _positions_along_dim(x, dim % r, idx, imp), dim=0)


# ---- scatters: index_put, scatter, scatter_add, scatter_reduce --------------------------------
# One lamina.scatter of x flattened to 1-D, the updates and their flat positions flattened
# in the same order (row-major over the update's shape): duplicates combine in that order,
# as eager's CPU kernels do.

_REDUCE = {"sum": "add", "add": "add", "prod": "mul", "multiply": "mul", "amax": "max", "amin": "min"}


def _scatter_flat(x, flat, updates, reduce: str):
    """lamina.scatter of `updates` into x at the flat positions `flat` (same shape)."""
    n = S.product(shape(flat))
    as_1d = lambda v: ops.reshape(v, result_type=T.tensor_type([n], elem(v)))   # noqa: E731
    whole = ops.reshape(x, result_type=T.tensor_type([S.product(shape(x))], elem(x)))
    out = ops.scatter(whole, as_1d(flat), as_1d(updates), reduce=reduce)
    return ops.reshape(out, result_type=x.type)


def _iota_offsets(flat, dims, sizes, strides, imp=None):
    """flat + sum over `dims` of (position along d) * strides[d], broadcast [1, n_d, 1] terms."""
    for d in dims:
        if sizes[d] == 1 or strides[d] == 0:
            continue
        flat = ops.add(flat, _positions_along(imp, d, sizes, strides[d]))
    return flat


def _mask_put_check(x, indices, values) -> str | None:
    """A boolean mask index: x[mask] = values with the mask the only index (None before it)."""
    given = [d for d, t in enumerate(indices) if t is not None]
    mask = indices[given[0]]
    p, m = given[0], mask.dim()
    if len(given) != 1 or any(not isinstance(s, int) for s in mask.shape) or tuple(mask.shape) != tuple(x.shape[p:p + m]):
        return "index_put with a boolean mask among other indices (data-dependent positions)"
    if not isinstance(values, torch.Tensor) or values.dim() > x.dim() - m + 1 \
            or any(not isinstance(s, int) for s in values.shape):
        return "index_put with a boolean mask and values of another rank"
    return None


def _index_put_check(node) -> str | None:
    x = node.args[0].meta.get("val")
    indices = [None if t is None else t.meta.get("val") for t in node.args[1]]
    if any(v is not None and v.dtype in (torch.bool, torch.uint8) for v in indices):
        if any(not isinstance(s, int) for s in x.shape):
            return "index_put with a boolean mask and symbolic sizes (not supported yet)"
        bad = _mask_put_check(x, indices, node.args[2].meta.get("val") if isinstance(node.args[2], torch.fx.Node) else None)
        if bad or (x.dtype == torch.bool and len(node.args) > 3 and node.args[3]):
            return bad or "index_put accumulating bools"
        return None
    if x.dtype == torch.bool and len(node.args) > 3 and node.args[3]:
        return "index_put accumulating bools"
    return None


def _true_ranks(flat_mask):
    """k at the k-th True of a 1-D mask (row-major, eager's nonzero order): cumsum(mask) - 1."""
    from .scans import inclusive_cumsum

    return ops.sub(inclusive_cumsum(cast(flat_mask, _elem_i64())), constant(1, _I64))


def _mask_put(x, p: int, mask, values, accumulate: bool):
    """x[(:,) * p + (mask,)] = values (+= with accumulate), with no data-dependent shape: the
    mask's k-th True (row-major, the order of eager's nonzero) takes the values' k-th row
    along the selected dim (k = cumsum(mask) - 1; values of size 1 there broadcast), and
    a where keeps x elsewhere. (Eager raises when the count of Trues does not match the
    values; lamina's gather clamps k: a read inside the values.)"""
    xs, ms = shape(x), shape(mask)
    m, post = len(ms), xs[p + len(ms):]
    count = math.prod(ms)
    if math.prod(xs) == 0:
        return x
    if str(elem(mask)) != "i1":   # (a uint8 mask)
        mask = ops.ne(mask, constant(0, elem(mask)))
    values = cast(values, elem(x))
    region = [1] * (p + 1 + len(post) - rank(values)) + shape(values)   # values over pre + [K] + post
    values = ops.reshape(values, result_type=T.tensor_type(region, elem(x)))
    k_size = region[p]
    if k_size == 1:   # one row for every True: broadcast it over the mask's dims
        taken = ops.reshape(values, result_type=T.tensor_type(region[:p] + [1] * m + region[p + 1:], elem(x)))
    else:
        full = xs[:p] + [k_size] + post
        if region != full:
            values = ops.broadcast_to(values, result_type=T.tensor_type(full, elem(x)))
        flat_mask = ops.reshape(mask, result_type=T.tensor_type([count], elem(mask)))
        taken = ops.index_select(values, _wrapped(_true_ranks(flat_mask), k_size), dim=p)   # pre + [count] + post
        taken = ops.reshape(taken, result_type=T.tensor_type(xs, elem(x)))
    if shape(taken) != xs:
        taken = ops.broadcast_to(taken, result_type=T.tensor_type(xs, elem(x)))
    mask = ops.reshape(mask, result_type=T.tensor_type([1] * p + ms + [1] * len(post), elem(mask)))
    mask = ops.broadcast_to(mask, result_type=T.tensor_type(xs, elem(mask))) if shape(mask) != xs else mask
    return ops.where(mask, ops.add(x, taken) if accumulate else taken, x)


@register("aten.index_put.default", check=_index_put_check)
def _index_put(imp, node, a):
    given = [(d, t) for d, t in enumerate(node.args[1]) if t is not None]
    if len(given) == 1 and given[0][1].meta["val"].dtype in (torch.bool, torch.uint8):
        return _mask_put(a.self, given[0][0], a.indices[given[0][0]], a["values"], bool(a.accumulate))
    x, indices, positions, perm = _indexed_dims(a.self, a.indices)
    if not positions:
        return x
    xs = shape(x)
    strides = _strides(xs)
    start, k = positions[0], len(positions)
    flat = None   # the indexed dims' part of the flat position, in the broadcast index shape
    for d in positions:
        part = _wrapped(indices[d], xs[d], imp)
        part = part if strides[d] == 1 else ops.mul(part, _size_tensor(imp, strides[d]))
        flat = part if flat is None else ops.add(flat, part)
    bshape = shape(flat)
    # the updated region x[indices] has shape pre + B + post: lay flat out in it
    pre, post = xs[:start], xs[start + k:]
    region = pre + bshape + post
    flat = ops.reshape(flat, result_type=T.tensor_type([1] * len(pre) + bshape + [1] * len(post), _elem_i64()))
    others = list(range(len(pre))) + list(range(len(pre) + len(bshape), len(region)))
    region_strides = [strides[d] for d in range(len(pre))] + [0] * len(bshape) + [strides[start + k + j] for j in range(len(post))]
    flat = ops.broadcast_to(flat, result_type=T.tensor_type(region, _elem_i64())) if shape(flat) != region else flat
    flat = _iota_offsets(flat, others, region, region_strides, imp)
    values = cast(a["values"], elem(x))   # (a.values is dict.values)
    if shape(values) != region:
        values = ops.broadcast_to(values, result_type=T.tensor_type(region, elem(x)))
    out = _scatter_flat(x, flat, values, "add" if a.accumulate else "none")
    if perm is not None:
        inverse = [perm.index(d) for d in range(len(perm))]
        out = ops.transpose(out, perm=inverse)
    return out


def _elem_i64():
    return T.element_type(_I64)


def _positions_along_dim(x, dim: int, idx, imp=None):
    """Flat positions in x of gather(x, dim, idx) and scatter(x, dim, idx, ...): idx at
    `dim`, the element's own position elsewhere."""
    r = rank(x)
    xs, ishape = shape(x), shape(idx)
    strides = _strides(xs)
    flat = _wrapped(idx, xs[dim], imp)
    if strides[dim] != 1:
        flat = ops.mul(flat, _size_tensor(imp, strides[dim]))
    return _iota_offsets(flat, [d for d in range(r) if d != dim], ishape, strides, imp)


def _src_region(src, ishape):
    """The leading index-shaped block of src (scatter reads only that much of it)."""
    from .aten_ops import slice_, symbolic_slice

    for d, n in enumerate(ishape):
        have = shape(src)[d]
        if not S.equivalent(have, n):   # (torch checks n <= have)
            src = slice_(src, d, 0, n) if isinstance(have, int) and isinstance(n, int) else \
                symbolic_slice(src, d, "0", str(n))
    return src


def _scatter_check(node) -> str | None:
    x, idx = node.args[0].meta.get("val"), node.args[2].meta.get("val")
    reduce = node.kwargs.get("reduce", node.args[4] if len(node.args) > 4 else None)
    if reduce is not None and reduce not in _REDUCE and reduce != "mean":
        return f"scatter reduce={reduce!r}"
    if x.dtype == torch.bool and reduce is not None:
        return "a scatter reduction of bools"
    if x.dim() == 0 and any(not isinstance(n, int) for n in idx.shape):
        return "a scatter into a 0-d tensor at indices of symbolic shape (not supported yet)"
    if x.dim() == 0 or _empty(idx.shape):
        return None
    dim = node.args[1] % x.dim()
    if isinstance(x.shape[dim], int) and x.shape[dim] == 0:
        return "a scatter into a dim of size 0 (eager raises)"
    return None


@register("aten.scatter.src", "aten.scatter.value", "aten.scatter.reduce", "aten.scatter.value_reduce",
          "aten.scatter_add.default", check=_scatter_check)
def _scatter(imp, node, a):
    x, idx = a.self, a.index
    if rank(x) == 0 or _empty(shape(idx)):
        return _scatter_0d(x, a, node) if rank(x) == 0 and not _empty(shape(idx)) else x
    dim = a.dim % rank(x)
    src = a.get("src")
    if src is None:
        src = ops.broadcast_to(constant(a.value, elem(x)), result_type=T.tensor_type(shape(idx), elem(x)))
    else:
        src = cast(_src_region(src, shape(idx)), elem(x))
    if "scatter_add" in str(node.target):
        reduce = "add"
    else:
        reduce = _REDUCE[a.reduce] if a.get("reduce") else "none"
    return _scatter_flat(x, _positions_along_dim(x, dim, idx, imp), src, reduce)


def _scatter_0d(x, a, node):
    """A 0-d x: every index addresses it; the reduction of the updates (or the last one)."""
    src = a.get("src")
    src = constant(a.value, elem(x)) if src is None else cast(src, elem(x))
    whole = ops.reshape(x, result_type=T.tensor_type([1], elem(x)))
    n = math.prod(shape(a.index))
    upd = ops.reshape(_src_region(src, shape(a.index)) if rank(src) else
                      ops.broadcast_to(src, result_type=T.tensor_type(shape(a.index), elem(x))),
                      result_type=T.tensor_type([n], elem(x)))
    reduce = "add" if "scatter_add" in str(node.target) else (_REDUCE[a.reduce] if a.get("reduce") else "none")
    out = ops.scatter(whole, constant_from_array(np.zeros(n, dtype=np.int64), _elem_i64()), upd, reduce=reduce)
    return ops.reshape(out, result_type=x.type)


_IDENTITY = {"add": 0, "mul": 1, "max": float("-inf"), "min": float("inf")}


def _identity(reduce: str, et):
    v = _IDENTITY[reduce]
    if not T.is_float(et) and reduce in ("max", "min"):
        info = torch.iinfo(T.name_to_torch_dtype(str(et)))
        v = info.min if reduce == "max" else info.max
    return constant(v, et)


@register("aten.scatter_reduce.two", check=_scatter_check)
def _scatter_reduce(imp, node, a):
    x, idx = a.self, a.index
    if _empty(shape(idx)):
        return x
    uint8 = node.meta["val"].dtype == torch.uint8
    if rank(x) == 0:   # every index addresses the one element: as 1-D
        return _as_0d(_scatter_reduce_into(_as_1d(x), 0, _as_1d(idx), _as_1d(a.src), a.reduce, a.include_self,
                                           uint8=uint8))
    return _scatter_reduce_into(x, a.dim % rank(x), idx, a.src, a.reduce, a.include_self, imp, uint8=uint8)


def _as_1d(v):
    return ops.reshape(v, result_type=T.tensor_type([S.product(shape(v))], elem(v)))


def _as_0d(v):
    return ops.reshape(v, result_type=T.tensor_type([], elem(v)))


def _scatter_reduce_into(x, dim: int, idx, src, reduce_name: str, include_self: bool, imp=None,
                         uint8: bool = False):
    """scatter_reduce(x, dim, idx, src, reduce_name, include_self) for a rank >= 1 x (`uint8`:
    x holds torch.uint8 values, in i16: a mean's sum wraps before the division, as torch's)."""
    et = elem(x)
    src = cast(_src_region(src, shape(idx)), et)
    pos = _positions_along_dim(x, dim, idx, imp)
    mean = reduce_name == "mean"
    reduce = "add" if mean else _REDUCE[reduce_name]
    base = x
    if not include_self:   # the positions any update reaches start from the identity
        touched = _scatter_flat(ops.broadcast_to(constant(0, "i8"), result_type=T.tensor_type(shape(x), T.element_type("i8"))),
                                pos, ops.broadcast_to(constant(1, "i8"), result_type=T.tensor_type(shape(idx), T.element_type("i8"))),
                                "none")
        touched = ops.ne(touched, constant(0, "i8"))
        base = ops.where(touched, ops.broadcast_to(_identity(reduce, et), result_type=x.type), x)
    out = _scatter_flat(base, pos, src, reduce)
    if mean:   # sum / count, the count including self when include_self; integers floor (as torch)
        ones = ops.broadcast_to(constant(1, et), result_type=T.tensor_type(shape(idx), et))
        start = constant(1 if include_self else 0, et)
        count = _scatter_flat(ops.broadcast_to(start, result_type=x.type), pos, ones, "add")
        divide = ops.div if T.is_float(et) else ops.div_floor
        if uint8:
            out = wrap_uint8(out)
        out = ops.where(ops.gt(count, constant(0, et)), divide(out, ops.maximum(count, constant(1, et))), out)
    return out


def _index_reduce_check(node) -> str | None:
    x, idx, src = (node.args[i].meta.get("val") for i in (0, 2, 3))
    if any(not isinstance(v, int) for t in (x, idx, src) for v in t.shape):
        return "index_reduce with symbolic sizes (not supported yet)"
    if x.dtype == torch.bool:
        return "index_reduce of bools"
    return None


@register("aten.index_reduce.default", check=_index_reduce_check)
def _index_reduce(imp, node, a):
    """x[.., index[i], ..] (reduce)= source[.., i, ..]: scatter_reduce with the index laid
    along `dim` of source's shape."""
    x, src = a.self, a.source
    if math.prod(shape(src)) == 0:
        return x
    uint8 = node.meta["val"].dtype == torch.uint8
    if rank(x) == 0:   # every index addresses the one element: as 1-D
        return _as_0d(_scatter_reduce_into(_as_1d(x), 0, _as_1d(a.index), _as_1d(src), a.reduce, a.include_self,
                                           uint8=uint8))
    dim = a.dim % rank(x)
    k = shape(a.index)[0] if rank(a.index) else 1
    line = ops.reshape(cast(a.index, _elem_i64()), result_type=T.tensor_type(
        [k if d == dim else 1 for d in range(rank(src))], _elem_i64()))
    idx = ops.broadcast_to(line, result_type=T.tensor_type(shape(src), _elem_i64()))
    return _scatter_reduce_into(x, dim, idx, src, a.reduce, a.include_self, uint8=uint8)


@register("aten.diagonal_scatter.default")
def _diagonal_scatter(imp, node, a):
    """src written over the diagonal (torch.diagonal(x, offset, dim1, dim2)'s elements) of x:
    their flat positions and one scatter. Static sizes: a table (numpy's diagonal has torch's
    layout); symbolic ones (a diagonal's backward under dynamic=True): iotas along src's
    dims times x's row-major strides, the diagonal's k-th element at
    (k + max(0, -offset), k + max(0, offset)) of (dim1, dim2)."""
    x, src = a.self, a.src
    xs = shape(x)
    r = len(xs)
    d1, d2 = a.dim1 % r, a.dim2 % r
    off = int(a.offset)
    src = cast(src, elem(x))
    if all(isinstance(n, int) for n in xs):
        positions = np.arange(math.prod(xs), dtype=np.int64).reshape(xs)
        diag = np.diagonal(positions, offset=off, axis1=d1, axis2=d2)   # numpy: the same layout as torch
        if diag.size == 0:
            return x
        return _scatter_flat(x, constant_from_array(np.ascontiguousarray(diag), _elem_i64()), src, "none")
    ss = shape(src)   # [the other dims of x in order..., the diagonal's length]
    if _empty(ss):
        return x
    strides = _strides(xs)
    rest = [d for d in range(r) if d not in (d1, d2)]
    flat = _positions_along(imp, len(ss) - 1, ss, S.combine("+", strides[d1], strides[d2]))
    for steps, stride in ((max(0, -off), strides[d1]), (max(0, off), strides[d2])):
        if steps:   # the diagonal's first element
            flat = ops.add(flat, _size_tensor(imp, S.combine("*", steps, stride)))
    for i, d in enumerate(rest):
        if ss[i] != 1:
            flat = ops.add(flat, _positions_along(imp, i, ss, strides[d]))
    flat = ops.broadcast_to(flat, result_type=T.tensor_type(ss, _elem_i64()))
    return _scatter_flat(x, flat, src, "none")


# ---- put, masked_scatter ---------------------------------------------------------------------

def _static_self_check(what):
    def check(node) -> str | None:
        for arg in node.args[:3]:
            v = arg.meta.get("val") if isinstance(arg, torch.fx.Node) else None
            if isinstance(v, torch.Tensor) and any(not isinstance(s, int) for s in v.shape):
                return f"{what} with symbolic sizes (not supported yet)"
        x = node.args[0].meta.get("val")
        if x is not None and x.dtype == torch.bool and what == "put" and node.kwargs.get("accumulate"):
            return "put accumulating bools"
        return None
    return check


@register("aten.put.default", check=_static_self_check("put"))
def _put(imp, node, a):
    """x.flatten()[index] = source (accumulate: +=), index wrapped and clamped like index_put."""
    x = a.self
    n = math.prod(shape(x))
    if n == 0 or math.prod(shape(a.index)) == 0:
        return x
    # index and source have one element count (eager checks): _scatter_flat flattens both
    return _scatter_flat(x, _wrapped(a.index, n), cast(a.source, elem(x)), "add" if a.accumulate else "none")


@register("aten.masked_scatter.default", check=_static_self_check("masked_scatter"))
def _masked_scatter(imp, node, a):
    """out = x, with the k-th True of mask (row-major, mask broadcast to x) taking
    source.flatten()[k]: k = cumsum(mask) - 1 (a scan), a gather from source, a where.
    (Eager raises when source is too short; lamina's gather clamps: a read inside source.)"""
    xs = T.dims_of(meta_type(node))   # self and mask broadcast together
    x = a.self if shape(a.self) == xs else ops.broadcast_to(a.self, result_type=T.tensor_type(xs, elem(a.self)))
    n = math.prod(xs)
    s = math.prod(shape(a.source))
    if n == 0 or s == 0:
        return x
    mask = a.mask if shape(a.mask) == xs else ops.broadcast_to(a.mask, result_type=T.tensor_type(xs, elem(a.mask)))
    flat_mask = ops.reshape(mask, result_type=T.tensor_type([n], elem(mask)))
    k = _true_ranks(flat_mask)
    source = ops.reshape(cast(a.source, elem(x)), result_type=T.tensor_type([s], elem(x)))
    taken = ops.index_select(source, _wrapped(k, s), dim=0)
    out = ops.where(flat_mask, taken, ops.reshape(x, result_type=T.tensor_type([n], elem(x))))
    return ops.reshape(out, result_type=x.type)


# ---- embedding_bag ---------------------------------------------------------------------------

def _embedding_bag_check(node) -> str | None:
    w = node.args[0].meta.get("val")
    if isinstance(w, torch.Tensor) and any(not isinstance(s, int) for s in w.shape):
        return "embedding_bag of a weight of symbolic size (not supported yet)"
    idx = node.args[1].meta.get("val")
    if idx is not None and idx.dim() != 1:
        return "embedding_bag with indices of rank other than 1"
    return None


@register("aten._embedding_bag_forward_only.default", "aten._embedding_bag.default", check=_embedding_bag_check)
def _embedding_bag(imp, node, a):
    """out[b] = sum / mean / max over the bag's rows weight[indices[i]] (times per-sample
    weights), bag(i) = #{offsets[j] <= i} - 1, rows at padding_idx left out: one
    lamina.scatter (add or max) into [bags * D] in the order of i, as ATen's CPU loop.
    Empty bags give 0. The other three outputs are ATen's bookkeeping for the backward
    (backend/decompositions.py's _embedding_bag_backward reads them), as its CPU kernel
    fills them: offset2bag = bag(i); bag_size = the bag's rows without padding (mean, max;
    0 for sum); max_indices = the index of the first row holding each max (0 for an empty
    bag; for sum and mean zeros of the shape the meta kernel gives)."""
    w, idx, offsets = a.weight, a.indices, a.offsets
    want = T.element_type(str(elem(w)))
    et = T.widened(want)
    vocab, dim = shape(w)
    n = shape(idx)[0]   # (n and bags may be symbolic: dynamic=True)
    bags = S.combine("-", shape(offsets)[0], 1) if a.include_last_offset else shape(offsets)[0]
    i64 = _elem_i64()
    metas = node.meta["val"]
    meta_dims = lambda k: [S.dim_of(d) for d in metas[k].shape]   # noqa: E731
    zeros_like_meta = lambda k: constant(0, i64, meta_dims(k))   # noqa: E731
    if (isinstance(bags, int) and bags <= 0) or n == 0 or dim == 0:
        return constant(0, want, [max(bags, 0), dim]), zeros_like_meta(1), zeros_like_meta(2), zeros_like_meta(3)
    starts = offsets if S.equivalent(bags, shape(offsets)[0]) else symbolic_slice(offsets, 0, "0", str(bags))
    starts = ops.reshape(cast(starts, i64), result_type=T.tensor_type([1, bags], i64))
    pos = ops.reshape(ops.iota(result_type=T.tensor_type([n], i64)), result_type=T.tensor_type([n, 1], i64))
    bag = ops.sub(ops.reduce_sum(cast(ops.le(starts, pos), i64), dims=[1], keepdim=False), constant(1, _I64))
    bag = ops.maximum(bag, constant(0, _I64))
    rows = cast(ops.index_select(w, _wrapped(idx, vocab), dim=0), et)   # [n, dim]
    if a.per_sample_weights is not None:
        rows = ops.mul(rows, ops.reshape(cast(a.per_sample_weights, et), result_type=T.tensor_type([n, 1], et)))
    keep = None
    if a.padding_idx is not None and a.padding_idx >= 0:
        keep = ops.ne(cast(idx, i64), constant(int(a.padding_idx), _I64))   # [n]
    mode = int(a.mode)
    flat = ops.add(ops.mul(ops.reshape(bag, result_type=T.tensor_type([n, 1], i64)), constant(dim, _I64)),
                   ops.reshape(ops.iota(result_type=T.tensor_type([dim], i64)), result_type=T.tensor_type([1, dim], i64)))
    cells = S.combine("*", bags, dim)
    keep2 = None if keep is None else ops.reshape(keep, result_type=T.tensor_type([n, 1], T.element_type("i1")))
    ones = constant(1.0, et, [n]) if keep is None else cast(keep, et)
    count = _scatter_flat(constant(0.0, et, [bags]), bag, ones, "add")   # rows per bag (padding left out)
    max_indices = zeros_like_meta(3)
    if mode == 2:   # max
        fill = constant(-math.inf, et)
        updates = rows if keep2 is None else ops.where(keep2, rows, fill)
        out = _scatter_flat(constant(-math.inf, et, [cells]), flat, updates, "max")
        max_indices = _first_max_indices(imp, out, rows, flat, idx, keep2, n, bags, dim)
    else:
        updates = rows if keep2 is None else ops.where(keep2, rows, constant(0.0, et))
        out = _scatter_flat(constant(0.0, et, [cells]), flat, updates, "add")
    out = ops.reshape(out, result_type=T.tensor_type([bags, dim], et))
    bag_size = zeros_like_meta(2)
    size_dims = meta_dims(2)
    if mode in (1, 2) and len(size_dims) == 1 and S.equivalent(size_dims[0], bags):
        bag_size = cast(count, i64)
    elif mode in (1, 2) and len(size_dims) == 1 and S.equivalent(size_dims[0], S.combine("+", bags, 1)):
        # (include_last_offset: ATen keeps offsets' length)
        bag_size = ops.concat(cast(count, i64), constant(0, i64, [1]), dim=0)
    count = ops.reshape(count, result_type=T.tensor_type([bags, 1], et))
    if mode == 1:
        out = ops.div(out, ops.maximum(count, constant(1.0, et)))
    out = ops.where(ops.gt(count, constant(0.0, et)), out, constant(0.0, et))
    offset2bag = bag if len(meta_dims(1)) == 1 and S.equivalent(meta_dims(1)[0], n) else zeros_like_meta(1)
    return cast(out, want), offset2bag, bag_size, max_indices


def _first_max_indices(imp, best, rows, flat, idx, keep2, n, bags, dim: int):
    """max_indices[b, d] = indices[i] of the first i of bag b whose row holds the bag's max
    in column d (ATen's loop replaces it only on a strictly greater value), 0 for an empty
    bag: the positions where the row equals the max, their minimum per (b, d) by a scatter,
    then the index there."""
    i64 = _elem_i64()
    best_at = ops.reshape(ops.index_select(best, ops.reshape(flat, result_type=T.tensor_type([S.combine("*", n, dim)], i64)),
                                           dim=0),
                          result_type=T.tensor_type([n, dim], elem(rows)))
    count = _size_tensor(imp, n)
    holds = ops.eq(rows, best_at)
    if keep2 is not None:
        holds = ops.logical_and(holds, keep2)
    position = ops.broadcast_to(ops.reshape(ops.iota(result_type=T.tensor_type([n], i64)),
                                            result_type=T.tensor_type([n, 1], i64)),
                                result_type=T.tensor_type([n, dim], i64))
    candidate = ops.where(holds, position, count)
    first = _scatter_flat(ops.broadcast_to(count, result_type=T.tensor_type([S.combine("*", bags, dim)], i64)), flat,
                          candidate, "min")
    found = ops.lt(first, count)
    picked = ops.index_select(cast(idx, i64), ops.minimum(first, ops.sub(count, constant(1, _I64))), dim=0)
    return ops.reshape(ops.where(found, picked, constant(0, _I64)), result_type=T.tensor_type([bags, dim], i64))
