"""The interface every code generator implements, and the registry of targets.

A target turns a module of lowered kernels (lamina-kernel-abi form: destination-passing
functions on tensors-as-memrefs, `lamina.kernel` attribute) into a KernelLibrary that
launches kernels on torch tensors. The CPU target is codegen/cpu.py, the cuda target
(Triton) codegen/cuda/; each registers itself with `register_target` when its module is
imported (BUILTIN_TARGET_MODULES, or a `lamina.targets` entry point): this file names no
target's code.
"""
from __future__ import annotations

from typing import Protocol, Sequence

from mlir import ir


class KernelLibrary(Protocol):
    def launch(self, kernel: str, inputs: Sequence, outputs: Sequence) -> None:
        """Run `kernel` reading `inputs` and writing `outputs` (torch tensors) in place."""


class Target(Protocol):
    name: str
    device: str  # torch device type of the tensors it runs on (runtime allocations)
    devices: tuple[str, ...]  # every torch device type its kernels accept (default: (device,))

    def schedule(self, module: ir.Module) -> None:
        """Optional: loop schedules (tiling, vectorization) on the lowered kernels, in place."""

    def lower(self, module: ir.Module, dump=None) -> None:
        """Lower kernels (after lamina-kernel-abi) to the target's IR, in place."""

    def load(self, module: ir.Module) -> KernelLibrary:
        """Compile the lowered module into launchable kernels."""

    def runner(self, plan, library):
        """Optional: the callable graph over `library` (default: runtime.CompiledGraph, which
        calls the library's native graph entry)."""


_TARGETS: dict[str, type] = {}


def register_target(name: str):
    def register(cls):
        _TARGETS[name] = cls
        return cls
    return register


# Modules that register lamina's own targets; other packages add theirs through the
# `lamina.targets` entry point group (each entry names a module to import).
BUILTIN_TARGET_MODULES = ("lamina.codegen.cpu", "lamina.codegen.cuda")
_loaded = False


def _load_targets() -> None:
    global _loaded
    if _loaded:
        return
    _loaded = True
    import importlib
    from importlib.metadata import entry_points

    for name in BUILTIN_TARGET_MODULES:
        importlib.import_module(name)
    for ep in entry_points(group="lamina.targets"):
        importlib.import_module(ep.value.split(":")[0])


def target_for_devices(device_types) -> str:
    """The default target for a graph whose tensors live on `device_types` (torch device
    types): the first registered target whose `device` is one of them, else "cpu"."""
    _load_targets()
    for name, cls in _TARGETS.items():
        if cls.device in device_types and cls.device != "cpu":
            return name
    return "cpu"


def target_devices(name: str) -> tuple[str, ...]:
    """Torch device types (`tensor.device.type`) whose tensors target `name` can run on."""
    _load_targets()
    try:
        cls = _TARGETS[name]
    except KeyError:
        raise ValueError(f"unknown lamina target {name!r}; known: {', '.join(sorted(_TARGETS))}") from None
    return tuple(getattr(cls, "devices", None) or (cls.device,))


def supported_devices() -> tuple[str, ...]:
    """Device types some registered target runs on."""
    _load_targets()
    return tuple(sorted({d for name in _TARGETS for d in target_devices(name)}))


def get_target(name: str) -> Target:
    _load_targets()
    try:
        return _TARGETS[name]()
    except KeyError:
        raise ValueError(f"unknown lamina target {name!r}; known: {', '.join(sorted(_TARGETS))}") from None
