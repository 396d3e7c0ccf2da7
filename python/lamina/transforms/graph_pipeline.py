"""The L1 graph pipeline: canonicalize, fold constants, CSE and DCE, to a fixpoint.

    from lamina.transforms.graph_pipeline import run_graph_passes
    run_graph_passes(module)            # in place; returns the number of rounds run

Each round runs the four passes once; rounds repeat until one changes nothing (each
pass reports how many ops it rewrote) or `max_rounds` is reached.
"""
from __future__ import annotations

from mlir import ir

from .canonicalize import canonicalize
from .cse import eliminate_common_subexpressions
from .dce import eliminate_dead_code
from .fold import DEFAULT_MAX_ELEMENTS, fold_constants
from .common import in_module_context, reject_options
from .registry import register_pass


@in_module_context
def run_graph_passes(module: ir.Module, max_rounds: int = 16,
                     max_elements: int = DEFAULT_MAX_ELEMENTS) -> int:
    for round_ in range(1, max_rounds + 1):
        changed = canonicalize(module)
        changed += fold_constants(module, max_elements)
        changed += eliminate_common_subexpressions(module)
        changed += eliminate_dead_code(module)
        if not changed:
            return round_
    return max_rounds


@register_pass("lamina-graph-passes", level="L1",
               description="lamina-canonicalize, -fold-constants, -cse, -dce to a fixpoint; options max-rounds, max-elements")
def run(module: ir.Module, max_rounds: int = 16, max_elements: int = DEFAULT_MAX_ELEMENTS, **options) -> None:
    reject_options(options)
    run_graph_passes(module, int(max_rounds), int(max_elements))
