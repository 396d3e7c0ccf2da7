"""Convolutions on the host's convolution library (CPU): the choice (L4, on tensors) and
lamina-convolution-to-library (L5, on memrefs).

lamina-to-linalg gives every convolution one `linalg.generic` marked `lamina.conv` (see
lowering/convolution.py): a correct loop nest that lamina-tile-cpu parallelizes over output
rows, but no match for a direct convolution kernel with blocked layouts and JIT-generated
micro-kernels, which is what torch's own CPU convolution runs (oneDNN): on the project's
2-core AVX2 machine a 3x3 ResNet convolution is 10.5 ms in oneDNN, 14-17 ms as 9 shifted
sgemm_ calls or im2col + sgemm_, and far slower as loops. So, like Inductor (whose CPU
convolutions are extern calls of aten.convolution) and like lamina's own library matmuls
(codegen/blas.py), a convolution can be `lamina.contraction = "library"`: tiling leaves it
alone (its epilogue, bias/BN/activation, is vectorized as a pointwise kernel), and after
bufferization this pass replaces it with a call of `lamina_conv_<in>_<acc>`, which the JIT
resolves to `library_convolution` below: torch's convolution (oneDNN) on views of the
kernel's buffers, written into the kernel's output buffer. The graph still runs as one
native call; the convolution takes the GIL for the time of torch's dispatch (~10 us).

The choice is an attribute a user can set first (`lamina.contraction = "tiled"` keeps the
loop nest); otherwise LAMINA_CONVOLUTION=tiled|library|auto (default auto: library for
f32/f64/f16/bf16 convolutions of at least LIBRARY_MIN_FLOPS, a symbolic size counted as
fusion.SYMBOLIC_SIZE_ESTIMATE). f16/bf16 convolutions accumulate in f32 in the loop nest; the
library computes them in their own type (as eager does: one rounding) and widens the result
into the f32 accumulator, which lamina-to-linalg rounds back exactly.
"""
from __future__ import annotations

import ctypes
import os
import threading

from mlir import ir

from ..lowering.conv_channels_last import is_channels_last
from ..transforms.fusion import contraction_flops
from ..transforms.registry import register_pass
from .blas import CONTRACTION, _zero_fill_before, erase_fill, is_library, is_zero_fill

CONV_ATTR = "lamina.conv"
# The library call costs ~20-30 us (torch's dispatch through the callback); the loop nest runs
# at a few GFLOP/s (a 1x32x28x28 3x3 convolution: 3.7 ms against 0.3 ms in the library), so
# the library pays from about 1e5 flops.
LIBRARY_MIN_FLOPS = 100_000
_LIBRARY_TYPES = {("f32", "f32"), ("f64", "f64"), ("bf16", "f32"), ("f16", "f32")}
SYMBOL_PREFIX = "lamina_conv_"
# r, stride x3, dilation x3, padding x3, groups, accumulate, channels_last
_PARAMS = 13


def is_convolution(op) -> bool:
    return op.operation.name == "linalg.generic" and CONV_ATTR in op.attributes


def _mode() -> str:
    mode = os.environ.get("LAMINA_CONVOLUTION", "auto").strip().lower() or "auto"
    if mode not in ("auto", "tiled", "library"):
        raise ValueError(f"LAMINA_CONVOLUTION={mode!r}: expected tiled, library or auto")
    return mode


def _types(op) -> tuple[str, str, str]:
    x, w, out = (str(ir.ShapedType(v.type).element_type) for v in list(op.operands)[:3])
    return x, w, out


def library_representable(op) -> bool:
    x, w, out = _types(op)
    return x == w and (x, out) in _LIBRARY_TYPES and _library_available()


def choose_convolution(op) -> str:
    mode = _mode()
    if mode == "tiled" or not library_representable(op):
        return "tiled"
    if mode == "library":
        return "library"
    return "library" if (contraction_flops(op) or 0) >= LIBRARY_MIN_FLOPS else "tiled"


def mark_convolutions(func_op) -> list:
    """Record the choice on every convolution of a kernel (a user's attribute wins)."""
    library = []
    for op in func_op.regions[0].blocks[0].operations:
        if not is_convolution(op):
            continue
        if CONTRACTION in op.attributes:
            choice = ir.StringAttr(op.attributes[CONTRACTION]).value
            if choice not in ("library", "tiled"):
                raise ValueError(f"{CONTRACTION} = {choice!r}: expected \"library\" or \"tiled\"")
            if choice == "library" and not library_representable(op):
                raise ValueError(f"{CONTRACTION} = \"library\" on a convolution of {_types(op)} the library "
                                 "cannot run (f32, f64, or f16/bf16 accumulating in f32)")
        else:
            choice = choose_convolution(op)
            op.attributes[CONTRACTION] = ir.StringAttr.get(choice)
        if choice == "library":
            library.append(op)
    return library


# ---- lamina-convolution-to-library (memrefs) -----------------------------------------------------

def _symbol(x_elem: str, acc_elem: str) -> str:
    return f"{SYMBOL_PREFIX}{x_elem}_{acc_elem}"


def _declare(module: ir.Module, name: str, x_elem: ir.Type, acc_elem: ir.Type) -> None:
    from mlir.dialects import func

    for op in module.body.operations:
        if "sym_name" in op.attributes and ir.StringAttr(op.attributes["sym_name"]).value == name:
            return
    i64 = ir.IntegerType.get_signless(64)
    unranked = [ir.UnrankedMemRefType.get(t, None) for t in (x_elem, x_elem, acc_elem)]
    with ir.InsertionPoint(module.body), ir.Location.unknown():
        f = func.FuncOp(name, ir.FunctionType.get(unranked + [i64] * _PARAMS, []), visibility="private")
        f.attributes["llvm.emit_c_interface"] = ir.UnitAttr.get()


def _static_offsets(subview) -> list[int] | None:
    offsets = list(ir.DenseI64ArrayAttr(subview.attributes["static_offsets"]))
    return None if any(o == ir.ShapedType.get_dynamic_stride_or_offset() for o in offsets) else offsets


def _unpadded(x: ir.Value, conv, r: int, channels_last: bool) -> tuple[ir.Value, list[int], tuple | None]:
    """Fold lowering/convolution.py's zero padding into the library call, as BLAS folds a
    transpose into 'T': when `x` (or its grouped expand_shape) is a local buffer that is
    only filled with 0, gets the input copied into its interior, and is read by `conv`,
    return the input itself, the padding (symmetric, static) and the padded buffer, whose
    fill and copy are erased (the buffer goes once `conv` is: _erase_unused_buffers).
    Otherwise `x`, no padding and no buffer."""
    expand = x.owner if isinstance(x, ir.OpResult) and x.owner.name == "memref.expand_shape" else None
    buf = expand.operands[0] if expand is not None else x
    alloc = buf.owner if isinstance(buf, ir.OpResult) else None
    if alloc is None or alloc.name not in ("memref.alloc", "memref.alloca"):
        return x, [], None
    fills, copies, others = [], [], []
    for use in buf.uses:
        user = use.owner
        if user.name == "linalg.fill" and user.operands[1] == buf:
            fills.append(user)
        elif user.name == "memref.subview" and len(list(user.results[0].uses)) == 1 \
                and list(user.results[0].uses)[0].owner.name == "memref.copy" \
                and list(user.results[0].uses)[0].owner.operands[1] == user.results[0]:
            copies.append(user)
        elif user.name != "memref.dealloc" and user != (expand if expand is not None else conv):
            others.append(user)
    if len(fills) != 1 or len(copies) != 1 or others or not is_zero_fill(fills[0]):
        return x, [], None
    subview = copies[0]
    copy = list(subview.results[0].uses)[0].owner
    src = copy.operands[0]
    offsets = _static_offsets(subview)
    src_t, buf_t = ir.MemRefType(src.type), ir.MemRefType(buf.type)
    first = 1 if channels_last else 2   # the first spatial dim: [N, *S, C] or [N, C, *S]
    spatial = set(range(first, first + r))
    if offsets is None or any(o != 0 for i, o in enumerate(offsets) if i not in spatial) \
            or any(buf_t.is_dynamic_dim(i) or src_t.is_dynamic_dim(i) for i in spatial):
        return x, [], None
    lo = offsets[first:first + r]
    hi = [buf_t.shape[first + i] - lo[i] - src_t.shape[first + i] for i in range(r)]
    if lo != hi:
        return x, [], None   # the library pads symmetrically
    copy.operation.erase()
    subview.operation.erase()
    erase_fill(fills[0])
    # the padded buffer is unused once the call reads the source (kept where a grouped
    # expand_shape of it remains)
    return src, lo, ((alloc, buf) if expand is None else None)


def _erase_unused_buffers(buffers) -> None:
    """Erase local buffers (and their deallocs) nothing reads any more."""
    for alloc, buf in buffers:
        users = [u.owner for u in buf.uses]
        if all(u.name == "memref.dealloc" for u in users):
            for u in users:
                u.erase()
            alloc.erase()


def convolutions_to_library(module: ir.Module) -> int:
    """Replace every memref convolution generic marked library by a call; returns the count."""
    from mlir.dialects import arith, func, memref

    found = []

    def collect(o):
        if o.name == "linalg.generic" and CONV_ATTR in o.attributes and is_library(o):
            found.append(o)
        return ir.WalkResult.ADVANCE

    module.operation.walk(collect)
    i64 = ir.IntegerType.get_signless(64)
    dead = []   # padded buffers folded into calls
    for op in found:
        x, w, out = list(op.operands)[:3]
        if not all(isinstance(v.type, ir.MemRefType) for v in (x, w, out)):
            raise ValueError("lamina-convolution-to-library: a convolution on tensors: run it after bufferization")
        conv = ir.DictAttr(op.attributes[CONV_ATTR])
        stride = list(ir.DenseI64ArrayAttr(conv["stride"]))
        dilation = list(ir.DenseI64ArrayAttr(conv["dilation"]))
        groups = ir.IntegerAttr(conv["groups"]).value
        r = len(stride)
        x_elem, acc_elem = ir.MemRefType(x.type).element_type, ir.MemRefType(out.type).element_type
        name = _symbol(str(x_elem), str(acc_elem))
        _declare(module, name, x_elem, acc_elem)
        fill = _zero_fill_before(op, out)
        channels_last = is_channels_last(op)
        x, padding, padded = _unpadded(x, op, r, channels_last)
        if padded is not None:
            dead.append(padded)
        with ir.InsertionPoint(op), op.location:
            args = [memref.CastOp(ir.UnrankedMemRefType.get(ir.MemRefType(v.type).element_type, None), v).result
                    for v in (x, w, out)]
            params = ([r] + (stride + [1] * 3)[:3] + (dilation + [1] * 3)[:3] + (padding + [0] * 3)[:3]
                      + [groups, 0 if fill is not None else 1, int(channels_last)])
            consts = {p: arith.ConstantOp(i64, p).result for p in dict.fromkeys(params)}
            args += [consts[p] for p in params]
            func.CallOp([], ir.FlatSymbolRefAttr.get(name), args)
        if fill is not None:
            erase_fill(fill)
        op.erase()
    _erase_unused_buffers(dead)
    return len(found)


@register_pass("lamina-convolution-to-library", level="L5",
               description="after bufferization: convolutions marked lamina.contraction = \"library\" -> calls of "
                           "the host's convolution (torch's, oneDNN) on the kernel's buffers")
def convolution_to_library_pass(module: ir.Module, **options) -> None:
    convolutions_to_library(module)


# ---- the runtime side: the function the JIT resolves ----------------------------------------------

class _Unranked(ctypes.Structure):
    _fields_ = [("rank", ctypes.c_int64), ("descriptor", ctypes.c_void_p)]


_TORCH_DTYPES = {"f32": "float32", "f64": "float64", "bf16": "bfloat16", "f16": "float16", "i32": "int32",
                 "i64": "int64"}
_ELEM_BYTES = {"f32": 4, "f64": 8, "bf16": 2, "f16": 2, "i32": 4, "i64": 8}


def _library_available() -> bool:
    import importlib.util

    return importlib.util.find_spec("torch") is not None


# Views made by _tensor, by (element type, address, offset, sizes, strides): a graph's calls
# see the same buffers again (its arena, cached temporaries, often its inputs), and making a
# view costs ~20 us (a third of a small convolution call's Python). An entry whose memory
# was freed is harmless: it is only returned for a buffer at that address, of that shape,
# live now.
_views: dict = {}
_MAX_VIEWS = 256


def _tensor(arg, elem: str):
    """A torch tensor viewing the buffer of an unranked memref argument (no copy)."""
    u = ctypes.cast(arg, ctypes.POINTER(_Unranked)).contents
    key = (elem, *(ctypes.c_int64 * (3 + 2 * u.rank)).from_address(u.descriptor)[1:])
    view = _views.get(key)
    if view is None:
        view = _new_view(key, u.rank)
        if len(_views) >= _MAX_VIEWS:
            _views.clear()
        _views[key] = view
    return view


def _new_view(key, rank: int):
    import torch

    elem, aligned, offset = key[:3]
    sizes, strides = list(key[3:3 + rank]), list(key[3 + rank:3 + 2 * rank])
    dtype = getattr(torch, _TORCH_DTYPES[elem])
    if 0 in sizes:
        return torch.empty(sizes, dtype=dtype, device="cpu")
    extent = 1 + sum((s - 1) * st for s, st in zip(sizes, strides))
    nbytes = extent * _ELEM_BYTES[elem]
    buf = (ctypes.c_char * nbytes).from_address(aligned + offset * _ELEM_BYTES[elem])
    return torch.frombuffer(buf, dtype=dtype, count=extent).as_strided(sizes, strides)


# Prepared calls, by the identities of their (cached) views and the parameters; each entry
# holds its views, so an id in a key stays theirs.
_calls: dict = {}


def _convolve(x_elem: str, acc_elem: str, x_arg, w_arg, out_arg, *params) -> None:
    x = _tensor(x_arg, x_elem)         # [N, C, *S] (zero-padded, or padded here by p), or [N, G, Cg, *S]
    w = _tensor(w_arg, x_elem)         # [F, Cg, *K], or [G, Fg, Cg, *K]
    out = _tensor(out_arg, acc_elem)   # [N, F, *O], or [N, G, Fg, *O]
    key = (id(x), id(w), id(out), params)
    entry = _calls.get(key)
    if entry is None:
        entry = (x, w, out, _prepare(x, w, out, *params))
        if len(_calls) >= _MAX_VIEWS:
            _calls.clear()
        _calls[key] = entry
    entry[3]()


def _prepare(x, w, out, r, s0, s1, s2, d0, d1, d2, p0, p1, p2, groups, accumulate, channels_last):
    """The call that runs one convolution on these views (the layout work done once)."""
    import torch

    if channels_last:   # [N, *S, C] or [N, *S, G, Cg]; [N, *O, F] or [N, *O, G, Fg] (conv_channels_last.py)
        x, out = (_channels_first_view(v, r) for v in (x, out))
    if out.numel() == 0:
        return lambda: None
    if w.dim() == r + 3:   # grouped operands: the library takes [N, C, *S] and [F, Cg, *K]
        x = x.flatten(1, 2) if x.dim() == r + 3 else x
        w = w.flatten(0, 1)
    if w.shape[1] == 0 or 0 in w.shape[2:]:
        return (lambda: None) if accumulate else out.zero_   # no taps: the sum is 0
    stride, dilation, padding = [s0, s1, s2][:r], [d0, d1, d2][:r], [p0, p1, p2][:r]
    flat_out = out.flatten(1, 2) if out.dim() == r + 3 else out   # [N, F, *O] (a view)
    if _sums_in_place(x, flat_out):
        # oneDNN adds the convolution into the kernel's channels-last buffer itself (its sum
        # post-op): no temporary. `.out` below computes into one and copies it (3x3,
        # 8x64x56x56: 12.4 ms against 9.1 with the zero fill)
        binary = torch.ops.mkldnn._convolution_pointwise_.binary

        def summed():
            if not accumulate:
                flat_out.zero_()
            binary(flat_out, x, w, None, padding, stride, dilation, groups, "add", None, None, [], None)
        return summed
    if not accumulate and _writes_in_place(x, flat_out):
        return lambda: torch.ops.aten.mkldnn_convolution.out(x, w, None, padding, stride, dilation, groups,
                                                             out=flat_out)

    def copied():
        result = torch.ops.aten.convolution(x, w, None, stride, padding, dilation, False, [0] * r, groups)
        result = result.reshape(out.shape)
        if accumulate:
            out.add_(result)
        else:
            out.copy_(result)
    return copied


def _channels_first_view(v, r: int):
    """[N, *S, ch...] (ch: C, or G and Cg) seen as [N, ch..., *S] (a channels-last tensor)."""
    nch = v.dim() - 1 - r
    return v.permute(0, *range(1 + r, 1 + r + nch), *range(1, 1 + r))


def _sums_in_place(x, out) -> bool:
    """f32 2-d convolutions on channels-last operands: oneDNN's convolution with a sum
    post-op into `out` (torch.ops.mkldnn._convolution_pointwise_.binary)."""
    import torch

    return (x.dtype == out.dtype == torch.float32 and out.dim() == 4 and torch.backends.mkldnn.is_available()
            and hasattr(torch.ops.mkldnn, "_convolution_pointwise_")
            and out.is_contiguous(memory_format=torch.channels_last)
            and x.is_contiguous(memory_format=torch.channels_last))


def _writes_in_place(x, out) -> bool:
    """Whether `mkldnn_convolution.out` takes `out` (it computes into a temporary and copies
    that into `out`)."""
    import torch

    if not (torch.backends.mkldnn.is_available() and x.dtype == out.dtype and x.dtype in (torch.float32, torch.bfloat16)):
        return False
    if out.is_contiguous():
        return True
    if out.dim() not in (4, 5):
        return False
    layout = torch.channels_last if out.dim() == 4 else torch.channels_last_3d
    return out.is_contiguous(memory_format=layout) and x.is_contiguous(memory_format=layout)


_CALLBACK = ctypes.CFUNCTYPE(None, *([ctypes.c_void_p] * 3 + [ctypes.c_int64] * _PARAMS))
_callbacks: dict[str, object] = {}


def _callback(x_elem: str, acc_elem: str):
    name = _symbol(x_elem, acc_elem)
    cb = _callbacks.get(name)
    if cb is None:
        def run(x, w, out, *params):
            try:
                _convolve(x_elem, acc_elem, x, w, out, *params)
            except BaseException as e:   # an exception must not unwind through native frames
                _pending.error = e
        cb = _callbacks[name] = _CALLBACK(run)
    return cb


_pending = threading.local()   # an exception of this thread's last library call, raised after the native call


def declared_library_functions(module: ir.Module) -> list[str]:
    """The functions a lowered (LLVM dialect) module calls back into Python for: library
    convolutions (`lamina_conv_*`) and library calls (`lamina_library_*`, library_calls.py)."""
    from .library_calls import is_library_call

    prefix = "_mlir_ciface_"
    names = []
    for op in module.body.operations:
        if op.operation.name == "llvm.func":
            sym = ir.StringAttr(op.attributes["sym_name"]).value
            if sym.startswith(prefix + SYMBOL_PREFIX) or is_library_call(sym[len(prefix):]):
                names.append(sym[len(prefix):])
    return names


def _function_for(name: str):
    from .library_calls import callback, is_library_call

    if is_library_call(name):
        return callback(name)
    from .native_convolution import native_convolution

    python = _callback(*name[len(SYMBOL_PREFIX):].split("_"))
    return native_convolution(name, python) or python   # Python's only where the glue cannot run it


def register_library_runtime(engine, names) -> None:
    """Make the functions of declared_library_functions resolvable by `engine` (before any
    lookup: the JIT links lazily)."""
    for name in names:
        engine.register_runtime(name, _function_for(name))


def callback_address(name: str) -> int:
    """The address of the function a `lamina_conv_*` or `lamina_library_*` call runs (a
    loaded shared object's callback slot is set to it: codegen/shared_object.py)."""
    return ctypes.cast(_function_for(name), ctypes.c_void_p).value


def raise_pending_error() -> None:
    """Re-raise, after the native call, an exception a library convolution of this thread
    raised inside it (the results are then not to be used)."""
    e = getattr(_pending, "error", None)
    if e is not None:
        _pending.error = None
        if getattr(_pending, "as_is", False):
            _pending.as_is = False
            raise e   # a library routine's error about the user's inputs (a singular matrix): eager's own
        raise RuntimeError(f"lamina: a library convolution failed: {type(e).__name__}: {e}") from e

