"""lamina-sink-reshapes (L1): move a reshape of a contraction's result below the pointwise
ops that read it, so that a matmul's epilogue stays in the matmul's shape.

`F.gelu(linear(x))` on a [B, T, K] input imports as

    %m = "lamina.matmul"(%x2, %wt)  : (tensor<256x256xf32>, ...) -> tensor<256x1024xf32>
    %a = "lamina.add"(%m, %b)       : -> tensor<256x1024xf32>
    %r = "lamina.reshape"(%a)       : -> tensor<2x128x1024xf32>
    %g = "lamina.gelu"(%r)          : -> tensor<2x128x1024xf32>

lamina-fuse ends a contraction's kernel at data movement (the reshape), so the GELU ran as a
kernel of its own, one more pass over the activations (and, where such a kernel only
reshapes a graph output, a copy). This pass rewrites it to

    %g2 = "lamina.gelu"(%a)         : -> tensor<256x1024xf32>
    %g = "lamina.reshape"(%g2)      : -> tensor<2x128x1024xf32>

and the GELU joins the matmul's epilogue. A pointwise op (unary, arithmetic, where) reading
`reshape(%v)`, with %v computed from a contraction, moves when each of its other operands
is a scalar, has exactly the reshaped shape (it is reshaped the same way: a view), or
broadcasts only along trailing dims the reshape keeps (a bias [1024] above), or is itself
reshaped to the inner shape: where the reshape splits or merges whole groups of dims, an
operand that is either broadcast along a group or spans all of it (a [C] weight of a group
norm whose [N, G, C/G, H, W] result is reshaped to [N, C, H, W]: the weight viewed
[1, G, C/G, 1, 1]). The same holds for a reshape of a reduction's result (a normalization:
its epilogue then runs one row per statistic, not one per element). Static shapes only;
not an op whose result reaches a softmax (an attention score expression keeps the
softmax's shape). Iterated to a fixpoint: chains move op by op; lamina-canonicalize then folds the
reshape pairs this leaves (reshape(reshape(v)) -> v).
"""
from __future__ import annotations

from mlir import ir

from ..dialect import infer, ops
from .common import defining_lamina, defining_op, in_module_context, reject_options
from .fusion import CONTRACTION_OPS, graph_functions, lamina_ops
from .registry import register_pass

_POINTWISE = set(infer.UNARY_OPS) | set(infer.ARITH_BINARY_OPS) | {"where"}


def _static_shape(v: ir.Value) -> list[int] | None:
    if not isinstance(v.type, ir.RankedTensorType):
        return None
    t = ir.RankedTensorType(v.type)
    return None if any(t.is_dynamic_dim(i) for i in range(t.rank)) else list(t.shape)


def _common_suffix(a: list[int], b: list[int]) -> int:
    n = 0
    while n < min(len(a), len(b)) and a[len(a) - 1 - n] == b[len(b) - 1 - n]:
        n += 1
    return n


def _dim_groups(inner: list[int], outer: list[int]) -> list | None:
    """The reshape inner -> outer as pairs (inner dims, outer dims) of equal products, in
    order (size-1 dims join the group before them); None where the sizes do not pair up
    (or a size is 0)."""
    if 0 in inner or 0 in outer or not inner or not outer:
        return None
    groups, i, j = [], 0, 0
    while i < len(inner) and j < len(outer):
        gi, go, pi, po = [i], [j], inner[i], outer[j]
        i, j = i + 1, j + 1
        while pi != po:
            if pi < po and i < len(inner):
                pi, i = pi * inner[i], i + 1
                gi.append(i - 1)
            elif po < pi and j < len(outer):
                po, j = po * outer[j], j + 1
                go.append(j - 1)
            else:
                return None
        groups.append((gi, go))
    for k in range(i, len(inner)):
        if inner[k] != 1:
            return None
        groups[-1][0].append(k)
    for k in range(j, len(outer)):
        if outer[k] != 1:
            return None
        groups[-1][1].append(k)
    return groups


def _grouped_shape(shape: list[int], inner: list[int], outer: list[int]) -> list[int] | None:
    """The inner-shaped view of an operand of `shape` broadcast to `outer`: per group of the
    reshape, the operand is 1 along all of it (stays 1s) or spans all of it (takes the
    inner sizes); None otherwise."""
    groups = _dim_groups(inner, outer)
    if groups is None or len(shape) > len(outer):
        return None
    aligned = [1] * (len(outer) - len(shape)) + list(shape)
    out: list[int] = [1] * len(inner)
    for gi, go in groups:
        part = [aligned[j] for j in go]
        if all(d == 1 for d in part):
            continue
        if part != [outer[j] for j in go]:
            return None
        for k in gi:
            out[k] = inner[k]
    return out


def _passes(op) -> bool:
    """Whether a walk goes on through `op` (pointwise ops, reshapes and casts)."""
    name = op.name.removeprefix("lamina.")
    return op.name.startswith("lamina.") and (name in _POINTWISE or name in ("reshape", "cast"))


def _reaches(start, neighbours, hit, memo: dict) -> bool:
    """Whether op `start` is an op `hit` accepts or reaches one through `_passes` ops, each
    step to `neighbours(op)`; `memo` keeps every visited op's answer. An explicit stack: a
    graph's pointwise chains are thousands of ops deep."""
    stack = [start]
    while stack:
        op = stack[-1]
        if op in memo:
            stack.pop()
            continue
        found = hit(op)
        if found or not _passes(op):
            memo[op] = found
            stack.pop()
            continue
        nexts = neighbours(op)
        pending = [n for n in nexts if n not in memo]
        if pending:
            stack.extend(pending)
            continue
        memo[op] = any(memo[n] for n in nexts)
        stack.pop()
    return memo[start]


def _lamina_operands(op) -> list:
    return [o for o in (defining_op(x) for x in op.operands) if o is not None and o.name.startswith("lamina.")]


def _users(v: ir.Value) -> list:
    return [getattr(use.owner, "operation", use.owner) for use in v.uses]


def _from_contraction(v: ir.Value, memo: dict) -> bool:
    """Whether `v` is computed (through pointwise ops and reshapes) from a contraction or a
    reduction."""
    op = defining_op(v)
    if op is None or not op.name.startswith("lamina."):
        return False
    def root(o) -> bool:
        name = o.name.removeprefix("lamina.")
        return name in CONTRACTION_OPS or name in infer.REDUCE_OPS

    return _reaches(op, _lamina_operands, root, memo)


def _feeds_softmax(v: ir.Value, memo: dict) -> bool:
    """Whether `v` reaches a softmax through pointwise ops and reshapes: an attention score
    expression, which stays in the softmax's shape (the cuda target's flash-attention
    programs read its mask there: their key-block skipping; the CPU runs it in the softmax's
    kernel either way)."""
    def softmax(o) -> bool:
        return o.name in ("lamina.softmax", "lamina.log_softmax")

    return any(_reaches(u, lambda o: _users(o.results[0]), softmax, memo) for u in _users(v))


def _sink_one(op, memo: dict, softmax_memo: dict) -> bool:
    name = op.name.removeprefix("lamina.")
    if name not in _POINTWISE or len(op.results) != 1:
        return False
    out_shape = _static_shape(op.results[0])
    if out_shape is None:
        return False
    reshaped = [i for i, x in enumerate(op.operands)
                if defining_lamina(x, "reshape") is not None and _static_shape(x) == out_shape
                and _static_shape(defining_op(x).operands[0]) is not None
                and _from_contraction(defining_op(x).operands[0], memo)]
    if not reshaped or _feeds_softmax(op.results[0], softmax_memo):
        return False
    source = defining_op(op.operands[reshaped[0]]).operands[0]
    inner_shape = _static_shape(source)
    if inner_shape == out_shape:
        return False
    keep = _common_suffix(inner_shape, out_shape)
    operands = []
    for i, x in enumerate(op.operands):
        shape = _static_shape(x)
        if i in reshaped:
            inner = defining_op(x).operands[0]
            if _static_shape(inner) != inner_shape:
                return False
            operands.append(inner)
        elif shape is None:
            return False
        elif shape == out_shape:
            if _from_contraction(x, memo):
                # it would read reshape(x) of a computed value after moving: the op could
                # move back (ping-pong), and nothing is gained
                return False
            operands.append(None)   # reshaped below, once the op is known to move
        elif len(shape) <= keep or all(d == 1 for d in shape[:len(shape) - keep]):
            operands.append(x)      # a scalar, or broadcast along the kept trailing dims only
        elif (grouped := _grouped_shape(shape, inner_shape, out_shape)) is not None:
            operands.append(grouped)   # viewed in the inner shape (reshaped below)
        else:
            return False
    element = ir.RankedTensorType(op.results[0].type).element_type
    with ir.InsertionPoint(op), op.location:
        moved = []
        for x, new in zip(op.operands, operands):
            if new is None or isinstance(new, list):
                new = ops.build("reshape", [x], result_type=ir.RankedTensorType.get(
                    inner_shape if new is None else new, ir.RankedTensorType(x.type).element_type))
            moved.append(new)
        named = [op.attributes[i] for i in range(len(op.attributes))]
        attributes = {a.name: a.attr for a in named if a.name != "lamina.kernel"}
        inner_op = ir.Operation.create(op.name, results=[ir.RankedTensorType.get(inner_shape, element)],
                                       operands=moved, attributes=attributes)
        if ops.infer_for(inner_op) != inner_op.results[0].type:
            inner_op.erase()
            return False
        back = ops.build("reshape", [inner_op.results[0]], result_type=op.results[0].type)
    dropped = [defining_op(op.operands[i]) for i in reshaped]
    op.results[0].replace_all_uses_with(back)
    op.erase()
    for old in dict.fromkeys(dropped):   # the reshapes only this op read
        if not any(True for _ in old.results[0].uses):
            old.erase()
    return True


@in_module_context
def sink_reshapes(module: ir.Module) -> int:
    """Rewrite to a fixpoint; returns how many ops moved."""
    moved = 0
    for func_op in graph_functions(module):
        while True:
            memo: dict = {}
            softmax_memo: dict = {}
            changed = 0
            for op in lamina_ops(func_op):
                if _sink_one(op, memo, softmax_memo):
                    changed += 1
                    memo, softmax_memo = {}, {}
            if not changed:
                break
            moved += changed
    return moved


@register_pass("lamina-sink-reshapes", level="L1",
               description="move reshapes of a contraction's result below the pointwise ops reading them "
                           "(the ops join the contraction's epilogue)")
def run(module: ir.Module, **options) -> None:
    reject_options(options)
    sink_reshapes(module)
