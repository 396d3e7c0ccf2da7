"""The registry of lamina passes: one name, level and one-line description per pass.

A pass is a function `run(module: ir.Module, **options) -> None` that rewrites the
module in place. `lamina-opt --<name>` and the pipelines (lamina.pipeline) find passes
here; `lamina-opt --help` prints this table. Register with:

    @register_pass("lamina-dce", level="L1", description="erase lamina ops whose results are unused")
    def dce(module): ...
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from mlir import ir


@dataclass(frozen=True)
class PassInfo:
    name: str
    level: str          # L1 graph, L2 fusion, L3 lowering, L4 bufferization, L5 codegen
    description: str
    run: Callable[..., None]


_PASSES: dict[str, PassInfo] = {}


def register_pass(name: str, *, level: str, description: str):
    def register(fn: Callable[..., None]):
        if name in _PASSES:
            raise ValueError(f"pass {name} registered twice")
        _PASSES[name] = PassInfo(name, level, description, fn)
        return fn
    return register


_loaded = False


def _load_all() -> None:
    # Importing the modules registers their passes (once: scanning the packages' directories
    # on every pass lookup cost ~2 ms a lookup, ~15 ms a compiled graph).
    global _loaded
    if _loaded:
        return
    import importlib
    import pkgutil

    import lamina.lowering
    import lamina.transforms
    import lamina.codegen

    for pkg in (lamina.transforms, lamina.lowering, lamina.codegen):
        for info in pkgutil.iter_modules(pkg.__path__):
            mod = importlib.import_module(f"{pkg.__name__}.{info.name}")
            for name in getattr(mod, "PASS_MODULES", ()):   # (a subpackage lists its pass modules)
                importlib.import_module(name)
    _loaded = True


def get_pass(name: str) -> PassInfo:
    _load_all()
    try:
        return _PASSES[name]
    except KeyError:
        raise KeyError(f"unknown lamina pass {name!r}; known: {', '.join(sorted(_PASSES))}") from None


def all_passes() -> list[PassInfo]:
    _load_all()
    return sorted(_PASSES.values(), key=lambda p: (p.level, p.name))


def run_pass(name: str, module: ir.Module, **options) -> None:
    """Run a registered pass on `module`, inside the module's own context."""
    info = get_pass(name)
    with module.context, ir.Location.unknown(module.context):
        info.run(module, **options)
