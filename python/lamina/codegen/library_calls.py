"""The runtime side of lamina.library_callN (dialect/library_callees.py): what a
`lamina_library_<spec>` call runs on the CPU (lowering/library_calls.py builds the call).

The symbol carries its spec (the ATen routine, its arguments as JSON, which output, the
element types of the operands and the result); the callback views the kernel's buffers as
torch tensors (no copy), calls the routine through torch's dispatcher (LAPACK on the CPU),
and copies the chosen output into the kernel's buffer. An exception is kept for the
runner to raise after the native call (conv_library.raise_pending_error), as a library
convolution's is.
"""
from __future__ import annotations

import ctypes
import functools
import json

from ..dialect.library_callees import SYMBOL_PREFIX, spec_of_symbol


def _resolve(callee: str):
    import torch

    ns, op, overload = callee.split(".")
    if ns == "lamina":
        from ..backend import fft_routines  # noqa: F401 - registers torch.ops.lamina.*
    return getattr(getattr(getattr(torch.ops, ns), op), overload)


def _bind(arguments, tensors):
    import torch

    def value(a):
        if isinstance(a, dict):
            return getattr(torch, a["dtype"]) if "dtype" in a else tensors[a["operand"]]
        if isinstance(a, list):
            return [value(x) for x in a]
        return a
    return {name: value(a) for name, a in arguments.items()}


def _output(out, result: int):
    """Output `result` of what a routine returned (None: a routine with effects only)."""
    return out if out is None or not isinstance(out, (tuple, list)) else out[result]


def call_routine(callee: str, arguments: str | dict, result: int, tensors: list):
    """Output `result` of ATen routine `callee` on `tensors` (the operands, in order)."""
    args = json.loads(arguments) if isinstance(arguments, str) else arguments
    out = _output(_resolve(callee)(**_bind(args, tensors)), result)
    return tensors[0].new_empty(0) if out is None else out   # (the error check: the next, empty, effect token)


@functools.lru_cache(maxsize=None)
def _runner(name: str):
    from .conv_library import _pending, _tensor

    spec = spec_of_symbol(name)
    routine = _resolve(spec["callee"])
    arguments, result, types = json.loads(spec["arguments"]), spec["result"], spec["types"]

    def run(*ptrs):
        try:
            tensors = [_tensor(p, t) for p, t in zip(ptrs, types)]
            out = _output(routine(**_bind(arguments, tensors[:-1])), result)
            if out is not None:   # (None: the error check; its output is the empty token)
                tensors[-1].copy_(out)
        except BaseException as e:   # an exception must not unwind through native frames
            _pending.error, _pending.as_is = e, True   # (raised as torch raised it: LinAlgError, ...)
    return ctypes.CFUNCTYPE(None, *([ctypes.c_void_p] * len(types)))(run)


def is_library_call(name: str) -> bool:
    return name.startswith(SYMBOL_PREFIX)


def callback(name: str):
    """The ctypes function a `lamina_library_*` call runs (kept alive for the process)."""
    return _runner(name)
