"""Facts about the host process that compile decisions depend on, in one place.

The CPU lowering asks which OpenMP runtime torch uses (codegen/gomp.py), whether torch's
BLAS can be called (codegen/blas.py) and how many threads torch runs (tiling). In the
user's process these are probed (they need torch loaded); a compile worker does not import
torch: it is given the user process's facts (`use_host_facts`), so it compiles exactly what
an in-process compile would, and the facts are part of the compile cache's key.
"""
from __future__ import annotations

_given: dict | None = None


def use_host_facts(facts: dict | None) -> None:
    """Compile for these facts instead of probing this process (compile workers)."""
    global _given
    _given = dict(facts) if facts is not None else None


def fact(name: str, probe):
    """The given fact `name` (a compile worker), else `probe()` (this process's answer)."""
    if _given is not None and name in _given:
        return _given[name]
    return probe()


def cuda_facts() -> tuple[bool, tuple | None]:
    """(torch.backends.cuda.matmul.allow_tf32, the current GPU's compute capability or None)."""
    allow_tf32, capability = fact("cuda", _probe_cuda_here)
    return bool(allow_tf32), (tuple(capability) if capability is not None else None)


def _probe_cuda_here() -> list:
    import torch

    capability = torch.cuda.get_device_capability() if torch.cuda.is_available() else None
    return [bool(torch.backends.cuda.matmul.allow_tf32), capability]


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

    facts = {"gomp": host_gomp_library(), "blas": host_blas_library(), "threads": threads(),
             "cuda": _probe_cuda_facts()}
    try:
        facts["runtime_libraries"] = list(runtime_libraries())
    except RuntimeError:
        pass   # left out: the worker probes and reports the same error
    return facts
