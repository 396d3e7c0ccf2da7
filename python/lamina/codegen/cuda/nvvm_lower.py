"""lamina-to-nvvm (L5, cuda target with `gpu_codegen="nvvm"`): the kernels lamina-map-gpu
mapped (`lamina.gpu_codegen = "nvvm"`, one `gpu.launch` per root) become PTX, upstream all
the way: gpu-kernel-outlining (each launch body a `gpu.func` in a `gpu.module`),
nvvm-attach-target (the chip, PTX features, libdevice for math functions), the device
lowering in the gpu.module (loops, affine, scf -> cf, convert-gpu-to-nvvm), and
gpu-module-to-binary{format=isa}: each gpu.module becomes a `gpu.binary` holding PTX text
(shown by the IR dump). The kernel function stays a host function of `gpu.launch_func`s
with constant grids; nvvm_runtime.py reads them and launches the PTX with the CUDA driver.

Scalars and views of arguments a launch body uses are recomputed inside it first, so a
kernel's parameters are only its memrefs (the launcher packs them from torch tensors).
"""
from __future__ import annotations

import os

from mlir import ir, passmanager

from ...transforms.common import visit_ops
from ...transforms.registry import register_pass
from .gpu_mapping import GPU_CODEGEN

DEFAULT_ARCH = "sm_90"

# In each gpu.module: what is left of the thread tiles' linalg ops to loops, the vector
# transfers the mapping did not turn into loads and stores unrolled, then convert-gpu-to-nvvm.
DEVICE_PASSES = ("convert-linalg-to-loops", "convert-vector-to-scf{full-unroll=true}", "convert-vector-to-llvm", "expand-strided-metadata",
                 "lower-affine", "convert-scf-to-cf",
                 "convert-gpu-to-nvvm", "canonicalize", "cse", "reconcile-unrealized-casts")


def libdevice_path() -> str | None:
    """CUDA's libdevice bitcode (math functions: __nv_expf ...), as Triton ships it."""
    env = os.environ.get("LAMINA_LIBDEVICE")
    if env:
        return env
    try:
        import triton
    except ImportError:
        return None
    path = os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "lib", "libdevice.10.bc")
    return path if os.path.exists(path) else None


def ptx_features(arch: str) -> str:
    """The PTX ISA version a chip needs at least (sm_90: PTX 8.0, CUDA 12)."""
    number = int("".join(ch for ch in arch if ch.isdigit()) or 90)
    return "+ptx80" if number >= 90 else "+ptx70"


def nvvm_kernels(module: ir.Module) -> list:
    return [op for op in module.body.operations
            if op.operation.name == "func.func" and GPU_CODEGEN in op.attributes
            and ir.StringAttr(op.attributes[GPU_CODEGEN]).value == "nvvm"]


_VIEWS = ("memref.collapse_shape", "memref.expand_shape", "memref.subview", "memref.cast")


def _sinkable(op) -> bool:
    """What a launch body may recompute instead of taking it as a parameter: constants,
    arith/math ops on scalars computed from sinkable values, and views of the kernel's
    memrefs (an output's reshape: the parameter stays the kernel's own argument)."""
    name = op.name
    if name in ("arith.constant", "ub.poison"):
        return True
    if name in _VIEWS:
        return all(isinstance(v, ir.BlockArgument) or _sinkable(v.owner) for v in op.operands)
    if not name.startswith(("arith.", "math.")) or any(isinstance(r.type, ir.ShapedType) for r in op.results):
        return False
    return all(isinstance(v, ir.OpResult) and _sinkable(v.owner) for v in op.operands)


def sink_constants(func_op) -> None:
    """Clone the scalar values a gpu.launch body uses from outside (constants, scalar
    arithmetic on them) into the body, so that a kernel's parameters are its memrefs."""
    launches = []
    visit_ops(func_op, lambda op: launches.append(op) if op.operation.name == "gpu.launch" else None)
    for launch in launches:
        body = launch.regions[0].blocks[0]
        first = list(body.operations)[0]
        clones: dict = {}

        def inside(v, first=first, clones=clones):
            if isinstance(v, ir.BlockArgument):
                return v   # (an argument of the kernel function: a launch parameter)
            owner = v.owner
            if owner not in clones:
                operands = [inside(operand) for operand in owner.operands]   # (defined before the copy)
                copy = owner.clone(ip=ir.InsertionPoint(first))
                for i, operand in enumerate(operands):
                    copy.operands[i] = operand
                clones[owner] = copy
            return clones[owner].results[v.result_number]

        def visit(op, launch=launch):
            for i, v in enumerate(op.operands):
                owner = v.owner if isinstance(v, ir.OpResult) else None
                if owner is None or _inside(owner, launch) or not _sinkable(owner):
                    continue
                op.operands[i] = inside(v)
        visit_ops(launch, visit)


def _inside(op, ancestor) -> bool:
    parent = op.parent
    while parent is not None:
        if parent == ancestor.operation:
            return True
        parent = getattr(parent, "parent", None)
    return False


def lower_to_ptx(module: ir.Module, arch: str = DEFAULT_ARCH, opt_level: int = 3) -> int:
    """Outline and compile every mapped kernel's launches to PTX (in place); returns how many
    gpu.binary ops the module holds."""
    kernels = nvvm_kernels(module)
    if not kernels:
        return 0
    for func_op in kernels:
        sink_constants(func_op)
    module.operation.verify()
    _run(module, "builtin.module(gpu-kernel-outlining)")
    distinct = _noalias_parameters(module)
    _run(module, "builtin.module(gpu.module(" + ", ".join(DEVICE_PASSES) + "))")
    _mark_noalias(module, distinct)
    for op in list(module.body.operations):   # shared-memory globals: outlining copied them into the kernels
        if op.operation.name == "memref.global" and "workgroup" in str(op.attributes["type"]):
            op.operation.erase()
    # libdevice only where a math function calls into it: linking it costs ~0.2 s per module
    link = libdevice_path() if _calls_libdevice(module) else None
    attach = f"chip={arch} features={ptx_features(arch)} O={opt_level}" + (f" l={link}" if link else "")
    _run(module, "builtin.module(nvvm-attach-target{" + attach + "}, gpu-module-to-binary{format=isa})")
    return sum(1 for op in module.body.operations if op.operation.name == "gpu.binary")


def _gpu_funcs(module: ir.Module, name: str):
    for op in module.body.operations:
        if op.operation.name == "gpu.module":
            for inner in op.regions[0].blocks[0].operations:
                if inner.operation.name == name:
                    yield ir.StringAttr(op.attributes["sym_name"]).value, inner


def _noalias_parameters(module: ir.Module) -> dict[tuple[str, str], list[int]]:
    """After outlining: per kernel (gpu.module, gpu.func), the positions its LLVM function
    will give the pointers of the memref parameters that are `llvm.noalias` arguments of
    the kernel function launching it (lamina's kernels take distinct buffers). The gpu.func
    lowering drops those attributes; without them LLVM reloads a row from global memory in
    every loop of a row kernel (the barriers between them may write any memory)."""
    noalias_args = set()
    launches = []

    def visit(op):
        if op.operation.name == "gpu.launch_func":
            launches.append(op)
    for func_op in module.body.operations:
        if func_op.operation.name != "func.func" or "arg_attrs" not in func_op.attributes:
            continue
        for k, attrs in enumerate(ir.ArrayAttr(func_op.attributes["arg_attrs"])):
            if "llvm.noalias" in ir.DictAttr(attrs):
                noalias_args.add(func_op.regions[0].blocks[0].arguments[k])
        visit_ops(func_op, visit)
    marked = {}
    for launch in launches:
        key = tuple(ir.SymbolRefAttr(launch.attributes["kernel"]).value)   # (gpu.module, gpu.func)
        position, pointers = 0, []
        for v in launch.opview.kernelOperands:
            if isinstance(v.type, ir.MemRefType):
                if v in noalias_args:
                    pointers += [position, position + 1]   # (allocated and aligned pointers)
                position += 3 + 2 * ir.MemRefType(v.type).rank
            else:
                position += 1
        marked[key] = pointers
    return marked


def _mark_noalias(module: ir.Module, pointers: dict[tuple[str, str], list[int]]) -> None:
    for module_name, fn in _gpu_funcs(module, "llvm.func"):
        key = (module_name, ir.StringAttr(fn.attributes["sym_name"]).value)
        if not pointers.get(key) or not fn.regions[0].blocks:
            continue
        args = fn.regions[0].blocks[0].arguments
        old = list(ir.ArrayAttr(fn.attributes["arg_attrs"])) if "arg_attrs" in fn.attributes else [ir.DictAttr.get({})] * len(args)
        new = []
        for k, attrs in enumerate(old):
            entries = {a.name: a.attr for a in ir.DictAttr(attrs)}
            if k in pointers[key] and str(args[k].type) == "!llvm.ptr":
                entries["llvm.noalias"] = ir.UnitAttr.get()
            new.append(ir.DictAttr.get(entries))
        fn.attributes["arg_attrs"] = ir.ArrayAttr.get(new)


def _calls_libdevice(module: ir.Module) -> bool:
    return any(ir.StringAttr(fn.attributes["sym_name"]).value.startswith("__nv_")
               for _, fn in _gpu_funcs(module, "llvm.func"))


def _run(module: ir.Module, pipeline: str) -> None:
    passmanager.PassManager.parse(pipeline, context=module.context).run(module.operation)


def _register() -> None:
    register_pass("lamina-to-nvvm", level="L5",
                  description="cuda target, NVVM generator: outline mapped kernels' gpu.launch bodies and compile "
                              "them to PTX (gpu.binary)")(
        lambda module, **options: lower_to_ptx(module, arch=options.get("arch", DEFAULT_ARCH))
    )


_register()
