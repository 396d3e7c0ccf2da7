"""lamina-fuse (L2): decide which lamina ops run together in one kernel.

The decision is recorded, not hidden: every lamina op of a graph function gets
`lamina.kernel = N : i64`, and lamina-outline-kernels turns each N into a function.
Ops that already carry `lamina.kernel` keep it (a user can edit the IR to override the
heuristic and replay the rest of the pipeline); unlabelled ops then join the kernel of
the op before them.

Heuristic (v1, deliberately simple and always legal): walk the ops in program order
and cut a new kernel
  * at every contraction (matmul, convolution), so each anchors a kernel with its epilogue;
  * at a reduction or a data-movement op (a transpose, a copy) when the current kernel
    already holds a contraction, so matmul epilogues stay pointwise, reductions (softmax,
    norms) get kernels of their own, and a transpose gets the vectorized transpose schedule
    (inside a contraction kernel it would stay a scalar loop); a reshape or broadcast of
    values no contraction feeds (batch norm's parameters as [1, C, 1, 1]) does not cut,
    so a convolution's batch-norm epilogue stays in its kernel;
  * except that a transpose whose only user is the next op, a contraction of at least
    LARGE_CONTRACTION_FLOPS, starts that contraction's kernel: a target reads it as a
    strided view (the CPU's BLAS call takes F.linear's W^T as W with 'T'), so no transpose
    kernel runs per call.
With `attention=1` (a target that compiles attention chains as one kernel: the cuda
target's flash-attention programs) a chain matmul -> pointwise/reshape ops -> softmax(last
dim) -> reshape -> matmul, each link used once, is one kernel from the first matmul to the
second (ops in between that feed it join it), of kind "attention": the scores and the
probabilities then never reach memory. Without it (the CPU target) the chain is three kernels.
Kernels are contiguous runs of a topologically ordered block, so the kernel graph is
acyclic by construction. Constants are not grouped (outlining clones them into every
kernel that uses them) unless the graph returns one directly.
"""
from __future__ import annotations

import math

from mlir import ir

from ..dialect import infer
from .common import defining_lamina, defining_op
from .registry import register_pass

KERNEL_ATTR = "lamina.kernel"
KIND_ATTR = "lamina.kernel_kind"

CONTRACTION_OPS = {"matmul", "convolution"}
REDUCTION_OPS = set(infer.REDUCE_OPS) | {"softmax", "log_softmax"}
DATA_MOVEMENT_OPS = {"reshape", "transpose", "slice", "concat", "index_select", "broadcast_to"}
# A scatter is a sequential loop (lowering/indirect.py), an argsort a loop of network steps
# (lowering/sorting.py): each a kernel of its own, nothing fused in.
SCATTER_OPS = {"scatter"}
SORT_OPS = {"argsort"}
# A library call (dialect/library_callees.py) runs a routine on whole buffers: a kernel of its own.
LIBRARY_OPS = set(infer.LIBRARY_CALL_OPS)
# ... except that the pointwise ops after a library convolution (a strided transposed one:
# importer/convolution.py) join its kernel as a contraction's epilogue: the cuda target reads
# its channels-last result once, in the tiled program that writes the epilogue's output
# (else a copy of it to NCHW, then the epilogue's pass over that).
EPILOGUE_LIBRARY_CALLEES = ("aten.convolution.default",)
# Contractions from this size (2*M*N*K per call, batches included) run as one library call
# on the CPU (codegen/blas.py) rather than a tiled kernel; their transposed operands join
# their kernel as views.
LARGE_CONTRACTION_FLOPS = 2 * 128 * 128 * 64


def op_kind(op_name: str) -> str:
    """'contraction' | 'reduction' | 'scatter' | 'sort' | 'library' | 'data_movement' | 'pointwise'
    for a lamina op name."""
    name = op_name.removeprefix("lamina.")
    if name in LIBRARY_OPS:
        return "library"
    if name in CONTRACTION_OPS:
        return "contraction"
    if name in SCATTER_OPS:
        return "scatter"
    if name in SORT_OPS:
        return "sort"
    if name in REDUCTION_OPS:
        return "reduction"
    if name in DATA_MOVEMENT_OPS:
        return "data_movement"
    return "pointwise"


def _takes_epilogue(op: ir.Operation) -> bool:
    """A library call whose pointwise consumers fuse with it (EPILOGUE_LIBRARY_CALLEES)."""
    return op_kind(op.name) == "library" and "callee" in op.attributes \
        and ir.StringAttr(op.attributes["callee"]).value in EPILOGUE_LIBRARY_CALLEES


def kernel_kind(op_names) -> str:
    """A kernel's kind: its heaviest op's kind ("attention": two contractions around a softmax)."""
    op_names = list(op_names)
    if sum(op_kind(n) == "contraction" for n in op_names) == 2 and "lamina.softmax" in op_names:
        return "attention"
    kinds = {op_kind(n) for n in op_names if n != "lamina.constant"}
    for kind in ("library", "scatter", "sort", "contraction", "reduction", "pointwise", "data_movement"):
        if kind in kinds:
            return kind
    return "data_movement"  # only constants


def graph_functions(module: ir.Module):
    """The func.func ops to fuse: those with `lamina.graph`, else every func without `lamina.kernel`."""
    funcs = [op for op in module.body.operations if op.operation.name == "func.func"]
    graphs = [f for f in funcs if "lamina.graph" in f.attributes]
    return graphs or [f for f in funcs if KERNEL_ATTR not in f.attributes]


def lamina_ops(func_op) -> list[ir.Operation]:
    return [op.operation for op in func_op.regions[0].blocks[0].operations if op.operation.name.startswith("lamina.")]


def _returned_directly(op: ir.Operation) -> bool:
    return any(not use.owner.name.startswith("lamina.") for r in op.results for use in r.uses)


def _kernel_id(op: ir.Operation) -> int | None:
    if KERNEL_ATTR in op.attributes:
        return int(ir.IntegerAttr(op.attributes[KERNEL_ATTR]).value)
    return None


def _set_kernel(op: ir.Operation, kernel: int) -> None:
    op.attributes[KERNEL_ATTR] = ir.IntegerAttr.get(ir.IntegerType.get_signless(64), kernel)


def _is_convolution(op: ir.Operation) -> bool:
    return op.name == "lamina.convolution" or _takes_epilogue(op)


def _reduces_along_layout(op: ir.Operation) -> bool:
    """A reduction of a rank-4/5 ([N, C, *spatial]) value over all its spatial dims (a
    global mean, instance norm's statistics; static sizes) or over its channels alone (a
    softmax or a min over them): read from a channels-last convolution result, its rows or
    its lanes run along the contiguous channels (not so training batch norm's statistics, a
    few long rows per channel, nor a layer norm over W alone). Long spatial rows that are
    few split across programs (the cuda emitter's column split; kernel times on an H200,
    fp32, fused against a kernel of its own reading the NCHW copy: Conv2d + GELU + global
    mean 0.258 -> 0.218 ms, ConvTranspose2d + multiply + global mean 0.187 -> 0.155;
    benchmarks/gpu_column_reductions.py). Symbolic sizes stay unfused: column programs that
    loop over few long rows read at 0.75-1.6 TB/s."""
    if op_kind(op.name) != "reduction" or not op.operands:
        return False
    t = op.operands[0].type
    if not isinstance(t, ir.RankedTensorType) or t.rank not in (4, 5):
        return False
    if "dims" in op.attributes:
        dims = {d % t.rank for d in ir.DenseI64ArrayAttr(op.attributes["dims"])}
    elif "dim" in op.attributes:
        dims = {ir.IntegerAttr(op.attributes["dim"]).value % t.rank}
    else:
        return False
    dims = {d for d in dims if t.is_dynamic_dim(d) or t.get_dim_size(d) != 1}
    spatial = {d for d in range(2, t.rank) if t.is_dynamic_dim(d) or t.get_dim_size(d) != 1}
    if not dims or dims == {1}:   # (no dims left: a reduction over unit dims)
        return True
    return dims == spatial and t.has_static_shape


def _regroups_batch_channels(op: ir.Operation) -> bool:
    """A reshape between rank-4/5 shapes that only regroups the two leading dims ([N, C, *S]
    <-> [1, N * C, *S]: instance norm as a batch norm, and its statistics back): the
    spatial dims, and so the channels-last order, stay."""
    if op.name != "lamina.reshape":
        return False
    src, dst = (ir.RankedTensorType(v.type) for v in (op.operands[0], op.results[0]))
    return src.rank == dst.rank and src.rank in (4, 5) and src.has_static_shape and dst.has_static_shape \
        and list(src.shape)[2:] == list(dst.shape)[2:]


def fuse_function(func_op, attention: bool = False, reshape_epilogues: bool = False,
                  convolution_reductions: bool = False) -> int:
    """Label the lamina ops of one function; returns the number of kernels.
    `convolution_reductions` (the cuda target): a reduction after a convolution that
    _reduces_along_layout, and reshapes that _regroups_batch_channels, stay in the
    convolution's kernel, which reads the convolution's channels-last result once (else its
    epilogue writes it NCHW for a reduction kernel)."""
    ops = lamina_ops(func_op)
    groupable = [op for op in ops if op.name != "lamina.constant" or _returned_directly(op)]
    if any(_kernel_id(op) is not None for op in ops):
        return _complete_user_labels(groupable)
    inside = _attention_spans(groupable) if attention else set()
    after_contraction = _depend_on_contractions(groupable)
    kernel, has_contraction, started, after_scatter = 0, False, False, False
    has_convolution = False
    prologues = _operand_views(groupable) if reshape_epilogues else {}
    in_prologue = {j for start, end in prologues.items() for j in range(start + 1, end + 1)}
    ends_kernel: list = []   # reshaped results that end the current contraction kernel
    for i, op in enumerate(groupable):
        kind = "contraction" if _takes_epilogue(op) else op_kind(op.name)
        cut = kind in ("contraction", "scatter", "sort", "library") or after_scatter or (
            kind in ("reduction", "data_movement") and has_contraction and not _side_reshape(op, after_contraction))
        if convolution_reductions and has_convolution and cut \
                and (_reduces_along_layout(op) or _regroups_batch_channels(op)):
            cut = False
        after_scatter = kind in ("scatter", "sort", "library")
        if reshape_epilogues and has_contraction and _trailing_reshape(op, kernel):
            cut = False   # the kernel stores its result through this reshape (a view)
            ends_kernel.append(op.results[0])
        elif any(x == r for x in op.operands for r in ends_kernel):
            cut = True
        if kind == "contraction" and i > 0 and _folds_into_next(groupable[i - 1], op):
            cut = False  # its transposed operand opened this kernel
        elif i + 1 < len(groupable) and _folds_into_next(op, groupable[i + 1]):
            cut = True
        if i in prologues:
            cut = True    # the views of the next contraction's operands open its kernel
        elif i in in_prologue:
            cut = False
        if i in inside:
            cut = False  # the rest of an attention chain
        if started and cut:
            kernel += 1
            has_contraction = has_convolution = False
            ends_kernel = []
        started = True
        has_contraction |= kind == "contraction"
        has_convolution |= _is_convolution(op)
        _set_kernel(op, kernel)
    return kernel + 1 if started else 0


def _operation(owner):
    return getattr(owner, "operation", owner)


def _operand_views(ops: list[ir.Operation]) -> dict[int, int]:
    """{start: position of a contraction} where ops[start:position] are reshapes of values
    from before them (`x.view(b*t, c)` of a graph input or another kernel's result) and
    transposes that _folds_into_next would fold, all feeding nothing but the contraction's
    operands: they open its kernel, where lamina-tile-cpu reads them as views of the kernel's
    arguments, instead of a kernel of their own that copies them (reshape_epilogues)."""
    views = {}
    for i, contraction in enumerate(ops):
        if op_kind(contraction.name) != "contraction":
            continue
        j = i - 1
        while j >= 0:
            op = ops[j]
            if op.name == "lamina.transpose":
                ok = _folds_into_next(op, contraction)
            elif op.name == "lamina.reshape":
                users = [_operation(u.owner) for u in op.results[0].uses]
                ok = defining_lamina(op.operands[0], "transpose") is None \
                    and bool(users) and all(u == _operation(contraction) for u in users)
            else:
                ok = False
            if not ok:
                break
            j -= 1
        if j + 1 < i:
            views[j + 1] = i
    return views


def _trailing_reshape(op, kernel: int) -> bool:
    """A static reshape that only splits or only merges dims, of a value the current kernel
    computes: the kernel can write its result through it (reshape_epilogues)."""
    if op.name != "lamina.reshape":
        return False
    x = op.operands[0]
    if defining_op(x) is None or _kernel_id(defining_op(x)) != kernel:
        return False
    src, dst = (ir.RankedTensorType(v.type) for v in (x, op.results[0]))
    if any(t.is_dynamic_dim(i) for t in (src, dst) for i in range(t.rank)):
        return False
    return _regroups(list(src.shape), list(dst.shape)) or _regroups(list(dst.shape), list(src.shape))


def _regroups(fine: list[int], coarse: list[int]) -> bool:
    """Whether every dim of `coarse` is the product of a run of consecutive dims of `fine`,
    the runs in order and covering it (a collapse_shape from `fine`; an expand_shape back)."""
    i = 0
    for d in coarse:
        size, start = 1, i
        while i < len(fine) and (i == start or size < d):
            size *= fine[i]
            i += 1
        if size != d:
            return False
    while i < len(fine) and fine[i] == 1:   # unit dims after the last run join it
        i += 1
    return i == len(fine)


# A symbolic size counts as this many in the size-based decisions (folding a transpose into
# a contraction, BLAS or tiled): a symbol is at least 2 (dynamo specializes 0 and 1), and
# the batch and sequence sizes that are symbolic in practice are usually larger. The
# decisions it drives stay attributes in the IR (lamina.kernel, lamina.contraction).
SYMBOLIC_SIZE_ESTIMATE = 128


def contraction_flops(op) -> int | None:
    """2 * batch * M * N * K of a (batch) matmul (lamina or linalg), a dynamic size counted
    as SYMBOLIC_SIZE_ESTIMATE; None for other ops."""
    shapes = [[SYMBOLIC_SIZE_ESTIMATE if d < 0 else d for d in ir.RankedTensorType(v.type).shape]
              for v in list(op.operands[:2]) + [op.results[0]] if isinstance(v.type, ir.RankedTensorType)]
    if len(shapes) != 3 or len(shapes[0]) < 2:
        return None
    if op.name == "lamina.convolution" or (op.name == "linalg.generic" and "lamina.conv" in op.attributes):
        # 2 * (every output element) * (the taps of one filter: channels per group x kernel);
        # a grouped generic's weight is [G, Fg, Cg, *K], any other [F, Cg, *K]
        grouped = op.name == "linalg.generic" and ir.IntegerAttr(ir.DictAttr(op.attributes["lamina.conv"])["groups"]).value > 1
        return 2 * math.prod(shapes[2]) * math.prod(shapes[1][2 if grouped else 1:])
    a, out = shapes[0], shapes[2]
    batch = 1
    for d in out[:-2]:
        batch *= d
    return 2 * batch * out[-2] * out[-1] * a[-1]


def _folds_into_next(op: ir.Operation, nxt: ir.Operation) -> bool:
    """A transpose used only by `nxt`, a large contraction, as an operand."""
    if op.name != "lamina.transpose" or op_kind(nxt.name) != "contraction":
        return False
    uses = list(op.results[0].uses)
    if not uses or any(u.owner != nxt for u in uses):
        return False
    flops = contraction_flops(nxt)
    return flops is not None and flops >= LARGE_CONTRACTION_FLOPS


_RESHAPES = {"lamina.reshape"}
_ELEMENTWISE_ON_PATH = {"lamina.cast"}


def _single_user(v: ir.Value):
    uses = list(v.uses)
    return uses[0].owner if len(uses) == 1 else None


def _attention_spans(ops: list[ir.Operation]) -> set[int]:
    """Positions (in `ops`) after the first matmul of each attention chain, up to and
    including its second matmul: matmul -> (pointwise | reshape)* -> softmax(last dim) ->
    (reshape | convert)* -> matmul(probabilities, V), every link's only user the next."""
    pos = {op: i for i, op in enumerate(ops)}
    after_contraction = _depend_on_contractions(ops)
    inside: set[int] = set()
    for sm in ops:
        if sm.name != "lamina.softmax":
            continue
        rank = ir.RankedTensorType(sm.operands[0].type).rank
        dim = ir.IntegerAttr(sm.attributes["dim"]).value
        if rank < 2 or dim not in (-1, rank - 1):
            continue
        # forward: the probabilities feed the second matmul as its left operand
        v, c2 = sm.results[0], None
        while True:
            user = _single_user(v)
            if user is None or user not in pos:
                break
            if user.name in _RESHAPES | _ELEMENTWISE_ON_PATH:
                v = user.results[0]
                continue
            if op_kind(user.name) == "contraction" and user.operands[0] == v and user.operands[1] != v:
                c2 = user
            break
        # backward: the scores come from the first matmul through pointwise ops and reshapes
        v, c1 = sm.operands[0], None
        while True:
            op = v.owner
            if not isinstance(op, ir.Operation):
                op = getattr(op, "operation", None)
            if op is None or op not in pos or _single_user(v) is None:
                break
            if op_kind(op.name) == "contraction":
                c1 = op
                break
            if op.name in _RESHAPES or op_kind(op.name) == "pointwise":
                on_path = [x for x in op.operands if _path_candidate(x, after_contraction)]
                if len(on_path) != 1:
                    break   # the scores must be one operand's chain (the others: masks, biases)
                v = on_path[0]
                continue
            break
        if c1 is None or c2 is None or pos[c1] >= pos[c2]:
            continue
        between = ops[pos[c1] + 1:pos[c2]]
        if any(op_kind(o.name) == "contraction" or (op_kind(o.name) == "reduction" and o != sm) for o in between):
            continue
        inside.update(range(pos[c1] + 1, pos[c2] + 1))
    return inside


def _path_candidate(x: ir.Value, after_contraction) -> bool:
    """An operand that may carry the scores: produced by a non-constant lamina op of the
    function that depends on a contraction (constants, graph inputs and scalars are the
    masks and scales)."""
    op = getattr(x.owner, "operation", x.owner)
    return isinstance(op, ir.Operation) and op in after_contraction and ir.RankedTensorType(x.type).rank > 0


def _side_reshape(op: ir.Operation, after_contraction: set) -> bool:
    """A reshape or broadcast that no contraction feeds (batch norm's per-channel parameters
    viewed as [1, C, 1, 1]): an index map in the epilogue that reads it, not data movement
    of the contraction's result, so it does not end the contraction's kernel."""
    return op.name in ("lamina.reshape", "lamina.broadcast_to") and op not in after_contraction


def _depend_on_contractions(ops: list[ir.Operation]) -> set:
    """The ops (in program order, so one pass) that are contractions or read one's result."""
    found: set = set()
    for op in ops:
        if op_kind(op.name) == "contraction" or any(getattr(x.owner, "operation", x.owner) in found
                                                     for x in op.operands):
            found.add(op)
    return found


def _complete_user_labels(ops: list[ir.Operation]) -> int:
    previous = None
    labels = set()
    for op in ops:
        k = _kernel_id(op)
        if k is None:
            k = previous if previous is not None else 0
            _set_kernel(op, k)
        labels.add(k)
        previous = k
    return len(labels)


@register_pass("lamina-fuse", level="L2",
               description="group lamina ops into kernels, recorded as `lamina.kernel = N` on each op (existing labels win); "
                           "attention=1: attention chains as one kernel; reshape_epilogues=1: reshapes of a "
                           "contraction's operands open its kernel and a reshape of its result ends it; "
                           "convolution_reductions=1: reductions along a convolution's channels-last "
                           "layout stay in its kernel")
def fuse(module: ir.Module, attention=False, reshape_epilogues=False, convolution_reductions=False, **options) -> None:
    for func_op in graph_functions(module):
        fuse_function(func_op, attention=bool(int(attention)), reshape_epilogues=bool(int(reshape_epilogues)),
                      convolution_reductions=bool(int(convolution_reductions)))
