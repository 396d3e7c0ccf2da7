"""Fixes for Triton 3.6's interpreter (TRITON_INTERPRET=1, how CI runs the cuda target), so
that it computes what compiled kernels do. Compiled kernels are unaffected.

1. Under numpy >= 2.4: the interpreter passes int kernel arguments as 1-element arrays and
   converts them back with `int(array)`, which numpy 2.4 refuses for arrays of rank 1, so a
   loop `for i in range(0, n, BLOCK)` over a runtime size fails.
2. f32 -> bf16 (`x.to(tl.bfloat16)`): the interpreter truncates where the GPU rounds to
   nearest even (`cvt.rn.bf16.f32`), so a bf16 result came out up to one ulp low and CI's
   bf16 checks of the cuda target failed on errors the GPU does not make.
3. Arithmetic and comparisons of bf16 operands: the interpreter holds bf16 values as their
   uint16 bits and applies numpy's op to the bits, so `v > -inf` was false for every positive
   bf16 v (a bf16 max pool returned -inf). Such ops now compute on the f32 values (and an
   arithmetic result rounds back to bf16, as the GPU's bf16 instructions do).
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
    _bf16_ops_on_values()
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


def _bf16_ops_on_values() -> None:
    import numpy as np
    from triton.runtime import interpreter

    from ...dialect.types import bf16_bits

    builder = interpreter.InterpreterBuilder
    original = builder.binary_op
    if getattr(original, "_lamina_bf16_fix", False):
        return
    tl = interpreter.tl
    comparisons = {np.less, np.greater, np.less_equal, np.greater_equal, np.equal, np.not_equal}
    arithmetic = {np.add, np.subtract, np.multiply, np.divide, np.fmod, np.minimum, np.maximum}

    def f32(handle):
        values = (handle.data.astype(np.uint32) << 16).view(np.float32)
        return interpreter.TensorHandle(values, tl.float32)

    def binary_op(self, lhs, rhs, op):
        if lhs.dtype.scalar != tl.bfloat16 or rhs.dtype.scalar != tl.bfloat16 or \
                op not in comparisons | arithmetic:
            return original(self, lhs, rhs, op)
        out = original(self, f32(lhs), f32(rhs), op)
        if op in comparisons:
            return out
        return interpreter.TensorHandle(bf16_bits(out.data), tl.bfloat16)

    binary_op._lamina_bf16_fix = True
    builder.binary_op = binary_op
