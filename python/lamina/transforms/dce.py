"""lamina-dce: erase lamina ops whose results are unused, until none is left.

lamina ops are pure (value semantics), but IRDL gives them no side-effect interface,
so upstream `canonicalize`/DCE keep them; this pass erases them. Blocks are swept
back to front, so a dead chain goes in one sweep; sweeps repeat to a fixpoint.
Non-lamina ops are never erased (their regions are visited).
"""
from __future__ import annotations

from mlir import ir

from .common import has_uses, in_module_context, is_lamina, reject_options
from .registry import register_pass


def _sweep(op: ir.Operation) -> int:
    erased = 0
    for region in op.regions:
        for block in region.blocks:
            for inner in reversed(list(block.operations)):
                inner = inner.operation
                if is_lamina(inner):
                    if not any(has_uses(r) for r in inner.results):
                        inner.erase()
                        erased += 1
                elif len(inner.regions):
                    erased += _sweep(inner)
    return erased


@in_module_context
def eliminate_dead_code(module) -> int:
    """Erase unused lamina ops under `module` (ir.Module or op); returns how many."""
    total = 0
    while True:
        n = _sweep(module.operation)
        total += n
        if n == 0:
            return total


@register_pass("lamina-dce", level="L1", description="erase lamina ops whose results are unused (iteratively)")
def run(module: ir.Module, **options) -> None:
    reject_options(options)
    eliminate_dead_code(module)
