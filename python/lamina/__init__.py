"""lamina: an MLIR-based, multi-level deep-learning compiler.

    torch.compile(model, backend="lamina")           # the torch.compile backend
    lamina.compile_fx(gm, example_inputs)             # the same, on an FX graph

Every stage is a Python function on an mlir.ir.Module (see docs/tutorial.md):
lamina.importer (FX -> lamina), lamina.transforms (graph passes, fusion),
lamina.lowering (lamina -> linalg), lamina.codegen (targets), lamina.runtime.
"""
__version__ = "0.1.0"
