"""Complex tensors as real pairs: a graph whose values include complex ones (FFTs, polar,
view_as_complex, complex arithmetic) is rewritten, before import, into one where each
complex tensor of shape S is the real tensor of shape S + [2] that `torch.view_as_real`
gives (the same bytes), so that lamina's dialect, kernels and both targets only see real
dtypes. Complex arithmetic becomes real arithmetic on the two parts (as ATen's c10::complex
computes it: numpy's scaled division, hypot for abs); FFTs become library routines on pairs
(fft_routines.py).

The rewrite re-traces the graph (make_fx under the graph's fake mode, node by node, so each
new node keeps its ATen node's source line) through an interpreter that carries complex
values as `_Pair`s. The compiled callable takes and returns what the graph did: complex
inputs are passed as their view_as_real (no copy), complex outputs come back through
view_as_complex (no copy).

All or nothing: a graph with a complex value that an op here does not cover stays as it was
(its complex ops run eagerly, reported as a fallback, as before)."""
from __future__ import annotations

import operator

import torch
from torch.fx.experimental.proxy_tensor import make_fx

from . import fft_routines   # (also registers torch.ops.lamina.*)

aten = torch.ops.aten
_REAL_OF = {torch.complex64: torch.float32, torch.complex128: torch.float64, torch.complex32: torch.float16}


class _Pair:
    """A complex value as its view_as_real tensor (a trailing dim of 2)."""
    __slots__ = ("t",)

    def __init__(self, t):
        self.t = t


def _is_complex(v) -> bool:
    return isinstance(v, torch.Tensor) and v.dtype.is_complex


def _vals(node) -> list:
    v = node.meta.get("val")
    return list(v) if isinstance(v, (tuple, list)) else [v]


def _parts(v):
    """(real, imaginary or None) of a pair, a real tensor or a Python number."""
    if isinstance(v, _Pair):
        return v.t.select(-1, 0), v.t.select(-1, 1)
    if isinstance(v, complex):
        return v.real, v.imag
    return v, None


def _pair(re, im) -> _Pair:
    if not isinstance(re, torch.Tensor):
        re = torch.as_tensor(re, dtype=im.dtype, device=im.device)
    if im is None:
        im = torch.zeros_like(re)
    elif not isinstance(im, torch.Tensor):
        im = torch.full_like(re, im)
    re, im = torch.broadcast_tensors(re, im)
    return _Pair(torch.stack([re, im], -1))


def _dim(d: int, rank: int) -> int:
    """A dim of a complex value of `rank` dims, as a dim of its pairs (negative dims shift)."""
    return d % rank if rank else 0


def _rank(node, i=0) -> int:
    return node.args[i].meta["val"].dim()


# ---- the rules: (node, args, kwargs) -> _Pair / real tensor ----------------------------------
def _add_sub(sign):
    def rule(node, a, b, alpha=1):
        (ar, ai), (br, bi) = _parts(a), _parts(b)
        if isinstance(alpha, complex):
            br, bi = (br * alpha.real - (bi if bi is not None else 0) * alpha.imag,
                      (bi if bi is not None else 0) * alpha.real + br * alpha.imag)
        elif alpha != 1:
            br, bi = br * alpha, (bi * alpha if bi is not None else None)
        re = ar + sign * br
        im = ai if bi is None else (sign * bi if ai is None else ai + sign * bi)
        return _pair(re, im)
    return rule


def _mul(node, a, b):
    (ar, ai), (br, bi) = _parts(a), _parts(b)
    if ai is None:
        return _pair(ar * br, ar * bi)
    if bi is None:
        return _pair(ar * br, ai * br)
    return _pair(ar * br - ai * bi, ar * bi + ai * br)


def _div(node, a, b):
    (ar, ai), (br, bi) = _parts(a), _parts(b)
    if bi is None:
        return _pair(ar / br, ai / br if ai is not None else None)
    if ai is None:
        ai = 0.0
    # c10::complex's division (numpy's): scale by the larger part of the divisor
    abs_r, abs_i = torch.abs(torch.as_tensor(br)), torch.abs(torch.as_tensor(bi))
    big_r = abs_r >= abs_i
    rat = torch.where(big_r, bi / br, br / bi)
    scl = 1.0 / torch.where(big_r, br + bi * rat, bi + br * rat)
    re = torch.where(big_r, (ar + ai * rat) * scl, (ar * rat + ai) * scl)
    im = torch.where(big_r, (ai - ar * rat) * scl, (ai * rat - ar) * scl)
    both_zero = (abs_r == 0) & (abs_i == 0)   # a complex inf or nan, as c10 gives
    re = torch.where(both_zero, ar / abs_r, re)
    im = torch.where(both_zero, ai / abs_i, im)
    return _pair(re, im)


def _conj(node, a):
    re, im = _parts(a)
    return _pair(re, -im)


def _identity(node, a, *rest):
    return a


def _abs(node, a):
    re, im = _parts(a)
    return torch.hypot(re, im)


def _angle(node, a):
    re, im = _parts(a)
    return torch.atan2(im, re)


def _exp(node, a):
    re, im = _parts(a)
    m = torch.exp(re)
    return _pair(m * torch.cos(im), m * torch.sin(im))


def _sgn(node, a):
    re, im = _parts(a)
    m = torch.hypot(re, im)
    zero = m == 0
    safe = torch.where(zero, torch.ones_like(m), m)
    return _pair(torch.where(zero, 0.0, re / safe), torch.where(zero, 0.0, im / safe))


def _neg(node, a):
    return _Pair(-a.t)


def _view_as_real(node, a):
    return a.t


def _view_as_complex(node, a):
    return _Pair(a)


def _complex(node, re, im):
    return _pair(re, im)


def _polar(node, m, theta):
    return _pair(m * torch.cos(theta), m * torch.sin(theta))


def _to_copy(node, a, **kw):
    want = node.meta["val"].dtype
    kw.pop("dtype", None)
    kw.pop("memory_format", None)   # (a format of the complex dims, not of the pairs': lamina picks layouts)
    if isinstance(a, _Pair):
        if want.is_complex:
            return _Pair(aten._to_copy.default(a.t, dtype=_REAL_OF[want], **kw))
        return aten._to_copy.default(a.t.select(-1, 0), dtype=want, **kw)   # (eager drops the imaginary part)
    re = aten._to_copy.default(a, dtype=_REAL_OF[want], **kw)
    return _pair(re, None)


def _pairs_op(op, dims=None, shape_arg=None):
    """A view or data-movement op applied to the pairs: `dims` names the positional args that
    are dims (normalized), `shape_arg` the one that is a shape (gets the trailing 2)."""
    def rule(node, a, *args, **kw):
        rank = node.args[0].meta["val"].dim()
        args = list(args)
        if op is aten.roll.default and (len(args) < 2 or not args[1]):
            raise NotImplementedError("a complex roll of the flattened tensor")
        for i in dims or ():
            if i - 1 < len(args):
                v = args[i - 1]
                args[i - 1] = [_dim(d, rank) for d in v] if isinstance(v, (list, tuple)) else _dim(v, rank)
        if shape_arg is not None:
            args[shape_arg - 1] = list(args[shape_arg - 1]) + [2]
        return _Pair(op(a.t, *args, **kw))
    return rule


def _permute(node, a, perm):
    rank = _rank(node)
    return _Pair(aten.permute.default(a.t, [_dim(d, rank) for d in perm] + [rank]))


def _unsqueeze(node, a, dim):
    rank = node.meta["val"].dim()   # (the result's rank: dim may be the new last one)
    return _Pair(aten.unsqueeze.default(a.t, _dim(dim, rank)))


def _squeeze(node, a, dims=None):
    rank = _rank(node)
    shape = node.args[0].meta["val"].shape
    if dims is None:
        dims = [d for d in range(rank) if shape[d] == 1]
    elif isinstance(dims, int):
        dims = [dims]
    return _Pair(aten.squeeze.dims(a.t, [_dim(d, rank) for d in dims]))


def _cat(node, tensors, dim=0):
    rank = node.meta["val"].dim()
    # (cat skips 1-d empty tensors beside tensors of more dims, as torch's legacy rule)
    ts = [t.t if isinstance(t, _Pair) else _pair(t, None).t for t, n in zip(tensors, node.args[0])
          if rank == 1 or tuple(n.meta["val"].shape) != (0,)]
    return _Pair(aten.cat.default(ts, _dim(dim, rank)))


def _pad(node, a, pad, value=0.0):
    re, im = _parts(a)
    value_re, value_im = _parts(value)
    return _pair(aten.constant_pad_nd.default(re, pad, value_re),
                 aten.constant_pad_nd.default(im, pad, value_im or 0.0))


def _full_like(node, a, value, **kw):
    want = node.meta["val"]
    if not want.dtype.is_complex:   # (a real tensor of a complex one's shape)
        return aten.full.default(list(want.shape), value, dtype=want.dtype, device=want.device)
    return _full(node, list(want.shape), value, device=want.device)


def _filled_like(value):
    """zeros_like / ones_like: full_like with their value."""
    return lambda node, a, **kw: _full_like(node, a, value)


def _empty(node, size, **kw):
    return _full(node, size, 0.0, device=node.meta["val"].device)


def _sum(node, a, dims=None, keepdim=False, dtype=None):
    rank = _rank(node)
    dims = list(range(rank)) if not dims else [_dim(d, rank) for d in dims]
    return _Pair(aten.sum.dim_IntList(a.t, dims, keepdim))


def _mean(node, a, dims=None, keepdim=False, dtype=None):
    rank = _rank(node)
    dims = list(range(rank)) if not dims else [_dim(d, rank) for d in dims]
    return _Pair(aten.mean.dim(a.t, dims, keepdim))


def _where(node, cond, a, b):
    (ar, ai), (br, bi) = _parts(a), _parts(b)
    return _pair(torch.where(cond, ar, br), torch.where(cond, ai if ai is not None else 0.0,
                                                         bi if bi is not None else 0.0))


def _eq(negate):
    def rule(node, a, b):
        (ar, ai), (br, bi) = _parts(a), _parts(b)
        same = (ar == br) & ((ai if ai is not None else 0.0) == (bi if bi is not None else 0.0))
        return ~same if negate else same
    return rule


def _isnan(node, a):
    re, im = _parts(a)
    return torch.isnan(re) | torch.isnan(im)


def _full(node, size, value, **kw):
    want = node.meta["val"]
    kw.update(dtype=_REAL_OF[want.dtype])
    re, im = _parts(value)
    return _Pair(torch.stack([aten.full.default(size, re, **kw), aten.full.default(size, im or 0.0, **kw)], -1))


def _scalar_tensor(node, value, **kw):
    return _full(node, [], value, **{k: v for k, v in kw.items() if k != "dtype"})


def _copy(node, dst, src, non_blocking=False):
    """The functional copy: src's values in dst's shape (and dtype: a real dst takes the real part)."""
    shape = list(node.meta["val"].shape)
    if not node.meta["val"].dtype.is_complex:
        return aten.expand.default(_parts(src)[0], shape)
    pairs = src if isinstance(src, _Pair) else _pair(src, None)
    return _Pair(aten.expand.default(pairs.t, shape + [2]))


def _scatter_into(op):
    def rule(node, a, src, dim, *rest):
        rank = _rank(node)
        src = src if isinstance(src, _Pair) else _pair(src, None)
        return _Pair(op(a.t, src.t, _dim(dim, rank), *rest))
    return rule


def _index_select(node, a, dim, index):
    return _Pair(aten.index_select.default(a.t, _dim(dim, _rank(node)), index))


def _index(node, a, indices):
    return _Pair(aten.index.Tensor(a.t, indices))   # (indices cover leading dims: the pair dim stays last)


def _unfold(node, a, dim, size, step):
    windows = aten.unfold.default(a.t, _dim(dim, _rank(node)), size, step)   # [..., 2, size]
    return _Pair(aten.movedim.int(windows, -2, -1))


def _mm(op):
    def rule(node, a, b):
        (ar, ai), (br, bi) = _parts(a), _parts(b)
        if ai is None:
            return _pair(op(ar, br), op(ar, bi))
        if bi is None:
            return _pair(op(ar, br), op(ai, br))
        return _pair(op(ar, br) - op(ai, bi), op(ar, bi) + op(ai, br))
    return rule


def _fft_r2c(node, x, dim, normalization, onesided):
    return _Pair(torch.ops.lamina.fft_r2c(x, list(dim), normalization, onesided))


def _fft_c2c(node, a, dim, normalization, forward):
    return _Pair(torch.ops.lamina.fft_c2c(a.t, [_dim(d, _rank(node)) for d in dim], normalization, forward))


def _fft_c2r(node, a, dim, normalization, last_dim_size):
    return torch.ops.lamina.fft_c2r(a.t, [_dim(d, _rank(node)) for d in dim], normalization, last_dim_size)


def _eig(node, a):
    if isinstance(a, _Pair):
        raise NotImplementedError("eig of a complex matrix")
    values, vectors = torch.ops.lamina.linalg_eig(a)
    return _Pair(values), _Pair(vectors)


RULES = {
    aten.linalg_eig.default: _eig,
    aten.add.Tensor: _add_sub(1), aten.sub.Tensor: _add_sub(-1),
    aten.mul.Tensor: _mul, aten.div.Tensor: _div, aten.mul.Scalar: _mul, aten.div.Scalar: _div,
    aten.add.Scalar: _add_sub(1), aten.sub.Scalar: _add_sub(-1),
    aten.full.default: _full, aten.full_like.default: _full_like, aten.empty.memory_format: _empty,
    aten.scalar_tensor.default: _scalar_tensor, aten.copy.default: _copy,
    aten.slice_scatter.default: _scatter_into(aten.slice_scatter.default),
    aten.select_scatter.default: _scatter_into(aten.select_scatter.default),
    aten.neg.default: _neg, aten._conj.default: _conj, aten.conj_physical.default: _conj,
    aten._conj_physical.default: _conj, aten.resolve_conj.default: _identity,
    aten.resolve_neg.default: _identity, aten.clone.default: _identity, aten.alias.default: _identity,
    aten.lift_fresh_copy.default: _identity,
    aten.abs.default: _abs, aten.angle.default: _angle, aten.exp.default: _exp, aten.sgn.default: _sgn,
    aten.view_as_real.default: _view_as_real, aten.view_as_complex.default: _view_as_complex,
    aten.complex.default: _complex, aten.polar.default: _polar, aten._to_copy.default: _to_copy,
    aten.view.default: _pairs_op(aten.view.default, shape_arg=1),
    aten._unsafe_view.default: _pairs_op(aten._unsafe_view.default, shape_arg=1),
    aten.reshape.default: _pairs_op(aten.reshape.default, shape_arg=1),
    aten.expand.default: _pairs_op(aten.expand.default, shape_arg=1),
    aten.permute.default: _permute,
    aten.transpose.int: _pairs_op(aten.transpose.int, dims=(1, 2)),
    aten.unsqueeze.default: _unsqueeze,
    aten.squeeze.dim: _squeeze, aten.squeeze.dims: _squeeze, aten.squeeze.default: _squeeze,
    aten.select.int: _pairs_op(aten.select.int, dims=(1,)),
    aten.slice.Tensor: _pairs_op(aten.slice.Tensor, dims=(1,)),
    aten.flip.default: _pairs_op(aten.flip.default, dims=(1,)),
    aten.roll.default: _pairs_op(aten.roll.default, dims=(2,)),
    aten.index_select.default: _index_select, aten.index.Tensor: _index, aten.unfold.default: _unfold,
    aten.cat.default: _cat, aten.constant_pad_nd.default: _pad,
    aten.sum.dim_IntList: _sum, aten.sum.default: _sum, aten.mean.dim: _mean, aten.mean.default: _mean,
    aten.where.self: _where, aten.eq.Tensor: _eq(False), aten.ne.Tensor: _eq(True),
    aten.eq.Scalar: _eq(False), aten.ne.Scalar: _eq(True), aten.isnan.default: _isnan,
    aten.zeros_like.default: _filled_like(0.0), aten.ones_like.default: _filled_like(1.0),
    aten.mm.default: _mm(aten.mm.default), aten.bmm.default: _mm(aten.bmm.default),
    aten._fft_r2c.default: _fft_r2c, aten._fft_c2c.default: _fft_c2c, aten._fft_c2r.default: _fft_c2r,
}


def _touches_complex(node) -> bool:
    if any(_is_complex(v) for v in _vals(node)):
        return True
    return any(isinstance(a, torch.fx.Node) and any(_is_complex(v) for v in _vals(a))
               for a in node.all_input_nodes)


def to_real_pairs(gm: torch.fx.GraphModule, example_inputs):
    """(graph, example inputs, complex input positions, complex output positions) with no
    complex value left, or None: no complex value, an op with complex values no rule covers,
    or a rewrite that fails (the graph then stays as it was)."""
    nodes = list(gm.graph.nodes)
    if not any(_touches_complex(n) for n in nodes):
        return None
    for n in nodes:
        if n.op == "call_function" and _touches_complex(n) and n.target is not operator.getitem \
                and RULES.get(n.target) is None:
            return None
    output = next(n for n in reversed(nodes) if n.op == "output")
    results = output.args[0]
    if not isinstance(results, (tuple, list)):
        return None
    placeholders = [n for n in nodes if n.op == "placeholder"]
    in_pos = [i for i, x in enumerate(example_inputs) if _is_complex(x)]
    out_pos = [i for i, r in enumerate(results) if isinstance(r, torch.fx.Node) and _is_complex(r.meta.get("val"))]
    try:
        from torch._dispatch.python import enable_python_dispatcher
        from torch._guards import detect_fake_mode
        from torch._subclasses.fake_tensor import FakeTensor, FakeTensorMode

        from .decompositions import lamina_decompositions

        # traced on the placeholders' fake values (dynamo's, AOTAutograd's fake mode), whose
        # symbolic sizes stay symbolic (the SymInt placeholders' symbols); static fakes of the
        # example inputs where a graph has no such values
        metas = [p.meta.get("val") for p in placeholders]
        fake_mode = detect_fake_mode(metas) or detect_fake_mode(example_inputs)
        if fake_mode is not None and all(isinstance(v, (FakeTensor, torch.SymInt, int)) for v in metas):
            fake = metas
        else:
            fake_mode = fake_mode or FakeTensorMode()
            fake = [fake_mode.from_tensor(x, static_shapes=True)
                    if isinstance(x, torch.Tensor) and not isinstance(x, FakeTensor) else x for x in example_inputs]
        args = [_fake_pairs(x, fake_mode) if i in in_pos else x for i, x in enumerate(fake)]
        with fake_mode, enable_python_dispatcher():   # (symbolic sizes: ops' SymInt kernels)
            traced = make_fx(_PairInterpreter(gm, set(in_pos)).run_pairs, decomposition_table=lamina_decompositions(),
                             tracing_mode="real")(*args)
    except Exception:  # noqa: BLE001 - a rule that does not apply: the graph stays complex
        return None
    if len(placeholders) != len([n for n in traced.graph.nodes if n.op == "placeholder"]):
        return None
    pair_inputs = [(_fake_pairs(x, fake_mode) if isinstance(x, FakeTensor) else _pairs(x)) if i in in_pos else x
                   for i, x in enumerate(example_inputs)]
    return traced, pair_inputs, in_pos, out_pos


def _fake_pairs(x, fake_mode):
    """The view_as_real of complex fake tensor `x`, under `fake_mode`."""
    with fake_mode:
        return torch.empty_strided(list(x.shape) + [2], [2 * s for s in x.stride()] + [1],
                                   dtype=_REAL_OF[x.dtype], device=x.device)


def _pairs(x):
    """The view_as_real of complex tensor `x` (no copy; a conjugate or negative view first
    materialized, as view_as_real requires)."""
    return torch.view_as_real(x.resolve_conj().resolve_neg())


class _PairInterpreter(torch.fx.Interpreter):
    def __init__(self, gm, complex_inputs: set[int]):
        super().__init__(gm)
        self.complex_inputs = complex_inputs

    def run_node(self, n):
        self.current_node = n
        return super().run_node(n)

    def run_pairs(self, *args):
        from torch.fx.traceback import preserve_node_meta

        args = [_Pair(a) if i in self.complex_inputs else a for i, a in enumerate(args)]
        with preserve_node_meta():
            out = self.run(*args)
        return [o.t if isinstance(o, _Pair) else o for o in out]

    def call_function(self, target, args, kwargs):
        node = self.current_node
        if target is operator.getitem or not _touches_complex(node):
            return super().call_function(target, args, kwargs)
        out = RULES[target](node, *args, **kwargs)
        want = node.meta["val"]
        if isinstance(out, tuple):   # (several outputs: their getitems take them as they are)
            return out
        if isinstance(out, _Pair):
            return _Pair(out.t.to(_REAL_OF[want.dtype]))
        return out.to(want.dtype) if isinstance(out, torch.Tensor) and out.dtype != want.dtype else out


def with_complex_io(fn, in_pos: list[int], out_pos: list[int]):
    """`fn` (compiled on pairs) taking and returning complex tensors where the graph did."""
    ins, outs = set(in_pos), set(out_pos)

    def call(*args):
        args = [_pairs(a) if i in ins else a for i, a in enumerate(args)]
        result = fn(*args)
        return type(result)(fft_routines.as_complex(r) if i in outs else r for i, r in enumerate(result))

    call.compiled_graph = getattr(fn, "compiled_graph", None)
    return call
