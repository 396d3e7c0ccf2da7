"""Checks of a compiled graph's inputs that make it raise where eager raises: out-of-range
indices (index_bounds.py) and integer division by zero (divisor_checks.py). Each check is
a callable on the graph's arguments; they run before the compiled code, once per call."""
from __future__ import annotations

import torch

from .divisor_checks import divisor_checks
from .index_bounds import index_checks


def input_checks(gm: torch.fx.GraphModule) -> list:
    return index_checks(gm) + divisor_checks(gm)


def with_input_checks(fn, checks: list):
    """`fn` running `checks` on its arguments first."""
    if not checks:
        return fn

    def checked(*args):
        for check in checks:
            check(args)
        return fn(*args)

    checked.compiled_graph = getattr(fn, "compiled_graph", None)
    return checked
