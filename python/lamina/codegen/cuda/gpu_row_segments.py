"""Segmented rows for the NVVM generator's row kernels (gpu_reductions.py).

A block splits each row of n elements across its T threads. Split into contiguous chunks
(thread t owns elements [t*n/T, (t+1)*n/T)), a warp's loads are n/T elements apart: for
long rows (4096 f32 over 256 threads: 64 bytes apart) every load instruction touches 32
sectors and the kernel runs at half the copy rate. Segmented, the row is viewed as
[S, T, V] (n = S*T*V, V elements = one 128-bit vector): thread t owns the vectors
(s, t, :) for every s, so a warp's s-th load is 32 consecutive vectors (512 bytes).

The rewrite is MLIR's reshape propagation: each kernel argument whose innermost dim is the
row is read through `memref.expand_shape` to [..., S, T, V] and a `tensor.collapse_shape`
back, and linalg-fuse-elementwise-ops' fold-by-expansion patterns carry the expansion
through the kernel (every op on the row gets the three dims instead of one; reductions
over the row reduce over all three). Those patterns fuse a reshape with one user only, so
the collapses are split per user between rounds. Outputs come out as collapses of
segmented values (gpu_mapping.reshaped_outputs_to_views stores them into views).
"""
from __future__ import annotations

from mlir import ir, passmanager
from mlir.dialects import bufferization, memref, tensor

from ...lowering.tiling import _loop_kinds

_ROUNDS = 16   # propagation rounds (each crosses at least one op of the chain along the row)


def segment_shape(n: int, threads: int, vector: int) -> list[int] | None:
    """[S, T, V] for rows of n over `threads` threads with vectors of `vector` elements, or
    None where segments gain nothing (a thread's chunk is one vector or less: the chunks
    already sit side by side) or do not divide the row."""
    if vector < 1 or n % (threads * vector) or n // threads <= vector:
        return None
    segments = n // (threads * vector)
    return [segments, threads, vector] if vector > 1 else [segments, threads]


def _i64(v: int) -> ir.IntegerAttr:
    return ir.IntegerAttr.get(ir.IntegerType.get_signless(64), v)


def _reassociation(rank: int, extra: int) -> ir.ArrayAttr:
    """[[0], [1], ..., [rank-1, ..., rank-1+extra]]: the last dim expanded into 1+extra."""
    groups = [ir.ArrayAttr.get([_i64(i)]) for i in range(rank - 1)]
    groups.append(ir.ArrayAttr.get([_i64(i) for i in range(rank - 1, rank + extra)]))
    return ir.ArrayAttr.get(groups)


def _expand_row_arguments(func_op, n: int, segments: list[int]) -> int:
    """Arguments read with the row innermost: read as [..., S, T, V] and collapsed back."""
    block = func_op.regions[0].blocks[0]
    count = 0
    for op in list(block.operations):
        if op.operation.name != "bufferization.to_tensor" or not isinstance(op.operands[0], ir.BlockArgument):
            continue
        t = ir.RankedTensorType(op.results[0].type)
        mt = ir.MemRefType(op.operands[0].type)
        if t.rank < 1 or t.shape[-1] != n or mt.layout != ir.MemRefType.get(mt.shape, mt.element_type).layout:
            continue
        shape = list(t.shape[:-1]) + segments
        reassociation = _reassociation(t.rank, len(segments) - 1)
        with op.location, ir.InsertionPoint(op):
            view = memref.expand_shape(ir.MemRefType.get(shape, t.element_type), op.operands[0], reassociation, [], shape)
            value = bufferization.to_tensor(ir.RankedTensorType.get(shape, t.element_type), view, restrict=True)
            row = tensor.collapse_shape(t, value, reassociation)
        op.results[0].replace_all_uses_with(row)
        op.operation.erase()
        count += 1
    return count


def _one_user_per_collapse(block: ir.Block) -> int:
    n = 0
    for op in list(block.operations):
        if op.operation.name != "tensor.collapse_shape":
            continue
        for use in [(u.owner, u.operand_number) for u in op.results[0].uses][1:]:
            copy = op.operation.clone(ip=ir.InsertionPoint(op))
            use[0].operands[use[1]] = copy.results[0]
            n += 1
    return n


def _collapses_read_by_linalg(block: ir.Block) -> int:
    return sum(1 for op in block.operations if op.operation.name == "tensor.collapse_shape"
               for u in op.results[0].uses if u.owner.name.startswith("linalg."))


def _run(func_op, pipeline: str) -> None:
    passmanager.PassManager.parse(f"func.func({pipeline})", context=func_op.context).run(func_op.operation)


def segment_rows(func_op, n: int, segments: list[int]) -> None:
    """Rewrite the kernel (in place) so that its rows of n are [..., S, T, V]. Raises
    ValueError if some reduction over the row is not segmented after the propagation (the
    caller works on a copy)."""
    block = func_op.regions[0].blocks[0]
    if not _expand_row_arguments(func_op, n, segments):
        raise ValueError("no argument holds the rows")
    for _ in range(_ROUNDS):
        if not _collapses_read_by_linalg(block):
            break
        _one_user_per_collapse(block)
        before = str(func_op)
        _run(func_op, "linalg-fuse-elementwise-ops")
        if str(func_op) == before:   # (stuck: some op the patterns do not expand)
            break
    _run(func_op, "canonicalize, cse")
    m = len(segments)
    for op in block.operations:
        if op.operation.name == "linalg.generic" and "reduction" in _loop_kinds(op):
            kinds = _loop_kinds(op)
            if kinds[-m:] != ["reduction"] * m or kinds.count("reduction") != m:
                raise ValueError("a reduction over the row is not segmented")
    if _collapses_read_by_linalg(block):
        raise ValueError("an op reads the row unsegmented")
