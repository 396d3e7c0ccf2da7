"""lamina-canonicalize: algebraic simplification of lamina ops.

Each rewrite below maps an op to a simpler value of *exactly* the op's result type;
when the types differ (x * 1 where the 1 broadcasts x to a bigger shape or promotes
its dtype) nothing is rewritten. Rewrites:

    log(exp(x)) -> x                     neg(neg(x)) -> x      logical_not(logical_not(x)) -> x
    x * 1, 1 * x, x / 1, x ** 1 -> x     x + 0, 0 + x, x - 0 -> x   (floats: only x + (-0.0) and
                                         x - (+0.0) are identities: -0.0 + 0.0 is +0.0)
    transpose(x, identity) -> x          transpose(transpose(x, p), q) -> transpose(x, p∘q) or x
    transpose(x, p) that only moves static size-1 dims -> reshape(x) (the same element order:
                                         a view, where the transpose was a copy)
    reshape(x) to x's type -> x (at most one dynamic dim)     reshape(reshape(x)) -> reshape(x)
    broadcast_to(x) to x's static type -> x     broadcast_to(broadcast_to(x)) -> broadcast_to(x)
    cast(x) to x's type -> x             where(c, x, x) -> x (static shapes)
    slice(x) covering all of a static dim (step 1) -> x
    reduce_{max,min,prod}(x) over size-1 dims, kept -> x;  reduce_{sum,mean} -> x + 0.0 (floats)

"1" and "0" are lamina.constant operands whose every element is 1 (0). Replaced ops'
producers are left for lamina-dce. The rewrites run as MLIR Python rewrite patterns
under the greedy driver (`use-patterns=1`, the default) or as a plain walk to a
fixpoint (`use-patterns=0`); both give the same IR.
"""
from __future__ import annotations

from typing import Callable

import numpy as np
from mlir import ir
from mlir import rewrite as rw

from ..dialect import ops as lops
from ..dialect import types as T
from .common import (PassFailure, constant_array, defining_lamina, in_module_context, lamina_ops, reject_options,
                     splat_attr, splat_scalar)
from .registry import register_pass

_MAX_CHECKED_ELEMENTS = 1 << 16

Rewrite = Callable[[ir.Operation, Callable[[], ir.InsertionPoint]], "ir.Value | None"]
_REWRITES: dict[str, list[Rewrite]] = {}


def rewrite(*names):
    def register(fn):
        for n in names:
            _REWRITES.setdefault(f"lamina.{n}", []).append(fn)
        return fn
    return register


# ---- helpers ---------------------------------------------------------------------------

def _result_type(op):
    return op.results[0].type


def _is_all(value: ir.Value, x, zero_sign: bool | None = None) -> bool:
    """True when `value` is a lamina.constant whose elements all equal `x`; with
    `zero_sign`, float zeros must also have that sign bit (True: -0.0)."""
    s = splat_scalar(value)
    arr = s if s is not None else constant_array(value)
    if arr is None or (s is None and (arr.size == 0 or arr.size > _MAX_CHECKED_ELEMENTS)):
        return False
    if not bool(np.all(arr == x)):
        return False
    if zero_sign is not None:   # integer zeros convert to +0.0
        return bool(np.all(np.signbit(np.asarray(arr, dtype=np.float64)) == zero_sign))
    return True


def _if_same_type(value: ir.Value | None, op) -> ir.Value | None:
    return value if value is not None and value.type == _result_type(op) else None


def _perm(op) -> list[int]:
    return [int(p) for p in ir.DenseI64ArrayAttr(op.attributes["perm"])]


def _build(ip, op, name, operand, **kwargs):
    """lamina.<name>(operand) at `ip` with the op's location and exact result type, or None if invalid."""
    try:
        with ip(), op.location:
            return lops.build(name, [operand], kwargs, result_type=_result_type(op))
    except Exception:
        return None


# ---- rewrites: op -> replacement value (of the op's exact result type) or None -------------

@rewrite("log")
def _log_exp(op, ip):
    inner = defining_lamina(op.operands[0], "exp")
    return _if_same_type(inner.operands[0] if inner else None, op)


@rewrite("neg")
def _neg_neg(op, ip):
    inner = defining_lamina(op.operands[0], "neg")
    return _if_same_type(inner.operands[0] if inner else None, op)


@rewrite("logical_not")
def _not_not(op, ip):
    inner = defining_lamina(op.operands[0], "logical_not")
    return _if_same_type(inner.operands[0] if inner else None, op)


def _zero_sign(op, sign: bool) -> bool | None:
    """The sign a float zero must have to be an identity of `op` (None: integer result)."""
    return sign if T.is_float(ir.RankedTensorType(_result_type(op)).element_type) else None


def _drop_identity_operand(op, identity, zero_sign=None):
    """x op e -> x and e op x -> x, where e is all `identity` and x already has the op's type."""
    lhs, rhs = op.operands
    if _is_all(rhs, identity, zero_sign) and lhs.type == _result_type(op):
        return lhs
    if _is_all(lhs, identity, zero_sign) and rhs.type == _result_type(op):
        return rhs
    return None


@rewrite("mul")
def _mul_one(op, ip):
    return _drop_identity_operand(op, 1)


@rewrite("add")
def _add_zero(op, ip):
    return _drop_identity_operand(op, 0, _zero_sign(op, True))     # float: x + (-0.0)


@rewrite("sub")
def _sub_zero(op, ip):
    lhs, rhs = op.operands
    return _if_same_type(lhs, op) if _is_all(rhs, 0, _zero_sign(op, False)) else None   # float: x - (+0.0)


@rewrite("div", "pow")
def _div_one(op, ip):
    lhs, rhs = op.operands
    return _if_same_type(lhs, op) if _is_all(rhs, 1) else None


@rewrite("reduce_sum", "reduce_mean", "reduce_prod", "reduce_max", "reduce_min")
def _reduce_unit_dims(op, ip):
    """A reduction whose result has its input's type reduces dims of size 1 only, keeping
    them (a second global mean of a [N, C, 1, 1] mean): each result is its one element;
    a float sum or mean adds it to +0.0, as torch's do (-0.0 becomes +0.0)."""
    x = op.operands[0]
    if x.type != _result_type(op):
        return None
    elem = ir.RankedTensorType(x.type).element_type
    if not op.name.endswith(("_sum", "_mean")) or not T.is_float(elem):
        return x
    try:
        with ip(), op.location:
            scalar = ir.RankedTensorType.get([], elem)
            zero = ir.Operation.create("lamina.constant", results=[scalar],
                                       attributes={"value": splat_attr(0.0, scalar)}).result
            return lops.build("add", [x, zero], result_type=x.type)
    except Exception:
        return None


@rewrite("transpose")
def _transpose(op, ip):
    x, perm = op.operands[0], _perm(op)
    if perm == list(range(len(perm))):
        return _if_same_type(x, op)
    if _moves_only_unit_dims(x.type, perm):
        return _build(ip, op, "reshape", x)
    inner = defining_lamina(x, "transpose")
    if inner is None:
        return None
    # result[i] = inner[perm[i]] = y[inner_perm[perm[i]]]
    inner_perm = _perm(inner)
    composed = [inner_perm[p] for p in perm]
    y = inner.operands[0]
    if composed == list(range(len(composed))):
        return _if_same_type(y, op)
    return _build(ip, op, "transpose", y, perm=composed)


def _moves_only_unit_dims(t: ir.Type, perm: list[int]) -> bool:
    """Whether the dims whose size is not 1 keep their order under `perm` (then the
    row-major order of the elements is unchanged). Static shapes only: a reshape to
    several dynamic dims needs their sizes."""
    rt = ir.RankedTensorType(t)
    if not rt.has_static_shape:
        return False
    kept = [p for p in perm if rt.shape[p] != 1]
    return kept == sorted(kept)


def _dynamic_dims(t: ir.Type) -> int:
    rt = ir.RankedTensorType(t)
    return sum(1 for i in range(rt.rank) if rt.is_dynamic_dim(i))


def _noop_to(name: str, t: ir.Type) -> bool:
    """A reshape/broadcast_to from type t to t itself is a no-op: for reshape when at most one
    dim is dynamic (the element count fixes it); for broadcast_to only when t is static
    (a dynamic dim of size 1 may broadcast to N)."""
    return _dynamic_dims(t) <= (1 if name == "reshape" else 0)


@rewrite("reshape", "broadcast_to")
def _reshape_like(op, ip):
    x = op.operands[0]
    name = op.name.split(".", 1)[1]
    if x.type == _result_type(op):
        return x if _noop_to(name, x.type) else None
    inner = defining_lamina(x, name)
    if inner is None:
        return None
    y = inner.operands[0]
    if y.type == _result_type(op):
        return y if _noop_to(name, y.type) else None
    return _build(ip, op, name, y)


@rewrite("cast")
def _cast_same(op, ip):
    return _if_same_type(op.operands[0], op)


@rewrite("where")
def _where_same(op, ip):
    # Static shapes only: a dynamic condition dim may broadcast x.
    c, a, b = op.operands
    if a != b or _dynamic_dims(c.type) or _dynamic_dims(a.type):
        return None
    return _if_same_type(a, op)


@rewrite("slice")
def _slice_all(op, ip):
    x = op.operands[0]
    if x.type != _result_type(op) or int(ir.IntegerAttr(op.attributes["step"]).value) != 1:
        return None
    t = ir.RankedTensorType(x.type)
    dim = int(ir.IntegerAttr(op.attributes["dim"]).value) % max(t.rank, 1)
    return x if t.rank and not t.is_dynamic_dim(dim) else None


# ---- drivers -----------------------------------------------------------------------------------

def _apply(op, ip) -> ir.Value | None:
    for fn in _REWRITES.get(op.name, ()):
        value = fn(op, ip)
        if value is not None:
            return value
    return None


def _run_patterns(module) -> int:
    count = [0]
    errors: list[tuple[ir.Location, str]] = []

    def pattern(opview, rewriter):
        op = opview.operation
        try:
            value = _apply(op, lambda: rewriter.ip)
        except Exception as e:  # a bug in a rewrite: report it at the op, do not abort the driver
            errors.append((op.location, f"lamina-canonicalize failed on '{op.name}': {type(e).__name__}: {e}"))
            return True
        if value is None:
            return True  # no match
        rewriter.replace_op(op, [value])
        count[0] += 1
        return None  # matched and rewrote (the bindings read a falsy return as success)

    patterns = rw.RewritePatternSet()
    for name in _REWRITES:
        patterns.add(name, pattern)
    config = rw.GreedyRewriteConfig()
    # Rewrite lamina ops only: no region simplification, folding or constant CSE of upstream ops.
    config.region_simplification_level = rw.GreedySimplifyRegionLevel.DISABLED
    config.enable_folding = False
    config.enable_constant_cse = False
    rw.apply_patterns_and_fold_greedily(module.operation, patterns.freeze(), config)
    if errors:
        raise PassFailure(errors[0][1], errors[0][0], errors)
    return count[0]


def _run_walk(module) -> int:
    total = 0
    while True:
        changed = 0
        for op in lamina_ops(module):
            if op.name not in _REWRITES:
                continue
            value = _apply(op, lambda: ir.InsertionPoint(op))
            if value is None:
                continue
            op.results[0].replace_all_uses_with(value)
            op.erase()
            changed += 1
        total += changed
        if not changed:
            return total


@in_module_context
def canonicalize(module, use_patterns: bool = True) -> int:
    """Apply the rewrites to a fixpoint; returns the number of rewrites."""
    return _run_patterns(module) if use_patterns else _run_walk(module)


def _flag(v) -> bool:
    return v if isinstance(v, bool) else str(v).lower() not in ("0", "false", "no", "off")


@register_pass("lamina-canonicalize", level="L1",
               description="algebraic simplification: log(exp x), x*1, x+0, double transpose/reshape/neg, no-op reshape/broadcast/cast")
def run(module: ir.Module, use_patterns=True, **options) -> None:
    reject_options(options)
    canonicalize(module, _flag(use_patterns))
