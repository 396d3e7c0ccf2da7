"""The lamina dialect's module for MLIR's Python bindings: no op classes (lamina ops are IRDL
ops, built by lamina.dialect.ops), but its presence matters. Whenever the bindings give an
op of a dialect as an OpView (`value.owner`, iterating a block), they look for that dialect's
Python module under their search prefixes and remember only one they found: without this
module every lamina op handed to Python retried the failing import of `mlir.dialects.lamina`
(~0.1 ms each; 4.6 s of an 8.8 s compile of a graph of ~800 ops)."""
