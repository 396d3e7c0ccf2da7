"""Loading the Triton source of a lowered module: each kernel's module is written to the
on-disk source cache (Triton's @jit reads functions' source from their file), imported, and
its `launch` bound with the kernel's constant tensors on the target device.
"""
from __future__ import annotations

import hashlib
import importlib.util
import json
import operator
import os
import sys
import threading
from contextlib import contextmanager
from pathlib import Path

from mlir import ir

from ...dialect import types as T
from .launch import WARMING_THREADS
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
        self.tiers: dict = {}                           # launch key -> (background compile, quick config)
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
        if WARMING_THREADS and threading.get_ident() in WARMING_THREADS:
            return self._request_compile(grid, args, meta)
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

    def _request_compile(self, grid, args, meta) -> None:
        """A launch in a warm-up pass (TritonKernelLibrary.warming): Triton's warmup of this
        specialization, which the pass turns into a compile request (for the workers) or a
        compile on its thread pool. Tensors go as their dtypes (Triton's MockTensor: a 16-byte
        aligned pointer), which specializes as a real aligned tensor does: the first real
        launch finds the compiled kernel in the JIT function's cache."""
        self.fn.warmup(*[a.dtype if hasattr(a, "data_ptr") else a for a in args], grid=grid, **meta)

    def compile_in_background(self, launches, args):
        """In a warm-up pass on the compile workers (`warming(tiered=True)`): the compiles of
        these launches ((grid, meta) pairs with `args`) go to the workers now, in the
        background (launch.py's tiered first launches). A future of whether every kernel was
        installed where its launch will find it; None when this thread is in no such pass
        or the kernels need no compile."""
        me = threading.get_ident()
        sink, stats = _COLLECTING.get(me), _WARMING_STATS.get(me)
        if sink is None or stats is None:
            return None
        side: list = []
        _COLLECTING[me] = side
        try:
            for grid, meta in launches:
                self._request_compile(grid, args, meta)
        finally:
            _COLLECTING[me] = sink
        wanted = len(_distinct(side))
        if not wanted:
            return None
        stats["background"] = stats.get("background", 0) + wanted
        return _background_executor().submit(lambda: _compile_on_workers(side) == wanted)

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


_COLLECTING: dict[int, list] = {}   # thread -> the compile requests of its warm-up pass
_WARMING_STATS: dict[int, dict] = {}   # thread -> its warm-up pass's stats (TritonKernelLibrary.warming)
_executor: list = []


def _background_executor():
    """The threads that wait for background compiles (they only wait on the workers)."""
    from concurrent.futures import ThreadPoolExecutor

    with _hook_lock:
        if not _executor:
            _executor.append(ThreadPoolExecutor(4, thread_name_prefix="lamina-background-compile"))
        return _executor[0]


_hook = {"installed": False, "previous": None}
_hook_lock = threading.Lock()


def _install_compile_hook() -> None:
    """Triton's jit_cache_hook, called before each compile: in a thread collecting (warming
    on the workers) it records the compile as a request and skips it; anywhere else it
    defers to whatever hook was there before."""
    from triton import knobs

    with _hook_lock:
        if not _hook["installed"]:
            _hook["previous"] = knobs.runtime.jit_cache_hook
            knobs.runtime.jit_cache_hook = _collect_compile
            _hook["installed"] = True


def _collect_compile(*, fn, compile, **kwargs):
    sink = _COLLECTING.get(threading.get_ident())
    if sink is None:
        previous = _hook["previous"]
        return previous(fn=fn, compile=compile, **kwargs) if previous is not None else None
    from .triton_compile import request_for

    try:
        sink.append({"request": request_for(fn, compile), "jit": fn.jit_function, "key": compile["key"],
                     "device": compile["device"], "signature": compile["signature"],
                     "constants": compile["constants"], "attrs": compile["configs"][0]})
    except Exception:  # noqa: BLE001 - not describable: it compiles here, at its launch
        return None
    return True   # compiled on a worker instead


def _distinct(collected: list[dict]) -> list[list[dict]]:
    """The collected launches grouped by what Triton compiles: a program's source (its cache
    key: the source and the helpers it calls) and specialization. The same program in
    several kernels (a model's repeated layers) compiles once."""
    groups: dict = {}
    for c in collected:
        data = json.loads(c["request"]["specialization"])
        data.pop("name", None)   # (the function's qualified name: its module's, not its source's)
        key = (c["jit"].cache_key, json.dumps(data, sort_keys=True), str(c["request"]["target"]))
        groups.setdefault(key, []).append(c)
    return list(groups.values())


def _compile_on_workers(collected: list[dict]) -> int:
    """Compile the collected launches' programs (one per distinct program and
    specialization) on the compile workers at once, and put each compiled kernel where its
    launches look first: their JIT functions' in-memory caches, under the key this process
    computed (the worker's own cache key may differ: Triton caches facts such as ptxas's
    version per process). The number of programs compiled and installed. A failure is not
    raised: the launch compiles it here."""
    from concurrent.futures import ThreadPoolExecutor

    from triton.compiler import ASTSource, CompiledKernel

    from ...service.pool import WorkerCrashed, WorkerError, get_pool

    unique = _distinct(collected)
    if not unique:
        return 0
    pool = get_pool()

    def one(group) -> bool:
        try:
            reply = pool.compile(group[0]["request"])
            for c in group:
                src = ASTSource(c["jit"], c["signature"], c["constants"], c["attrs"])
                kernel = CompiledKernel(src, reply["group"], reply["hash"])
                c["jit"].device_caches[c["device"]][0].setdefault(c["key"], kernel)
        except (WorkerCrashed, WorkerError, OSError, ValueError, KeyError):
            return False
        return True

    with ThreadPoolExecutor(min(len(unique), pool.size), thread_name_prefix="lamina-triton") as threads:
        return sum(threads.map(one, unique))


class TritonKernelLibrary:
    # what a compile worker needs for this library's compile requests (service/pool.grow)
    worker_imports = ("lamina.codegen.cuda.triton_compile", "triton.compiler", "triton.backends.nvidia.compiler")

    @property
    def worker_env(self) -> dict:
        """The GPU a compile worker warms Triton up for while it boots (triton_compile.worker_warm_up)."""
        import torch

        if self.device != "cuda" or not torch.cuda.is_initialized():
            return {}
        from .triton_compile import TARGET_ENV

        major, minor = torch.cuda.get_device_capability()
        return {TARGET_ENV: f"cuda/{major * 10 + minor}/32"}

    def __init__(self, module: ir.Module, device: str, autotune: bool = True):
        import torch
        from torch._subclasses.fake_tensor import unset_fake_temporarily

        self.device = device
        self.sources: dict[str, str] = {}
        self.view_outputs: dict[str, dict[int, str]] = {}   # kernel -> {output arg: torch view expression}
        self.output_sources: dict[str, dict[int, int]] = {}  # kernel -> {output arg: input arg written into it}
        self._launchers = {}
        # every program launches through a FastKernel (what warming needs); not under the
        # interpreter, whose programs are no JITFunctions (a warm-up pass would run them on
        # fake tensors)
        fast = device == "cuda" and os.environ.get("LAMINA_TRITON_FAST_LAUNCH", "1") != "0"
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
            from triton.runtime.jit import JITFunction

            for attr, value in list(vars(mod).items()):
                if not isinstance(value, JITFunction):
                    continue   # (not one of the module's own programs)
                if fast:
                    setattr(mod, attr, FastKernel(value, f"{mod.__name__}.{attr}"))
            self._launchers[name] = mod.launch if getattr(mod, "HAS_WORK", True) else None

        if not fast:
            self.warming = None   # (the interpreter, LAMINA_TRITON_FAST_LAUNCH=0): compiles at launch

    def add_nvvm_kernels(self, module: ir.Module, arch: str | None) -> None:
        """The kernels the NVVM generator compiled (nvvm_runtime.py), launched beside the
        Triton ones; `codegen` says which generator each kernel went to, and why."""
        from .gpu_mapping import GPU_CODEGEN
        from .nvvm_lower import DEFAULT_ARCH, nvvm_kernels

        self.codegen = {}
        for op in module.body.operations:
            if op.operation.name == "func.func" and GPU_CODEGEN in op.attributes:
                self.codegen[ir.StringAttr(op.attributes["sym_name"]).value] = ir.StringAttr(op.attributes[GPU_CODEGEN]).value
        if not nvvm_kernels(module):
            return
        if self.device != "cuda":
            raise RuntimeError("lamina: NVVM kernels (gpu_codegen='nvvm') run on CUDA devices only "
                               "(not under TRITON_INTERPRET)")
        from .nvvm_runtime import nvvm_launchers

        self._launchers.update(nvvm_launchers(module, arch or DEFAULT_ARCH))

    def launcher(self, kernel: str):
        return self._launchers[kernel]

    @contextmanager
    def warming(self, workers: bool = True, tiered: bool = True):
        """While this is open, this thread's launches of the library's programs are compile
        requests (FastKernel._request_compile; every tuning candidate where run_tuned would
        tune); leaving compiles them all at once: on the compile workers (processes: a
        Triton compile holds the GIL for most of its time), installed in the JIT functions'
        in-memory caches where the first launches find them (_compile_on_workers), except
        the heuristic configs of tiered launches (launch.py; `tiered`), which compile there
        in the background while the first calls run quick ones; or, with
        `workers=False`, on a thread pool
        through Triton's AsyncCompileMode (only ptxas, a process, overlaps). Failures are
        left for the real launch to meet (and report). Other threads launch as usual
        meanwhile. Yields a dict that gets the number of `programs` compiled ahead.

        PlanRunner.precompile runs a graph's first call this way, on fake tensors (no data,
        no kernel runs), so that a graph's programs compile at once instead of one after the
        other as the first call reaches them."""
        me = threading.get_ident()
        stats = {"programs": 0, "in": "workers" if workers else "threads"}
        if workers:
            _install_compile_hook()
            requests: list[dict] = []
            _COLLECTING[me] = requests
            if tiered:
                _WARMING_STATS[me] = stats   # (compile_in_background looks for it)
            WARMING_THREADS.add(me)
            try:
                yield stats
            finally:
                WARMING_THREADS.discard(me)
                del _COLLECTING[me]
                _WARMING_STATS.pop(me, None)
            # (one program gains nothing from a worker: it compiles here, at its launch)
            stats["programs"] = _compile_on_workers(requests) if len(_distinct(requests)) > 1 else 0
            return
        from concurrent.futures import ThreadPoolExecutor

        from triton.runtime._async_compile import AsyncCompileMode

        with ThreadPoolExecutor(min(16, os.cpu_count() or 1), thread_name_prefix="lamina-triton") as pool:
            with AsyncCompileMode(pool, ignore_errors=True) as mode:
                WARMING_THREADS.add(me)
                try:
                    yield stats
                finally:
                    WARMING_THREADS.discard(me)
                stats["programs"] = len(mode.raw_futures)

    def launch(self, kernel: str, inputs, outputs) -> None:
        self._launchers[kernel](*inputs, *outputs)
