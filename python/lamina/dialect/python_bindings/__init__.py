"""Where MLIR's Python bindings find a Python module for the lamina dialect (see lamina.py)."""
