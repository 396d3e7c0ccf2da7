"""Transposes fused into the elementwise ops that read them (part of lamina-tile-cpu, after
lamina-conv-channels-last).

A channels-last convolution (lowering/conv_channels_last.py) computes [N, *O, F] and
transposes it back to [N, F, *O] for its epilogue (bias, batch norm, activation, a residual
add), which then reads it once more: two passes over the result. Upstream elementwise fusion
leaves the transpose alone (a named linalg.transpose behind reshapes), so this rewrite folds
it into the epilogue, which then reads the untransposed result through a swapped map:

    %t = linalg.transpose ins(%c : [N, P, F]) permutation = [0, 2, 1]      -> [N, F, P]
    %r = tensor.expand_shape %t                                           -> [N, F, Ho, Wo]
    %e = linalg.generic ins(%r, %scale : [1, F, 1, 1], %res : [N, F, Ho, Wo]) (identity, ...)
  ->
    %e' = linalg.generic ins(%c, collapse(%scale) (d2), collapse(%res) (d0, d2, d1))
          outs([N, F, P] (d0, d2, d1))          loops (n, p, f): the order %c is stored in
    %e  = tensor.expand_shape %e'                                          -> [N, F, Ho, Wo]

The generic's loops run in the order of the untransposed result and its outputs are
written through the swapped map. lamina-tile-cpu gives such a transposing generic the 8x8
vector tiles of a transpose (tile_pointwise.py): each tile reads 8 rows of 8 channels,
applies the epilogue there (a per-channel operand is one vector for all 8 rows), transposes
in registers and writes 8 rows, so the epilogue costs no pass of its own. Operands laid out
like the output (a residual) are read through the swapped map (transposed in registers).

Conditions: a last-two-dims linalg.transpose of static sizes whose result reaches exactly
one operand of an all-parallel generic through single-use reshapes only, with the same
leading dims and the trailing ones collapsing to the transposed one (reshapes keep row-major
order, so the chain is that expand whatever its steps); the generic's outputs have identity
maps, its body uses no linalg.index, and each other input either spans the trailing dims in
order at the end of its map (collapsed to one dim) or does not index them (a broadcast).
Symbolic sizes keep the separate transpose.

Two helpers make the pattern reachable: `split_group_swaps` turns the n-d transposes that
upstream reshape propagation makes of such chains ([0, 3, 1, 2]: NHWC -> NCHW) back into
collapse / last-two-dims transpose / expand, and `store_through_reshapes` stores a kernel
output reached through an expand into a collapsed view of the output buffer (empty-tensor
elimination follows no reshape: the result would go to a temporary, then be copied).
"""
from __future__ import annotations

import math

from mlir import ir
from mlir.dialects import linalg, memref, tensor

from ..transforms.common import has_uses, rebuild_generic, static_shape
from ..transforms.registry import register_pass
from .to_linalg import _collapse, _expand, _one

_RESHAPES = ("tensor.collapse_shape", "tensor.expand_shape")


def _single_use(v: ir.Value) -> bool:
    return len(list(v.uses)) == 1


def _transpose_behind(v: ir.Value):
    """The last-two-dims linalg.transpose of static sizes that `v` is a single-use reshape
    chain of, else None."""
    if not _single_use(v):
        return None
    src, _ = _reshapes_between(v)
    if not isinstance(src, ir.OpResult) or not _last_two_swap(src.owner) or not _single_use(src) \
            or static_shape(src.type) is None:
        return None
    return src.owner


def _is_dim(e: ir.AffineExpr) -> bool:
    return isinstance(e, ir.AffineDimExpr)


def _is_zero(e: ir.AffineExpr) -> bool:
    return isinstance(e, ir.AffineConstantExpr) and e.value == 0


def _dim_of(e: ir.AffineExpr) -> int:
    return ir.AffineDimExpr(e).position


def _unit_groups(keep: list[bool]) -> list[list[int]]:
    """Reassociation groups that drop the dims not kept (unit dims) into a kept neighbour:
    [] when no dim is kept (a rank-0 collapse)."""
    groups: list[list[int]] = []
    pending: list[int] = []
    for i, k in enumerate(keep):
        pending.append(i)
        if k:
            groups.append(pending)
            pending = []
    if pending and groups:
        groups[-1] += pending
    return groups


def _remap_input(v: ir.Value, m: ir.AffineMap, lead: int, loops: int):
    """How an input of the generic reads in the new loops: (collapse groups of the operand
    or None, new map), or None when it cannot. Old loops: [*B, F, *S] (`lead` = len(B) + 1,
    `loops` in all); new loops: [*B, P, F] with P the collapsed S. The operand's unit dims
    read at 0 (broadcasts) are collapsed away too, so that every map is a projected
    permutation, as the vectorizer wants."""
    res = list(m.results)
    if not isinstance(v.type, ir.RankedTensorType):   # a scalar operand
        return (None, ir.AffineMap.get(lead + 1, 0, [])) if not res else None
    shape = static_shape(v.type)
    if shape is None:
        return None
    spans = [i for i, e in enumerate(res) if _is_dim(e) and _dim_of(e) >= lead]
    k = len(res) - len(spans)
    if spans and (spans != list(range(k, len(res))) or [_dim_of(res[i]) for i in spans] != list(range(lead, loops))):
        return None
    d = ir.AffineDimExpr.get
    keep, exprs = [], []
    for i, e in enumerate(res[:k]):
        if _is_dim(e) and _dim_of(e) < lead:
            keep.append(True)
            exprs.append(d(lead if _dim_of(e) == lead - 1 else _dim_of(e)))   # F moves last
        elif _is_zero(e) and shape[i] == 1:
            keep.append(False)
        else:
            return None
    if spans:   # the collapsed loops, one operand dim
        keep.append(True)
        exprs.append(d(lead - 1))
    new_map = ir.AffineMap.get(lead + 1, 0, exprs)
    groups = _unit_groups(keep)
    if spans:   # the trailing dims collapse with the last group
        groups[-1] = sorted(set(groups[-1]) | set(range(k, len(res))))
    if all(len(g) == 1 for g in groups) and len(groups) == len(res):
        return None, new_map
    return groups, new_map


def swapped_map(rank: int) -> ir.AffineMap:
    """(d0, ..., d[rank-1], d[rank-2]): the last two loops swapped."""
    d = ir.AffineDimExpr.get
    return ir.AffineMap.get(rank, 0, [d(k) for k in range(rank - 2)] + [d(rank - 1), d(rank - 2)])


def fuse_into(op) -> bool:
    """Fold a transpose behind one input of the all-parallel generic `op` into it; returns
    whether it did."""
    if op.name != "linalg.generic" or any("parallel" not in str(a)
                                          for a in ir.ArrayAttr(op.attributes["iterator_types"])):
        return False
    block = op.regions[0].blocks[0]
    if any(o.operation.name == "linalg.index" for o in block.operations):
        return False
    n_out = len(op.results)
    operands = list(op.operands)
    n_in = len(operands) - n_out
    maps = [ir.AffineMapAttr(m).value for m in ir.ArrayAttr(op.attributes["indexing_maps"])]
    loops = maps[0].n_dims if maps else 0
    identity = ir.AffineMap.get_identity(loops)
    if n_out == 0 or any(m != identity for m in maps[n_in:]):
        return False
    shape = static_shape(op.results[0].type)
    if shape is None or any(static_shape(r.type) != shape for r in op.results):
        return False
    for j in range(n_in):
        if maps[j] != identity:
            continue
        t = _transpose_behind(operands[j])
        if t is None:
            continue
        t_out = static_shape(t.results[0].type)
        lead = len(t_out) - 1           # leading dims kept: [*B, F]; the trailing ones collapse into P
        if loops < len(t_out) or shape[:lead] != t_out[:lead] or math.prod(shape[lead:]) != t_out[-1]:
            continue
        plans = [(None, ir.AffineMap.get_identity(lead + 1)) if i == j else _remap_input(operands[i], maps[i], lead, loops)
                 for i in range(n_in)]
        if any(p is None for p in plans):
            continue
        with ir.InsertionPoint(op), op.location:
            new_ins = [t.operands[0] if i == j else (operands[i] if groups is None else _collapse(operands[i], groups))
                       for i, (groups, _) in enumerate(plans)]
        _rebuild(op, new_ins, [m for _, m in plans], lead, loops, n_in)
        return True
    return False


def _collapsed_init(v: ir.Value, groups: list[list[int]]) -> ir.Value:
    """The init `v` collapsed by `groups`: a new tensor.empty when `v` is one (empty-tensor
    elimination then finds it from the kernel's output), else a collapse_shape."""
    if isinstance(v, ir.OpResult) and v.owner.name == "tensor.empty":
        shape = list(ir.RankedTensorType(v.type).shape)
        return tensor.empty([math.prod(shape[i] for i in g) for g in groups], ir.RankedTensorType(v.type).element_type)
    return _collapse(v, groups)


def _rebuild(op, new_ins, new_maps, lead: int, loops: int, n_in: int) -> None:
    groups = [[i] for i in range(lead)] + [list(range(lead, loops))]
    out_map = swapped_map(lead + 1)
    with ir.InsertionPoint(op), op.location:
        inits = [_collapsed_init(v, groups) if loops > lead + 1 else v for v in list(op.operands)[n_in:]]
    # (tile decisions made for the old loops do not fit the new ones)
    new = rebuild_generic(op, [v.type for v in inits], new_ins, inits, new_maps + [out_map] * len(inits),
                          ir.ArrayAttr.get([ir.Attribute.parse("#linalg.iterator_type<parallel>")] * (lead + 1)),
                          drop_attrs=("lamina.tile_sizes", "lamina.vector_sizes"))
    with ir.InsertionPoint(op), op.location:
        for old, res in zip(op.results, new.results):
            if loops > lead + 1:
                res = _expand(res, old.type, groups, list(ir.RankedTensorType(old.type).shape))
            old.replace_all_uses_with(res)
    op.erase()


def _identity_memref(v: ir.Value) -> bool:
    if not isinstance(v.type, ir.MemRefType):
        return False
    t = ir.MemRefType(v.type)
    return isinstance(t.layout, ir.AffineMapAttr) and t.layout.value == ir.AffineMap.get_identity(t.rank)


def _reshape_view(buffer: ir.Value, shape, reassociation, collapse: bool) -> ir.Value:
    """memref.collapse_shape (collapse) or memref.expand_shape of `buffer` to `shape`."""
    t = ir.MemRefType(buffer.type)
    view_t = ir.MemRefType.get(shape, t.element_type, memory_space=t.memory_space)
    if collapse:
        return memref.collapse_shape(view_t, buffer, reassociation)
    return memref.expand_shape(view_t, buffer, reassociation, [], ir.DenseI64ArrayAttr.get(shape))


def store_through_reshapes(func_op) -> int:
    """materialize_in_destination(expand_shape(%v), %out) -> materialize_in_destination(%v,
    memref.collapse_shape(%out)) (and a collapse_shape through an expand_shape view) for a
    kernel output of the identity layout and static shape, so that empty-tensor elimination
    (which follows no reshape) lets the op computing %v write the output buffer instead of a
    temporary copied into it; returns how many."""
    count = 0
    for op in [o.operation for o in func_op.regions[0].blocks[0].operations
               if o.operation.name == "bufferization.materialize_in_destination"]:
        src, dest = op.operands[0], op.operands[1]
        if not isinstance(src, ir.OpResult) or src.owner.name not in ("tensor.expand_shape", "tensor.collapse_shape") \
                or not _single_use(src) or not _identity_memref(dest):
            continue
        reshape = src.owner
        inner = reshape.operands[0]
        inner_t = ir.RankedTensorType(inner.type)
        if any(inner_t.is_dynamic_dim(i) for i in range(inner_t.rank)) and reshape.name == "tensor.collapse_shape":
            continue
        with ir.InsertionPoint(op), op.location:   # the inverse of the tensor reshape
            view = _reshape_view(dest, inner_t.shape, reshape.attributes["reassociation"],
                                 collapse=reshape.name == "tensor.expand_shape")
        op.operands[0] = inner
        op.operands[1] = view
        reshape.erase()
        count += 1
    return count


def reshape_arguments_as_views(func_op) -> int:
    """tensor.collapse_shape / expand_shape of a kernel argument (bufferization.to_tensor of
    an identity-layout memref) -> to_tensor of a memref.collapse_shape / expand_shape view of
    it; returns how many. The view is free either way after bufferization, but a tensor
    reshape is what upstream elementwise fusion propagates: a reshaped residual read by a
    library matmul's epilogue made it expand the matmul into a generic of the reshaped rank,
    which runs as loops instead of BLAS (gelu(linear(x)) + r over a [B, T, C] input: 100 ms
    against 1 ms). Static shapes only."""
    from mlir.dialects import bufferization

    count = 0
    for op in [o.operation for o in func_op.regions[0].blocks[0].operations
               if o.operation.name in ("tensor.collapse_shape", "tensor.expand_shape")]:
        src = op.operands[0]
        to_tensor = src.owner if isinstance(src, ir.OpResult) else None
        if to_tensor is None or to_tensor.name != "bufferization.to_tensor" \
                or not isinstance(to_tensor.operands[0], ir.BlockArgument) or not _identity_memref(to_tensor.operands[0]):
            continue
        result_t = ir.RankedTensorType(op.results[0].type)
        if any(result_t.is_dynamic_dim(i) for i in range(result_t.rank)):
            continue
        if any("lamina.conv" in use.owner.attributes for use in op.results[0].uses):
            continue   # a grouped convolution's [N, G, Cg, *S] input: its channels-last rewrite reads the expand
        with ir.InsertionPoint(op), op.location:   # the same reshape, of the buffer
            view = _reshape_view(to_tensor.operands[0], result_t.shape, op.attributes["reassociation"],
                                 collapse=op.name == "tensor.collapse_shape")
            value = bufferization.to_tensor(result_t, view, restrict=True)
        op.results[0].replace_all_uses_with(value)
        op.erase()
        count += 1
    return count


_PURE = _RESHAPES + ("tensor.empty", "tensor.insert_slice", "tensor.extract_slice", "linalg.fill", "linalg.transpose")


def erase_unused(block: ir.Block) -> None:
    """Erase the value ops (tensor semantics, no side effects) whose results are unused, last
    first, so that a chain goes at once."""
    for o in reversed([o.operation for o in block.operations]):
        if o.name in _PURE and not any(has_uses(r) for r in o.results):
            o.erase()


def _reshapes_between(v: ir.Value):
    """(source, chain ops) of the single-use reshape chain ending at `v`, walking up."""
    chain = []
    while isinstance(v, ir.OpResult) and v.owner.name in _RESHAPES and _single_use(v.owner.operands[0]):
        chain.append(v.owner)
        v = v.owner.operands[0]
    return v, chain


def _last_two_swap(op) -> bool:
    if op.name != "linalg.transpose":
        return False
    perm = list(ir.DenseI64ArrayAttr(op.attributes["permutation"]))
    n = len(perm)
    return n >= 2 and perm == list(range(n - 2)) + [n - 1, n - 2]


def cancel_transpose_pairs(func_op) -> int:
    """transpose(reshapes(transpose(%y))) -> %y, for last-two-dims transposes whose reshapes
    in between end in the shape they start from (row-major order kept: the identity), as a
    kernel that takes a channels-last argument back to NCHW and then to NHWC again for its
    convolution has; returns how many pairs."""
    count = 0
    block = func_op.regions[0].blocks[0]
    erase_unused(block)
    for t2 in [o.operation for o in block.operations if _last_two_swap(o.operation)]:
        src, _ = _reshapes_between(t2.operands[0])
        if not isinstance(src, ir.OpResult) or not _last_two_swap(src.owner) or not _single_use(src):
            continue
        t1 = src.owner
        if t1.results[0].type != t2.operands[0].type or t1.operands[0].type != t2.results[0].type:
            continue
        t2.results[0].replace_all_uses_with(t1.operands[0])
        count += 1
    if count:
        erase_unused(block)
    return count


def unswap_transposed_outputs(func_op) -> int:
    """A transposing generic (output written through the swapped map) whose only result is
    transposed back (through reshapes that end in the shape they start from) writes the
    untransposed order instead: an identity output map, an init of the loops' shape; returns
    how many."""
    count = 0
    block = func_op.regions[0].blocks[0]
    erase_unused(block)
    for t in [o.operation for o in block.operations if _last_two_swap(o.operation)]:
        src, _ = _reshapes_between(t.operands[0])
        op = src.owner if isinstance(src, ir.OpResult) else None
        if op is None or op.name != "linalg.generic" or len(op.results) != 1 or not _single_use(src) \
                or src.type != t.operands[0].type:
            continue
        maps = [ir.AffineMapAttr(m).value for m in ir.ArrayAttr(op.attributes["indexing_maps"])]
        n = maps[-1].n_dims
        init = op.operands[len(op.operands) - 1]
        if maps[-1] != swapped_map(n) or list(op.regions[0].blocks[0].arguments[-1].uses) \
                or not (isinstance(init, ir.OpResult) and init.owner.name == "tensor.empty"):
            continue
        out_t = ir.RankedTensorType(t.results[0].type)
        with ir.InsertionPoint(op), op.location:
            new_init = tensor.empty(list(out_t.shape), out_t.element_type)
        new = rebuild_generic(op, [out_t], list(op.operands)[:-1], [new_init],
                              maps[:-1] + [ir.AffineMap.get_identity(n)])
        t.results[0].replace_all_uses_with(new.results[0])
        _, chain = _reshapes_between(t.operands[0])
        t.erase()
        for o in chain:
            o.erase()
        op.erase()
        count += 1
    if count:
        erase_unused(block)
    return count


def _group_swap(perm: list[int]) -> tuple[int, int] | None:
    """(k, m) when `perm` keeps dims 0..k-1 and swaps the groups k..m-1 and m..n-1
    ([0, 3, 1, 2], [0, 2, 3, 1]; [0, 2, 1] too), else None."""
    n = len(perm)
    k = 0
    while k < n and perm[k] == k:
        k += 1
    if k >= n - 1:
        return None
    m = perm[k]
    if perm == list(range(k)) + list(range(m, n)) + list(range(k, m)):
        return k, m
    return None


def split_group_swaps(func_op) -> int:
    """Rewrite each static f32 linalg.transpose that swaps two groups of dims as a collapse,
    a last-two-dims transpose and an expand (the form that gets 8x8 vector tiles and folds
    into its reader): upstream reshape propagation (lamina-tile-cpu's elementwise fusion)
    folds such reshapes into 4-d transposes ([0, 3, 1, 2] of an NHWC view), which would
    otherwise run element by element. Returns how many."""
    count = 0
    for op in [o.operation for o in func_op.regions[0].blocks[0].operations if o.operation.name == "linalg.transpose"]:
        perm = list(ir.DenseI64ArrayAttr(op.attributes["permutation"]))
        km = _group_swap(perm)
        x = op.operands[0]
        shape = static_shape(x.type)
        if km is None or shape is None or str(ir.RankedTensorType(x.type).element_type) != "f32" \
                or (km[1] - km[0] == 1 and len(perm) - km[1] == 1):   # (already a last-two swap)
            continue
        k, m = km
        n = len(perm)
        with ir.InsertionPoint(op), op.location:
            flat = _collapse(x, [[i] for i in range(k)] + [list(range(k, m)), list(range(m, n))])
            a, b = math.prod(shape[k:m]), math.prod(shape[m:])
            init = tensor.empty(shape[:k] + [b, a], ir.RankedTensorType(x.type).element_type)
            t = _one(linalg.transpose(flat, outs=[init], permutation=list(range(k)) + [k + 1, k]))
            out_t = ir.RankedTensorType(op.results[0].type)
            res = _expand(t, out_t, [[i] for i in range(k)] + [list(range(k, k + n - m)), list(range(k + n - m, n))],
                          list(out_t.shape))
        op.results[0].replace_all_uses_with(res)
        op.erase()
        count += 1
    return count


def fuse_transposed_epilogues(func_op) -> int:
    """Fold last-two-dims transposes into the elementwise generics that read them, in one
    kernel; returns how many were folded."""
    body = func_op.regions[0].blocks[0]
    count = 0
    for op in [o.operation for o in body.operations if o.operation.name == "linalg.generic"]:
        if fuse_into(op):
            count += 1
    if count:
        erase_unused(body)
    return count


@register_pass("lamina-fuse-transposed-epilogues", level="L4",
               description="CPU, on kernels (linalg on tensors): fold last-two-dims transposes into the elementwise "
                           "generics that read them (a transposing generic; lamina-tile-cpu runs it)")
def fuse_transposed_epilogues_pass(module: ir.Module, **options) -> None:
    from .kernel_abi import kernel_functions

    for func_op in kernel_functions(module):
        split_group_swaps(func_op)
        if cancel_transpose_pairs(func_op) + fuse_transposed_epilogues(func_op) + unswap_transposed_outputs(func_op):
            store_through_reshapes(func_op)
