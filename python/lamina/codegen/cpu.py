"""The CPU target: linalg kernels -> tiled loops -> OpenMP -> LLVM -> JIT (ExecutionEngine).

`lower` first applies lamina-tile-cpu (transform-dialect tiling + vectorization of
contraction kernels, decisions recorded as `lamina.tile_sizes` / `lamina.vector_sizes`),
then the declarative pipeline passes/cpu-tiled.pipeline. LAMINA_NO_TILE=1 skips the
tiling and uses passes/cpu.pipeline (plain parallel loops), to bisect a tiling problem. Kernels are compiled once per
module into one ExecutionEngine; `launch` calls a kernel's C interface with memref
descriptors that alias torch tensors (runtime/memref.py), so nothing is copied.
"""
from __future__ import annotations

import ctypes
import functools
import os
import sys
from pathlib import Path
from typing import Sequence

from mlir import ir, passmanager
from mlir.execution_engine import ExecutionEngine

from .._assets import asset_path
from ..runtime.memref import descriptor
from ..transforms.registry import register_pass
from .target import register_target


def tiling_enabled() -> bool:
    return os.environ.get("LAMINA_NO_TILE", "").strip() not in ("1", "true", "yes", "on")


@functools.lru_cache(maxsize=None)
def cpu_pipeline_text(name: str | None = None) -> str:
    """The upstream pass pipeline of a passes/*.pipeline asset (comments stripped)."""
    name = name or ("cpu-tiled.pipeline" if tiling_enabled() else "cpu.pipeline")
    lines = []
    for line in asset_path("passes", name).read_text().splitlines():
        line = line.split("//", 1)[0].strip()
        if line:
            lines.append(line)
    return " ".join(lines).replace("( ", "(").replace(" )", ")")


def _find_in_site_packages(*relative: str) -> str | None:
    for entry in sys.path:
        candidate = Path(entry).joinpath(*relative)
        if candidate.exists():
            return str(candidate)
    return None


@functools.lru_cache(maxsize=None)
def runtime_libraries() -> tuple[str, ...]:
    """Shared libraries the JIT links against: LLVM's OpenMP runtime and MLIR's C runner utils.

    MLIR's OpenMP lowering calls __kmpc_* (LLVM's libomp; libgomp lacks them). Override the
    OpenMP library with LAMINA_OPENMP_LIB.
    """
    libs = []
    omp = os.environ.get("LAMINA_OPENMP_LIB") or _find_in_site_packages("cmeel.prefix", "lib", "libomp.so")
    if not omp:
        raise RuntimeError("LLVM's OpenMP runtime (libomp.so) not found: pip install cmeel-libomp, "
                           "or set LAMINA_OPENMP_LIB to a libomp.so")
    libs.append(omp)
    utils = _find_in_site_packages("mlir", "lib", "libmlir_c_runner_utils.so")
    if utils:
        libs.append(utils)  # memrefCopy for copies between strided memrefs
    return tuple(libs)


def lower_to_llvm(module: ir.Module) -> None:
    """Run the CPU pipeline asset on a module of lamina-kernel-abi kernels (tiled or not)."""
    passmanager.PassManager.parse(cpu_pipeline_text(), context=module.context).run(module.operation)


@register_pass("lamina-lower-cpu", level="L5",
               description="bufferize kernels and lower them to LLVM with OpenMP loops (passes/cpu-tiled.pipeline)")
def lower_cpu(module: ir.Module, **options) -> None:
    lower_to_llvm(module)


def _import_dynamo_first() -> None:
    # Importing torch._dynamo after the JIT has loaded LLVM aborts the process
    # ("Option 'bitcode-mdindex-threshold' registered more than once"); the other
    # order is fine. Users of the JIT are torch users, so pay that import up front.
    try:
        import torch._dynamo  # noqa: F401
    except ImportError:
        pass


class CpuKernelLibrary:
    """Kernels of one module, JIT-compiled together."""

    def __init__(self, module: ir.Module, opt_level: int = 3):
        _import_dynamo_first()
        self.engine = ExecutionEngine(module, opt_level=opt_level, shared_libs=list(runtime_libraries()))
        self._entries: dict[str, object] = {}

    def _entry(self, kernel: str):
        fn = self._entries.get(kernel)
        if fn is None:
            fn = self._entries[kernel] = self.engine.lookup(kernel)
        return fn

    def launch(self, kernel: str, inputs: Sequence, outputs: Sequence) -> None:
        descs = [descriptor(t) for t in inputs] + [descriptor(t) for t in outputs]
        # The packed C interface takes void** pointing at each argument, and each argument
        # of an emit_c_interface function is a pointer to a memref descriptor.
        ptrs = [ctypes.pointer(d) for d in descs]
        packed = (ctypes.c_void_p * len(ptrs))(*[ctypes.addressof(p) for p in ptrs])
        self._entry(kernel)(packed)


@register_target("cpu")
class CpuTarget:
    name = "cpu"
    device = "cpu"

    def lower(self, module: ir.Module, dump=None) -> None:
        lower_to_llvm(module)

    def schedule(self, module: ir.Module) -> None:
        """Target-specific loop schedules on the kernels (L4): tiling + vectorization."""
        if tiling_enabled():
            from ..transforms.registry import run_pass

            run_pass("lamina-tile-cpu", module)

    def load(self, module: ir.Module) -> CpuKernelLibrary:
        return CpuKernelLibrary(module, opt_level=int(os.environ.get("LAMINA_OPT_LEVEL", "3")))
