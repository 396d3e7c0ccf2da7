"""Vectors and alignment for the NVVM generator (gpu_mapping.py): how wide a thread's
accesses are, which kernel arguments a vectorized kernel provably accesses at aligned
addresses, and the alignment on those loads and stores (what makes them 128-bit accesses
in PTX; the launcher, nvvm_runtime.py, runs a misaligned tensor on an aligned copy).
"""
from __future__ import annotations

from mlir import ir

from ...transforms.common import ANY_OP, transform_script, visit_ops

A = ANY_OP


def element_bytes(t: ir.Type) -> int:
    if isinstance(t, ir.ShapedType):
        t = ir.ShapedType(t).element_type
    width = getattr(t, "width", None)
    if width is None:
        for cls in (ir.IntegerType, ir.FloatType):
            try:
                width = cls(t).width
                break
            except (ValueError, TypeError):
                continue
    return max(1, (width or 32) // 8)


def argument_vector_elements(func_op) -> int:
    """Elements per 128-bit access of the widest element type among the kernel's
    (memref) arguments: what a thread moves from and to memory at a time."""
    args = [a for a in func_op.regions[0].blocks[0].arguments if isinstance(a.type, ir.MemRefType)]
    widest = max((element_bytes(a.type) for a in args), default=4)
    return max(1, 16 // widest)


def argument_of(v: ir.Value):
    """The kernel argument v is, or is a reshape view of (memref.expand_shape /
    collapse_shape: same offset, strides in the view's type), else None."""
    while isinstance(v, ir.OpResult) and v.owner.name in ("memref.expand_shape", "memref.collapse_shape"):
        v = v.owner.operands[0]
    return v if isinstance(v, ir.BlockArgument) else None


def written_arguments(func_op) -> list[int]:
    """Arguments the kernel's outputs are stored into (directly or through views)."""
    block = func_op.regions[0].blocks[0]
    args = [argument_of(op.operands[1]) for op in block.operations
            if op.operation.name == "bufferization.materialize_in_destination"]
    return sorted({a.arg_number for a in args if a is not None})


def row_aligned_operands(func_op, chunk: int) -> set[int]:
    """aligned_operands for row kernels: every linalg op's operands (reductions and roots
    alike split the row's innermost loop into chunks of `chunk`; a segmented row's
    innermost loop is its vector). Arguments read or written through reshape views are
    checked with the view's strides."""
    block = func_op.regions[0].blocks[0]
    arg_of = {}   # tensor value -> (argument number, memref type it is read as)
    for op in block.operations:
        if op.operation.name == "bufferization.to_tensor" and argument_of(op.operands[0]) is not None:
            arg_of[op.results[0]] = (argument_of(op.operands[0]).arg_number, op.operands[0].type)
    ok, bad = set(), set()
    for value, (arg, _) in arg_of.items():
        if any(not u.owner.name.startswith("linalg.") for u in value.uses):
            bad.add(arg)   # (read through a tensor reshape: accesses this does not see)
    for op in block.operations:
        if op.operation.name == "bufferization.materialize_in_destination" and argument_of(op.operands[1]) is not None:
            src = op.operands[0].owner
            out_map = (ir.AffineMapAttr(list(ir.ArrayAttr(src.attributes["indexing_maps"]))[-1]).value
                       if "indexing_maps" in src.attributes else None)
            good = out_map is not None and innermost_is_last_loop(out_map) and contiguous_inner(op.operands[1].type, chunk)
            (ok if good else bad).add(argument_of(op.operands[1]).arg_number)
        if not op.operation.name.startswith("linalg.") or "indexing_maps" not in op.attributes:
            continue
        maps = [ir.AffineMapAttr(m).value for m in ir.ArrayAttr(op.attributes["indexing_maps"])]
        for k, v in enumerate(op.operands):
            if v in arg_of:
                arg, t = arg_of[v]
                good = innermost_is_last_loop(maps[k]) and contiguous_inner(t, chunk)
                (ok if good else bad).add(arg)
    return ok - bad


# Vector transfers on the bufferized thread tiles: unit dims dropped, then in-bounds
# contiguous ones become vector.load / vector.store (what gets an alignment); n-d ones are
# unrolled to 1-d ones first; the others are unrolled to scalars in the device lowering
# (nvvm_lower.DEVICE_PASSES).
TRANSFER_LOWERING = transform_script([
    f"""transform.apply_patterns to %root {{
      transform.apply_patterns.vector.rank_reducing_subview_patterns
      transform.apply_patterns.vector.transfer_permutation_patterns
      transform.apply_patterns.vector.drop_unit_dims_with_shape_cast
      transform.apply_patterns.vector.lower_transfer max_transfer_rank = 1
    }} : {A}""",
    # (an n-d transfer of a strided tile, a segmented row's [S, V]: one 1-d transfer per row)
    f"""transform.apply_patterns to %root {{
      transform.apply_patterns.vector.transfer_to_scf max_transfer_rank = 1 full_unroll = true
    }} : {A}""",
    f"""transform.apply_patterns to %root {{
      transform.apply_patterns.vector.lower_transfer max_transfer_rank = 1
      transform.apply_patterns.vector.lower_multi_reduction lowering_strategy = "innerreduction"
      transform.apply_patterns.vector.cast_away_vector_leading_one_dim
      transform.apply_patterns.canonicalization
    }} : {A}""",
    f"""transform.apply_patterns to %root {{
      transform.apply_patterns.vector.lower_shape_cast
      transform.apply_patterns.vector.lower_broadcast
      transform.apply_patterns.vector.lower_transfer max_transfer_rank = 1
      transform.apply_patterns.canonicalization
    }} : {A}"""])


def root_of_memref(v: ir.Value, through_reshapes: bool = False):
    """The kernel argument a memref value is a subview (chain) of, else None; with
    `through_reshapes`, reshape views of an argument count as the argument (for kernels
    whose aligned set checked those views' strides: row_aligned_operands)."""
    reshapes = ("memref.collapse_shape", "memref.expand_shape")
    while isinstance(v, ir.OpResult) and v.owner.name in ("memref.subview", "memref.reinterpret_cast") + reshapes:
        if v.owner.name == "memref.reinterpret_cast" or (v.owner.name in reshapes and not through_reshapes):
            return None   # (offsets through these are not followed)
        v = v.owner.operands[0]
    return v if isinstance(v, ir.BlockArgument) else None


def aligned_operands(func_op, items, root_attr: str) -> set[int]:
    """Kernel arguments every access of which, in a vectorized root, starts at a multiple of
    the thread's vector: the arguments the roots read or write with the innermost loop as
    the innermost index (per-thread tiles start at multiples of the vector along it) and
    whose other strides are multiples of the vector. Arguments used anywhere else are not."""
    block = func_op.regions[0].blocks[0]
    arg_of = {}
    for op in block.operations:
        name = op.operation.name
        if name == "bufferization.to_tensor" and isinstance(op.operands[0], ir.BlockArgument):
            arg_of[op.results[0]] = op.operands[0].arg_number
    ok, bad = set(), set()
    for op in block.operations:
        if op.operation.name == "bufferization.materialize_in_destination":
            dest = op.operands[1]
            if isinstance(dest, ir.BlockArgument):
                src = op.operands[0].owner
                rid = ir.IntegerAttr(src.attributes[root_attr]).value if root_attr in src.attributes else None
                it = next((it for it in items if it["id"] == rid), None)
                out_map = (ir.AffineMapAttr(list(ir.ArrayAttr(src.attributes["indexing_maps"]))[-1]).value
                           if "indexing_maps" in src.attributes else None)
                good = (it is not None and it["per_thread"] is not None and out_map is not None
                        and innermost_is_last_loop(out_map) and contiguous_inner(dest.type, it["per_thread"][-1]))
                (ok if good else bad).add(dest.arg_number)
    for use_op in block.operations:
        if use_op.operation.name.startswith("linalg."):
            rid = ir.IntegerAttr(use_op.attributes[root_attr]).value if root_attr in use_op.attributes else None
            it = next((it for it in items if it["id"] == rid), None)
            maps = ([ir.AffineMapAttr(m).value for m in ir.ArrayAttr(use_op.attributes["indexing_maps"])]
                    if "indexing_maps" in use_op.attributes else None)
            for k, v in enumerate(use_op.operands):
                if v not in arg_of:
                    continue
                arg = arg_of[v]
                good = (it is not None and it["per_thread"] is not None and maps is not None
                        and innermost_is_last_loop(maps[k]) and
                        contiguous_inner(func_op.regions[0].blocks[0].arguments[arg].type, it["per_thread"][-1]))
                (ok if good else bad).add(arg)
    return ok - bad


def innermost_is_last_loop(m) -> bool:
    results = list(m.results)
    if not results:
        return False
    last = results[-1]
    return isinstance(last, ir.AffineDimExpr) and ir.AffineDimExpr(last).position == m.n_dims - 1


def contiguous_inner(t: ir.Type, vector: int) -> bool:
    if not isinstance(t, ir.MemRefType) or vector <= 1:
        return False
    strides, offset = ir.MemRefType(t).get_strides_and_offset()
    dynamic = ir.ShapedType.get_dynamic_stride_or_offset()
    if offset != 0 or not strides or strides[-1] != 1 or any(s == dynamic or s % vector for s in strides[:-1]):
        return False
    return True


def mark_aligned_accesses(func_op, aligned: set[int], through_reshapes: bool = False) -> set[int]:
    """Give the vector loads and stores of aligned arguments (aligned_operands) their
    alignment (vector bytes: what makes them 128-bit accesses in PTX instead of scalar
    ones); returns the arguments whose base pointer must then be aligned to 16 bytes (the
    launcher copies a misaligned one: a view at an odd storage offset)."""
    used = set()

    def visit(op):
        name = op.operation.name
        if name not in ("vector.load", "vector.store"):
            return
        base = op.operands[0 if name == "vector.load" else 1]
        arg = root_of_memref(base, through_reshapes)
        if arg is None or arg.arg_number not in aligned:
            return
        vt = ir.VectorType(op.results[0].type if name == "vector.load" else op.operands[0].type)
        if vt.rank != 1:
            return
        nbytes = vt.shape[-1] * element_bytes(vt.element_type)
        if nbytes % 16 == 0:
            align = 16   # (a longer vector: LLVM splits it into aligned 128-bit accesses)
        elif nbytes & (nbytes - 1) == 0 and nbytes < 16:
            align = nbytes
        else:
            return
        op.attributes["alignment"] = ir.IntegerAttr.get(ir.IntegerType.get_signless(64), align)
        used.add(arg.arg_number)
    visit_ops(func_op, visit)
    return used
