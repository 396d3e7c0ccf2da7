"""Fixes for Triton 3.6's interpreter (TRITON_INTERPRET=1, how CI runs the cuda target), so
that it computes what compiled kernels do. Compiled kernels are unaffected.

1. Under numpy >= 2.4: the interpreter passes int kernel arguments as 1-element arrays and
   converts them back with `int(array)`, which numpy 2.4 refuses for arrays of rank 1, so a
   loop `for i in range(0, n, BLOCK)` over a runtime size fails.
2. f32 -> bf16 (`x.to(tl.bfloat16)`): the interpreter truncates where the GPU rounds to
   nearest even (`cvt.rn.bf16.f32`), so a bf16 result came out up to one ulp low and CI's
   bf16 checks of the cuda target failed on errors the GPU does not make.
"""
from __future__ import annotations


def _needs_fix() -> bool:
    import numpy as np

    try:
        int(np.array([1]))
        return False
    except TypeError:
        return True


def apply() -> None:
    _round_bf16_to_nearest()
    from triton.runtime import interpreter

    original = getattr(interpreter, "_patch_lang_tensor", None)
    if original is None or getattr(original, "_lamina_index_fix", False) or not _needs_fix():
        return

    def patch_lang_tensor(tensor, scope):
        original(tensor, scope)   # sets tensor.__index__ to int(handle.data): redo it for rank 1
        scope.set_attr(tensor, "__index__", lambda self: int(self.handle.data.reshape(-1)[0]))

    patch_lang_tensor._lamina_index_fix = True
    interpreter._patch_lang_tensor = patch_lang_tensor


def _round_bf16_to_nearest() -> None:
    from triton.runtime import interpreter

    from ...dialect.types import bf16_bits

    original = getattr(interpreter, "_convert_float", None)
    if original is None or getattr(original, "_lamina_bf16_fix", False):
        return
    tl = interpreter.tl

    def convert_float(input, input_dtype, output_dtype, rounding_mode):
        if input_dtype != tl.float32 or output_dtype != tl.bfloat16 or \
                rounding_mode not in (None, interpreter._ir.ROUNDING_MODE.RTNE):
            return original(input, input_dtype, output_dtype, rounding_mode)
        return bf16_bits(input)

    convert_float._lamina_bf16_fix = True
    interpreter._convert_float = convert_float
