"""Integer division by zero raises as eager does on the CPU, instead of a made-up quotient.

Eager's CPU kernels of `//`, `%`, `fmod` and `div(rounding_mode=...)` on integers raise
`RuntimeError: ZeroDivisionError` when a divisor element is 0; a compiled kernel would
compute some value (LLVM's division by zero is undefined). So the compiled graph checks,
per call, the integer divisors it takes as inputs (directly, or through views and widening
integer casts, which keep an element zero exactly when it was) and a literal 0 divisor.
One `any` per divisor input; CPU tensors only (eager's CUDA kernels do not raise either).

Divisors computed inside the graph (b - 1, a reduction) are not checked: as with indices
(index_bounds.py), the check covers the values a user passes in.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

# ATen ops that divide integers: in each, args[1] is the divisor (remainder.Scalar_Tensor
# too: `7 % b`).
_INTEGER_DIVISIONS = {"aten.div.Tensor_mode", "aten.div.Scalar_mode", "aten.floor_divide.default",
                      "aten.floor_divide.Scalar", "aten.remainder.Tensor", "aten.remainder.Scalar",
                      "aten.remainder.Scalar_Tensor", "aten.fmod.Tensor", "aten.fmod.Scalar"}

# Ops whose elements are some of their input's, each unchanged (a zero stays a zero).
_SAME_VALUES = {"aten.view.default", "aten.reshape.default", "aten._unsafe_view.default", "aten.expand.default",
                "aten.unsqueeze.default", "aten.squeeze.default", "aten.squeeze.dim", "aten.squeeze.dims",
                "aten.permute.default", "aten.t.default", "aten.transpose.int", "aten.clone.default",
                "aten.alias.default"}
_CASTS = {"aten._to_copy.default", "prims.convert_element_type.default"}


@dataclass(frozen=True)
class DivisorCheck:
    divisor: int | None        # graph input holding the divisor; None: a literal 0
    dividend: int | None       # graph input of the dividend, when it is one (an empty one divides nothing)
    empty: bool                # the division's result is statically empty: nothing to check

    def __call__(self, args) -> None:
        if self.empty:
            return
        if self.dividend is not None and args[self.dividend].numel() == 0:
            return
        if self.divisor is None:
            raise RuntimeError("ZeroDivisionError")
        d = args[self.divisor]
        if d.device.type == "cpu" and d.numel() and bool((d == 0).any()):
            raise RuntimeError("ZeroDivisionError")


def _is_integer(dtype) -> bool:
    return not dtype.is_floating_point and not dtype.is_complex and dtype != torch.bool


def _graph_input(value, position):
    """The graph input whose elements `value` has (zeros where it has zeros), or None."""
    while isinstance(value, torch.fx.Node):
        if value in position:   # (a tensor input: a SymInt one is no tensor to check)
            return position[value] if isinstance(value.meta.get("val"), torch.Tensor) else None
        if value.op != "call_function" or not value.args:
            return None
        target = str(value.target)
        if target in _CASTS:
            src, out = value.args[0].meta.get("val"), value.meta.get("val")
            if not (isinstance(src, torch.Tensor) and isinstance(out, torch.Tensor)
                    and not src.dtype.is_floating_point and not src.dtype.is_complex
                    and _is_integer(out.dtype) and out.dtype.itemsize >= src.dtype.itemsize):
                return None   # a narrowing cast can make a zero of a non-zero
        elif target not in _SAME_VALUES:
            return None
        value = value.args[0]
    return None


def _statically_empty(val) -> bool:
    return isinstance(val, torch.Tensor) and any(isinstance(s, int) and s == 0 for s in val.shape)


def divisor_checks(gm: torch.fx.GraphModule) -> list[DivisorCheck]:
    """The checks of `gm`'s integer divisions by its inputs (or by a literal 0)."""
    position = {n: k for k, n in enumerate(n for n in gm.graph.nodes if n.op == "placeholder")}
    checks = []
    for node in gm.graph.nodes:
        if node.op != "call_function" or str(node.target) not in _INTEGER_DIVISIONS or len(node.args) < 2:
            continue
        out = node.meta.get("val")
        if not isinstance(out, torch.Tensor) or not _is_integer(out.dtype) or out.device.type != "cpu":
            continue
        divisor = node.args[1]
        dividend = _graph_input(node.args[0], position)
        if isinstance(divisor, torch.fx.Node):
            arg = _graph_input(divisor, position)
            if arg is not None:
                checks.append(DivisorCheck(arg, dividend, _statically_empty(out)))
        elif isinstance(divisor, (int, bool)) and divisor == 0:
            checks.append(DivisorCheck(None, dividend, _statically_empty(out)))
    return list(dict.fromkeys(checks))
