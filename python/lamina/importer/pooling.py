"""Pooling over the last 1-3 dims, composed of lamina ops:

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

Spatial sizes may be symbolic: regular windows then compute their masks, indices and
divisors from iotas (_Windows), the averaging matrices too, and adaptive max pooling
reduces one dim at a time over [out, size] windows, its backward a scatter of the indices.
"""
from __future__ import annotations

import itertools
import math

import numpy as np
from mlir import ir

from ..dialect import ops
from ..dialect import types as T
from ..dialect import symbols as S
from .aten_ops import (_arg, _is_symbolic_scalar, cast, constant, constant_from_array as _const, elem, meta_type, rank,
                       register, reshape, shape, slice_, symbolic_slice)
from .convolution import _pad_dim, _zero_stuff
from .indexing import _scatter_flat, take_along_dim


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


def _i64():
    return T.element_type("i64")


def _iota_times(n, step: int, offset: int) -> ir.Value:
    """iota(n) * step + offset as an i64 vector (n may be symbolic)."""
    v = ops.iota(result_type=T.tensor_type([n], _i64()))
    if step != 1:
        v = ops.mul(v, constant(step, _i64()))
    return ops.add(v, constant(offset, _i64())) if offset else v


class _Windows:
    """Regular windows along the last r dims: tap positions and validity per output.

    A dim of static size works on tables of constants. Along a symbolic size (a string) the
    output size is torch's (`out`), positions, masks and flat indices are computed from iotas
    and the graph's symbols (`imp.size_value`), and the input is padded by static amounts that
    bound how far any window reaches, then sliced with symbolic bounds."""

    def __init__(self, imp, sizes, k, s, p, d, ceil_mode, out=None):
        self.imp = imp
        self.r = len(sizes)
        self.sizes, self.k, self.s, self.p, self.d = list(sizes), k, s, p, d
        self.out = [_out_size(sizes[i], k[i], s[i], p[i], d[i], ceil_mode) if self.static(i) else out[i]
                    for i in range(self.r)]
        self.all_static = all(self.static(i) for i in range(self.r))
        self._cache = {}

    def static(self, i) -> bool:
        return isinstance(self.sizes[i], int)

    def taps(self):
        return itertools.product(*[range(k) for k in self.k])

    def positions(self, i, t):
        """Input position of tap t along dim i for every output: numpy (static size) or an
        i64 vector."""
        first = t * self.d[i] - self.p[i]
        if self.static(i):
            return np.arange(self.out[i]) * self.s[i] + first
        return _iota_times(self.out[i], self.s[i], first)

    def _line(self, i, v, et=None):
        """A vector along dim i as a [1, .., n_i, .., 1] tensor (numpy -> constant of type et)."""
        dims = [self.out[i] if j == i else 1 for j in range(self.r)]
        if isinstance(v, np.ndarray):
            return _const(v.reshape(dims), et)
        return ops.reshape(v, result_type=T.tensor_type(dims, elem(v)))

    def reachable(self, tap) -> bool:
        """Whether some output's tap lies inside the input (a symbolic size: assumed)."""
        for i, t in enumerate(tap):
            if self.static(i):
                pos = self.positions(i, t)
                if not ((pos >= 0) & (pos < self.sizes[i])).any():
                    return False
        return True

    def valid(self, tap) -> np.ndarray:
        """The validity table of a tap (static sizes only)."""
        m = np.ones(self.out, dtype=bool)
        for i, t in enumerate(tap):
            pos = self.positions(i, t)
            ok = (pos >= 0) & (pos < self.sizes[i])
            m &= ok.reshape([-1 if j == i else 1 for j in range(self.r)])
        return m

    def mask(self, tap):
        """An i1 tensor over the outputs, true where the tap lies inside the input; None when
        it does for every output."""
        i1 = T.element_type("i1")
        if self.all_static:
            m = self.valid(tap)
            return None if m.all() else _const(m, i1)
        parts = []
        for i, t in enumerate(tap):
            pos = self.positions(i, t)
            if self.static(i):
                ok = (pos >= 0) & (pos < self.sizes[i])
                if not ok.all():
                    parts.append(self._line(i, ok, i1))
                continue
            ok = ops.lt(pos, self.imp.size_value(self.sizes[i]))
            if t * self.d[i] < self.p[i]:
                ok = ops.logical_and(ops.ge(pos, constant(0, _i64())), ok)
            parts.append(self._line(i, ok))
        m = None
        for part in parts:
            m = part if m is None else ops.logical_and(m, part)
        return m

    def flat_index_table(self, tap) -> np.ndarray:
        idx = np.zeros(self.out, dtype=np.int64)
        for i, t in enumerate(tap):
            pos = np.clip(self.positions(i, t), 0, self.sizes[i] - 1)
            stride = int(np.prod(self.sizes[i + 1:]))
            idx = idx + (pos * stride).reshape([-1 if j == i else 1 for j in range(self.r)])
        return idx

    def flat_index(self, tap, et) -> ir.Value:
        """The tap's input position, flat over the spatial dims, for every output. Along a
        symbolic size an out-of-range position is not clipped: nothing reads it (a forward
        takes only valid taps, a backward drops what it places outside the input)."""
        if self.all_static:
            return _const(self.flat_index_table(tap), et)
        total = None
        for i, t in enumerate(tap):
            stride = S.product(self.sizes[i + 1:])
            pos = self.positions(i, t)
            if self.static(i):
                pos = np.clip(pos, 0, self.sizes[i] - 1)
                if isinstance(stride, int):
                    pos, stride = pos * stride, 1
            term = self._line(i, pos, _i64())
            if stride != 1:
                term = ops.mul(term, self.imp.size_value(stride))
            total = term if total is None else ops.add(total, term)
        return cast(total, et)

    def first_index(self, et) -> ir.Value:
        """Per output, the flat index of its first valid tap (where ATen's max starts)."""
        taps = list(self.taps())
        if self.all_static:
            init = np.zeros(self.out, dtype=np.int64)
            for tap in reversed(taps):
                init = np.where(self.valid(tap), self.flat_index_table(tap), init)
            return _const(init, et)
        # along each dim on its own, as ATen's loop: the window's start moved up by the
        # dilation while it is negative
        total, i64 = None, _i64()
        for i in range(self.r):
            p, d = self.p[i], self.d[i]
            stride = S.product(self.sizes[i + 1:])
            if self.static(i):
                start = np.arange(self.out[i]) * self.s[i] - p
                first = start + d * (-(np.minimum(start, 0) // d))
                if isinstance(stride, int):
                    first, stride = first * stride, 1
                term = self._line(i, first, i64)
            else:
                start = _iota_times(self.out[i], self.s[i], -p)
                first = start
                if p > 0:   # start + d * ceil(max(-start, 0) / d)
                    behind = ops.maximum(ops.sub(constant(0, i64), start), constant(0, i64))
                    steps = ops.div_floor(ops.add(behind, constant(d - 1, i64)), constant(d, i64)) if d > 1 else behind
                    first = ops.add(start, steps if d == 1 else ops.mul(steps, constant(d, i64)))
                term = self._line(i, first)
            if stride != 1:
                term = ops.mul(term, self.imp.size_value(stride))
            total = term if total is None else ops.add(total, term)
        return cast(total, et)

    def tap_slice(self, x, tap):
        """The tap's input values at every output position (0 where outside the input): a
        strided slice of x padded as far as the windows reach."""
        r = self.r
        lead = rank(x) - r
        if 0 in self.out:
            return None
        x = self._padded_along_symbolic_dims(x)
        for i, t in enumerate(tap):
            dim = lead + i
            if not self.static(i):
                first = t * self.d[i]
                end = S.combine("+", first + 1, S.combine("*", S.combine("-", self.out[i], 1), self.s[i]))
                x = _with_size(symbolic_slice(x, dim, str(first), str(end), self.s[i]), dim, self.out[i])
                continue
            pos = self.positions(i, t)
            lo, hi = int(pos[0]), int(pos[-1])
            before = max(0, -lo)
            after = max(0, hi - (self.sizes[i] - 1))
            xi = _pad_dim(x, dim, before, after) if (before or after) else x
            x = slice_(xi, dim, lo + before, hi + before + 1, self.s[i])
        return x

    def _padded_along_symbolic_dims(self, x):
        """x padded along its symbolic dims by p before (a tap's first position is then
        t*d >= 0) and p + s after (the last window reaches at most p + s - 2 past the input):
        one padded tensor that every tap slices."""
        key = (x, "padded")
        if key not in self._cache:
            lead = rank(x) - self.r
            padded = x
            for i in range(self.r):
                if not self.static(i):
                    padded = _pad_dim(padded, lead + i, self.p[i], self.p[i] + self.s[i])
            self._cache[key] = padded
        return self._cache[key]

    def place(self, v, tap, like_shape):
        """Inverse of tap_slice: v (at output positions) put at the tap's input positions of a
        zero tensor shaped like the input (positions outside the input dropped)."""
        lead = len(like_shape) - self.r
        for i, t in enumerate(tap):
            dim = lead + i
            if not self.static(i):
                v = self._gather_to_inputs(v, dim, i, t)
                continue
            v = _zero_stuff(v, dim, self.s[i])
            n = shape(v)[dim]
            start = -self.p[i] + t * self.d[i]
            v = _pad_dim(v, dim, start, self.sizes[i] - (start + n))
        return v

    def _gather_to_inputs(self, v, dim: int, i: int, t: int):
        """place() along a symbolic dim, as a gather: input position j takes output
        o = (j + p - t*d) / s where that is an integer in [0, out), else 0. (Zero-stuffing,
        padding and slicing with symbolic bounds, the static sizes' way, made kernels that
        LLVM took minutes to compile.)"""
        i64 = _i64()
        s, out = self.s[i], self.out[i]
        q = _iota_times(self.sizes[i], 1, self.p[i] - t * self.d[i])
        qc = ops.maximum(q, constant(0, i64))
        last = ops.sub(self.imp.size_value(out), constant(1, i64))
        o = qc if s == 1 else ops.div_floor(qc, constant(s, i64))
        ok = ops.logical_and(ops.ge(q, constant(0, i64)), ops.le(o, last))
        if s != 1:
            ok = ops.logical_and(ok, ops.eq(ops.remainder(qc, constant(s, i64)), constant(0, i64)))
        taken = ops.index_select(v, ops.minimum(o, last), dim=dim)
        lead = rank(v) - self.r
        line = [self.sizes[i] if e == dim else 1 for e in range(rank(v))]
        ok = ops.reshape(ok, result_type=T.tensor_type(line[lead:], T.element_type("i1")))
        return ops.where(ok, taken, constant(0, elem(v)))


def _with_size(v, dim: int, size):
    """v with its size along dim stated as `size` (an equal expression written otherwise)."""
    sh = shape(v)
    if sh[dim] == size:
        return v
    sh[dim] = size
    return reshape(v, T.tensor_type(sh, elem(v)))


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
    # index of the first valid tap (ATen starts from the window's first in-bounds position)
    init = windows.first_index(index_et)
    idx = init if T.dims_of(init.type) == out_shape else \
        ops.broadcast_to(init, result_type=T.tensor_type(out_shape, index_et))
    for tap in windows.taps():
        if not windows.reachable(tap):
            continue
        v = windows.tap_slice(x, tap)
        take = ops.gt(v, best)
        nan = _isnan(v)
        if nan is not None:
            take = ops.logical_or(take, nan)
        valid = windows.mask(tap)
        if valid is not None:
            take = ops.logical_and(take, valid)
        best = ops.where(take, v, best)
        idx = ops.where(take, windows.flat_index(tap, index_et), idx)
    return best, idx


def _max_pool_args(a, r):
    k = _expand_arg(a.kernel_size, r)
    s = _expand_arg(a.stride, r, k)
    p = _expand_arg(a.padding, r, 0)
    d = _expand_arg(a.dilation, r, 1)
    return k, s, p, d


_INT_ARGS = ("kernel_size", "stride", "padding", "dilation", "divisor_override")


def _pool_check(node) -> str | None:
    """Window shapes must be ints (a symbolic input size is fine)."""
    for name in _INT_ARGS:
        v = _arg(node, name)
        if any(_is_symbolic_scalar(t) for t in (v if isinstance(v, (list, tuple)) else [v])):
            return f"pooling with a symbolic {name} (not supported)"
    return None


def _register_max_pool(r: int):
    @register(f"aten.max_pool{r}d_with_indices.default", check=_pool_check)
    def _max_pool(imp, node, a):
        x = a.self
        k, s, p, d = _max_pool_args(a, r)
        windows = _Windows(imp, shape(x)[-r:], k, s, p, d, bool(a.ceil_mode), T.dims_of(meta_type(node, 0))[-r:])
        index_et = meta_type(node, 1).element_type
        if 0 in windows.out or 0 in shape(x):
            return (constant(0, elem(x), T.dims_of(meta_type(node, 0))),
                    constant(0, index_et, T.dims_of(meta_type(node, 1))))
        out, idx = _max_pool_forward(x, windows, index_et)
        return (out, idx)

    @register(f"aten.max_pool{r}d_with_indices_backward.default", check=_pool_check)
    def _max_pool_backward(imp, node, a):
        x, grad, indices = a.self, a.grad_output, a.indices
        k, s, p, d = _max_pool_args(a, r)
        windows = _Windows(imp, shape(x)[-r:], k, s, p, d, bool(a.ceil_mode), shape(grad)[-r:])
        return _scatter_back(grad, windows, shape(x), lambda tap: ops.eq(
            indices, windows.flat_index(tap, elem(indices))), meta_type(node))


def _scatter_back(grad, windows, in_shape, mask_of, want):
    """sum over taps of place(where(mask, grad, 0)); mask None: grad itself."""
    acc_et = T.widened(elem(grad))
    g = cast(grad, acc_et)
    total = None
    if 0 not in windows.out and 0 not in in_shape:
        for tap in windows.taps():
            if not windows.reachable(tap):
                continue
            mask = mask_of(tap)
            part = g if mask is None else ops.where(mask, g, constant(0, acc_et))
            placed = windows.place(part, tap, in_shape)
            total = placed if total is None else ops.add(total, placed)
    if total is None:
        return constant(0, want.element_type, T.dims_of(want))
    return cast(total, want.element_type)


def _divisors(windows, count_include_pad: bool, divisor_override, et) -> ir.Value:
    """The divisor of every output position (a rank-0 one for divisor_override)."""
    if divisor_override:
        return constant(float(divisor_override), et)
    table, div = np.ones([n if windows.static(i) else 1 for i, n in enumerate(windows.out)]), None
    for i in range(windows.r):
        s, p, k, size = windows.s[i], windows.p[i], windows.k[i], windows.sizes[i]
        if windows.static(i):   # (window starts are >= -p: end - start is the count)
            start = np.arange(windows.out[i]) * s - p
            end = np.minimum(start + k, size + p)
            if not count_include_pad:
                end = np.minimum(end, size)
                start = np.maximum(start, 0)
            table = table * np.maximum(end - start, 0).reshape([-1 if j == i else 1 for j in range(windows.r)])
        else:
            start = _iota_times(windows.out[i], s, -p)
            size_v = windows.imp.size_value(size)
            end = ops.minimum(ops.add(start, constant(k, _i64())), ops.add(size_v, constant(p, _i64())))
            if not count_include_pad:
                end = ops.minimum(end, size_v)
                start = ops.maximum(start, constant(0, _i64()))
            n = cast(windows._line(i, ops.maximum(ops.sub(end, start), constant(0, _i64()))), et)
            div = n if div is None else ops.mul(div, n)
    if div is None:
        return _const(table, et)
    return div if (table == 1).all() else ops.mul(_const(table, et), div)


def _avg_args(a, r):
    k = _expand_arg(a.kernel_size, r)
    s = _expand_arg(a.stride, r, k)
    p = _expand_arg(a.padding, r, 0)
    return k, s, p


def _register_avg_pool(r: int):
    @register(f"aten.avg_pool{r}d.default", check=_pool_check)
    def _avg_pool(imp, node, a):
        x = a.self
        k, s, p = _avg_args(a, r)
        want = meta_type(node)
        windows = _Windows(imp, shape(x)[-r:], k, s, p, [1] * r, bool(a.ceil_mode), T.dims_of(want)[-r:])
        acc = T.widened(elem(x))
        if 0 in windows.out or 0 in shape(x):
            return constant(0, want.element_type, T.dims_of(want))
        xa = cast(x, acc)
        total = None
        for tap in windows.taps():
            if not windows.reachable(tap):
                continue
            v = windows.tap_slice(xa, tap)
            total = v if total is None else ops.add(total, v)
        div = _divisors(windows, bool(a.count_include_pad), a.divisor_override, acc)
        return cast(ops.div(total, div), want.element_type)

    @register(f"aten.avg_pool{r}d_backward.default", check=_pool_check)
    def _avg_pool_backward(imp, node, a):
        x, grad = a.self, a.grad_output
        k, s, p = _avg_args(a, r)
        windows = _Windows(imp, shape(x)[-r:], k, s, p, [1] * r, bool(a.ceil_mode), shape(grad)[-r:])
        acc = T.widened(elem(grad))
        scaled = grad
        if 0 not in windows.out:
            scaled = ops.div(cast(grad, acc), _divisors(windows, bool(a.count_include_pad), a.divisor_override, acc))
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


def _adaptive_windows_ir(imp, size, out, transposed: bool = False):
    """Adaptive windows of a symbolic size, from iotas: (inside, length), inside an i1
    [out, size] ([size, out] transposed) true where output o's window start(o) <= j < end(o)
    covers position j, and each window's i64 length, broadcastable against it."""
    i64 = _i64()
    o = ops.iota(result_type=T.tensor_type([out], i64))
    j = ops.iota(result_type=T.tensor_type([size], i64))
    o = ops.reshape(o, result_type=T.tensor_type([1, out] if transposed else [out, 1], i64))
    j = ops.reshape(j, result_type=T.tensor_type([size, 1] if transposed else [1, size], i64))
    n, m = imp.size_value(size), imp.size_value(out)
    start = ops.div_floor(ops.mul(o, n), m)
    end = ops.div_floor(ops.add(ops.mul(ops.add(o, constant(1, i64)), n), ops.sub(m, constant(1, i64))), m)
    return ops.logical_and(ops.ge(j, start), ops.lt(j, end)), ops.sub(end, start)


def _averaging_rhs(imp, size, out, et, forward: bool) -> ir.Value:
    """The averaging matrix A [out, size] as the right-hand side of a matmul over the pooled
    dim: A^T for the forward (x @ A^T), A for the backward (g @ A). Of a symbolic size, built
    from iotas: A[o, j] = 1 / (end(o) - start(o)) where start(o) <= j < end(o)."""
    if isinstance(size, int) and isinstance(out, int):
        m = _averaging_matrix(size, out)
        return _const(m.T.copy() if forward else m, et)
    inside, length = _adaptive_windows_ir(imp, size, out, transposed=forward)
    weight = ops.div(constant(1.0, et), cast(length, et))
    return ops.where(inside, weight, constant(0.0, et))


def _apply_along(x, dim: int, rhs: ir.Value):
    """x with dim `dim` replaced by (that dim) @ rhs: moved last, multiplied, moved back."""
    r = rank(x)
    perm = [i for i in range(r) if i != dim] + [dim]
    inv = [perm.index(i) for i in range(r)]
    xt = ops.transpose(x, perm=perm) if perm != list(range(r)) else x
    y = ops.matmul(xt, rhs)
    return ops.transpose(y, perm=inv) if perm != list(range(r)) else y


def _static_output_size(node) -> str | None:
    size = _arg(node, "output_size")
    if any(_is_symbolic_scalar(t) for t in (size if isinstance(size, (list, tuple)) else [size])):
        return "adaptive pooling to a symbolic output size (not supported)"
    return None


def _register_adaptive_avg(r: int):
    @register(f"aten._adaptive_avg_pool{r}d.default", check=_static_output_size)
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
                y = _apply_along(y, lead + i, _averaging_rhs(imp, size, out[i], acc, forward=True))
        return cast(y, want.element_type)

    @register(f"aten._adaptive_avg_pool{r}d_backward.default")
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
                y = _apply_along(y, lead + i, _averaging_rhs(imp, size, out, acc, forward=False))
        return cast(y, want.element_type)


class _AdaptiveWindows(_Windows):
    """Adaptive windows (static sizes): per dim, tap j of output o reads start(o) + j (valid
    below end(o)). The masks and indices of _Windows come from these tables."""

    def __init__(self, sizes, out):
        self.imp = None
        self.r = len(sizes)
        self.sizes, self.out = list(sizes), list(out)
        self.bounds = [_adaptive_bounds(sizes[i], out[i]) for i in range(self.r)]
        self.k = [int((e - s).max()) if len(s) else 0 for s, e in self.bounds]
        self.all_static = True

    def reachable(self, tap) -> bool:
        return bool(self.valid(tap).any())

    def positions(self, i, t):
        start, end = self.bounds[i]
        return np.minimum(start + t, end - 1), start + t < end

    def valid(self, tap):
        m = np.ones(self.out, dtype=bool)
        for i, t in enumerate(tap):
            ok = self.positions(i, t)[1]
            m &= ok.reshape([-1 if j == i else 1 for j in range(self.r)])
        return m

    def flat_index_table(self, tap):
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


def _adaptive_max_symbolic(imp, x, out_sizes, index_et):
    """Adaptive max pooling of symbolic sizes, one dim at a time from the last: the values
    along the dim are spread into their [out, size] windows (the lowest value outside),
    reduced by max, and the winning position found as ATen's loop finds it (the first
    maximum, or the last nan; a window of -inf: its first position). A dim's position and the
    later dims' (gathered at it) make the flat index."""
    r = len(out_sizes)
    lead = rank(x) - r
    sizes = shape(x)[lead:]
    et = elem(x)
    i64 = _i64()
    val, idx = x, None
    for i in reversed(range(r)):
        d, n, m = lead + i, sizes[i], out_sizes[i]
        vs = shape(val)
        rest = [1] * (len(vs) - d - 1)
        inside, _ = _adaptive_windows_ir(imp, n, m)
        inside = ops.reshape(inside, result_type=T.tensor_type([m, n] + rest, T.element_type("i1")))
        spread = ops.where(inside, reshape(val, T.tensor_type(vs[:d] + [1] + vs[d:], et)), constant(_lowest(et), et))
        best = ops.reduce_max(spread, dims=[d + 1], keepdim=True)
        hit = ops.eq(spread, best)
        nan = _isnan(best)
        if nan is not None:
            hit = ops.logical_or(hit, ops.logical_and(_isnan(spread), nan))
        hit = ops.logical_and(hit, inside)
        pos = ops.reshape(ops.iota(result_type=T.tensor_type([n], i64)), result_type=T.tensor_type([n] + rest, i64))
        first = ops.reduce_min(ops.where(hit, pos, constant(2 ** 62, i64)), dims=[d + 1], keepdim=False)
        chosen = first
        if nan is not None:
            last = ops.reduce_max(ops.where(hit, pos, constant(-1, i64)), dims=[d + 1], keepdim=False)
            chosen = ops.where(reshape(nan, T.tensor_type(shape(first), T.element_type("i1"))), last, first)
        if idx is not None:
            stride = imp.size_value(S.product(sizes[i + 1:]))
            chosen = ops.add(ops.mul(chosen, stride), take_along_dim(idx, chosen, d, imp))
        val = reshape(best, T.tensor_type(shape(chosen), et))
        idx = chosen
    return val, cast(idx, index_et)


def _adaptive_max_backward_symbolic(imp, grad, x, indices, r: int, want):
    """grad added at the indices: a scatter of the rows [lead, out...] flattened into
    [lead, size...] (duplicates add in order, as ATen's loop does)."""
    acc, i64 = T.widened(elem(grad)), _i64()
    rows = S.product(shape(x)[:rank(x) - r])
    size, out = S.product(shape(x)[-r:]), S.product(shape(grad)[-r:])
    as_rows = lambda v, n: reshape(v, T.tensor_type([rows, n], elem(v)))   # noqa: E731
    row = ops.reshape(ops.iota(result_type=T.tensor_type([rows], i64)), result_type=T.tensor_type([rows, 1], i64))
    flat = ops.add(ops.mul(row, imp.size_value(size)), as_rows(cast(indices, i64), out))
    total = _scatter_flat(constant(0, acc, [rows, size]), flat, as_rows(cast(grad, acc), out), "add")
    return cast(reshape(total, T.tensor_type(shape(x), acc)), want.element_type)


def _register_adaptive_max(r: int):
    @register(f"aten.adaptive_max_pool{r}d.default", check=_static_output_size)
    def _adaptive_max(imp, node, a):
        x = a.self
        out = _expand_arg(a.output_size, r)
        index_et = meta_type(node, 1).element_type
        if 0 in shape(x) or 0 in out:
            return (constant(0, elem(x), T.dims_of(meta_type(node, 0))),
                    constant(0, index_et, T.dims_of(meta_type(node, 1))))
        if any(isinstance(n, str) for n in shape(x)[-r:]):
            return _adaptive_max_symbolic(imp, x, out, index_et)
        return _max_pool_forward(x, _AdaptiveWindows(shape(x)[-r:], out), index_et)

    @register(f"aten.adaptive_max_pool{r}d_backward.default")
    def _adaptive_max_backward(imp, node, a):
        grad, x, indices = a.grad_output, a.self, a.indices
        want = meta_type(node)
        if 0 in shape(x) or 0 in shape(grad):
            return constant(0, want.element_type, T.dims_of(want))
        if any(isinstance(n, str) for n in shape(x)[-r:]):
            return _adaptive_max_backward_symbolic(imp, grad, x, indices, r, want)
        windows = _AdaptiveWindows(shape(x)[-r:], shape(grad)[-r:])
        acc = T.widened(elem(grad))
        g = cast(grad, acc)
        lead = rank(x) - r
        total = None
        for tap in windows.taps():
            if not windows.reachable(tap):
                continue
            part = ops.where(ops.eq(indices, windows.flat_index(tap, elem(indices))), g, constant(0, acc))
            for i, t in enumerate(tap):
                part = _apply_along(part, lead + i, _const(windows.one_hot(i, t), acc))
            total = part if total is None else ops.add(total, part)
        if total is None:
            return constant(0, want.element_type, T.dims_of(want))
        return cast(total, want.element_type)


for _r in (1, 2, 3):
    _register_max_pool(_r)
    _register_avg_pool(_r)
    _register_adaptive_avg(_r)
    _register_adaptive_max(_r)

