"""Loading the Triton source of a lowered module: each kernel's module is written to the
on-disk source cache (Triton's @jit reads functions' source from their file), imported, and
its `launch` bound with the kernel's constant tensors on the target device.
"""
from __future__ import annotations

import hashlib
import importlib.util
import operator
import os
import sys
from pathlib import Path

from mlir import ir

from ...dialect import types as T
from .operand_views import output_sources_of, view_outputs_of
from .triton_emit import SOURCE_ATTR, constants_of


def source_cache_dir() -> Path:
    root = os.environ.get("LAMINA_CACHE_DIR") or os.path.join(os.path.expanduser("~"), ".cache", "lamina")
    path = Path(root) / "triton"
    path.mkdir(parents=True, exist_ok=True)
    return path


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:24]


def module_name(text: str, stem: str) -> str:
    """The import name of a kernel's generated module (by content: a second process, or a
    recompile of the same kernel, gets the same name)."""
    return f"lamina_triton_{stem}_{_digest(text)}"


def _import_source(text: str, stem: str):
    digest = _digest(text)
    path = source_cache_dir() / f"{stem}_{digest}.py"
    if not path.exists() or path.read_text() != text:
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(text)
        os.replace(tmp, path)   # atomic: a concurrent process sees the old file or the whole new one
    name = module_name(text, stem)
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


class FastKernel:
    """`kernel[grid](*args, **meta)` as the generated launchers write it, without Triton's
    per-call argument binding: the first call for a signature has Triton specialize and
    compile it (cached); every call launches the compiled kernel directly on torch's current
    stream (a few microseconds instead of tens), through torch's static launcher when it
    takes the kernel (_static_launcher), else Triton's.

    The signature is the int arguments' values (sizes, strides: what Triton specializes on
    is a function of them) and the meta-parameters; tensor arguments must be 16-byte aligned
    (what Triton assumes of pointers it has seen aligned): a misaligned one takes Triton's
    own path, every time."""

    def __init__(self, fn, cache_name: str = ""):
        import torch

        self.fn = fn
        self.__name__ = getattr(fn, "__name__", "kernel")
        self.cache_name = cache_name or self.__name__   # names its autotuning results on disk
        self.tuned: dict = {}                           # launch key -> chosen config (launch.py)
        self.constexprs = [p.name for p in fn.params if p.is_constexpr]
        self.compiled: dict = {}
        self.tensor_pos: tuple | None = None            # positions of tensor arguments
        # (CUDA builds of torch only; a CPU build has no CUDA stream to launch on)
        self._raw_stream = getattr(torch._C, "_cuda_getCurrentRawStream", None)
        self._device = getattr(torch._C, "_cuda_getDevice", None)

    def __getitem__(self, grid):
        return lambda *args, **meta: self._launch(grid, args, meta)

    def _positions(self, args) -> None:
        self.tensor_pos = tuple(i for i, a in enumerate(args) if hasattr(a, "data_ptr"))
        scalars = [i for i in range(len(args)) if i not in self.tensor_pos]
        # (itemgetter of one position returns the item itself: wrap it in a tuple)
        self._scalars = (lambda a: ()) if not scalars else (lambda a, i=scalars[0]: (a[i],)) \
            if len(scalars) == 1 else operator.itemgetter(*scalars)

    def _launch(self, grid, args, meta):
        # Per call: an alignment check, one dict lookup, one launch (this runs once per kernel
        # per call of the graph: its cost is the graph's host time).
        if self.tensor_pos is None:
            self._positions(args)
        for i in self.tensor_pos:
            if args[i].data_ptr() & 15:
                self.fn[grid](*args, **meta)   # misaligned: Triton specializes it itself
                return
        key = (self._scalars(args), tuple(meta.values()))
        hit = self.compiled.get(key)
        if hit is None:
            hit = self.compiled[key] = self._compile(grid, args, meta)
        static, k, rest = hit
        gx, gy, gz = grid[0], grid[1] if len(grid) > 1 else 1, grid[2] if len(grid) > 2 else 1
        if static is not None:
            static.run(gx, gy, gz, self._raw_stream(self._device()), *rest(args))
        else:
            k.run(gx, gy, gz, self._raw_stream(self._device()), k.function, k.packed_metadata, None, None, None,
                  *args, *rest)

    def _compile(self, grid, args, meta):
        """(static launcher or None, CompiledKernel, what a launch passes after the grid). Triton
        compiles the program (no launch); torch's static CUDA launcher (Inductor's) launches
        its cubin, which spares Triton's launcher: a C module built with the host compiler per
        new signature (0.2-0.4 s of a cold compile each). Triton's launcher where torch's
        cannot take the kernel."""
        k = self.fn.warmup(*args, grid=grid, **meta)
        static = _static_launcher(k, self.fn, len(args))
        if static is not None:
            return static
        k._init_handles()   # Triton's launcher (raises OutOfResources for a config too big)
        return None, k, tuple(meta[n] for n in self.constexprs)


_STATIC_LAUNCHERS: dict = {}   # (kernel hash, device) -> loaded static launcher


def _static_launcher(k, fn, n_positional: int):
    """(torch's StaticallyLaunchedCudaKernel loaded on the current device, k, a function of the
    positional arguments giving the ones the cubin takes), or None when torch has no static
    launcher or it cannot launch `k` (launch hooks, scratch memory, several CTAs, ...)."""
    if os.environ.get("LAMINA_TRITON_STATIC_LAUNCH", "1") == "0":
        return None
    try:
        try:
            from torch._inductor.runtime.static_triton_launcher import StaticallyLaunchedCudaKernel
        except ImportError:
            from torch._inductor.runtime.static_cuda_launcher import StaticallyLaunchedCudaKernel
        import torch

        cubin = k.asm.get("cubin")
        if cubin is None or getattr(k.metadata, "launch_pdl", False) or getattr(k.metadata, "launch_cooperative_grid", False):
            return None
        device = torch.cuda.current_device()
        limit = getattr(torch.cuda.get_device_properties(device), "shared_memory_per_block_optin", None)
        if limit is None or k.metadata.shared > limit:
            return None   # Triton's launcher raises OutOfResources (autotuning skips the config)
        static = _STATIC_LAUNCHERS.get((k.hash, device))
        if static is None:
            path = source_cache_dir() / f"{k.hash}.cubin"
            if not path.exists():
                tmp = path.with_suffix(f".{os.getpid()}.tmp")
                tmp.write_bytes(cubin)
                os.replace(tmp, path)
            k._cubin_path = str(path)
            static = StaticallyLaunchedCudaKernel(k)
        # the cubin's parameters: the arguments that are neither constexpr nor specialized away
        names = list(fn.arg_names)
        constants = {names.index(c) if isinstance(c, str) else (c[0] if isinstance(c, tuple) else c)
                     for c in getattr(k.src, "constants", {})}
        kept = [i for i, name in enumerate(names)
                if k.src.signature.get(name) not in (None, "constexpr") and i not in constants]
        if any(i >= n_positional for i in kept) or len(kept) != len(static.arg_tys):
            return None
        if (k.hash, device) not in _STATIC_LAUNCHERS:   # (one module load per compiled kernel)
            static.load_kernel(device)
            _STATIC_LAUNCHERS[(k.hash, device)] = static
    except Exception:  # noqa: BLE001 - any mismatch with this torch/triton: Triton's launcher
        return None
    rest = (lambda a: ()) if not kept else (lambda a, i=kept[0]: (a[i],)) if len(kept) == 1 \
        else operator.itemgetter(*kept)
    return static, k, rest


class TritonKernelLibrary:
    def __init__(self, module: ir.Module, device: str, autotune: bool = True):
        import torch
        from torch._subclasses.fake_tensor import unset_fake_temporarily

        self.device = device
        self.sources: dict[str, str] = {}
        self.view_outputs: dict[str, dict[int, str]] = {}   # kernel -> {output arg: torch view expression}
        self.output_sources: dict[str, dict[int, int]] = {}  # kernel -> {output arg: input arg written into it}
        self._launchers = {}
        for op in module.body.operations:
            if op.operation.name != "func.func" or SOURCE_ATTR not in op.attributes:
                continue
            name = ir.StringAttr(op.attributes["sym_name"]).value
            text = ir.StringAttr(op.attributes[SOURCE_ATTR]).value
            self.sources[name] = text
            self.view_outputs[name] = view_outputs_of(op)
            self.output_sources[name] = output_sources_of(op)
            mod = _import_source(text, name)
            # Loading happens while AOTAutograd traces under a fake mode: the constants must be
            # real device tensors.
            with unset_fake_temporarily():
                for cname, (array, elem) in constants_of(op).items():
                    setattr(mod, cname, torch.as_tensor(array, dtype=T.name_to_torch_dtype(elem)).to(device))
            mod._device = torch.device(device)
            mod._autotune = autotune
            if device == "cuda" and os.environ.get("LAMINA_TRITON_FAST_LAUNCH", "1") != "0":
                from triton.runtime.jit import JITFunction

                for attr, value in list(vars(mod).items()):
                    if isinstance(value, JITFunction):   # the module's own programs
                        setattr(mod, attr, FastKernel(value, f"{mod.__name__}.{attr}"))
            self._launchers[name] = mod.launch if getattr(mod, "HAS_WORK", True) else None

    def launcher(self, kernel: str):
        return self._launchers[kernel]

    def launch(self, kernel: str, inputs, outputs) -> None:
        self._launchers[kernel](*inputs, *outputs)
