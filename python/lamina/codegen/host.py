"""Facts about the host process that compile decisions depend on, in one place.

The CPU lowering asks which OpenMP runtime torch uses (codegen/gomp.py), whether torch's
BLAS can be called (codegen/blas.py) and how many threads torch runs (tiling). In the
user's process these are probed (they need torch loaded); a compile worker does not import
torch: it is given the user process's facts (`use_host_facts`), so it compiles exactly what
an in-process compile would, and the facts are part of the compile cache's key.
"""
from __future__ import annotations

import os

_given: dict | None = None


def use_host_facts(facts: dict | None) -> None:
    """Compile for these facts instead of probing this process (compile workers)."""
    global _given
    _given = dict(facts) if facts is not None else None


def given(name: str):
    """(True, value) when the facts were given, else (False, None)."""
    if _given is None:
        return False, None
    return True, _given.get(name)


def cuda_facts() -> tuple[bool, tuple | None]:
    """(torch.backends.cuda.matmul.allow_tf32, the current GPU's compute capability or None)."""
    is_given, value = given("cuda")
    if is_given and value is not None:
        return bool(value[0]), (tuple(value[1]) if value[1] is not None else None)
    import torch

    capability = torch.cuda.get_device_capability() if torch.cuda.is_available() else None
    return bool(torch.backends.cuda.matmul.allow_tf32), capability


def _probe_cuda_facts() -> list:
    """cuda_facts(), the capability only when CUDA is already initialized in this process (a
    CPU-only program must not initialize it just to compile; a graph on CUDA tensors has)."""
    import torch

    capability = list(torch.cuda.get_device_capability()) if torch.cuda.is_initialized() else None
    return [bool(torch.backends.cuda.matmul.allow_tf32), capability]


def host_facts() -> dict:
    """This process's facts (probing loads torch)."""
    from ..lowering.tile_pointwise import threads
    from .blas import host_blas_library
    from .cpu import runtime_libraries
    from .gomp import host_gomp_library

    try:
        libs = list(runtime_libraries())
    except RuntimeError:
        libs = None   # the worker probes and reports the same error
    return {"gomp": host_gomp_library(), "blas": host_blas_library(), "threads": threads(),
            "runtime_libraries": libs, "openmp_env": os.environ.get("LAMINA_OPENMP", ""),
            "cuda": _probe_cuda_facts()}
