"""Dense linear algebra as library calls (dialect/library_callees.py says why and which):
each tensor output the graph reads becomes a `lamina.library_callN` of the ATen routine,
with the node's arguments recorded as JSON.

    %inv = lamina.library_call1(%a) {callee = "aten.linalg_inv_ex.default",
                                     arguments = "{\"A\": {\"operand\": 0}, \"check_errors\": false}",
                                     result = 0}

A routine with several outputs gives one op per output; lamina-dce removes the ones
nothing reads (det reads only `_linalg_det`'s first), and each op that stays calls the
routine (svd's U, S and Vh: three calls of one deterministic routine on the same input).
"""
from __future__ import annotations

import functools
import json

import torch

from ..backend import fft_routines  # noqa: F401 - registers torch.ops.lamina.* (its CALLEES)
from ..dialect import ops
from ..dialect.library_callees import CALLEES
from .aten_ops import meta_type, register, schema_arguments

_REAL = (torch.float32, torch.float64)
# callees whose converters decide themselves when they are library calls (importer/convolution.py,
# scans.py, sorting.py: along a symbolic dim)
_OWN_CONVERTERS = ("aten.convolution.default", "aten.convolution_backward.default", "aten.cumsum.default",
                   "aten.cumprod.default", "aten.logcumsumexp.default", "aten.cummax.default", "aten.cummin.default",
                   "aten.sort.default", "aten.sort.stable", "aten.topk.default", "aten.kthvalue.default")
# element types a routine along a symbolic dim takes (the buffers' views: codegen/conv_library.py)
ANY_FLOAT = (torch.float16, torch.bfloat16, torch.float32, torch.float64)
_INDEX = (torch.int32, torch.int64)


def _tensors(vals):
    return [v for v in (vals if isinstance(vals, (list, tuple)) else [vals]) if isinstance(v, torch.Tensor)]


def supported(node, floats: tuple = _REAL) -> str | None:
    """Real float inputs and outputs (pivots and infos as ints), at most three tensor
    arguments, every argument a tensor node or a JSON-able constant (symbolic sizes are the
    buffers': the routine reads them off its operands)."""
    tensors = 0
    for arg, value in schema_arguments(node):
        if isinstance(value, torch.fx.Node):
            val = value.meta.get("val")
            if not isinstance(val, torch.Tensor):
                return f"{arg.name} is not a tensor"
            tensors += 1
            inputs = [val]
        elif isinstance(value, (list, tuple)) and any(isinstance(x, torch.fx.Node) for x in value):
            return f"{arg.name}: a list of tensors"
        else:
            inputs = []
            try:
                json.dumps(json_argument(value))
            except TypeError:
                return f"{arg.name}: an argument of type {type(value).__name__}"
        for t in inputs:
            if t.dtype not in floats + _INDEX:
                return f"{t.dtype} input (library calls take float32/float64 matrices)"
    if not 1 <= tensors <= 3:
        return f"{tensors} tensor arguments (library calls take 1 to 3)"
    outs = _tensors(node.meta.get("val"))
    if not outs:
        return "no tensor output"
    for t in outs:
        if t.dtype not in floats + _INDEX:
            return f"{t.dtype} output (library calls give float32/float64 results)"
    return None


def json_argument(value):
    """A non-tensor argument as the JSON the call's `arguments` hold: tuples as lists, a dtype
    as {"dtype": "float32"} (codegen/library_calls.py reads it back)."""
    if isinstance(value, torch.dtype):
        return {"dtype": str(value).split(".")[-1]}
    if isinstance(value, (tuple, list)):
        return [json_argument(v) for v in value]
    return value


def library_call(imp, node, result: int | None = None, overrides: dict | None = None):
    """`lamina.library_callN` ops calling node's ATen routine: the op of output `result`, or
    (None) one op per tensor output (None where the output is not a tensor). `overrides`
    replaces arguments (convolution_backward's output_mask: each op computes its own output;
    a tensor argument replaced is not an operand)."""
    operands, arguments = [], {}
    overrides = overrides or {}
    for arg, value in schema_arguments(node):
        if isinstance(value, torch.fx.Node) and arg.name not in overrides:
            arguments[arg.name] = {"operand": len(operands)}
            operands.append(imp.values[value])
        else:
            arguments[arg.name] = json_argument(value)
    arguments.update({name: json_argument(v) for name, v in overrides.items()})
    callee = str(node.target)   # "aten.linalg_qr.default", "lamina.fft_r2c.default"
    callee = callee if callee.count(".") == 2 else f"aten.{callee}"
    build = getattr(ops, f"library_call{len(operands)}")
    text = json.dumps(arguments, sort_keys=False)
    val = node.meta["val"]
    if isinstance(val, torch.Tensor):
        return build(*operands, callee=callee, arguments=text, result=0, result_type=meta_type(node))
    if result is not None:
        return build(*operands, callee=callee, arguments=text, result=result, result_type=meta_type(node, result))
    return tuple(build(*operands, callee=callee, arguments=text, result=i, result_type=meta_type(node, i))
                 if isinstance(v, torch.Tensor) else None for i, v in enumerate(val))


def _call(imp, node, a):
    return library_call(imp, node)


register(*(c for c in CALLEES if c not in _OWN_CONVERTERS), check=supported)(_call)


# ---- effects ------------------------------------------------------------------------------
# AOTAutograd threads ops with side effects through effect tokens (empty tensors, a graph
# input and output): with_effects(token, op, *args) -> (next token, op's result). The error
# check of linalg.inv / cholesky / solve / lu_factor / ldl_factor is such an op: it becomes a
# library call whose result is the next token, so it runs (it is returned) after the routine
# whose `info` it reads.
_CHECK = "aten._linalg_check_errors.default"


def _effect_parts(node):
    token, op, *rest = node.args
    return token, op, rest


def _effect_supported(node) -> str | None:
    token, op, rest = _effect_parts(node)
    if str(op) != _CHECK.removeprefix("aten.") and str(op) != _CHECK:
        return f"with_effects of {op} (only linalg's error check is supported)"
    if not isinstance(token, torch.fx.Node) or not all(isinstance(a, torch.fx.Node) for a in rest[:1]):
        return "with_effects without a token and an info tensor"
    return None


def _effect(imp, node, _args):
    token, op, rest = _effect_parts(node)
    schema = op._schema
    arguments, operands = {}, []
    values = list(rest) + [None] * (len(schema.arguments) - len(rest))
    for arg, v in zip(schema.arguments, values):
        if arg.kwarg_only or v is None:
            v = node.kwargs.get(arg.name, arg.default_value if arg.has_default_value() else None)
        if isinstance(v, torch.fx.Node):
            arguments[arg.name] = {"operand": len(operands)}
            operands.append(imp.values[v])
        else:
            arguments[arg.name] = v
    build = getattr(ops, f"library_call{len(operands)}")
    next_token = build(*operands, callee=_CHECK, arguments=json.dumps(arguments), result=0,
                       result_type=imp.values[token].type)
    return next_token, None


if hasattr(torch.ops.higher_order, "with_effects"):
    from .aten_ops import CONVERTERS, Converter

    CONVERTERS[torch.ops.higher_order.with_effects] = Converter(_effect, _effect_supported, raw_args=True)


def static_or_library(static_check, what: str):
    """A check that passes when `static_check` does (the op compiles), or else when the node
    can be a library call of its ATen routine (`what`: the reason otherwise)."""
    def check(node) -> str | None:
        if static_check(node) is None:
            return None
        reason = supported(node, ANY_FLOAT)
        return None if reason is None else f"{what}: {reason}"
    return check


def or_library_call(static_check):
    """A converter decorator, static_or_library's other half: where `static_check` refuses
    the node, its ATen routine as a library call instead of the converter."""
    def wrap(convert):
        @functools.wraps(convert)
        def convert_or_call(imp, node, a):
            return library_call(imp, node) if static_check(node) is not None else convert(imp, node, a)
        return convert_or_call
    return wrap
