"""Loading and launching the NVVM generator's kernels (nvvm_lower.py's gpu.binary PTX) with
the CUDA driver API through ctypes: no MLIR runtime library, no CUDA toolkit.

Each kernel function the generator compiled is a host function of `gpu.launch_func`s with
constant grids and memref arguments (`host_launches` reads it, and refuses anything else).
A KernelLauncher per lamina kernel launches them in order on torch's current stream, in
torch's (primary) context:

* the module of each gpu.binary loads once per device, at the first launch: through
  `ptxas` (a cubin, cached on disk by the PTX's digest) when ptxas is on the PATH, else the
  driver's PTX JIT (`cuModuleLoadData`);
* each launch's parameter array (an expanded memref descriptor per argument: allocated and
  aligned pointer, offset, sizes, strides, all 64-bit) is built once; a call writes only the
  tensors' data pointers into it (and strides where the memref's layout is strided).
"""
from __future__ import annotations

import ctypes
import hashlib
import os
import shutil
import subprocess
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path

from mlir import ir

from .launch import WARMING_THREADS
from .nvvm_lower import nvvm_kernels


# ---- reading the lowered module ------------------------------------------------------------------

@dataclass
class MemrefArg:
    index: int            # the kernel function's argument it is
    rank: int
    sizes: list[int]
    strides: list[int] | None   # None: read from the tensor (a strided layout)


@dataclass
class Launch:
    binary: str
    function: str
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    args: list[MemrefArg] = field(default_factory=list)


def _constant_int(v: ir.Value) -> int:
    owner = v.owner if isinstance(v, ir.OpResult) else None
    if owner is None or owner.name != "arith.constant":
        raise ValueError("lamina NVVM: a launch dimension that is not a constant")
    return ir.IntegerAttr(owner.attributes["value"]).value


def _memref_arg(v: ir.Value) -> MemrefArg:
    if not isinstance(v, ir.BlockArgument):
        raise ValueError("lamina NVVM: a launch argument that is not one of the kernel's memrefs")
    t = ir.MemRefType(v.type)
    shape = list(t.shape)
    strides, offset = t.get_strides_and_offset()
    dynamic = ir.ShapedType.get_dynamic_stride_or_offset()
    static = all(s != dynamic for s in strides) and offset != dynamic
    return MemrefArg(v.arg_number, t.rank, shape, list(strides) if static else None)


def host_launches(func_op) -> list[Launch]:
    """The launches of one compiled kernel function, in order."""
    launches = []
    for op in func_op.regions[0].blocks[0].operations:
        name = op.operation.name
        if name in ("func.return", "ub.poison") or name.startswith(("arith.", "math.")) or \
                name in ("memref.collapse_shape", "memref.expand_shape", "memref.subview", "memref.cast"):
            continue   # (constants of the grid; scalars and views the launches recompute, unused here)
        if name != "gpu.launch_func":
            raise ValueError(f"lamina NVVM: unexpected host op {name} in a compiled kernel")
        kernel = ir.SymbolRefAttr(op.attributes["kernel"]).value   # [module, function]
        # operands: (async deps,) grid x/y/z, block x/y/z, (cluster,) (dynamic shared memory,) args
        segments = list(ir.DenseI32ArrayAttr(op.attributes["operandSegmentSizes"]))
        operands = list(op.operands)
        names = ("asyncDependencies", "gridSizeX", "gridSizeY", "gridSizeZ", "blockSizeX", "blockSizeY",
                 "blockSizeZ", "clusterSizeX", "clusterSizeY", "clusterSizeZ", "dynamicSharedMemorySize",
                 "kernelOperands", "asyncObject")
        groups, at = {}, 0
        for n, count in zip(names, segments):
            groups[n] = operands[at:at + count]
            at += count
        if groups["asyncDependencies"] or groups["clusterSizeX"] or groups["dynamicSharedMemorySize"]:
            raise ValueError("lamina NVVM: async, clustered or dynamic-shared-memory launches are not supported")
        grid = tuple(_constant_int(groups[f"gridSize{a}"][0]) for a in "XYZ")
        block = tuple(_constant_int(groups[f"blockSize{a}"][0]) for a in "XYZ")
        launches.append(Launch(kernel[0], kernel[1], grid, block, [_memref_arg(v) for v in groups["kernelOperands"]]))
    return launches


def binaries(module: ir.Module) -> dict[str, bytes]:
    """PTX text of each gpu.binary (its first object)."""
    from mlir.dialects import gpu

    out = {}
    for op in module.body.operations:
        if op.operation.name == "gpu.binary":
            obj = gpu.ObjectAttr(ir.ArrayAttr(op.attributes["objects"])[0])
            out[ir.StringAttr(op.attributes["sym_name"]).value] = bytes(obj.object)
    return out


# ---- the CUDA driver -----------------------------------------------------------------------------

class CudaError(RuntimeError):
    pass


class _Driver:
    def __init__(self):
        self.lib = ctypes.CDLL("libcuda.so.1")
        self.lib.cuLaunchKernel.argtypes = [ctypes.c_void_p, ctypes.c_uint, ctypes.c_uint, ctypes.c_uint,
                                            ctypes.c_uint, ctypes.c_uint, ctypes.c_uint, ctypes.c_uint,
                                            ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
        self.lib.cuModuleLoadData.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_void_p]
        self.lib.cuModuleGetFunction.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_void_p, ctypes.c_char_p]

    def check(self, result: int, what: str) -> None:
        if result != 0:
            name = ctypes.c_char_p()
            self.lib.cuGetErrorName(result, ctypes.byref(name))
            raise CudaError(f"lamina NVVM: {what} failed: {(name.value or b'?').decode()} ({result})")

    def ensure_context(self, device: int) -> None:
        """torch's primary context current on this thread (the runtime API makes it current
        lazily; a driver call may come first)."""
        current = ctypes.c_void_p()
        self.check(self.lib.cuCtxGetCurrent(ctypes.byref(current)), "cuCtxGetCurrent")
        if current.value:
            return
        ctx = ctypes.c_void_p()
        self.check(self.lib.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), device), "cuDevicePrimaryCtxRetain")
        self.check(self.lib.cuCtxSetCurrent(ctx), "cuCtxSetCurrent")

    def load(self, image: bytes) -> ctypes.c_void_p:
        module = ctypes.c_void_p()
        buf = ctypes.create_string_buffer(image + (b"" if image.endswith(b"\0") else b"\0"))
        self.check(self.lib.cuModuleLoadData(ctypes.byref(module), buf), "cuModuleLoadData")
        return module

    def function(self, module: ctypes.c_void_p, name: str) -> ctypes.c_void_p:
        fn = ctypes.c_void_p()
        self.check(self.lib.cuModuleGetFunction(ctypes.byref(fn), module, name.encode()), f"cuModuleGetFunction({name})")
        return fn


_DRIVER: _Driver | None = None
_DRIVER_LOCK = threading.Lock()


def driver() -> _Driver:
    global _DRIVER
    with _DRIVER_LOCK:
        if _DRIVER is None:
            _DRIVER = _Driver()
        return _DRIVER


def _cubin_cache() -> Path:
    root = os.environ.get("LAMINA_CACHE_DIR") or os.path.join(os.path.expanduser("~"), ".cache", "lamina")
    path = Path(root) / "cubin"
    path.mkdir(parents=True, exist_ok=True)
    return path


def module_image(ptx: bytes, arch: str) -> bytes:
    """What cuModuleLoadData gets: a cubin from ptxas when it is on the PATH (kept on disk by
    the PTX's digest), else the PTX itself (the driver JIT-compiles it)."""
    ptxas = shutil.which("ptxas")
    if ptxas is None or os.environ.get("LAMINA_PTXAS", "1") == "0":
        return ptx
    digest = hashlib.sha256(ptx + arch.encode()).hexdigest()[:32]
    cached = _cubin_cache() / f"{digest}.cubin"
    if cached.exists():
        return cached.read_bytes()
    with tempfile.TemporaryDirectory() as tmp:
        src, out = Path(tmp) / "k.ptx", Path(tmp) / "k.cubin"
        src.write_bytes(ptx.rstrip(b"\0"))
        proc = subprocess.run([ptxas, f"-arch={arch}", "-O3", str(src), "-o", str(out)], capture_output=True, text=True)
        if proc.returncode != 0:
            return ptx   # (the driver's JIT then reports what is wrong, if anything)
        image = out.read_bytes()
    tmp_path = cached.with_suffix(f".{os.getpid()}.tmp")
    tmp_path.write_bytes(image)
    os.replace(tmp_path, cached)
    return image


# ---- launching -----------------------------------------------------------------------------------

class _PreparedLaunch:
    """One gpu.launch_func with its parameter array packed once."""

    def __init__(self, launch: Launch, function: ctypes.c_void_p):
        self.launch, self.function = launch, function
        count = sum(3 + 2 * a.rank for a in launch.args)
        self.values = (ctypes.c_int64 * max(count, 1))()
        base = ctypes.addressof(self.values)
        self.params = (ctypes.c_void_p * max(count, 1))(*[base + 8 * i for i in range(max(count, 1))])
        self.pointer_slots, self.stride_slots = [], []
        at = 0
        for a in launch.args:
            self.pointer_slots.append((a.index, at))
            self.values[at + 2] = 0    # offset: the data pointer already includes torch's storage offset
            for i, s in enumerate(a.sizes):
                self.values[at + 3 + i] = s
            if a.strides is None:
                self.stride_slots.append((a.index, at + 3 + a.rank, a.rank))
            else:
                for i, s in enumerate(a.strides):
                    self.values[at + 3 + a.rank + i] = s
            at += 3 + 2 * a.rank

    def __call__(self, lib, tensors, stream) -> None:
        values = self.values
        for index, at in self.pointer_slots:
            p = tensors[index].data_ptr()
            values[at] = p
            values[at + 1] = p
        for index, at, rank in self.stride_slots:
            for i, s in enumerate(tensors[index].stride()):
                values[at + i] = s
        (gx, gy, gz), (bx, by, bz) = self.launch.grid, self.launch.block
        result = lib.cuLaunchKernel(self.function, gx, gy, gz, bx, by, bz, 0, stream, self.params, None)
        if result != 0:
            driver().check(result, f"cuLaunchKernel({self.launch.function})")


class KernelLauncher:
    """Launches one lamina kernel's gpu.launch_funcs: `launcher(*inputs, *outputs)`."""

    def __init__(self, name: str, launches: list[Launch], images: dict[str, bytes], arch: str,
                 aligned: tuple[int, ...] = (), written: tuple[int, ...] = ()):
        self.name, self.launches, self.images, self.arch = name, launches, images, arch
        # arguments read or written with 128-bit accesses (lamina.gpu_aligned_args): a
        # tensor there whose data pointer is not 16-byte aligned runs on an aligned copy
        self.aligned, self.written = tuple(aligned), frozenset(written)
        self._prepared: dict[int, list[_PreparedLaunch]] = {}
        self._lib = None   # libcuda, once a device's launches are prepared
        self._lock = threading.Lock()
        import torch

        self._raw_stream = torch._C._cuda_getCurrentRawStream
        self._device = torch._C._cuda_getDevice

    def _prepared_for(self, device: int) -> list[_PreparedLaunch]:
        """The launches ready on `device` (modules loaded at the first call there); under
        self._lock."""
        prepared = self._prepared.get(device)
        if prepared is None:
            drv = driver()
            drv.ensure_context(device)
            modules = {}
            prepared = []
            for launch in self.launches:
                if launch.binary not in modules:
                    modules[launch.binary] = drv.load(module_image(self.images[launch.binary], self.arch))
                prepared.append(_PreparedLaunch(launch, drv.function(modules[launch.binary], launch.function)))
            self._prepared[device] = prepared
            self._lib = drv.lib
        return prepared

    def __call__(self, *tensors) -> None:
        device = self._device()
        if WARMING_THREADS and threading.get_ident() in WARMING_THREADS:
            # a warm-up pass on fake tensors (PlanRunner.precompile): load the modules now
            with self._lock:
                self._prepared_for(device)
            return
        copies = None
        for i in self.aligned:
            if tensors[i].data_ptr() & 15:
                copies = copies or {}
                copies[i] = tensors[i].clone()   # (a new allocation: aligned, same strides)
        run = tensors if copies is None else tuple(copies.get(i, t) for i, t in enumerate(tensors))
        with self._lock:
            prepared = self._prepared_for(device)
            stream = self._raw_stream(device)
            for p in prepared:
                p(self._lib, run, stream)
        if copies:
            for i, c in copies.items():
                if i in self.written:
                    tensors[i].copy_(c)


def _i64s(func_op, name: str) -> tuple[int, ...]:
    return tuple(int(x) for x in ir.DenseI64ArrayAttr(func_op.attributes[name])) if name in func_op.attributes else ()


def nvvm_launchers(module: ir.Module, arch: str) -> dict[str, KernelLauncher]:
    """A launcher for every kernel the NVVM generator compiled in `module`."""
    from .gpu_mapping import GPU_ALIGNED_ARGS, GPU_WRITTEN_ARGS

    images = binaries(module)
    out = {}
    for func_op in nvvm_kernels(module):
        name = ir.StringAttr(func_op.attributes["sym_name"]).value
        out[name] = KernelLauncher(name, host_launches(func_op), images, arch,
                                   _i64s(func_op, GPU_ALIGNED_ARGS), _i64s(func_op, GPU_WRITTEN_ARGS))
    return out
