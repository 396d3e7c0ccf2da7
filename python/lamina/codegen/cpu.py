"""The CPU target: linalg kernels -> tiled loops -> OpenMP -> LLVM -> JIT (ExecutionEngine).

`lower` first applies lamina-tile-cpu (transform-dialect tiling + vectorization of
contraction kernels, decisions recorded as `lamina.tile_sizes` / `lamina.vector_sizes`),
then the declarative pipeline passes/cpu-tiled.pipeline. LAMINA_NO_TILE=1 skips the
tiling and uses passes/cpu.pipeline (plain parallel loops), to bisect a tiling problem.
Before tiling, `schedule` runs lamina-expand-math (lowering/vector_math.py: f32 exp, log,
sin, tanh, erf, ... as inline polynomials instead of libm calls); LAMINA_NO_VECTOR_MATH=1
skips it. Kernels are compiled once per
module into one ExecutionEngine; `launch` calls a kernel's C interface with memref
descriptors that alias torch tensors (runtime/memref.py), so nothing is copied.
"""
from __future__ import annotations

import ctypes
import functools
import os
import sys
import weakref
from pathlib import Path
from typing import Sequence

from mlir import ir, passmanager
from mlir.execution_engine import ExecutionEngine

from .._assets import asset_path
from ..runtime.memref import descriptor
from ..transforms.common import walk_ops
from ..transforms.registry import register_pass
from .blas import BLAS_SYMBOLS, host_blas_library
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


def runtime_libraries() -> tuple[str, ...]:
    """Shared libraries the JIT links against: LLVM's OpenMP runtime and MLIR's float16 utils.

    MLIR's OpenMP lowering calls __kmpc_* (LLVM's libomp; libgcc lacks them). Override the
    OpenMP library with LAMINA_OPENMP_LIB. `libmlir_float16_utils.so` (16 KB; needs only
    libLLVM.so, which the bindings load anyway) defines `__truncsfbf2`, which LLVM calls for
    conversions to bf16 that arith-expand does not inline (int -> bf16, f64 -> bf16); it is
    added when present. MLIR's C runner utils (`memrefCopy`) are not needed: strided copies
    become loops (`copies_to_loops`), so the JIT does not drag in libMLIR.so (186 MB).
    """
    from .host import fact

    return tuple(fact("runtime_libraries", _probe_runtime_libraries))   # a worker: the user process's


@functools.lru_cache(maxsize=None)
def _probe_runtime_libraries() -> tuple[str, ...]:
    omp = os.environ.get("LAMINA_OPENMP_LIB") or _find_in_site_packages("cmeel.prefix", "lib", "libomp.so")
    if not omp:
        raise RuntimeLibraryError("LLVM's OpenMP runtime (libomp.so) not found: pip install cmeel-libomp, "
                                  "or set LAMINA_OPENMP_LIB to a libomp.so")
    libs = [omp]
    f16 = _find_in_site_packages("mlir", "lib", "libmlir_float16_utils.so")
    if f16:
        libs.append(f16)
    return tuple(libs)


class RuntimeLibraryError(RuntimeError):
    """A shared library the JIT needs is missing or cannot be loaded."""


_LOADABLE: set[str] = set()


def check_loadable(libraries: Sequence[str]) -> list[str]:
    """Raise RuntimeLibraryError unless every library loads with dlopen.

    The ExecutionEngine prints "Program aborted due to an unhandled Error" and aborts the
    process when a shared library fails to load; ctypes raises an OSError with the reason
    instead, so every library is tried here first (once per path and process).
    """
    for path in libraries:
        if path in _LOADABLE:
            continue
        try:
            ctypes.CDLL(path)
        except OSError as e:
            raise RuntimeLibraryError(f"lamina: the CPU JIT cannot load the runtime library {path}: {e}. "
                                      "Install cmeel-libomp or point LAMINA_OPENMP_LIB at a working "
                                      "libomp.so.") from e
        _LOADABLE.add(path)
    return list(libraries)


# ---- the pipeline ------------------------------------------------------------------------------

# The Python step `copies_to_loops` runs right after this pass of the pipeline assets:
# every memref.copy that bufferization and the deallocation pipeline made exists by then,
# and convert-linalg-to-parallel-loops, next, turns the linalg.copy ops into loops.
COPY_REWRITE_AFTER = "convert-bufferization-to-memref"


def _top_level_passes(pipeline: str) -> list[str]:
    """'builtin.module(a, b{x=1}, func.func(c))' -> ['a', 'b{x=1}', 'func.func(c)']."""
    body = pipeline.strip()
    head = "builtin.module("
    if not (body.startswith(head) and body.endswith(")")):
        raise ValueError(f"expected a builtin.module(...) pipeline, got {pipeline[:60]!r}")
    body = body[len(head):-1]
    parts, depth, cur = [], 0, []
    for ch in body:
        if ch in "({":
            depth += 1
        elif ch in ")}":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
    if "".join(cur).strip():
        parts.append("".join(cur).strip())
    return parts


def pipeline_steps(pipeline: str) -> list:
    """The steps that lower a module: upstream pipeline texts and Python steps between them:
    `unshare_for_bufferization` (lowering/kernel_cse.py) right before eliminate-empty-tensors;
    once everything is bufferized, `contractions_to_blas` (codegen/blas.py),
    `convolutions_to_library` (codegen/conv_library.py), `copies_to_loops`,
    `expands_to_reinterpret_casts` and `strided_gathers_to_unit_stride`;
    in the LLVM dialect at the end, `bf16_memory_as_i16` (codegen/bf16_memory.py),
    `cache_large_allocations` (codegen/cached_allocations.py) and
    `internalize_c_interface_targets`, `kernels_out_of_line` and `inline_c_interface_targets`
    (codegen/function_boundaries.py)."""
    from .bf16_memory import bf16_memory_as_i16
    from .cached_allocations import cache_large_allocations
    from .function_boundaries import inline_c_interface_targets, internalize_c_interface_targets, kernels_out_of_line
    from ..lowering.kernel_cse import unshare_for_bufferization

    llvm_steps = [bf16_memory_as_i16, cache_large_allocations, internalize_c_interface_targets, kernels_out_of_line,
                  inline_c_interface_targets]
    copy_steps = [copies_to_loops, expands_to_reinterpret_casts, strided_gathers_to_unit_stride]

    steps, segment = [], []

    def flush():
        if segment:
            steps.append(f"builtin.module({', '.join(segment)})")
            segment.clear()

    copies_rewritten = False
    for p in _top_level_passes(pipeline):
        name = p.split("{", 1)[0].split("(", 1)[0]
        if name == "eliminate-empty-tensors":
            flush()
            steps.append(unshare_for_bufferization)
        segment.append(p)
        if name == COPY_REWRITE_AFTER:
            from .blas import contractions_to_blas
            from .conv_library import convolutions_to_library

            flush()
            steps += [contractions_to_blas, convolutions_to_library, *copy_steps]
            copies_rewritten = True
    flush()
    return steps + ([] if copies_rewritten else copy_steps) + llvm_steps


@functools.lru_cache(maxsize=None)
def function_boundary_pipeline_text() -> str:
    """passes/cpu.pipeline for modules whose functions take and return tensors.

    (lamina-to-linalg output without lamina-kernel-abi, as the lowering tests build it:
    bufferization also converts function signatures, to identity-layout memrefs.) Run it
    with `lower_to_llvm(module, pipeline=function_boundary_pipeline_text())`, which adds
    the `copies_to_loops` step, so the JIT needs only runtime_libraries().
    """
    text = cpu_pipeline_text("cpu.pipeline")
    bufferize = "one-shot-bufferize{bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map}"
    passes = [bufferize if p.startswith("one-shot-bufferize") else p for p in _top_level_passes(text)]
    return f"builtin.module({', '.join(passes)})"


def _identity_layout(t) -> bool:
    layout = ir.MemRefType(t).layout
    return isinstance(layout, ir.AffineMapAttr) and layout.value == ir.AffineMap.get_identity(layout.value.n_dims)


def copies_to_loops(module: ir.Module | ir.Operation) -> int:
    """Rewrite memref.copy between non-identity-layout memrefs into linalg.copy.

    finalize-memref-to-llvm lowers such a copy (a strided slice, a concat piece, a copy
    into a strided output) to a call of `memrefCopy` from MLIR's C runner utils; as a
    linalg.copy it becomes a parallel loop nest like every other kernel loop. Copies
    between identity layouts stay memref.copy (an llvm.memcpy). Returns the count.
    """
    # (imported here: the linalg bindings' op definitions take ~0.1 s to import, which the
    # user's process, where a worker or the cache compiles, need not pay on its first graph)
    from mlir.dialects import linalg

    n = 0
    for c in [o for o in walk_ops(module) if o.name == "memref.copy"]:
        src, dst = c.operands[0], c.operands[1]
        if _identity_layout(src.type) and _identity_layout(dst.type):
            continue
        with ir.InsertionPoint(c), c.location:
            linalg.copy(src, outs=[dst])
        c.erase()
        n += 1
    return n


def strided_gathers_to_unit_stride(module: ir.Module | ir.Operation) -> int:
    """Rewrite vector.gather ops whose base memref has a non-unit innermost stride (a gather
    from a view: lamina.index_select of a reshaped slice) as gathers from a 1-D unit-stride
    view of the same buffer, the index vector scaled by that stride: convert-vector-to-llvm
    only lowers gathers from unit-stride memrefs (it leaves an unrealized cast otherwise).
    Returns the count."""
    from mlir.dialects import arith, memref, vector

    n = 0
    for g in [o for o in walk_ops(module) if o.name == "vector.gather"]:
        base = g.operands[0]
        if not isinstance(base.type, ir.MemRefType):
            continue
        bt = ir.MemRefType(base.type)
        strides, _ = bt.get_strides_and_offset()
        if bt.rank == 0 or strides[-1] == 1:
            continue
        r = bt.rank
        offsets, idx_vec, mask, passthru = list(g.operands[1:1 + r]), g.operands[1 + r], g.operands[2 + r], g.operands[3 + r]
        with ir.InsertionPoint(g), g.location:
            index = ir.IndexType.get()
            meta = memref.ExtractStridedMetadataOp(base)
            sizes, dyn_strides = list(meta.results)[2:2 + r], list(meta.results)[2 + r:2 + 2 * r]
            # every element the view can reach: 1 + sum((size_d - 1) * stride_d)
            one = arith.constant(index, 1)
            extent, start = one, arith.constant(index, 0)
            for d in range(r):
                extent = arith.addi(extent, arith.muli(arith.subi(sizes[d], one), dyn_strides[d]))
                start = arith.addi(start, arith.muli(offsets[d], dyn_strides[d]))
            dyn = ir.ShapedType.get_dynamic_stride_or_offset()
            flat_t = ir.MemRefType.get([ir.ShapedType.get_dynamic_size()], bt.element_type,
                                       layout=ir.StridedLayoutAttr.get(dyn, [1]))
            flat = memref.ReinterpretCastOp(flat_t, meta.results[0], [meta.results[1]], [extent], [],
                                            [dyn], [ir.ShapedType.get_dynamic_size()], [1])
            vt = ir.VectorType(idx_vec.type)
            scaled = arith.muli(idx_vec, vector.broadcast(vt, dyn_strides[-1]))
            new = vector.GatherOp(g.results[0].type, flat.results[0], [start], scaled, mask, passthru)
        g.results[0].replace_all_uses_with(new.results[0])
        g.erase()
        n += 1
    return n


def expands_to_reinterpret_casts(module: ir.Module | ir.Operation) -> int:
    """Rewrite memref.expand_shape ops that expand one dim into several dynamic sizes as
    memref.reinterpret_cast of the source's strided metadata (sizes from the op's
    output_shape, strides multiplied out within each group).

    expand-strided-metadata asserts (aborting the process) on a group with more than one
    dynamic size, and canonicalization turns a symbolic tensor.reshape (lamina-to-linalg's
    fallback for such reshapes) into exactly that expand. Returns the count."""
    from mlir.dialects import arith, memref

    dynamic = ir.ShapedType.get_dynamic_size()
    n = 0
    for e in [o for o in walk_ops(module) if o.name == "memref.expand_shape"]:
        groups = [[ir.IntegerAttr(j).value for j in ir.ArrayAttr(g)] for g in ir.ArrayAttr(e.attributes["reassociation"])]
        static = list(ir.DenseI64ArrayAttr(e.attributes["static_output_shape"]))
        if all(sum(static[d] == dynamic for d in g) <= 1 for g in groups):
            continue
        rt = ir.MemRefType(e.results[0].type)
        dyn_sizes = list(e.operands[1:])
        with ir.InsertionPoint(e), e.location:
            index = ir.IndexType.get()
            meta = memref.ExtractStridedMetadataOp(e.operands[0])
            src_rank = ir.MemRefType(e.operands[0].type).rank
            src_strides = list(meta.results)[2 + src_rank:2 + 2 * src_rank]
            sizes, it = [], iter(dyn_sizes)
            for d in range(rt.rank):
                sizes.append(next(it) if static[d] == dynamic else arith.constant(index, static[d]))
            strides = [None] * rt.rank
            for j, g in enumerate(groups):
                stride = src_strides[j]
                for d in reversed(g):
                    strides[d] = stride
                    stride = arith.muli(stride, sizes[d])
            type_strides, type_offset = rt.get_strides_and_offset()
            dyn_stride = ir.ShapedType.get_dynamic_stride_or_offset()
            cast = memref.ReinterpretCastOp(
                rt, meta.results[0],
                [meta.results[1]] if type_offset == dyn_stride else [],
                [sizes[d] for d in range(rt.rank) if static[d] == dynamic],
                [strides[d] for d in range(rt.rank) if type_strides[d] == dyn_stride],
                [type_offset], static, type_strides)
        e.results[0].replace_all_uses_with(cast.results[0])
        e.erase()
        n += 1
    return n


def lower_to_llvm(module: ir.Module, pipeline: str | None = None) -> None:
    """Lower a module of lamina-kernel-abi kernels to LLVM (the CPU pipeline asset, tiled or not).

    `pipeline` replaces the asset's text (e.g. function_boundary_pipeline_text()). The
    pipeline is run in steps, with `copies_to_loops` after COPY_REWRITE_AFTER.
    """
    for step in pipeline_steps(pipeline or cpu_pipeline_text()):
        if callable(step):
            with module.context, ir.Location.unknown(module.context):
                step(module)
        else:
            passmanager.PassManager.parse(step, context=module.context).run(module.operation)


@register_pass("lamina-lower-cpu", level="L5",
               description="bufferize kernels and lower them to LLVM with OpenMP loops (passes/cpu-tiled.pipeline)")
def lower_cpu(module: ir.Module, **options) -> None:
    lower_to_llvm(module)


@register_pass("lamina-copies-to-loops", level="L5",
               description="rewrite memref.copy between strided memrefs to linalg.copy (no memrefCopy runtime call)")
def copies_to_loops_pass(module: ir.Module, **options) -> None:
    copies_to_loops(module)


def _import_dynamo_first() -> None:
    # Importing torch._dynamo after the JIT has loaded LLVM aborts the process
    # ("Option 'bitcode-mdindex-threshold' registered more than once"); the other
    # order is fine. Users of the JIT are torch users, so pay that import up front.
    try:
        import torch._dynamo  # noqa: F401
    except ImportError:
        pass


def _check_no_runner_utils_calls(module: ir.Module) -> None:
    """A module that declares `memrefCopy` was lowered without `copies_to_loops`.

    The JIT would fail with "Symbols not found: memrefCopy" (runtime_libraries() has no
    MLIR runner utils); say what to do instead.
    """
    if _declares(module, "memrefCopy"):
        raise RuntimeLibraryError(
            "lamina: the module calls memrefCopy (MLIR's runner utils, not linked): lower it with "
            "lamina.codegen.cpu.lower_to_llvm(module, pipeline=...), which turns strided memref.copy "
            "into loops, instead of running the pipeline text with a PassManager")


def _declares(module: ir.Module, symbol: str) -> bool:
    return any(op.operation.name == "llvm.func" and ir.StringAttr(op.attributes["sym_name"]).value == symbol
               for op in module.body.operations)


def _c_interface_names(module: ir.Module) -> list[str]:
    """Kernels with a C interface (`_mlir_ciface_<name>` after lowering to LLVM)."""
    names = []
    for op in module.body.operations:
        if op.operation.name in ("llvm.func", "func.func"):
            sym = ir.StringAttr(op.attributes["sym_name"]).value
            if sym.startswith("_mlir_ciface_"):
                names.append(sym[len("_mlir_ciface_"):])
    return names


class NativeKernelEntries:
    """Launching kernels found by `_entry(name)`: a packed C interface (`_mlir__mlir_ciface_<name>`)
    taking void** to memref descriptors (CpuKernelLibrary: the JIT; shared_object.py: a
    loaded shared object). Launchers keep the library alive."""

    def _entry(self, kernel: str):
        raise NotImplementedError

    def launch(self, kernel: str, inputs: Sequence, outputs: Sequence) -> None:
        descs = [descriptor(t) for t in inputs] + [descriptor(t) for t in outputs]
        # The packed C interface takes void** pointing at each argument, and each argument
        # of an emit_c_interface function is a pointer to a memref descriptor.
        ptrs = [ctypes.pointer(d) for d in descs]
        packed = (ctypes.c_void_p * len(ptrs))(*[ctypes.addressof(p) for p in ptrs])
        self._entry(kernel)(packed)

    def launcher(self, kernel: str, strided: Sequence[bool]) -> "KernelLauncher":
        """A cheaper launch for repeated calls: descriptors and the packed argument array are
        built once (per thread); a call only stores the tensors' data pointers (and the
        strides of the arguments whose memrefs have a dynamic strided layout)."""
        return KernelLauncher(self._entry(kernel), list(strided), owner=self)

    def graph_launcher(self, graph: str, strided: Sequence[bool], arena_bytes: int | None,
                       index_args: Sequence[bool] = ()) -> "KernelLauncher":
        """The launcher of a graph entry (lamina-kernel-abi): tensors are the graph's inputs
        then its output buffers; the arena is appended, one per thread. `arena_bytes` None:
        its size depends on symbols and the caller passes it per call."""
        return KernelLauncher(self._entry(graph), list(strided), arena_bytes=arena_bytes,
                              index_args=list(index_args), has_arena=True, owner=self)


class CpuKernelLibrary(NativeKernelEntries):
    """Kernels of one module, JIT-compiled together (in this process)."""

    def __init__(self, module: ir.Module, opt_level: int = 3):
        _import_dynamo_first()
        _check_no_runner_utils_calls(module)
        libs = list(runtime_libraries())
        if _declares(module, "GOMP_parallel"):  # lamina-omp-to-gomp ran: torch's libgomp
            from .gomp import host_gomp_library

            libs.append(host_gomp_library())
        if any(_declares(module, s) for s in BLAS_SYMBOLS):  # lamina-contraction-to-blas ran: torch's BLAS
            libs.append(host_blas_library())
        from .conv_library import declared_library_functions, register_library_runtime

        library_calls = declared_library_functions(module)   # lamina-convolution-to-library ran
        self.engine = ExecutionEngine(module, opt_level=opt_level, shared_libs=check_loadable(libs))
        register_library_runtime(self.engine, library_calls)
        # the blocks its code keeps cached (codegen/cached_allocations.py) are freed while the
        # engine, an attribute of this object, is still alive
        from .cached_allocations import RELEASE, release_function

        weakref.finalize(self, release_function(self.engine.raw_lookup(RELEASE)))
        # a graph whose native code calls back into torch re-raises what such a call raised
        self.calls_back = bool(library_calls)
        self._entries: dict[str, object] = {}
        # Materialize every kernel now: the JIT links lazily, and a symbol it cannot resolve
        # (a libm or compiler-rt function) must fail the compile (-> fallback), not the
        # user's first call.
        for name in _c_interface_names(module):
            if name in library_calls:
                continue   # a function the JIT calls, not a kernel
            try:
                self._entry(name)
            except RuntimeError as e:
                raise RuntimeError(f"lamina: the CPU JIT could not link kernel {name} "
                                   "(an unresolved symbol; the JIT printed which)") from e

    def _entry(self, kernel: str):
        fn = self._entries.get(kernel)
        if fn is None:
            fn = self._entries[kernel] = self.engine.lookup(kernel)
        return fn


class KernelLauncher:
    """Calls one kernel on tensors (inputs then outputs, in the kernel's argument order).

    Sizes and strides of identity-layout arguments of static shape are written on a
    thread's first call only; `strided[i]` arguments (views, or of symbolic shape) get
    theirs on every call. `index_args[i]` arguments are Python ints (symbol values),
    passed as int64. Each thread gets its own descriptors (and, for a graph entry, its
    own arena: `has_arena` appends a byte buffer, of `arena_bytes`, or of the size passed
    per call when that is None), so concurrent calls do not race."""

    def __init__(self, fn, strided: list[bool], arena_bytes: int | None = None,
                 index_args: list[bool] | None = None, has_arena: bool = False, owner=None):
        import threading

        self.owner = owner   # the library whose code `fn` is: alive while this launcher is
        self.fn, self.strided, self.arena_bytes = fn, strided, arena_bytes
        self.index_args = index_args or [False] * len(strided)
        self.has_arena = has_arena or arena_bytes is not None
        # per thread: `state` = (descriptors, their pointers, the packed argument array)
        self.local = threading.local()

    def _state(self, args, arena_bytes: int = 0):
        is_index = self.index_args + [False] * (len(args) - len(self.index_args))
        descs = [ctypes.c_int64(int(a)) if i else descriptor(a) for a, i in zip(args, is_index)]
        if self.has_arena:
            descs.append(descriptor(self._new_arena(self.arena_bytes if self.arena_bytes is not None else arena_bytes)))
        # The packed C interface takes void** pointing at each argument: a pointer to a
        # memref descriptor, or the index value itself.
        ptrs = [d if isinstance(d, ctypes.c_int64) else ctypes.pointer(d) for d in descs]
        packed = (ctypes.c_void_p * len(ptrs))(*[ctypes.addressof(p) for p in ptrs])
        # the shapes the descriptors hold (a generated call skips rewriting unchanged ones)
        shapes = [None if i else tuple(a.shape) for a, i in zip(args, is_index)]
        state = (descs, ptrs, packed, shapes)
        self.local.state = state
        return state

    def _new_arena(self, nbytes: int):
        import torch

        arena = torch.empty(max(int(nbytes), 1), dtype=torch.uint8, device="cpu")   # not the default device
        self.local.arena = arena  # alive as long as this thread's descriptors point at it
        return arena

    def grow_arena(self, state, nbytes: int) -> None:
        """Make this thread's arena at least `nbytes` (a symbolic plan's size for this call)."""
        arena = getattr(self.local, "arena", None)
        d = state[0][-1]
        if arena is None or arena.numel() < nbytes:
            arena = self._new_arena(nbytes * 5 // 4)  # headroom: sizes grow in small steps
            d.allocated = d.aligned = arena.data_ptr()
        d.sizes[0] = arena.numel()

    def __call__(self, args, arena_bytes: int = 0) -> None:
        state = getattr(self.local, "state", None)
        if state is None:
            state = self._state(args, arena_bytes)
        else:
            for n, (d, t, s, i) in enumerate(zip(state[0], args, self.strided, self.index_args)):
                if i:
                    d.value = int(t)
                    continue
                p = t.data_ptr()
                d.allocated = p
                d.aligned = p
                if s:
                    d.sizes[:] = t.shape
                    d.strides[:] = t.stride()
                    state[3][n] = tuple(t.shape)
            if self.has_arena and self.arena_bytes is None:
                self.grow_arena(state, arena_bytes)
        self.fn(state[2])


@register_target("cpu")
class CpuTarget:
    name = "cpu"
    device = "cpu"
    devices = ("cpu",)  # kernels dereference host pointers: any other device would crash them
    # (kernels in linalg on tensors, before the ABI: conv-only intermediates cross kernel
    # boundaries channels-last)
    linalg_passes = ("lamina-conv-activations-channels-last",)
    # a reshape of a contraction's result ends the contraction's kernel (lamina-tile-cpu stores
    # through it: no copying kernel for a reshaped result)
    fusion_options = {"reshape_epilogues": True}

    def lower(self, module: ir.Module, dump=None) -> None:
        """passes/cpu-tiled.pipeline, then lamina-omp-to-gomp where torch runs on libgomp:
        the kernels' parallel loops share torch's thread pool (codegen/gomp.py)."""
        from .gomp import host_gomp_library, omp_to_gomp

        lower_to_llvm(module)
        if host_gomp_library():
            omp_to_gomp(module)

    def schedule(self, module: ir.Module) -> None:
        """Target-specific rewrites and loop schedules on the kernels (L4).

        lamina-expand-math first (f32 transcendental math ops -> inline polynomials, so
        the vectorizer sees plain arith; LAMINA_NO_VECTOR_MATH=1 keeps the libm calls),
        then tiling + vectorization. Identical kernels are merged first (lamina-dedupe-kernels:
        a repeated block is tiled and compiled once).
        """
        from ..lowering import vector_math
        from ..transforms.registry import run_pass

        run_pass("lamina-dedupe-kernels", module)
        late = "sin,cos" if tiling_enabled() else ""
        if vector_math.enabled():
            run_pass("lamina-expand-math", module, skip=late)
        if tiling_enabled():
            run_pass("lamina-tile-cpu", module)
        if vector_math.enabled() and late:
            # sin/cos after vectorization: as vector ops they branch per vector to the cheap
            # f32 reduction when every lane is in its range.
            run_pass("lamina-expand-math", module)
        # (the log1p/expm1 expand-math left, f64 among them: convert-math-to-llvm's
        # log(1 + x) and exp(x) - 1 would be wrong near 0)
        run_pass("lamina-precise-log1p-expm1", module)

    def load(self, module: ir.Module) -> CpuKernelLibrary:
        return CpuKernelLibrary(module, opt_level=_opt_level())

    def export(self, module: ir.Module) -> dict:
        """The kernels as a shared object (codegen/shared_object.py): what a compile worker
        hands back and the compile cache keeps."""
        from . import shared_object
        from .conv_library import declared_library_functions

        _check_no_runner_utils_calls(module)
        libs = []
        if _declares(module, "GOMP_parallel"):   # before libomp, which exports GOMP_* too
            from .gomp import host_gomp_library

            libs.append(host_gomp_library())
        if any(_declares(module, s) for s in BLAS_SYMBOLS):
            libs.append(host_blas_library())
        libs += check_loadable(runtime_libraries())   # a broken libomp fails here, as in the JIT
        callbacks = declared_library_functions(module)
        entries = [n for n in _c_interface_names(module) if n not in callbacks]
        return shared_object.export(module, libs, callbacks, entries, opt_level=_opt_level())

    def load_artifact(self, artifact: dict):
        from .shared_object import ARTIFACT_KIND, SharedObjectLibrary

        if artifact.get("kind") != ARTIFACT_KIND:
            raise ValueError(f"lamina: the cpu target cannot load an artifact of kind {artifact.get('kind')!r}")
        return SharedObjectLibrary(artifact)


def _opt_level() -> int:
    return int(os.environ.get("LAMINA_OPT_LEVEL", "3"))
