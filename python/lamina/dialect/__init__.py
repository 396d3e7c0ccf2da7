"""The `lamina` tensor dialect: loading (IRDL), builders (ops), rules (infer), types.

    from lamina import dialect
    ctx = dialect.make_context()        # an ir.Context with lamina loaded
    with ctx, ir.Location.unknown():
        module = ir.Module.parse(text)  # generic-form lamina ops parse and verify
"""
from __future__ import annotations

from mlir import ir

from .._assets import asset_path
from . import infer, ops, types  # noqa: F401

_LOADED_ATTR = "_lamina_dialect_loaded"


def _register_python_module() -> None:
    """Give the bindings a Python module for the dialect (python_bindings/lamina.py says why)."""
    from mlir._mlir_libs import _mlir

    prefix = f"{__name__}.python_bindings"
    if prefix not in _mlir.globals.dialect_search_modules:
        _mlir.globals.append_dialect_search_prefix(prefix)


_register_python_module()


def load(ctx: ir.Context | None = None) -> None:
    """Load the lamina dialect into `ctx` (default: the current context). Idempotent."""
    from mlir.dialects import irdl

    ctx = ctx or ir.Context.current
    if ctx.is_registered_operation("lamina.add"):
        return
    with ctx:
        irdl.load_dialects(ir.Module.parse(asset_path("dialects", "lamina.irdl.mlir").read_text()))


def make_context() -> ir.Context:
    """A fresh MLIR context with every upstream dialect and lamina loaded."""
    ctx = ir.Context()
    load(ctx)
    return ctx


def is_lamina_op(op) -> bool:
    return op.name.startswith("lamina.")
