"""lamina-cse: merge identical lamina ops.

Two lamina ops are identical when they have the same name, the same operands (the
same SSA values), the same attributes (all of them, `lamina.kernel` included) and the
same result types. The later op's uses go to the earlier one, which dominates it:
the table of known ops is scoped like MLIR's CSE — a block sees the ops of the blocks
enclosing it (defined before the op holding its region), never those of sibling blocks,
and ops that start a symbol scope (func.func, builtin.module, anything with a
`sym_name`) start an empty table (they are isolated from above).
"""
from __future__ import annotations

from mlir import ir

from .common import in_module_context, is_lamina, reject_options
from .registry import register_pass


def _key(op: ir.Operation):
    attrs = tuple(sorted((name, op.attributes[name]) for name in op.attributes))
    return (op.name, tuple(op.operands), tuple(a for _, a in attrs), tuple(n for n, _ in attrs),
            tuple(r.type for r in op.results))


def _starts_scope(op: ir.Operation) -> bool:
    return op.name == "builtin.module" or "sym_name" in op.attributes


def _cse_block(block: ir.Block, known: dict) -> int:
    merged = 0
    for op in list(block.operations):
        op = op.operation
        if is_lamina(op) and not len(op.regions):
            key = _key(op)
            first = known.get(key)
            if first is None:
                known[key] = op
                continue
            for old, new in zip(op.results, first.results):
                old.replace_all_uses_with(new)
            op.erase()
            merged += 1
        elif len(op.regions):
            for region in op.regions:
                for inner in region.blocks:
                    merged += _cse_block(inner, {} if _starts_scope(op) else dict(known))
    return merged


@in_module_context
def eliminate_common_subexpressions(module) -> int:
    """Merge identical lamina ops under `module`; returns how many were erased."""
    merged = 0
    for region in module.operation.regions:
        for block in region.blocks:
            merged += _cse_block(block, {})
    return merged


@register_pass("lamina-cse", level="L1", description="merge identical lamina ops (same operands, attributes and types), dominance-safe")
def run(module: ir.Module, **options) -> None:
    reject_options(options)
    eliminate_common_subexpressions(module)
