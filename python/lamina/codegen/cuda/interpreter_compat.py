"""A fix for Triton 3.6's interpreter (TRITON_INTERPRET=1, how CI runs the cuda target) under
numpy >= 2.4: the interpreter passes int kernel arguments as 1-element arrays and converts
them back with `int(array)`, which numpy 2.4 refuses for arrays of rank 1, so a loop
`for i in range(0, n, BLOCK)` over a runtime size fails. Compiled kernels are unaffected.
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
    from triton.runtime import interpreter

    original = getattr(interpreter, "_patch_lang_tensor", None)
    if original is None or getattr(original, "_lamina_index_fix", False) or not _needs_fix():
        return

    def patch_lang_tensor(tensor, scope):
        original(tensor, scope)   # sets tensor.__index__ to int(handle.data): redo it for rank 1
        scope.set_attr(tensor, "__index__", lambda self: int(self.handle.data.reshape(-1)[0]))

    patch_lang_tensor._lamina_index_fix = True
    interpreter._patch_lang_tensor = patch_lang_tensor
