"""Contractions on the host BLAS: the choice (L4, on tensors) and lamina-contraction-to-blas
(L5, on memrefs).

A large fp32/fp64 matmul runs fastest on the BLAS torch itself calls (MKL's sgemm_ in
libtorch_cpu: B panels packed per call, L1/L2 blocking, an assembly micro-kernel); lamina's
own tiled kernel (tiling.py) reaches 60-85% of it and less where K or N is large (a 1000^3
matmul: 65 against 112 GFLOP/s). So, like Inductor's extern mm and IREE's ukernels, a
contraction can be `lamina.contraction = "library"`: tiling leaves it alone (the rest of its
kernel, the bias/activation epilogue, is vectorized as a pointwise kernel), and after
bufferization this pass replaces it with a call of a helper from passes/blas-gemm.mlir,
which passes strided views to BLAS as they are ('N' or 'T' per operand: F.linear's W^T
costs nothing) and falls back to a loop nest for views BLAS cannot describe. The graph
still runs as one native call; BLAS threads on torch's OpenMP pool.

The choice is an attribute a user can set first (`lamina.contraction = "tiled"` keeps a
contraction tiled); the pass fills in `choose_contraction` for the others:
LAMINA_CONTRACTION=tiled|library|auto (default auto: library for fp32/fp64 linalg.matmul
and linalg.batch_matmul with no static zero dim and at least LIBRARY_MIN_FLOPS per call (a
symbolic size counted as fusion.SYMBOLIC_SIZE_ESTIMATE; symbols are >= 2 at run time, so
BLAS never sees an empty dim), when the process has a BLAS exporting sgemm_/dgemm_; static
f16/bf16 ones too, on f32 copies of their operands, where each copied element serves at
least LOW_PRECISION_MIN_FLOPS_PER_ELEMENT flops).
"""
from __future__ import annotations

import ctypes
import functools
import math
import os

from mlir import ir

from .._assets import asset_path
from ..transforms.common import rebuild_generic
from ..transforms.fusion import LARGE_CONTRACTION_FLOPS, contraction_flops
from ..transforms.registry import register_pass

CONTRACTION = "lamina.contraction"
# Below this many flops per call (2*M*N*K per batch) the tiled kernel keeps the contraction:
# BLAS's per-call setup weighs more there, and the tiled kernel fuses its epilogue in
# registers (the attention and MLP cases of the small benchmark sizes). lamina-fuse uses
# the same size to put a transposed operand into the contraction's kernel.
LIBRARY_MIN_FLOPS = LARGE_CONTRACTION_FLOPS

_GEMM = {"f32": "sgemm_", "f64": "dgemm_"}
BLAS_SYMBOLS = tuple(_GEMM.values())  # what a module declares once the pass has run
_BYTES = {"f32": 4, "f64": 8}


def host_blas_library() -> str | None:
    """The loaded library exporting the Fortran BLAS sgemm_ and dgemm_ (torch's libtorch_cpu,
    which links MKL), or None (a compile worker: the user process's answer, codegen/host.py)."""
    from .host import fact

    return fact("blas", _probe_blas_library)


@functools.lru_cache(maxsize=None)
def _probe_blas_library() -> str | None:
    try:
        import torch
    except ImportError:
        return None
    path = os.path.join(os.path.dirname(torch.__file__), "lib", "libtorch_cpu.so")
    try:
        lib = ctypes.CDLL(path)
        ok = all(_computes_a_product(getattr(lib, name), ctype) for name, ctype in
                 (("sgemm_", ctypes.c_float), ("dgemm_", ctypes.c_double)))
    except (OSError, AttributeError):
        return None
    return path if ok else None


def _computes_a_product(gemm, ctype) -> bool:
    """Call `gemm` as the helpers do (LP64: 32-bit ints by reference) on a 2x3 @ 3x2
    product: a BLAS with another integer width (an ILP64 OpenBLAS) or calling convention
    must not be used."""
    a = (ctype * 6)(1, 2, 3, 4, 5, 6)        # row-major 2x3
    b = (ctype * 6)(7, 8, 9, 10, 11, 12)     # row-major 3x2
    c = (ctype * 4)(-1, -1, -1, -1)
    ref = ctypes.byref
    n_char, two, three = ctypes.c_char(b"N"), ctypes.c_int32(2), ctypes.c_int32(3)
    one, zero = ctype(1.0), ctype(0.0)
    # Row-major C = A @ B as column-major C^T = B^T A^T (as passes/blas-gemm.mlir does).
    gemm(ref(n_char), ref(n_char), ref(two), ref(two), ref(three), ref(one), b, ref(two), a, ref(three),
         ref(zero), c, ref(two))
    return list(c) == [58.0, 64.0, 139.0, 154.0]


def _mode() -> str:
    mode = os.environ.get("LAMINA_CONTRACTION", "auto").strip().lower() or "auto"
    if mode not in ("auto", "tiled", "library"):
        raise ValueError(f"LAMINA_CONTRACTION={mode!r}: expected tiled, library or auto")
    return mode


_LOW_PRECISION = ("f16", "bf16")
# A f16/bf16 contraction runs on sgemm_ with its operands widened to f32 first, when each
# widened element is used for at least this many flops (2*M*N*K / (M*K + K*N) per batch):
# the widening is then a few percent of the call. Below it (matrix-vector shapes) the
# copies would cost more than the product; the tiled kernel reads f16/bf16 directly.
LOW_PRECISION_MIN_FLOPS_PER_ELEMENT = 32


def _element_types(op) -> tuple[list[str], str]:
    n_in = len(op.operands) - 1
    names = [str(ir.ShapedType(v.type).element_type) for v in op.operands]
    return names[:n_in], names[n_in]


def _element_type_name(op) -> str | None:
    """The BLAS element type: f32/f64 when every operand has it; f32 for f16/bf16 inputs
    accumulating into f32 (run on widened copies, `promote_low_precision_operands`)."""
    ins, acc = _element_types(op)
    if acc in _GEMM and all(t == acc for t in ins):
        return acc
    if acc == "f32" and all(t in _LOW_PRECISION for t in ins):
        return acc
    return None


def _low_precision(op) -> bool:
    return any(t in _LOW_PRECISION for t in _element_types(op)[0])


def _flops_per_widened_element(op) -> float:
    a, b = (ir.RankedTensorType(v.type).shape for v in op.operands[:2])
    return contraction_flops(op) / max(1, math.prod(a) + math.prod(b))


def _blas_representable(op) -> bool:
    """A plain (batch_)matmul on static, non-empty fp32/fp64 tensors (or f16/bf16 ones
    accumulating in f32)."""
    if op.operation.name not in ("linalg.matmul", "linalg.batch_matmul"):
        return False
    if not _default_maps(op) or _element_type_name(op) is None:
        return False  # transposed/broadcast matmul forms: the tiled kernel handles those
    for v in list(op.operands) + list(op.results):
        t = ir.RankedTensorType(v.type) if isinstance(v.type, ir.RankedTensorType) else None
        if t is None or 0 in t.shape:
            return False
        if not t.has_static_shape and _low_precision(op):
            return False   # the f32 copies are made for static shapes only
    return True


_DEFAULT_MAPS = {
    "linalg.matmul": "[affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d2, d1)>, "
                     "affine_map<(d0, d1, d2) -> (d0, d1)>]",
    "linalg.batch_matmul": "[affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d3, d2)>, "
                           "affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>]",
}


def _default_maps(op) -> bool:
    """No indexing_maps, or the op's own defaults (the parser spells them out)."""
    return "indexing_maps" not in op.attributes or str(op.attributes["indexing_maps"]) == _DEFAULT_MAPS[op.operation.name]


def choose_contraction(op) -> str:
    """'library' or 'tiled' for one contraction op on tensors (the rule in the docstring)."""
    mode = _mode()
    if mode == "tiled" or not _blas_representable(op) or host_blas_library() is None:
        return "tiled"
    if mode == "library":
        return "library"
    if _low_precision(op) and _flops_per_widened_element(op) < LOW_PRECISION_MIN_FLOPS_PER_ELEMENT:
        return "tiled"
    return "library" if contraction_flops(op) >= LIBRARY_MIN_FLOPS else "tiled"


def mark_contractions(func_op) -> list:
    """Record the choice on every matmul of a kernel (a user's attribute wins); return the
    ops that go to the library."""
    library = []
    for op in func_op.regions[0].blocks[0].operations:
        if op.operation.name not in ("linalg.matmul", "linalg.batch_matmul"):
            continue
        if CONTRACTION in op.attributes:
            choice = ir.StringAttr(op.attributes[CONTRACTION]).value
            if choice not in ("library", "tiled"):
                raise ValueError(f"{CONTRACTION} = {choice!r}: expected \"library\" or \"tiled\"")
            if choice == "library" and not _blas_representable(op):
                raise ValueError(f"{CONTRACTION} = \"library\" on a {op.operation.name} BLAS cannot run "
                                 "(needs static, non-empty f32/f64 operands, or f16/bf16 ones accumulating "
                                 "in f32, and no indexing_maps)")
        else:
            choice = choose_contraction(op)
            op.attributes[CONTRACTION] = ir.StringAttr.get(choice)
        if choice == "library":
            if _low_precision(op):
                op = promote_low_precision_operands(op)
            library.append(op)
    return library


def promote_low_precision_operands(op):
    """The f32 form of a f16/bf16 library contraction accumulating in f32, which replaces it:
    each input becomes an f32 copy made in the kernel (a vectorized pointwise loop).
    f16/bf16 -> f32 is exact and sgemm_ accumulates in f32, so the result is the
    f32-accumulated product that eager's f16/bf16 GEMM computes too. An input that is a
    linalg.transpose used only here (F.linear's W^T) is widened before the transpose, so
    the transpose stays a 'T' view of the widened weight for lamina-contraction-to-blas."""
    from mlir.dialects import arith, linalg, tensor

    from ..lowering.to_linalg import _map_tensor, _one

    f32 = ir.F32Type.get()

    def widen(v):
        return _one(_map_tensor(v, ir.RankedTensorType.get(ir.RankedTensorType(v.type).shape, f32),
                                         lambda x: arith.extf(f32, x)))

    n_in = len(op.operands) - 1
    with ir.InsertionPoint(op), op.location:
        inputs = []
        for v in list(op.operands)[:n_in]:
            owner = v.owner if isinstance(v, ir.OpResult) else None
            if str(ir.RankedTensorType(v.type).element_type) not in _LOW_PRECISION:
                inputs.append(v)
            elif owner is not None and owner.name == "linalg.transpose" and len(list(v.uses)) == 1:
                init = tensor.empty(ir.RankedTensorType(v.type).shape, f32)
                perm = list(ir.DenseI64ArrayAttr(owner.attributes["permutation"]))
                inputs.append(_one(linalg.transpose(widen(owner.operands[0]), outs=[init], permutation=perm)))
            else:
                inputs.append(widen(v))
        build = linalg.matmul if op.operation.name == "linalg.matmul" else linalg.batch_matmul
        new = _one(build(*inputs, outs=[op.operands[n_in]])).owner
    for i in range(len(op.attributes)):
        named = op.attributes[i]
        if named.name not in ("indexing_maps", "operandSegmentSizes", "cast"):
            new.attributes[named.name] = named.attr
    old_inputs = [v.owner for v in list(op.operands)[:n_in] if isinstance(v, ir.OpResult)]
    op.results[0].replace_all_uses_with(new.results[0])
    op.erase()
    for o in old_inputs:  # a transpose widened before, now unused
        if o.name == "linalg.transpose" and not list(o.results[0].uses):
            o.erase()
    return new


def epilogues_in_place(func_op) -> int:
    """Let each library contraction's elementwise epilogue update the product in place.

    A library matmul writes its product C through BLAS; the bias/activation generic that
    reads C would write a second buffer of C's size (its init is a tensor.empty), so C is a
    temporary allocated per call and read back once. When the epilogue is C's only user, is
    all-parallel, reads C with the identity map and yields C's type, it is rebuilt with C as
    its init (read through the out block argument) instead:

        %c = linalg.matmul ... outs(%fill)          %c = linalg.matmul ... outs(%fill)
        %e = linalg.generic ins(%c, %bias)    ->    %e = linalg.generic ins(%bias) outs(%c)
               outs(%empty) {^bb0(%x, %b, %o)...}          {^bb0(%b, %x) ...}

    Empty-tensor elimination then makes %fill's tensor.empty the kernel's output buffer:
    BLAS writes the output, and the epilogue rewrites it in place (no temporary, one pass
    less over C). Returns how many epilogues were rebuilt."""
    count = 0
    for op in list(func_op.regions[0].blocks[0].operations):
        if op.operation.name not in ("linalg.matmul", "linalg.batch_matmul") or not is_library(op):
            continue
        c = op.results[0]
        uses = list(c.uses)
        if len(uses) != 1 or uses[0].owner.name != "linalg.generic":
            continue
        epi = uses[0].owner
        index = uses[0].operand_number
        n_out = len(epi.results)
        n_in = len(epi.operands) - n_out
        maps = [ir.AffineMapAttr(m).value for m in ir.ArrayAttr(epi.attributes["indexing_maps"])]
        block = epi.regions[0].blocks[0]
        identity = ir.AffineMap.get_identity(len(ir.ArrayAttr(epi.attributes["iterator_types"])))
        if n_out != 1 or index >= n_in or maps[index] != identity or maps[n_in] != identity \
                or epi.results[0].type != c.type or "reduction" in str(epi.attributes["iterator_types"]) \
                or list(block.arguments[n_in].uses) \
                or sum(1 for v in list(epi.operands)[:n_in] if v == c) != 1:
            continue
        init = epi.operands[n_in]
        ins = [v for i, v in enumerate(list(epi.operands)[:n_in]) if i != index]
        in_maps = [m for i, m in enumerate(maps[:n_in]) if i != index]
        # (C's block argument becomes the out one; the old out argument is unused)
        new = rebuild_generic(epi, [c.type], ins, [c], in_maps + [identity],
                              block_args=[i for i in range(n_in) if i != index] + [index])
        epi.results[0].replace_all_uses_with(new.results[0])
        epi.erase()
        if isinstance(init, ir.OpResult) and init.owner.name == "tensor.empty" and not list(init.uses):
            init.owner.erase()
        count += 1
    return count


def is_library(op) -> bool:
    return CONTRACTION in op.attributes and ir.StringAttr(op.attributes[CONTRACTION]).value == "library"


# ---- lamina-contraction-to-blas (memrefs) -------------------------------------------------------

def _helpers_text(elem: str) -> str:
    text = asset_path("passes", "blas-gemm.mlir").read_text()
    return text.replace("@GEMM@", _GEMM[elem]).replace("@T@", elem).replace("@BYTES@", str(_BYTES[elem]))


def _add_helpers(module: ir.Module, elem: str) -> None:
    symbols = {ir.StringAttr(op.attributes["sym_name"]).value for op in module.body.operations
               if "sym_name" in op.attributes}
    if f"lamina_gemm_{elem}" in symbols:
        return
    helpers = ir.Module.parse(_helpers_text(elem), context=module.context)
    at_end = ir.InsertionPoint(module.body)
    for op in list(helpers.body.operations):
        at_end.insert(op.operation.detach_from_parent())


def is_zero_fill(fill) -> bool:
    """A linalg.fill of the constant +0.0 (a -0.0 fill is not an empty accumulator)."""
    value = fill.operands[0]
    owner = value.owner if isinstance(value, ir.OpResult) else None
    if owner is None or owner.name != "arith.constant":
        return False
    attr = owner.attributes["value"]
    return isinstance(attr, ir.FloatAttr) and ir.FloatAttr(attr).value == 0.0 and not str(attr).startswith("-")


def erase_fill(fill) -> None:
    """Erase a fill a library call replaces, and its constant once nothing else uses it."""
    zero = fill.operands[0].owner
    fill.operation.erase()
    if not isinstance(zero, ir.Block) and zero.name == "arith.constant" and not list(zero.results[0].uses):
        zero.erase()


def _zero_fill_before(op, dest) -> object | None:
    """The linalg.fill of 0 into exactly `dest` right before `op` (BLAS's beta = 0 replaces it)."""
    block = op.operation.block
    prev = None
    for o in block.operations:
        if o.operation == op.operation:
            break
        prev = o
    if prev is None or prev.operation.name != "linalg.fill" or prev.operands[1] != dest:
        return None
    return prev if is_zero_fill(prev) else None


def _transposed_view(v: ir.Value) -> ir.Value:
    """`v` itself, or, when `v` is a local buffer whose only writer is a linalg.transpose of
    the last two dims (lamina-fuse put F.linear's W^T into the matmul's kernel), a
    memref.transpose view of the transpose's source: BLAS reads it with 'T', no copy."""
    from mlir.dialects import memref

    owner = v.owner if isinstance(v, ir.OpResult) else None
    if owner is None or owner.name not in ("memref.alloc", "memref.alloca"):
        return v
    writers = [u.owner for u in v.uses if u.owner.name == "linalg.transpose"]
    others = [u.owner for u in v.uses if u.owner.name not in ("linalg.transpose", "memref.dealloc")]
    if len(writers) != 1 or len(others) != 1:
        return v
    tr = writers[0]
    perm = list(ir.DenseI64ArrayAttr(tr.attributes["permutation"]))
    rank = len(perm)
    if tr.operands[1] != v or rank < 2 or perm != list(range(rank - 2)) + [rank - 1, rank - 2]:
        return v
    src = tr.operands[0]
    with ir.InsertionPoint(tr), tr.location:
        view = memref.TransposeOp(_transposed_type(ir.MemRefType(src.type), perm), src,
                                  ir.AffineMapAttr.get(ir.AffineMap.get_permutation(perm))).result
    tr.erase()
    for u in [u.owner for u in v.uses if u.owner.name == "memref.dealloc"]:
        u.erase()
    others[0].operands[[i for i, o in enumerate(others[0].operands) if o == v][0]] = view
    owner.erase()
    return view


def _transposed_type(t: ir.MemRefType, perm: list[int]) -> ir.MemRefType:
    strides, offset = t.get_strides_and_offset()
    shape = [t.shape[p] for p in perm]
    layout = ir.StridedLayoutAttr.get(offset, [strides[p] for p in perm])
    return ir.MemRefType.get(shape, t.element_type, layout=layout, memory_space=t.memory_space)


def _dynamic_type(t: ir.MemRefType) -> ir.MemRefType:
    rank = t.rank
    dyn = ir.ShapedType.get_dynamic_size()
    layout = ir.StridedLayoutAttr.get(ir.ShapedType.get_dynamic_stride_or_offset(),
                                      [ir.ShapedType.get_dynamic_stride_or_offset()] * rank)
    return ir.MemRefType.get([dyn] * rank, t.element_type, layout=layout, memory_space=t.memory_space)


def contractions_to_blas(module: ir.Module) -> int:
    """Replace every memref linalg.matmul / batch_matmul marked library by a helper call;
    returns the count."""
    from mlir.dialects import arith, func, memref

    ops = []

    def collect(o):
        if o.name in ("linalg.matmul", "linalg.batch_matmul") and is_library(o):
            ops.append(o)
        return ir.WalkResult.ADVANCE

    module.operation.walk(collect)
    if not ops:
        return 0
    for op in ops:
        a, b, c = op.operands[0], op.operands[1], op.operands[2]
        if not _default_maps(op):
            raise ValueError(f"lamina-contraction-to-blas: {op.name} with indexing_maps {op.attributes['indexing_maps']} "
                             "is marked library, but BLAS runs only the plain product")
        if not all(isinstance(v.type, ir.MemRefType) for v in (a, b, c)):
            raise ValueError(f"lamina-contraction-to-blas: {op.name} on tensors: run it after bufferization")
        elem = str(ir.MemRefType(c.type).element_type)
        _add_helpers(module, elem)
        a, b = _transposed_view(a), _transposed_view(b)
        fill = _zero_fill_before(op, c)
        with ir.InsertionPoint(op), op.location:
            ft = ir.F32Type.get() if elem == "f32" else ir.F64Type.get()
            beta = arith.ConstantOp(ft, 0.0 if fill is not None else 1.0).result
            args = [memref.CastOp(_dynamic_type(ir.MemRefType(v.type)), v).result for v in (a, b, c)]
            callee = "lamina_batch_gemm_" + elem if op.name == "linalg.batch_matmul" else "lamina_gemm_" + elem
            func.CallOp([], ir.FlatSymbolRefAttr.get(callee), args + [beta])
        if fill is not None:
            erase_fill(fill)
        op.erase()
    return len(ops)


@register_pass("lamina-contraction-to-blas", level="L5",
               description="after bufferization: matmuls marked lamina.contraction = \"library\" -> calls of the "
                           "host BLAS (sgemm_/dgemm_) through the strided-view helpers of passes/blas-gemm.mlir")
def contraction_to_blas_pass(module: ir.Module, **options) -> None:
    contractions_to_blas(module)
