"""The interface every code generator implements, and the registry of targets.

A target turns a module of lowered kernels (lamina-kernel-abi form: destination-passing
functions on tensors-as-memrefs, `lamina.kernel` attribute) into a KernelLibrary that
launches kernels on torch tensors. The CPU target is codegen/cpu.py; GPU targets
(Triton, gpu->NVVM) plug in here with the same interface.
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


_TARGETS: dict[str, type] = {}


def register_target(name: str):
    def register(cls):
        _TARGETS[name] = cls
        return cls
    return register


def _load_targets() -> None:
    from . import cpu  # noqa: F401  (registers "cpu")


def target_devices(name: str) -> tuple[str, ...]:
    """Torch device types (`tensor.device.type`) whose tensors target `name` can run on."""
    _load_targets()
    try:
        cls = _TARGETS[name]
    except KeyError:
        raise ValueError(f"unknown lamina target {name!r}; known: {', '.join(sorted(_TARGETS))}") from None
    return tuple(getattr(cls, "devices", None) or (cls.device,))


def supported_devices() -> tuple[str, ...]:
    """Device types some registered target runs on (today: cpu)."""
    _load_targets()
    return tuple(sorted({d for name in _TARGETS for d in target_devices(name)}))


def get_target(name: str) -> Target:
    _load_targets()
    try:
        return _TARGETS[name]()
    except KeyError:
        raise ValueError(f"unknown lamina target {name!r}; known: {', '.join(sorted(_TARGETS))}") from None
