"""Zero-copy views of torch tensors as MLIR memref descriptors (ctypes).

A ranked memref descriptor is {allocated*, aligned*, offset, sizes[rank], strides[rank]};
lamina points both pointers at `tensor.data_ptr()` (which already includes the storage
offset), so kernels read and write torch's memory in place.
"""
from __future__ import annotations

import ctypes
import functools


@functools.lru_cache(maxsize=None)
def descriptor_class(rank: int) -> type:
    fields = [("allocated", ctypes.c_void_p), ("aligned", ctypes.c_void_p), ("offset", ctypes.c_longlong)]
    if rank:
        fields += [("sizes", ctypes.c_longlong * rank), ("strides", ctypes.c_longlong * rank)]
    return type(f"MemRefDescriptor{rank}D", (ctypes.Structure,), {"_fields_": fields})


def descriptor(tensor) -> ctypes.Structure:
    """A memref descriptor aliasing `tensor` (sizes and strides in elements)."""
    rank = tensor.dim()
    d = descriptor_class(rank)()
    ptr = tensor.data_ptr()
    d.allocated = ptr
    d.aligned = ptr
    d.offset = 0
    if rank:
        d.sizes[:] = tensor.shape
        d.strides[:] = tensor.stride()
    return d
