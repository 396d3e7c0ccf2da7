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


# What importing a graph builds (lamina ops, func, arith, tensor): the user's process needs
# no other dialect when its compiles run on the workers.
IMPORT_DIALECTS = ("builtin", "func", "arith", "tensor")


def make_context(dialects: tuple[str, ...] | None = None) -> ir.Context:
    """A fresh MLIR context with lamina loaded, and every upstream dialect (the default) or
    only `dialects`: loading all of them is most of a context's cost (~13 of ~15 ms, on every
    graph). Others still load where text is parsed, but building an op of an unloaded
    dialect aborts the process: only code that builds nothing else may pass a list."""
    ctx = ir.Context() if dialects is None else ir.Context(load_on_create_dialects=list(dialects))
    load(ctx)
    return ctx


def is_lamina_op(op) -> bool:
    return op.name.startswith("lamina.")
