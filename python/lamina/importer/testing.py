"""Helpers for importer tests: ATen graphs of small functions, printed modules.

    from lamina.importer.testing import aten_graph, run

    @run
    def add_scalar():
        print_imported(lambda x: x + 1, torch.randn(4))
"""
from __future__ import annotations

import torch

from .. import dialect


def aten_graph(fn, *args, dynamic: bool = False):
    """The forward ATen FX graph torch.compile + AOTAutograd (core-ATen decompositions) makes of fn."""
    from functorch.compile import make_boxed_func
    from torch._decomp import core_aten_decompositions
    from torch._dynamo.backends.common import aot_autograd

    graphs = []

    def fw(gm, example_inputs):
        graphs.append(gm)
        return make_boxed_func(gm.forward)

    torch._dynamo.reset()
    backend = aot_autograd(fw_compiler=fw, decompositions=core_aten_decompositions())
    with torch.no_grad():
        torch.compile(fn, backend=backend, dynamic=dynamic, fullgraph=True)(*args)
    torch._dynamo.reset()
    assert len(graphs) == 1, f"expected one graph, got {len(graphs)}"
    return graphs[0]


def import_fn(fn, *args, name: str | None = None, **kw):
    from . import import_graph

    gm = aten_graph(fn, *args, **kw)
    return import_graph(gm, dialect.make_context(), name or getattr(fn, "__name__", "graph"))


def print_imported(fn, *args, name: str | None = None, debug_info: bool = False, **kw):
    imported = import_fn(fn, *args, name=name, **kw)
    print(imported.module.operation.get_asm(enable_debug_info=debug_info))
    return imported


def run(f):
    """torch-mlir style: print the case name (for CHECK-LABEL), then run it."""
    print(f"{f.__name__}")
    print("-" * len(f.__name__))
    f()
    print()
    return f
