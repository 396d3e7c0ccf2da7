"""Graph-level (L1) and fusion (L2) passes on the lamina dialect. See registry.py."""
