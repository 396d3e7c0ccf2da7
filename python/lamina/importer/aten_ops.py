"""ATen -> lamina converters: the importer's op table.

Each converter is registered for one or more ATen overloads (as they appear after
AOTAutograd with core-ATen decompositions, torch 2.11-2.13) and is called as

    fn(importer, node, args) -> ir.Value | tuple[ir.Value | None, ...]

where `args` is the node's arguments bound to the op's schema (defaults filled in,
attribute access: `args.self`, `args.dim`), FX nodes replaced by their ir.Values and
Python scalars left as they are. It runs under the node's Location and an insertion
point in the graph function; the driver then checks the result type(s) against
node.meta["val"]. An optional `check(node) -> reason | None` refuses nodes the
converter cannot handle (unsupported_nodes reports the reason).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import torch
from mlir import ir

from ..dialect import ops
from ..dialect import symbols as S
from ..dialect import types as T
from ..transforms.widen import ROUNDING_ATTR

aten = torch.ops.aten


@dataclass
class Converter:
    fn: Callable
    check: Callable | None = None
    # Its symbolic-integer arguments only state the result's shape, which the converter
    # takes from node.meta["val"] (view sizes, expand sizes, full's size, arange's end).
    sizes_only: bool = False
    # "takes" / "gives" quantized tensors (importer/quantization.py), which the importer's
    # dtype checks otherwise refuse; one it gives is its integer values (no torch type to check).
    quantized: str = ""
    # The node's target has no schema (a higher-order op): the converter reads node.args itself.
    raw_args: bool = False


class _ConverterTable(dict):
    """OpOverload -> Converter. An op that a torch module defines only once it is imported
    is registered by name and found by name when a graph first has it: inductor's
    `prims.fma`, which dynamo writes for `addcmul_(..., value=v)` (every Adam step)."""

    def __init__(self):
        super().__init__()
        self.by_name: dict[str, Converter] = {}

    def __missing__(self, target):
        conv = self.by_name.get(str(target)) if self.by_name else None
        if conv is None:
            raise KeyError(target)
        self[target] = conv
        return conv

    def get(self, target, default=None):
        try:
            return self[target]
        except (KeyError, TypeError):
            return default

    def __contains__(self, target) -> bool:
        return self.get(target) is not None


CONVERTERS: _ConverterTable = _ConverterTable()


def _resolve(name: str):
    """'aten.add.Tensor' -> the OpOverload, or None where this torch lacks it."""
    ns, op, overload = name.split(".")
    try:
        return getattr(getattr(getattr(torch.ops, ns), op), overload)
    except (AttributeError, RuntimeError):
        return None


def register(*names: str, check: Callable | None = None, sizes_only: bool = False):
    def deco(fn):
        for n in names:
            target = _resolve(n)
            if target is not None:
                CONVERTERS[target] = Converter(fn, check, sizes_only)
            elif n.startswith("prims."):   # (defined by a module not imported yet)
                CONVERTERS.by_name[n] = Converter(fn, check, sizes_only)
        return fn
    return deco


class Args(dict):
    __getattr__ = dict.__getitem__


def schema_arguments(node) -> list:
    """(schema argument, the node's value for it) in schema order, defaults filled in."""
    out = []
    for i, arg in enumerate(node.target._schema.arguments):
        if not arg.kwarg_only and i < len(node.args):
            v = node.args[i]
        elif arg.name in node.kwargs:
            v = node.kwargs[arg.name]
        elif arg.has_default_value():
            v = arg.default_value
        else:
            v = None
        out.append((arg, v))
    return out


def bind(node, importer) -> Args:
    """The node's arguments by schema name, defaults filled in, nodes mapped to Values."""
    return Args((arg.name, _wrapped_number(node, arg, v, importer.value(v), importer))
                for arg, v in schema_arguments(node))


def _wrapped_number(node, arg, fx_value, value, importer):
    """A symbolic Python scalar given for a `Scalar` argument (schema type `number`; here a
    rank-0 i64 or f64 tensor: importer.scalar_value) in the result's dtype. torch promotes a
    tensor with a Python number as with a wrapped number, which never widens the tensor's
    float type (a 0-d f32 tensor times a SymFloat is f32: std's backward under dynamic=True)."""
    if not (isinstance(fx_value, torch.fx.Node) and fx_value in getattr(importer, "scalar_values", {})
            and str(arg.type).removeprefix("Optional[").rstrip("]") in ("number", "Scalar")
            and isinstance(value, ir.Value) and isinstance(value.type, ir.RankedTensorType)):
        return value
    val = node.meta.get("val")
    if not isinstance(val, torch.Tensor) or val.dtype == torch.bool or val.is_complex():
        return value
    want = T.element_type(T.torch_dtype_to_name(val.dtype))
    return cast(value, want) if elem(value) != want else value


# ---- helpers ------------------------------------------------------------------------------

def elem(v: ir.Value) -> ir.Type:
    return ir.RankedTensorType(v.type).element_type


def shape(v: ir.Value) -> list:
    """Sizes: ints, and expression strings for symbolic ones."""
    return T.dims_of(v.type)


def rank(v: ir.Value) -> int:
    return ir.RankedTensorType(v.type).rank


def meta_type(node, index: int | None = None) -> ir.RankedTensorType:
    val = node.meta["val"] if index is None else node.meta["val"][index]
    return T.tensor_type([S.dim_of(d) for d in val.shape], T.torch_dtype_to_name(val.dtype))


def _scalar_attr(value, et: ir.Type) -> ir.Attribute:
    if T.is_float(et):
        return ir.FloatAttr.get(et, float(value))
    if T.is_bool(et):
        return ir.IntegerAttr.get(et, 1 if value else 0)
    if isinstance(et, ir.IndexType):
        return ir.IntegerAttr.get(et, int(value))
    width = ir.IntegerType(et).width
    wrapped = (int(value) + (1 << (width - 1))) % (1 << width) - (1 << (width - 1))
    return ir.IntegerAttr.get(et, wrapped)   # (out of range: torch's conversion wraps too)


def constant(value, et: ir.Type | str, shp=()) -> ir.Value:
    """A splat lamina.constant of `value` (rank 0 by default); of a symbolic shape, a
    rank-0 constant broadcast to it."""
    if isinstance(et, str):
        et = T.element_type(et)
    if any(isinstance(d, str) for d in shp):
        return ops.broadcast_to(constant(value, et), result_type=T.tensor_type(list(shp), et))
    tt = T.tensor_type(list(shp), et)
    return ops.constant(value=ir.DenseElementsAttr.get_splat(tt, _scalar_attr(value, et)), result_type=tt)


def scalar_elem(value, like: ir.Type | None = None) -> ir.Type:
    """Element type of a Python scalar operand: bool -> i1, int -> i64 (the other operand's
    integer type: a Python int never widens a tensor, 0-d ones included), float -> f32, or
    the other operand's float type (so promotion matches torch). With an f16/bf16 operand
    the scalar stays f32: torch computes such ops in f32 with the scalar unrounded (a
    rank-0 f32 constant does not change the f16/bf16 result type)."""
    if isinstance(value, bool):
        return T.element_type("i1")
    if isinstance(value, int):
        return like if like is not None and T.is_integer(like) else T.element_type("i64")
    if like is not None and T.is_float(like) and str(like) not in ("f16", "bf16"):
        return like
    return T.element_type("f32")


def scalar_constant(value, like: ir.Value | None = None) -> ir.Value:
    return constant(value, scalar_elem(value, elem(like) if like is not None else None))


def as_value(x, like: ir.Value | None = None) -> ir.Value:
    return x if isinstance(x, ir.Value) else scalar_constant(x, like)


def cast(v: ir.Value, et: ir.Type) -> ir.Value:
    if str(elem(v)) == str(et):
        return v
    return ops.cast(v, result_type=T.with_element_type(v.type, et))


# torch.uint8 values are i16 holding 0..255, stored as i8 (types.py)
UINT8_MASK = 255


def uint8_from_storage(v: ir.Value) -> ir.Value:
    """uint8 values from their i8 storage (a graph input): sign-extended, then masked."""
    return wrap_uint8(cast(v, T.element_type("i16")))


def uint8_to_storage(v: ir.Value) -> ir.Value:
    """The i8 storage of uint8 values (a graph output): their low byte."""
    return cast(v, T.element_type("i8"))


def wrap_uint8(v: ir.Value) -> ir.Value:
    """An op's uint8 result brought back to 0..255 (torch's wrap-around), in i16."""
    return ops.bitwise_and(v, constant(UINT8_MASK, elem(v)))


def reshape(v: ir.Value, tt: ir.Type) -> ir.Value:
    return v if v.type == tt else ops.reshape(v, result_type=tt)


def binary(op: str, a, b) -> ir.Value:
    if not isinstance(a, ir.Value) and not isinstance(b, ir.Value):
        a = scalar_constant(a)
    tensor = a if isinstance(a, ir.Value) and not isinstance(b, ir.Value) else \
        b if isinstance(b, ir.Value) and not isinstance(a, ir.Value) else None
    a = as_value(a, b if isinstance(b, ir.Value) else None)
    b = as_value(b, a)
    out = getattr(ops, op)(a, b)
    if tensor is not None and rank(tensor) == 0 and str(elem(tensor)) in ("f16", "bf16") \
            and str(elem(out)) == "f32":
        # a 0-d f16/bf16 tensor and a Python float: computed in f32 with the scalar
        # unrounded, as eager's kernels do, and rounded once to the tensor's type (the
        # f32 constant, rank 0 like the tensor, would otherwise decide the result type).
        # Marked as lamina-widen-low-precision's own roundings: in a chain, the next op
        # reads the f32 value
        out = cast(out, elem(tensor))
        out.owner.attributes[ROUNDING_ATTR] = ir.UnitAttr.get()
    return out


def norm_dims(dims, r: int) -> list:
    """Reduction dims: None / [] mean all; sorted, non-negative, unique."""
    if dims is None:
        return list(range(r))
    if isinstance(dims, int):
        dims = [dims]
    if len(dims) == 0:
        return list(range(r))
    return sorted({d % max(r, 1) for d in dims})


def _is_float_val(node_arg) -> bool:
    v = getattr(node_arg, "meta", {}).get("val")
    return isinstance(v, torch.Tensor) and v.dtype.is_floating_point


def _arg(node, name: str, default=None):
    """The node's argument `name` by schema (positional or keyword)."""
    for i, arg in enumerate(node.target._schema.arguments):
        if arg.name == name:
            if not arg.kwarg_only and i < len(node.args):
                return node.args[i]
            return node.kwargs.get(name, default)
    return default


def _is_symbolic_scalar(a) -> bool:
    val = a.meta.get("val") if isinstance(a, torch.fx.Node) else a
    return isinstance(val, (torch.SymInt, torch.SymFloat, torch.SymBool))


def _static_args(*names: str):
    """A check refusing the node when one of these arguments is symbolic (its other
    symbolic arguments only give the result's shape)."""
    def check(node):
        for n in names:
            if _is_symbolic_scalar(_arg(node, n)):
                return f"symbolic {n} (lamina takes a symbolic size here only as the result's shape)"
        return None
    return check


def _all_checks(*checks):
    def check(node):
        for c in checks:
            reason = c(node) if c is not None else None
            if reason:
                return reason
        return None
    return check


def _static_sliced_dim(node) -> str | None:
    """Slicing converters compute bounds from the sliced dim's size: it must be static."""
    x = node.args[0].meta.get("val") if node.args and isinstance(node.args[0], torch.fx.Node) else None
    if not isinstance(x, torch.Tensor) or x.dim() == 0:
        return None
    dim = _arg(node, "dim", 0)
    if isinstance(dim, int) and not isinstance(x.shape[dim % x.dim()], int):
        return "slicing along a symbolic dim (not supported yet)"
    return None


def static_dims(dims_of, reason="a symbolic size along a flipped or padded dim (not supported yet)"):
    """A check refusing the node when the input's size along one of dims_of(node, x) is symbolic."""
    def check(node):
        x = node.args[0].meta.get("val") if node.args and isinstance(node.args[0], torch.fx.Node) else None
        if not isinstance(x, torch.Tensor):
            return None
        for d in dims_of(node, x):
            if not isinstance(x.shape[d % max(x.dim(), 1)], int):
                return reason
        return None
    return check


# ---- elementwise -----------------------------------------------------------------------------

_UNARY = {
    "neg": "neg", "abs": "abs", "exp": "exp", "log": "log", "log1p": "log1p", "expm1": "expm1",
    "sin": "sin", "cos": "cos", "tanh": "tanh", "sigmoid": "sigmoid", "relu": "relu", "erf": "erf",
    "sqrt": "sqrt", "rsqrt": "rsqrt", "reciprocal": "reciprocal", "floor": "floor", "ceil": "ceil",
    "round": "round", "tan": "tan", "atan": "atan", "asin": "asin", "acos": "acos", "sinh": "sinh",
    "cosh": "cosh", "asinh": "asinh", "acosh": "acosh", "atanh": "atanh", "exp2": "exp2", "log2": "log2",
    "log10": "log10",
}


def _make_unary(lamina_name):
    def conv(imp, node, a):
        x = a.self
        want = meta_type(node).element_type
        if lamina_name in ("floor", "ceil", "round") and not T.is_float(elem(x)):
            return x  # identity on integers, as torch
        return getattr(ops, lamina_name)(cast(x, want))  # int -> float ops promote first
    return conv


for _aten_name, _lamina_name in _UNARY.items():
    register(f"aten.{_aten_name}.default")(_make_unary(_lamina_name))


@register("aten.gelu.default")
def _gelu(imp, node, a):
    return ops.gelu(a.self, approximate=a.approximate)


def _alpha_scaled(other, alpha, like):
    if alpha is None or alpha == 1:
        return other
    if not isinstance(other, ir.Value):
        return other * alpha
    return binary("mul", other, alpha)


@register("aten.add.Tensor", "aten.add.Scalar")
def _add(imp, node, a):
    return binary("add", a.self, _alpha_scaled(a.other, a.alpha, a.self))


@register("aten.sub.Tensor", "aten.sub.Scalar")
def _sub(imp, node, a):
    return binary("sub", a.self, _alpha_scaled(a.other, a.alpha, a.self))


@register("aten.rsub.Tensor", "aten.rsub.Scalar")
def _rsub(imp, node, a):
    return binary("sub", a.other, _alpha_scaled(a.self, a.alpha, a.other))


@register("aten.mul.Tensor", "aten.mul.Scalar")
def _mul(imp, node, a):
    return binary("mul", a.self, a.other)


@register("prims.fma.default")
def _fma(imp, node, a):
    """a * b + c with the product unrounded: a float32 (or narrower) product is exact in
    float64, and the float64 sum is rounded to the result's type (within an ulp of one
    rounding: the sum may round twice); float64 is multiplied and added."""
    want = meta_type(node).element_type
    wide = T.element_type("f64") if T.is_float(want) and str(want) != "f64" else want
    x, y, z = (cast(v, wide) if isinstance(v, ir.Value) else constant(v, wide) for v in (a.a, a.b, a.c))
    return cast(ops.add(ops.mul(x, y), z), want)


@register("aten.div.Tensor", "aten.div.Scalar", "aten.true_divide.Tensor", "aten.true_divide.Scalar")
def _div(imp, node, a):
    return binary("div", a.self, a.other)


def _div_mode_check(node):
    if node.meta["val"].dtype == torch.bool:
        return "div with a rounding mode on bools"
    return None


@register("aten.div.Tensor_mode", "aten.div.Scalar_mode", check=_div_mode_check)
def _div_mode(imp, node, a):
    if a.rounding_mode is None:
        return binary("div", a.self, a.other)
    want = meta_type(node).element_type   # (ints stay ints: the rounded quotient)
    x = a.self if isinstance(a.self, ir.Value) else constant(a.self, want)
    y = a.other if isinstance(a.other, ir.Value) else constant(a.other, want)
    return (ops.div_floor if a.rounding_mode == "floor" else ops.div_trunc)(cast(x, want), cast(y, want))


@register("aten.pow.Tensor_Scalar", "aten.pow.Tensor_Tensor", "aten.pow.Scalar")
def _pow(imp, node, a):
    return binary("pow", a.self, a.exponent)


@register("aten.maximum.default")
def _maximum(imp, node, a):
    return binary("maximum", a.self, a.other)


@register("aten.minimum.default")
def _minimum(imp, node, a):
    return binary("minimum", a.self, a.other)


def _clamp(x, lo, hi):
    if lo is not None:
        x = binary("maximum", x, lo)
    if hi is not None:
        x = binary("minimum", x, hi)
    return x


@register("aten.clamp.default", "aten.clamp.Tensor")
def _clamp_conv(imp, node, a):
    return _clamp(a.self, a.min, a.max)


@register("aten.clamp_min.default", "aten.clamp_min.Tensor")
def _clamp_min(imp, node, a):
    return _clamp(a.self, a.min, None)


@register("aten.clamp_max.default", "aten.clamp_max.Tensor")
def _clamp_max(imp, node, a):
    return _clamp(a.self, None, a.max)


@register("aten.hardtanh.default")
def _hardtanh(imp, node, a):
    # (an integer tensor stays one: clamped as clamp computes it, with float bounds in float,
    # then converted back, as ATen's hardtanh writes clamp into a tensor like its input)
    return cast(_clamp(a.self, a.min_val, a.max_val), meta_type(node).element_type)


@register("aten.leaky_relu.default")
def _leaky_relu(imp, node, a):
    x = a.self
    pos = ops.gt(x, constant(0, elem(x)))
    return ops.where(pos, x, binary("mul", x, a.negative_slope))


@register("aten.where.self", "aten.where.ScalarSelf", "aten.where.ScalarOther", "aten.where.Scalar")
def _where(imp, node, a):
    x, y = a.self, a.other
    x = as_value(x, y if isinstance(y, ir.Value) else None)
    y = as_value(y, x)
    return ops.where(a.condition, x, y)


def _compare(op):
    def conv(imp, node, a):
        x, y = a.self, a.other
        tensors = [v for v in (x, y) if isinstance(v, ir.Value)]
        scalars = [v for v in (x, y) if not isinstance(v, ir.Value)]
        common = T.promote([(elem(v), rank(v)) for v in tensors]
                           + [(scalar_elem(s, elem(tensors[0])), 0) for s in scalars])
        # Compare in the promoted type, as torch does (int < 0.5 compares as float).
        x = cast(x, common) if isinstance(x, ir.Value) else constant(x, common)
        y = cast(y, common) if isinstance(y, ir.Value) else constant(y, common)
        return getattr(ops, op)(x, y)
    return conv


for _op in ("eq", "ne", "lt", "le", "gt", "ge"):
    register(f"aten.{_op}.Tensor", f"aten.{_op}.Scalar")(_compare(_op))


def _logical(op):
    def conv(imp, node, a):
        return getattr(ops, op)(a.self, as_value(a.other, a.self))
    return conv


def _bitwise(op):
    """bitwise_and/or/xor: bools are the logical op; integers the bitwise one, in the
    promoted type."""
    def conv(imp, node, a):
        want = meta_type(node).element_type
        if T.is_bool(want):
            return getattr(ops, f"logical_{op}")(a.self, as_value(a.other, a.self))
        return getattr(ops, f"bitwise_{op}")(cast(a.self, want), cast(as_value(a.other, a.self), want))
    return conv


for _op in ("and", "or", "xor"):
    register(f"aten.logical_{_op}.default")(_logical(f"logical_{_op}"))
    register(f"aten.bitwise_{_op}.Tensor", f"aten.bitwise_{_op}.Scalar")(_bitwise(_op))


def _isnan(x):
    return ops.ne(x, x)


@register("aten.isnan.default")
def _isnan_conv(imp, node, a):
    x = a.self
    return _isnan(x) if T.is_float(elem(x)) else constant(False, "i1", shape(x))


@register("aten.isinf.default")
def _isinf(imp, node, a):
    x = a.self
    if not T.is_float(elem(x)):
        return constant(False, "i1", shape(x))
    return ops.eq(ops.abs(x), constant(math.inf, elem(x)))


def _nan_ignoring(op):
    """fmax/fmin: like maximum/minimum, but a NaN operand yields the other one."""
    def conv(imp, node, a):
        want = meta_type(node).element_type
        x, y = cast(a.self, want), cast(a.other, want)
        both = getattr(ops, op)(x, y)
        if not T.is_float(want):
            return both
        return ops.where(_isnan(x), y, ops.where(_isnan(y), x, both))
    return conv


register("aten.fmax.default")(_nan_ignoring("maximum"))
register("aten.fmin.default")(_nan_ignoring("minimum"))


@register("aten.logical_not.default")
def _logical_not(imp, node, a):
    return ops.logical_not(a.self)


@register("aten.bitwise_not.default")
def _bitwise_not(imp, node, a):
    return ops.logical_not(a.self) if T.is_bool(elem(a.self)) else ops.bitwise_not(a.self)


# ---- casts, identities, sources ---------------------------------------------------------------

@register("aten._to_copy.default", "aten.to.dtype", "prims.convert_element_type.default",
          "aten.to.dtype_layout")
def _to_copy(imp, node, a):
    x = a.get("self", a.get("a"))
    return cast(x, meta_type(node).element_type)


@register("aten.clone.default", "aten.alias.default", "aten.lift_fresh_copy.default",
          "aten.detach.default")
def _identity(imp, node, a):
    # Value semantics: a copy is the value itself (the runtime owns output buffers).
    return a.self


def _one_element(node) -> str | None:
    x = node.args[0].meta.get("val") if isinstance(node.args[0], torch.fx.Node) else None
    if not isinstance(x, torch.Tensor) or not all(isinstance(d, int) for d in x.shape) or x.numel() != 1:
        return "item() of a tensor that is not one element of static shape"
    return None


@register("aten._local_scalar_dense.default", check=_one_element)
def _local_scalar_dense(imp, node, a):
    # A scalar is a rank-0 tensor in lamina: `t.item()` used as a value is `t` itself (what
    # dynamo makes of an unspecialized float attribute such as an eps under dynamic=True).
    x = a.self
    return x if rank(x) == 0 else ops.reshape(x, result_type=T.tensor_type([], elem(x)))


@register("aten.scalar_tensor.default")
def _scalar_tensor(imp, node, a):
    want = meta_type(node)
    if isinstance(a.s, ir.Value):   # a symbolic size or float (a rank-0 tensor of its value)
        return cast(reshape(a.s, T.tensor_type([], elem(a.s))), want.element_type)
    return constant(a.s, want.element_type)


def _splat_like_meta(value_key):
    def conv(imp, node, a):
        tt = meta_type(node)
        return constant(a[value_key] if value_key else 0, tt.element_type, T.dims_of(tt))
    return conv


register("aten.full.default", "aten.full_like.default", "aten.new_full.default",
         check=_static_args("fill_value"), sizes_only=True)(_splat_like_meta("fill_value"))
register("aten.fill.Scalar")(_splat_like_meta("value"))
register("aten.zeros.default", "aten.zeros_like.default", "aten.new_zeros.default",
         sizes_only=True)(_splat_like_meta(None))


@register("aten.ones.default", "aten.ones_like.default", "aten.new_ones.default", sizes_only=True)
def _ones(imp, node, a):
    tt = meta_type(node)
    return constant(1, tt.element_type, T.dims_of(tt))


# Uninitialized memory: any value is eager's value, so zeros (a functionalized program
# overwrites what it reads: new_empty + copy + slice_scatter for a circular pad).
register("aten.empty.memory_format", "aten.empty_like.default", "aten.empty_strided.default",
         "aten.new_empty.default", "aten.new_empty_strided.default", "aten.empty_permuted.default",
         sizes_only=True)(_splat_like_meta(None))


@register("aten.copy.default")
def _copy(imp, node, a):
    """copy(self, src): src cast to self's dtype and broadcast to its shape (self's values
    are not read: functionalization's form of self.copy_(src))."""
    want = meta_type(node)
    src = a.src if isinstance(a.src, ir.Value) else constant(a.src, want.element_type)
    src = cast(src, want.element_type)
    return src if src.type == want else ops.broadcast_to(src, result_type=want)


def constant_from_tensor(t: torch.Tensor) -> ir.Value:
    """A lamina.constant holding a (small) tensor literal from a get_attr node."""
    from torch._subclasses.fake_tensor import unset_fake_temporarily

    # (the forward of a training graph is imported under AOTAutograd's fake mode, in which
    # a real tensor's detach() raises: the literal is read outside it)
    with unset_fake_temporarily():
        return _constant_from_real_tensor(t.detach().cpu().contiguous())


def _constant_from_real_tensor(t: torch.Tensor) -> ir.Value:
    if t.dtype == torch.uint8:
        t = t.to(torch.int16)   # its values' type (types.py)
    et = T.element_type(T.torch_dtype_to_name(t.dtype))
    tt = T.tensor_type(list(t.shape), et)
    flat = t.reshape(-1)
    if flat.numel() > 0 and bool((flat == flat[0]).all()):
        return ops.constant(value=ir.DenseElementsAttr.get_splat(tt, _scalar_attr(flat[0].item(), et)),
                            result_type=tt)
    # (numpy has no bf16: its bits as int16, which the attribute takes with the bf16 type)
    arr = t.view(torch.int16).numpy() if t.dtype == torch.bfloat16 else t.numpy()
    attr = ir.DenseElementsAttr.get(arr, type=et, shape=list(t.shape))
    return ops.constant(value=attr, result_type=tt)


def constant_from_array(array, et) -> ir.Value:
    """A lamina.constant of a numpy array (index tables computed from static sizes), in
    type et. (numpy, not torch: converters may run under a fake-tensor mode.)"""
    import numpy as np

    array = np.ascontiguousarray(array)
    if array.dtype == np.bool_:
        as_int = constant_from_array(array.astype(np.int8), T.element_type("i8"))
        return ops.ne(as_int, constant(0, "i8"))
    native = np.float64 if array.dtype.kind == "f" else np.int64
    array = array.astype(native)
    src_et = T.element_type("f64" if native is np.float64 else "i64")
    tt = T.tensor_type(list(array.shape), src_et)
    flat = array.reshape(-1)
    if flat.size and (flat == flat[0]).all():
        v = constant(flat[0].item(), src_et, list(array.shape))
    else:
        v = ops.constant(value=ir.DenseElementsAttr.get(array, type=src_et, shape=list(array.shape)), result_type=tt)
    return cast(v, et) if str(src_et) != str(et) else v


def _arange(imp, node, start, step):
    tt = meta_type(node)
    et = tt.element_type
    # start + step * i computed in f64 and rounded once to f32 (then to et), as ATen's CUDA
    # kernel (one fused multiply-add) and its CPU scalar path (in double) give it; computed
    # in f32 it rounds twice, 1 ulp off at some points. (ATen's CPU vector path, chunks of 8
    # from a rounded base, and f64's fma, rounded twice here, are not followed.)
    wide = T.is_float(et) and T.type_name(et) != "f64"
    work = T.element_type("f64") if wide else et

    def term(v):   # a number, or a symbolic one (embedding_bag's offsets: arange(0, b * n, n))
        if isinstance(v, torch.fx.Node):
            return cast(imp.scalar_value(v), work)
        return constant(v, work)

    x = ops.iota(result_type=T.with_element_type(tt, work) if wide else tt)
    if isinstance(step, torch.fx.Node) or step != 1:
        x = ops.mul(x, term(step))
    if isinstance(start, torch.fx.Node) or start != 0:
        x = ops.add(x, term(start))
    if wide:
        x = cast(x, T.element_type("f32"))
        if T.type_name(et) != "f32":
            x = cast(x, et)
    return x


def _arange_check(node):
    v = node.meta.get("val")
    if isinstance(v, torch.Tensor) and not v.dtype.is_floating_point:
        for s in node.args:
            if isinstance(s, float) and s != int(s):
                return "integer arange with fractional start/step"
    return None


@register("aten.arange.start_step", "aten.arange.start", check=_arange_check, sizes_only=True)
def _arange_ss(imp, node, a):
    # (sizes_only: the end is the result's shape; a symbolic start or step is its node)
    return _arange(imp, node, _arg(node, "start"), _arg(node, "step", 1))


@register("aten.arange.default", check=_arange_check, sizes_only=True)
def _arange_end(imp, node, a):
    return _arange(imp, node, 0, 1)


@register("prims.iota.default")
def _iota(imp, node, a):
    return _arange(imp, node, a.start, a.step)


@register("aten.masked_fill.Scalar", "aten.masked_fill.Tensor")
def _masked_fill(imp, node, a):
    x, v = a.self, a.value
    v = cast(v, elem(x)) if isinstance(v, ir.Value) else constant(v, elem(x))
    return ops.where(a.mask, v, x)


# ---- reductions ------------------------------------------------------------------------------

def _reduce(op, x, dims, keepdim, dtype=None, result_elem=None):
    if dtype is not None:
        x = cast(x, T.element_type(T.torch_dtype_to_name(dtype)))
    if rank(x) == 0:
        return cast(x, result_elem) if result_elem is not None else x
    out = getattr(ops, op)(x, dims=norm_dims(dims, rank(x)), keepdim=bool(keepdim))
    # (integer sums accumulate in i64; a narrower dtype= wraps, as torch's sum in that type)
    return cast(out, result_elem) if result_elem is not None else out


@register("aten.sum.dim_IntList")
def _sum_dim(imp, node, a):
    return _reduce("reduce_sum", a.self, a.dim, a.keepdim, a.dtype, meta_type(node).element_type)


@register("aten.sum.default")
def _sum(imp, node, a):
    return _reduce("reduce_sum", a.self, None, False, a.dtype, meta_type(node).element_type)


@register("aten.mean.dim")
def _mean_dim(imp, node, a):
    return _reduce("reduce_mean", a.self, a.dim, a.keepdim, a.dtype)


@register("aten.mean.default")
def _mean(imp, node, a):
    return _reduce("reduce_mean", a.self, None, False, a.dtype)


@register("aten.amax.default")
def _amax(imp, node, a):
    return _reduce("reduce_max", a.self, a.dim, a.keepdim)


@register("aten.amin.default")
def _amin(imp, node, a):
    return _reduce("reduce_min", a.self, a.dim, a.keepdim)


@register("aten.max.default")
def _max_all(imp, node, a):
    return _reduce("reduce_max", a.self, None, False)


@register("aten.min.default")
def _min_all(imp, node, a):
    return _reduce("reduce_min", a.self, None, False)


def _values_only(node):
    import operator

    for u in node.users:
        if u.target is not operator.getitem or u.args[1] != 0:
            return f"{node.target}: the indices output is used (lamina has no argmax/argmin)"
    return None


@register("aten.max.dim", check=_values_only)
def _max_dim(imp, node, a):
    return (_reduce("reduce_max", a.self, [a.dim], a.keepdim), None)


@register("aten.min.dim", check=_values_only)
def _min_dim(imp, node, a):
    return (_reduce("reduce_min", a.self, [a.dim], a.keepdim), None)


@register("aten.prod.dim_int")
def _prod_dim(imp, node, a):
    return _reduce("reduce_prod", a.self, [a.dim], a.keepdim, a.dtype, meta_type(node).element_type)


@register("aten.prod.default")
def _prod(imp, node, a):
    return _reduce("reduce_prod", a.self, None, False, a.dtype, meta_type(node).element_type)


def _var(x, dims, correction, keepdim):
    correction = 1.0 if correction is None else float(correction)
    if rank(x) == 0:
        dims = []
    return ops.var(x, dims=norm_dims(dims, rank(x)), keepdim=bool(keepdim), correction=correction)


@register("aten.var.correction")
def _var_corr(imp, node, a):
    return _var(a.self, a.dim, a.correction, a.keepdim)


@register("aten.var.dim")
def _var_dim(imp, node, a):
    return _var(a.self, a.dim, 1.0 if a.unbiased else 0.0, a.keepdim)


@register("aten.var_mean.correction")
def _var_mean(imp, node, a):
    v = _var(a.self, a.dim, a.correction, a.keepdim)
    m = _reduce("reduce_mean", a.self, a.dim, a.keepdim)
    return (v, m)


# ---- contractions ----------------------------------------------------------------------------

@register("aten.mm.default", "aten.bmm.default")
def _mm(imp, node, a):
    return ops.matmul(a.self, a.mat2)


@register("aten.addmm.default")
def _addmm(imp, node, a):
    y = ops.matmul(a.mat1, a.mat2)
    if a.alpha != 1:
        y = binary("mul", y, a.alpha)
    if a.beta == 0:
        return y  # torch ignores `self` (even nan/inf) when beta == 0
    bias = a.self if a.beta == 1 else binary("mul", a.self, a.beta)
    return ops.add(bias, y)


@register("aten.matmul.default")
def _matmul(imp, node, a):
    x, y = a.self, a.other
    if rank(x) == 1:
        x = ops.reshape(x, result_type=T.tensor_type([1] + shape(x), elem(x)))
    if rank(y) == 1:
        y = ops.reshape(y, result_type=T.tensor_type(shape(y) + [1], elem(y)))
    return reshape(ops.matmul(x, y), meta_type(node))


# ---- data movement ---------------------------------------------------------------------------

def _to_meta_shape(imp, node, a):
    return reshape(a.self, meta_type(node))


register("aten.view.default", "aten._unsafe_view.default", "aten.reshape.default",
         "aten.squeeze.default", "aten.squeeze.dim", "aten.squeeze.dims",
         "aten.unsqueeze.default", "aten.flatten.using_ints", "aten.view_copy.default",
         sizes_only=True)(_to_meta_shape)


def _transpose(x, perm):
    perm = [p % rank(x) for p in perm]
    if perm == list(range(rank(x))):
        return x
    return ops.transpose(x, perm=perm)


@register("aten.permute.default")
def _permute(imp, node, a):
    return _transpose(a.self, a.dims)


@register("aten.transpose.int")
def _transpose_int(imp, node, a):
    r = rank(a.self)
    perm = list(range(r))
    if r:
        d0, d1 = a.dim0 % r, a.dim1 % r
        perm[d0], perm[d1] = perm[d1], perm[d0]
    return _transpose(a.self, perm)


@register("aten.t.default")
def _t(imp, node, a):
    return _transpose(a.self, [1, 0]) if rank(a.self) == 2 else a.self


@register("aten.expand.default", sizes_only=True)
def _expand(imp, node, a):
    tt = meta_type(node)
    return a.self if a.self.type == tt else ops.broadcast_to(a.self, result_type=tt)


def slice_(x, dim, start, end, step=1):
    """A normalized lamina.slice (static sizes); identity when it takes everything."""
    dim = dim % rank(x)
    size = shape(x)[dim]
    start = 0 if start is None else start
    end = size if end is None else end
    if start < 0:
        start += size
    if end < 0:
        end += size
    start = min(max(start, 0), size)
    end = min(max(end, start), size)
    if start == 0 and end == size and step == 1:
        return x
    return ops.slice(x, dim=dim, start=start, end=end, step=step)


def _symbolic_bounds(node) -> tuple | None:
    """(dim, start, end, step) of a slice, narrow, select or slice_scatter whose sliced size
    or bounds are symbolic, the bounds normalized by slice_bounds and written as expressions
    (strings: lamina.slice's normalized form); None for a static one. Raises ValueError when
    torch's size for the slice is not the one the bounds give."""
    from . import slice_bounds as B

    x = node.args[0].meta["val"]
    dim = _arg(node, "dim", 0) % max(x.dim(), 1)
    size = x.shape[dim]
    target = str(node.target)
    names = {"aten.slice.Tensor": ("start", "end"), "aten.slice_scatter.default": ("start", "end"),
             "aten.narrow.default": ("start", "length"), "aten.select.int": ("index",)}[target]
    args = [_arg(node, n) for n in names]
    if not B.is_symbolic(size) and not any(B.is_symbolic(v) for v in args):
        return None
    step = _arg(node, "step", 1) if "slice" in target else 1
    if not isinstance(step, int):
        raise ValueError("a slice with a symbolic step")
    n = B.term(size)
    if "slice" in target:
        start, end = B.python_bounds(n, *(None if v is None else B.term(v) for v in args))
    else:
        start = B.wrapped_index(n, B.term(args[0]))
        end = B.plus(start, B.term(args[1]) if len(args) > 1 else (1, 1))
    if target == "aten.select.int":
        want = 1
    elif target == "aten.slice_scatter.default":   # (the size written: src's)
        want = node.args[1].meta["val"].shape[dim]
    else:
        want = node.meta["val"].shape[dim]
    bounds = B.checked(start, end, step, want)
    if bounds is None and target == "aten.slice_scatter.default" and step != 1:
        # A strided scatter writes src's elements at start + k * step and needs no end: torch
        # checked src's size against the slice under guards these expressions do not see
        # (x[..., 1::2] of an even size s: s // 2 written as (s + 1) // 2).
        bounds = (start[0], end[0])
    if bounds is None:
        raise ValueError(f"torch sized this slice as {want}, not as its bounds {start[0]}..{end[0]} give")
    return dim, str(bounds[0]), str(bounds[1]), step


def _sliceable(node) -> str | None:
    try:
        _symbolic_bounds(node)
    except Exception as e:  # noqa: BLE001 - whatever torch's symbols hold that this does not take
        return f"slicing along a symbolic dim: {type(e).__name__}: {e}"
    return None


def symbolic_slice(x, dim, start: str, end: str, step: int = 1):
    """lamina.slice with normalized symbolic bounds; identity when it takes everything."""
    if start == "0" and step == 1 and S.equivalent(end, shape(x)[dim]):
        return x
    return ops.slice(x, dim=dim, start=start, end=end, step=step)


@register("aten.slice.Tensor", check=_sliceable)
def _slice(imp, node, a):
    bounds = _symbolic_bounds(node)
    if bounds is not None:
        return symbolic_slice(a.self, *bounds)
    return slice_(a.self, a.dim, a.start, a.end, a.step)


@register("aten.narrow.default", check=_sliceable)
def _narrow(imp, node, a):
    bounds = _symbolic_bounds(node)
    if bounds is not None:
        return symbolic_slice(a.self, *bounds)
    start = a.start % shape(a.self)[a.dim % rank(a.self)] if a.start < 0 else a.start
    return slice_(a.self, a.dim, start, start + a.length)


@register("aten.select.int", check=_sliceable)
def _select(imp, node, a):
    bounds = _symbolic_bounds(node)
    if bounds is not None:
        return reshape(symbolic_slice(a.self, *bounds), meta_type(node))
    size = shape(a.self)[a.dim % rank(a.self)]
    i = a.index + size if a.index < 0 else a.index
    return reshape(slice_(a.self, a.dim, i, i + 1), meta_type(node))


@register("aten.cat.default")
def _cat(imp, node, a):
    want = meta_type(node)
    parts = [cast(t, want.element_type) for t in a.tensors
             if not (rank(t) == 1 and shape(t)[0] == 0 and want.rank != 1)]  # legacy empty inputs
    dim = a.dim % want.rank
    out = parts[0]
    for p in parts[1:]:
        out = ops.concat(out, p, dim=dim)
    return out


def _split(x, sizes, dim):
    outs, start = [], 0
    for s in sizes:
        outs.append(slice_(x, dim, start, start + s))
        start += s
    return tuple(outs)


def _split_symbolic(x, node, dim):
    """A split along a symbolic dim: one slice per output, of the size torch gave it (the
    number of outputs is the graph's; their sizes add up to the dim's, torch checked)."""
    dim = dim % rank(x)
    outs, start = [], 0
    for val in node.meta["val"]:
        size = S.dim_of(val.shape[dim])
        end = S.combine("+", start, size)
        part = symbolic_slice(x, dim, str(start), str(end))
        outs.append(reshape(part, T.tensor_type([S.dim_of(d) for d in val.shape], elem(x))))
        start = end
    return tuple(outs)


def _symbolic_split_dim(node, x) -> bool:
    dim = _arg(node, "dim", 0) % max(rank(x), 1)
    return rank(x) > 0 and not isinstance(shape(x)[dim], int)


@register("aten.split_with_sizes.default")
def _split_with_sizes(imp, node, a):
    if _symbolic_split_dim(node, a.self) or any(not isinstance(n, int) for n in a.split_sizes):
        return _split_symbolic(a.self, node, a.dim)
    return _split(a.self, a.split_sizes, a.dim)


@register("aten.split.Tensor")
def _split_tensor(imp, node, a):
    if _symbolic_split_dim(node, a.self) or not isinstance(a.split_size, int):
        return _split_symbolic(a.self, node, a.dim)
    n = shape(a.self)[a.dim % rank(a.self)]
    sizes = [min(a.split_size, n - i) for i in range(0, n, a.split_size)] or [0]
    return _split(a.self, sizes, a.dim)


@register("aten.unbind.int", check=_static_sliced_dim)
def _unbind(imp, node, a):
    n = shape(a.self)[a.dim % rank(a.self)]
    return tuple(reshape(slice_(a.self, a.dim, i, i + 1), meta_type(node, i)) for i in range(n))


def _strided_slice_scatter(imp, x, src, dim, start, end, step):
    """x with x[start:end:step] along dim replaced by src (the backward of x[..., ::2]): src
    gathered to x's positions, chosen where a position is hit. Static bounds: a constant
    index table; symbolic ones (normalized expressions): computed from an iota, position
    start + k * step taking src's k-th element for k below src's size (end unused: see
    _symbolic_bounds)."""
    import numpy as np

    size, count = shape(x)[dim], shape(src)[dim]
    if count == 0:
        return x
    line = [1] * rank(x)
    line[dim] = size
    i1, i64 = T.element_type("i1"), T.element_type("i64")
    if all(isinstance(v, int) for v in (size, count, start, end)):
        i = np.arange(size)
        k = (i - start) // step
        hit = (i >= start) & (i < end) & ((i - start) % step == 0) & (k < count)
        index, hit = constant_from_array(np.where(hit, k, 0), i64), constant_from_array(hit.reshape(line), i1)
    else:
        rel = ops.sub(ops.iota(result_type=T.tensor_type([size], i64)), imp.size_value(start))
        ahead = ops.maximum(rel, constant(0, i64))
        k = ops.div_floor(ahead, constant(step, i64))
        last = ops.sub(imp.size_value(count), constant(1, i64))
        ok = ops.logical_and(ops.ge(rel, constant(0, i64)), ops.eq(ops.remainder(ahead, constant(step, i64)), constant(0, i64)))
        ok = ops.logical_and(ok, ops.le(k, last))
        # src may be empty at run time ((s - 5) // 2 elements): gather from src and one more
        # element, at most that one, so that no index reads outside
        pad = list(shape(src))
        pad[dim] = 1
        src = ops.concat(src, constant(0, elem(src), pad), dim=dim)
        index = ops.minimum(k, imp.size_value(count))
        hit = ops.reshape(ok, result_type=T.tensor_type(line, i1))
    return ops.where(hit, ops.index_select(src, index, dim=dim), x)


@register("aten.slice_scatter.default", check=_sliceable)
def _slice_scatter(imp, node, a):
    """input with input[start:end] along dim replaced by src (what x[:, 1:].mul_(2) becomes):
    concat(input[:start], src, input[end:]), leaving out empty pieces."""
    x, src = a.self, cast(a.src, elem(a.self))
    dim = a.dim % rank(x)
    bounds = _symbolic_bounds(node)
    if bounds is not None:
        _, start, end, step = bounds
        if step != 1:
            return _strided_slice_scatter(imp, x, src, dim, start, end, step)
        size = str(shape(x)[dim])
        pieces = ([symbolic_slice(x, dim, "0", start)] if start != "0" else []) + [src] + \
            ([symbolic_slice(x, dim, end, size)] if not S.equivalent(end, size) else [])
        out = pieces[0]
        for p in pieces[1:]:
            out = ops.concat(out, p, dim=dim)
        return out
    size = shape(x)[dim]
    start = 0 if a.start is None else (a.start + size if a.start < 0 else a.start)
    end = size if a.end is None else (a.end + size if a.end < 0 else a.end)
    start = min(max(start, 0), size)
    end = min(max(end, start), size)
    if a.step != 1:
        return _strided_slice_scatter(imp, x, src, dim, start, end, a.step)
    pieces = [p for p, n in ((slice_(x, dim, 0, start), start), (src, end - start), (slice_(x, dim, end, size), size - end))
              if n > 0]
    if not pieces:
        return x
    out = pieces[0]
    for p in pieces[1:]:
        out = ops.concat(out, p, dim=dim)
    return out


@register("aten.index_select.default")
def _index_select(imp, node, a):
    idx = a.index
    if rank(idx) == 0:
        idx = ops.reshape(idx, result_type=T.tensor_type([1], elem(idx)))
    x = a.self
    if rank(x) == 0:   # a 0-d input (its index has one element) gives a 0-d result
        x = ops.reshape(x, result_type=T.tensor_type([1], elem(x)))
        return reshape(ops.index_select(x, idx, dim=0), meta_type(node))
    return ops.index_select(x, idx, dim=a.dim % rank(x))


@register("aten.embedding.default")
def _embedding(imp, node, a):
    return ops.index_select(a.weight, a.indices, dim=0)


# ---- storage-addressed views ---------------------------------------------------------------
# `as_strided(x, size, stride, offset)` addresses the *storage* x lives in, not x's elements:
# after `x.narrow(...)` or a channels-last copy, the same call reads other numbers than it
# would from a compact tensor of x's values. lamina tensors are values, so the converter
# rebuilds the storage from the tensor that owns it (the "base": a graph input or a computed
# tensor, found through the chain of views that share its storage in the FakeTensors), in
# the base's memory order (its strides in meta["val"]), and gathers from it:
#     flat = reshape(transpose(base, dims by decreasing stride), [numel])
#     out[i] = flat[offset - base_offset + sum_k i_k * stride_k]
# The index is iota arithmetic (fused into the gather), not a constant table.
# This needs a base that is dense (its storage is exactly its elements) and an access
# inside it; otherwise the op runs eagerly, and the views that lead to it are kept out of
# lamina too (importer: feeds_eager_storage_reader), so eager sees real views of real storage.

def storage_key(val):
    """Identity of the storage a FakeTensor (or a list of them) lives in; None if unknown."""
    from torch.multiprocessing.reductions import StorageWeakRef

    if isinstance(val, torch.Tensor):
        try:
            return StorageWeakRef(val.untyped_storage()).cdata
        except (RuntimeError, NotImplementedError):
            return None
    return None


def _tensor_inputs(node):
    import operator

    if node.target is operator.getitem and isinstance(node.args[0], torch.fx.Node):
        node = node.args[0]
    return node.all_input_nodes


def storage_base(node):
    """The node owning the storage `node`'s value lives in: walk back through views."""
    key = storage_key(node.meta.get("val"))
    if key is None:
        return node
    while node.op == "call_function":
        same = [a for a in _tensor_inputs(node) if storage_key(a.meta.get("val")) == key]
        if not same:
            break
        node = same[0]
    return node


def _is_dense(val) -> bool:
    from torch._prims_common import is_non_overlapping_and_dense_or_false

    return bool(is_non_overlapping_and_dense_or_false(val))


def _as_strided_plan(node):
    """(base node, relative offset) or a reason string."""
    x, size, stride = node.args[0], list(node.args[1]), list(node.args[2])
    offset = node.args[3] if len(node.args) > 3 else node.kwargs.get("storage_offset")
    xval = x.meta.get("val")
    base = storage_base(x)
    bval = base.meta.get("val")
    if not isinstance(bval, torch.Tensor) or not _is_dense(bval):
        return "as_strided of a view whose storage is not a dense tensor"
    if offset is None:
        offset = xval.storage_offset()
    rel = int(offset) - bval.storage_offset()
    if any(st < 0 for st in stride):
        return "as_strided with a negative stride"
    if math.prod(size) > 0:
        last = rel + sum((n - 1) * st for n, st in zip(size, stride))
        if rel < 0 or last >= bval.numel():
            return "as_strided reads storage outside the tensor that owns it"
    return base, rel


def _as_strided_check(node):
    plan = _as_strided_plan(node)
    return plan if isinstance(plan, str) else None


@register("aten.as_strided.default", check=_as_strided_check)
def _as_strided(imp, node, a):
    base_node, rel = _as_strided_plan(node)
    size, stride = list(a.size), list(a.stride)
    bval = base_node.meta["val"]
    base = imp.values[base_node]
    want = meta_type(node)
    if math.prod(size) == 0:
        return constant(0, want.element_type, size)
    order = sorted(range(bval.dim()), key=lambda d: (-bval.stride()[d], d))
    flat = reshape(_transpose(base, order), T.tensor_type([bval.numel()], elem(base)))
    i64 = T.element_type("i64")
    index = constant(rel, i64, [1] * len(size))
    for k, (n, st) in enumerate(zip(size, stride)):
        if n == 1 or st == 0:
            continue
        shp = [1] * len(size)
        shp[k] = n
        iota = reshape(ops.iota(result_type=T.tensor_type([n], i64)), T.tensor_type(shp, i64))
        index = ops.add(index, iota if st == 1 else ops.mul(iota, constant(st, i64)))
    index_type = T.tensor_type(size or [1], i64)
    index = reshape(index, T.tensor_type(shape(index) or [1], i64))
    if shape(index) != (size or [1]):
        index = ops.broadcast_to(index, result_type=index_type)
    return reshape(ops.index_select(flat, index, dim=0), want)


# ---- composites ------------------------------------------------------------------------------

def _no_half_to_float(node):
    if len(node.args) > 2 and node.args[2]:
        return "half_to_float=True is not supported"
    return None


@register("aten._softmax.default", check=_no_half_to_float)
def _softmax(imp, node, a):
    return ops.softmax(a.self, dim=a.dim % max(rank(a.self), 1))   # a 0-d tensor is its own row


@register("aten._log_softmax.default", check=_no_half_to_float)
def _log_softmax(imp, node, a):
    return ops.log_softmax(a.self, dim=a.dim % max(rank(a.self), 1))


@register("aten.native_layer_norm.default")
def _native_layer_norm(imp, node, a):
    x = a.input
    out_et = meta_type(node, 0).element_type
    stat_et = meta_type(node, 1).element_type
    # Statistics and the normalization compute in f32 for f16/bf16 inputs, as torch's
    # kernels do (whatever dtype torch reports for mean/rstd), and round once at the end.
    acc_et = T.widened(out_et)
    x = cast(x, acc_et)
    r = rank(x)
    dims = list(range(r - len(a.normalized_shape), r))
    mean = ops.reduce_mean(x, dims=dims, keepdim=True)
    var = ops.var(x, dims=dims, keepdim=True, correction=0.0)
    rstd = ops.rsqrt(ops.add(var, constant(a.eps, acc_et)))
    y = ops.mul(ops.sub(x, mean), rstd)
    if a.weight is not None:
        y = ops.mul(y, cast(a.weight, acc_et))
    if a.bias is not None:
        y = ops.add(y, cast(a.bias, acc_et))
    return (cast(y, out_et), cast(mean, stat_et), cast(rstd, stat_et))


__all__ = ["CONVERTERS", "Converter", "register", "bind", "constant", "constant_from_tensor"]

_ = math  # (kept for converters that need inf/nan constants)

# Op families in modules of their own (they register into CONVERTERS on import).
from . import activations, attention, contractions, convolution, elementwise_ops, incomplete_gamma, index_reductions, indexing, layout_ops, library_calls, logical_reductions, norms, orthogonal_polynomials, pooling, quantization, random_ops, scans, series_functions, sorting, special_functions  # noqa: E402,F401
