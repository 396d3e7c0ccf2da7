"""Pooling over the last 1-3 dims (static spatial sizes), composed of lamina ops:

    max_pool{2,3}d_with_indices   per tap of the window (a strided slice of the input, padded):
                                  best = where(valid & (v > best | isnan(v)), v, best), as ATen's
                                  loop (nan wins, a later nan too; taps in the padding never);
                                  the index (flat over the spatial dims) tracked alongside
    max_pool*_backward            per tap: where(indices == tap index, grad, 0) placed back at the
                                  tap's input positions (zero-stuffed by the stride, shifted), summed
    avg_pool{2,3}d (+ backward)   sum of the zero-padded taps / a divisor per output position
                                  (count_include_pad, divisor_override, ceil_mode windows), computed
                                  here as a constant
    _adaptive_avg_pool{2,3}d      one averaging matrix per spatial dim: out = A_h x A_w^T (matmuls);
      (+ backward)                the backward is A_h^T g A_w
    adaptive_max_pool{2,3}d       windows of varying length: taps gathered with index_select
      (+ backward)                (lengths padded to the longest window, masked); the backward
                                  scatters through one-hot matrices (matmuls)
"""
from __future__ import annotations

import itertools
import math

import numpy as np

from ..dialect import ops
from ..dialect import types as T
from .aten_ops import cast, constant, constant_from_array as _const, elem, meta_type, rank, register, shape, slice_, static_dims
from .convolution import _pad_dim, _zero_stuff


def _static_spatial(r: int):
    return static_dims(lambda node, x: range(x.dim() - r, x.dim()),
                       "pooling over a symbolic spatial size (not supported yet)")


def _expand_arg(v, r: int, default=None) -> list[int]:
    if v is None or (isinstance(v, (list, tuple)) and len(v) == 0):
        v = default
    v = [int(t) for t in (v if isinstance(v, (list, tuple)) else [v])]
    return v * r if len(v) == 1 else v


def _out_size(size: int, k: int, s: int, p: int, d: int, ceil_mode: bool) -> int:
    span = d * (k - 1) + 1
    if ceil_mode:
        o = -(-(size + 2 * p - span) // s) + 1
        if (o - 1) * s >= size + p:   # the last window must start inside the input or left padding
            o -= 1
    else:
        o = (size + 2 * p - span) // s + 1
    return max(o, 0)


class _Windows:
    """Regular windows along the spatial dims: tap positions and validity per output."""

    def __init__(self, sizes, k, s, p, d, ceil_mode):
        self.r = len(sizes)
        self.sizes, self.k, self.s, self.p, self.d = list(sizes), k, s, p, d
        self.out = [_out_size(sizes[i], k[i], s[i], p[i], d[i], ceil_mode) for i in range(self.r)]

    def taps(self):
        return itertools.product(*[range(k) for k in self.k])

    def positions(self, i, t) -> np.ndarray:
        return np.arange(self.out[i]) * self.s[i] - self.p[i] + t * self.d[i]

    def tap_slice(self, x, tap):
        """The tap's input values at every output position (0 where outside the input): a
        strided slice of x padded as far as the windows reach."""
        r = self.r
        lead = rank(x) - r
        for i, t in enumerate(tap):
            dim = lead + i
            pos = self.positions(i, t)
            if self.out[i] == 0:
                return None
            lo, hi = int(pos[0]), int(pos[-1])
            before = max(0, -lo)
            after = max(0, hi - (self.sizes[i] - 1))
            xi = _pad_dim(x, dim, before, after) if (before or after) else x
            x = slice_(xi, dim, lo + before, hi + before + 1, self.s[i])
        return x

    def valid(self, tap) -> np.ndarray:
        m = np.ones(self.out, dtype=bool)
        for i, t in enumerate(tap):
            pos = self.positions(i, t)
            ok = (pos >= 0) & (pos < self.sizes[i])
            m &= ok.reshape([-1 if j == i else 1 for j in range(self.r)])
        return m

    def flat_index(self, tap) -> np.ndarray:
        idx = np.zeros(self.out, dtype=np.int64)
        for i, t in enumerate(tap):
            pos = np.clip(self.positions(i, t), 0, self.sizes[i] - 1)
            stride = int(np.prod(self.sizes[i + 1:]))
            idx = idx + (pos * stride).reshape([-1 if j == i else 1 for j in range(self.r)])
        return idx

    def place(self, v, tap, like_shape):
        """Inverse of tap_slice: v (at output positions) put at the tap's input positions of a
        zero tensor shaped like the input (positions outside the input dropped)."""
        lead = len(like_shape) - self.r
        for i, t in enumerate(tap):
            dim = lead + i
            v = _zero_stuff(v, dim, self.s[i])
            n = shape(v)[dim]
            start = -self.p[i] + t * self.d[i]
            v = _pad_dim(v, dim, start, self.sizes[i] - (start + n))
        return v


def _lowest(et):
    if T.is_float(et):
        return -math.inf
    if str(et) == "i1":
        return False
    return -(2 ** (int(str(et)[1:]) - 1))


def _isnan(v):
    return ops.ne(v, v) if T.is_float(elem(v)) else None


def _max_pool_forward(x, windows, index_et):
    et = elem(x)
    out_shape = shape(x)[:rank(x) - windows.r] + windows.out
    best = constant(_lowest(et), et, out_shape)
    taps = list(windows.taps())
    # index of the first valid tap (ATen starts from the window's first in-bounds position)
    init = np.zeros(windows.out, dtype=np.int64)
    for tap in reversed(taps):
        init = np.where(windows.valid(tap), windows.flat_index(tap), init)
    idx = ops.broadcast_to(_const(init, index_et), result_type=T.tensor_type(out_shape, index_et)) \
        if out_shape != windows.out else _const(init, index_et)
    for tap in taps:
        valid = windows.valid(tap)
        if not valid.any():
            continue
        v = windows.tap_slice(x, tap)
        take = ops.gt(v, best)
        nan = _isnan(v)
        if nan is not None:
            take = ops.logical_or(take, nan)
        if not valid.all():
            take = ops.logical_and(take, _const(valid, T.element_type("i1")))
        best = ops.where(take, v, best)
        idx = ops.where(take, _const(windows.flat_index(tap), index_et), idx)
    return best, idx


def _max_pool_args(a, r):
    k = _expand_arg(a.kernel_size, r)
    s = _expand_arg(a.stride, r, k)
    p = _expand_arg(a.padding, r, 0)
    d = _expand_arg(a.dilation, r, 1)
    return k, s, p, d


def _register_max_pool(r: int):
    @register(f"aten.max_pool{r}d_with_indices.default", check=_static_spatial(r))
    def _max_pool(imp, node, a):
        x = a.self
        k, s, p, d = _max_pool_args(a, r)
        windows = _Windows(shape(x)[-r:], k, s, p, d, bool(a.ceil_mode))
        index_et = meta_type(node, 1).element_type
        if 0 in windows.out or 0 in shape(x):
            return (constant(0, elem(x), T.dims_of(meta_type(node, 0))),
                    constant(0, index_et, T.dims_of(meta_type(node, 1))))
        out, idx = _max_pool_forward(x, windows, index_et)
        return (out, idx)

    @register(f"aten.max_pool{r}d_with_indices_backward.default", check=_static_spatial(r))
    def _max_pool_backward(imp, node, a):
        x, grad, indices = a.self, a.grad_output, a.indices
        k, s, p, d = _max_pool_args(a, r)
        windows = _Windows(shape(x)[-r:], k, s, p, d, bool(a.ceil_mode))
        return _scatter_back(grad, windows, shape(x), lambda tap: ops.eq(indices, _const(
            windows.flat_index(tap), elem(indices))), meta_type(node))


def _scatter_back(grad, windows, in_shape, mask_of, want):
    """sum over taps of place(where(mask, grad, 0)); mask None: grad itself."""
    acc_et = T.widened(elem(grad))
    g = cast(grad, acc_et)
    total = None
    if 0 not in windows.out and 0 not in in_shape:
        for tap in windows.taps():
            valid = windows.valid(tap)
            if not valid.any():
                continue
            mask = mask_of(tap)
            part = g if mask is None else ops.where(mask, g, constant(0, acc_et))
            placed = windows.place(part, tap, in_shape)
            total = placed if total is None else ops.add(total, placed)
    if total is None:
        return constant(0, want.element_type, T.dims_of(want))
    return cast(total, want.element_type)


def _divisors(windows, count_include_pad: bool, divisor_override) -> np.ndarray:
    if divisor_override:
        return np.full(windows.out, float(divisor_override))
    div = np.ones(windows.out)
    for i in range(windows.r):
        start = np.arange(windows.out[i]) * windows.s[i] - windows.p[i]
        end = np.minimum(start + windows.k[i], windows.sizes[i] + windows.p[i])
        if not count_include_pad:
            end = np.minimum(end, windows.sizes[i])
            start = np.maximum(start, 0)
        n = np.maximum(end - np.maximum(start, -windows.p[i]), 0)
        div = div * n.reshape([-1 if j == i else 1 for j in range(windows.r)])
    return div


def _avg_args(a, r):
    k = _expand_arg(a.kernel_size, r)
    s = _expand_arg(a.stride, r, k)
    p = _expand_arg(a.padding, r, 0)
    return k, s, p


def _register_avg_pool(r: int):
    @register(f"aten.avg_pool{r}d.default", check=_static_spatial(r))
    def _avg_pool(imp, node, a):
        x = a.self
        k, s, p = _avg_args(a, r)
        windows = _Windows(shape(x)[-r:], k, s, p, [1] * r, bool(a.ceil_mode))
        want = meta_type(node)
        acc = T.widened(elem(x))
        if 0 in windows.out or 0 in shape(x):
            return constant(0, want.element_type, T.dims_of(want))
        xa = cast(x, acc)
        total = None
        for tap in windows.taps():
            if not windows.valid(tap).any():
                continue
            v = windows.tap_slice(xa, tap)
            total = v if total is None else ops.add(total, v)
        div = _divisors(windows, bool(a.count_include_pad), a.divisor_override)
        return cast(ops.div(total, _const(div, acc)), want.element_type)

    @register(f"aten.avg_pool{r}d_backward.default", check=_static_spatial(r))
    def _avg_pool_backward(imp, node, a):
        x, grad = a.self, a.grad_output
        k, s, p = _avg_args(a, r)
        windows = _Windows(shape(x)[-r:], k, s, p, [1] * r, bool(a.ceil_mode))
        acc = T.widened(elem(grad))
        div = _divisors(windows, bool(a.count_include_pad), a.divisor_override)
        scaled = ops.div(cast(grad, acc), _const(div, acc)) if 0 not in windows.out else grad
        return _scatter_back(scaled, windows, shape(x), lambda tap: None, meta_type(node))


# ---- adaptive pooling ------------------------------------------------------------------------

def _adaptive_bounds(size: int, out: int):
    o = np.arange(out)
    start = (o * size) // out
    end = -((-(o + 1) * size) // out)
    return start, end


def _averaging_matrix(size: int, out: int) -> np.ndarray:
    start, end = _adaptive_bounds(size, out)
    m = np.zeros((out, size))
    for i in range(out):
        m[i, start[i]:end[i]] = 1.0 / (end[i] - start[i])
    return m


def _apply_along(x, dim: int, matrix: np.ndarray, et):
    """x with dim `dim` replaced by matrix @ (that dim): moved last, multiplied by matrix^T."""
    r = rank(x)
    perm = [i for i in range(r) if i != dim] + [dim]
    inv = [perm.index(i) for i in range(r)]
    xt = ops.transpose(x, perm=perm) if perm != list(range(r)) else x
    y = ops.matmul(xt, _const(matrix.T.copy(), et))
    return ops.transpose(y, perm=inv) if perm != list(range(r)) else y


def _register_adaptive_avg(r: int):
    @register(f"aten._adaptive_avg_pool{r}d.default", check=_static_spatial(r))
    def _adaptive_avg(imp, node, a):
        x = a.self
        want = meta_type(node)
        out = _expand_arg(a.output_size, r)
        acc = T.widened(elem(x))
        if 0 in shape(x) or 0 in out:
            return constant(0, want.element_type, T.dims_of(want))
        y = cast(x, acc)
        lead = rank(x) - r
        for i in range(r):
            size = shape(x)[lead + i]
            if out[i] != size:
                y = _apply_along(y, lead + i, _averaging_matrix(size, out[i]), acc)
        return cast(y, want.element_type)

    @register(f"aten._adaptive_avg_pool{r}d_backward.default", check=_static_spatial(r))
    def _adaptive_avg_backward(imp, node, a):
        grad, x = a.grad_output, a.self
        want = meta_type(node)
        acc = T.widened(elem(grad))
        if 0 in shape(x):
            return constant(0, want.element_type, T.dims_of(want))
        y = cast(grad, acc)
        lead = rank(x) - r
        for i in range(r):
            size, out = shape(x)[lead + i], shape(grad)[lead + i]
            if out != size:
                y = _apply_along(y, lead + i, _averaging_matrix(size, out).T.copy(), acc)
        return cast(y, want.element_type)


class _AdaptiveWindows:
    """Adaptive windows: per dim, tap j of output o reads start(o) + j (valid below end(o))."""

    def __init__(self, sizes, out):
        self.r = len(sizes)
        self.sizes, self.out = list(sizes), list(out)
        self.bounds = [_adaptive_bounds(sizes[i], out[i]) for i in range(self.r)]
        self.k = [int((e - s).max()) if len(s) else 0 for s, e in self.bounds]

    def taps(self):
        return itertools.product(*[range(k) for k in self.k])

    def positions(self, i, t):
        start, end = self.bounds[i]
        return np.minimum(start + t, end - 1), start + t < end

    def valid(self, tap):
        m = np.ones(self.out, dtype=bool)
        for i, t in enumerate(tap):
            ok = self.positions(i, t)[1]
            m &= ok.reshape([-1 if j == i else 1 for j in range(self.r)])
        return m

    def flat_index(self, tap):
        idx = np.zeros(self.out, dtype=np.int64)
        for i, t in enumerate(tap):
            pos = self.positions(i, t)[0]
            stride = int(np.prod(self.sizes[i + 1:]))
            idx = idx + (pos * stride).reshape([-1 if j == i else 1 for j in range(self.r)])
        return idx

    def tap_slice(self, x, tap):
        lead = rank(x) - self.r
        i64 = T.element_type("i64")
        for i, t in enumerate(tap):
            x = ops.index_select(x, _const(self.positions(i, t)[0], i64), dim=lead + i)
        return x

    def one_hot(self, i, t) -> np.ndarray:
        """[out_i, size_i]: 1 where output o's tap t reads position p (valid taps only)."""
        pos, ok = self.positions(i, t)
        m = np.zeros((self.out[i], self.sizes[i]))
        m[np.arange(self.out[i])[ok], pos[ok]] = 1.0
        return m


def _register_adaptive_max(r: int):
    @register(f"aten.adaptive_max_pool{r}d.default", check=_static_spatial(r))
    def _adaptive_max(imp, node, a):
        x = a.self
        windows = _AdaptiveWindows(shape(x)[-r:], _expand_arg(a.output_size, r))
        index_et = meta_type(node, 1).element_type
        if 0 in shape(x) or 0 in windows.out:
            return (constant(0, elem(x), T.dims_of(meta_type(node, 0))),
                    constant(0, index_et, T.dims_of(meta_type(node, 1))))
        return _max_pool_forward(x, windows, index_et)

    @register(f"aten.adaptive_max_pool{r}d_backward.default", check=_static_spatial(r))
    def _adaptive_max_backward(imp, node, a):
        grad, x, indices = a.grad_output, a.self, a.indices
        windows = _AdaptiveWindows(shape(x)[-r:], shape(grad)[-r:])
        want = meta_type(node)
        acc = T.widened(elem(grad))
        g = cast(grad, acc)
        lead = rank(x) - r
        total = None
        for tap in windows.taps():
            if not windows.valid(tap).any():
                continue
            part = ops.where(ops.eq(indices, _const(windows.flat_index(tap), elem(indices))), g, constant(0, acc))
            for i, t in enumerate(tap):
                part = _apply_along(part, lead + i, windows.one_hot(i, t).T.copy(), acc)
            total = part if total is None else ops.add(total, part)
        if total is None:
            return constant(0, want.element_type, T.dims_of(want))
        return cast(total, want.element_type)


for _r in (1, 2, 3):
    _register_max_pool(_r)
    _register_avg_pool(_r)
    _register_adaptive_avg(_r)
    _register_adaptive_max(_r)

