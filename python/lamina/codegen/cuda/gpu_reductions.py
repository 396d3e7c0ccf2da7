"""Reductions for the NVVM generator (gpu_mapping.py): the row-kernel schedule and the IR
rewrites around it.

A row kernel (reductions over the innermost loop; the other loops are rows) runs one CUDA
block per row of each output (`row_schedule`): the output's producers fused into the
block; each reduction split across the block's `lamina.gpu_row_threads` threads with
tile_reduction_using_forall (thread t reduces its chunk of the row into its partial), the
pointwise ops a thread loop reads fused into it (`fuse_into_thread_loops`), and the
output's row split across the threads again (a row value: one thread stores it). Code of
the block outside its thread loops runs on every thread, so what it writes must be
thread-private (`check_block_writes`). Around it:

* `plain_sums`: lamina-to-linalg's compensated sums (a (sum, compensation) pair per row,
  TwoSum in the body) become plain sums: the transform needs one combiner, and the split
  sums few elements per thread;
* `copy_reduction_roots`, `one_use_per_op`, `unshare_destinations` (lowering/kernel_cse.py): a reduction that is an output
  gets a copy op as the output's producer (it then accumulates privately); every op and
  init read twice gets a copy per reader (fusion fuses one use);
* `shared_partials`: after bufferization, buffers the threads write and the block reads
  (the partials) become workgroup `memref.global`s; other temporaries thread-private allocas;
* `warp_combines` / `compensated_combines`: the combine of the partials as a shuffle tree
  (whole warps) or a compensated loop.
"""
from __future__ import annotations

from mlir import ir
from mlir.dialects import arith, linalg, math, memref

from ...lowering.tiling import _loop_kinds
from ...lowering.vector_reduce import _compensated_addend, _is_compensated
from ...transforms.common import ANY_OP, transform_script, visit_ops


def _maps(op) -> list:
    return list(ir.ArrayAttr(op.attributes["indexing_maps"]))


def plain_sum(op) -> bool:
    """Rewrite one compensated sum generic into a plain one (in place of its first result;
    the compensation result's users get its zero init instead). False if `op` is not one."""
    if op.operation.name != "linalg.generic" or len(op.results) != 2:
        return False
    block = op.regions[0].blocks[0]
    n_out = 2
    operands = list(op.operands)
    ins, outs = operands[:-n_out], operands[-n_out:]
    if not _is_compensated(op, block, len(ins)):
        return False
    y = _compensated_addend(block, len(ins))
    if y is None:
        return False
    maps = _maps(op)
    with op.location, ir.InsertionPoint(op):
        new = linalg.GenericOp([op.results[0].type], ins, [outs[0]],
                               ir.ArrayAttr.get(maps[:len(ins)] + [maps[len(ins)]]),
                               op.attributes["iterator_types"])
        arg_types = [a.type for a in block.arguments]
        new_block = new.regions[0].blocks.append(*(arg_types[:len(ins)] + [arg_types[len(ins)]]))
        mapping = {}
        for k in range(len(ins) + 1):
            mapping[block.arguments[k]] = new_block.arguments[k]
        zero = None
        with ir.InsertionPoint(new_block):
            zero = arith.ConstantOp(arg_types[len(ins) + 1], 0.0).result
            mapping[block.arguments[len(ins) + 1]] = zero   # (the compensation starts and stays 0)
            body = list(block.operations)
            for bop in body[:-1]:
                clone = bop.operation.clone()
                for i, v in enumerate(clone.operands):
                    if v in mapping:
                        clone.operands[i] = mapping[v]
                for old, fresh in zip(bop.results, clone.results):
                    mapping[old] = fresh
            total = arith.addf(new_block.arguments[len(ins)], mapping[y])
            linalg.YieldOp([total])
    op.results[0].replace_all_uses_with(new.results[0])
    op.results[1].replace_all_uses_with(outs[1])
    op.operation.erase()
    return True


def plain_sums(func_op) -> int:
    block = func_op.regions[0].blocks[0]
    return sum(plain_sum(op) for op in list(block.operations))


def reduction_dims(op) -> list[int]:
    if "iterator_types" not in op.attributes:
        return []
    return [i for i, a in enumerate(ir.ArrayAttr(op.attributes["iterator_types"])) if "reduction" in str(a)]


def _in_thread_forall(op) -> bool:
    parent = op.operation.parent
    while parent is not None and parent.name != "func.func":
        if parent.name == "scf.forall" and "mapping" in parent.attributes and "thread" in str(parent.attributes["mapping"]):
            return True
        parent = parent.parent
    return False


def shared_partials(func_op, module_body: ir.Block, prefix: str) -> int:
    """Buffers written inside a thread forall and read outside it (a split reduction's
    partials) -> workgroup memory (a memref.global per buffer); the other allocations in the
    kernel's block foralls -> thread-private allocas. Returns the number of shared buffers."""
    allocs = []
    visit_ops(func_op, lambda op: allocs.append(op) if op.operation.name == "memref.alloc" else None)
    count = 0
    for alloc in allocs:
        t = ir.MemRefType(alloc.results[0].type)
        if not t.has_static_shape:
            raise ValueError("a buffer of dynamic size inside a block")
        written_by_threads = any(_in_thread_forall(u.owner) and _writes(u) for u in _all_uses(alloc.results[0]))
        used_outside = any(not _in_thread_forall(u.owner) and u.owner.name != "memref.dealloc"
                           for u in _all_uses(alloc.results[0]))
        with alloc.location, ir.InsertionPoint(alloc):
            if written_by_threads and used_outside:
                name = f"{prefix}_shared_{count}"
                count += 1
                shared_t = ir.MemRefType.get(t.shape, t.element_type, t.layout,
                                             ir.Attribute.parse("#gpu.address_space<workgroup>"))
                with ir.InsertionPoint.at_block_begin(module_body):
                    memref.GlobalOp(sym_name=name, type_=ir.TypeAttr.get(shared_t), sym_visibility="private",
                                    initial_value=ir.UnitAttr.get())
                g = memref.get_global(shared_t, name)
                replacement = memref.memory_space_cast(t, g)
            else:
                replacement = memref.alloca(t, [], [])
        alloc.results[0].replace_all_uses_with(replacement)
        for u in list(_all_uses(replacement)):
            if u.owner.name == "memref.dealloc":
                u.owner.erase()
        alloc.operation.erase()
    return count


def _writes(use) -> bool:
    """Whether this use of a buffer writes it."""
    owner, k = use.owner, use.operand_number
    name = owner.name
    if name.startswith("linalg.") and "operandSegmentSizes" in owner.attributes:
        n_out = list(ir.DenseI32ArrayAttr(owner.attributes["operandSegmentSizes"]))[-1]
        return k >= len(owner.operands) - n_out
    if name == "memref.copy":
        return k == 1
    if name in ("memref.store", "vector.store", "vector.transfer_write"):
        return k == 1
    return False


def _all_uses(v: ir.Value) -> list:
    """Uses of v and of the subviews (and casts) of it, transitively."""
    out, stack = [], [v]
    while stack:
        x = stack.pop()
        for u in x.uses:
            out.append(u)
            if u.owner.name in ("memref.subview", "memref.cast", "memref.expand_shape", "memref.collapse_shape"):
                stack.extend(u.owner.results)
    return out


# ---- row kernels ---------------------------------------------------------------------------------

_A = ANY_OP
ROW_THREADS = "lamina.gpu_row_threads"   # threads per row (a block), on each reduction
_RED = "lamina.gpu_reduction"
_FUSE = "lamina.gpu_fuse_"
_THREAD_FORALL = "lamina.gpu_thread_forall"


class NotARowKernel(Exception):
    pass


def default_row_threads(n: int, vector: int = 4) -> int:
    """Threads per row (a block) for rows of n elements: a divisor of n, so that every
    thread's chunk has one static size (what the per-thread buffers and vectors need), at
    least `vector` elements per thread where possible (a 128-bit access: 4 f32, 8 bf16),
    at most 256, a multiple of a warp where one divides; rows of a prime length over 256
    get 256 (chunks of two sizes)."""
    if n <= 32:
        return max(n, 1)
    divisors = [t for t in range(1, min(n, 256) + 1) if n % t == 0]
    warps = [t for t in divisors if t % 32 == 0]
    for pool in (warps, [t for t in divisors if t >= 32]):
        if pool:
            fitting = [t for t in pool if n // t >= vector]
            return max(fitting) if fitting else min(pool)
    return 256


def _pointwise_producers(op, block, reductions) -> list:
    """Linalg ops feeding `op` through pointwise ops only (not through a reduction, whose
    row values the block computes once)."""
    found, stack = [], [op]
    while stack:
        cur = stack.pop()
        ins = list(cur.operands)[:len(cur.operands) - len(cur.results)] if cur.operation.name == "linalg.generic" else list(cur.operands)
        for v in ins:
            owner = v.owner if isinstance(v, ir.OpResult) else None
            if owner is None or not owner.name.startswith("linalg.") or owner in found or owner in reductions:
                continue
            if owner.name == "linalg.generic" and len(owner.operands) == len(owner.results):
                continue   # a fill (no inputs): the reduction inits stay with the block
            found.append(owner)
            stack.append(owner)
    return found


def one_use_per_op(func_op) -> None:
    """A linalg op whose value several ops read gets a copy per reader: each copy then fuses
    into its reader's loop (fuse_into_containing_op fuses one use of a producer; a second
    reader in the same block would read the unfused original). Pointwise copies are cheap;
    a row reduction two ops read is computed twice per block (its row is in cache)."""
    block = func_op.regions[0].blocks[0]
    for op in reversed(list(block.operations)):
        if op.operation.name != "linalg.generic" or len(op.results) != 1:
            continue
        uses = [(u.owner, u.operand_number) for u in op.results[0].uses]
        for owner, index in uses[1:]:
            copy = op.operation.clone(ip=ir.InsertionPoint(op))
            owner.operands[index] = copy.results[0]


def copy_reduction_roots(func_op) -> None:
    """A reduction whose row values are a kernel output gets a copy op as the output's
    producer: the reduction then accumulates in a thread-private buffer (its init at the
    block level, which every thread runs), and one thread stores the row's value."""
    from mlir.dialects import tensor

    block = func_op.regions[0].blocks[0]
    for mat in [op for op in block.operations if op.operation.name == "bufferization.materialize_in_destination"]:
        src = mat.operands[0]
        owner = src.owner if isinstance(src, ir.OpResult) else None
        if owner is None or owner.name != "linalg.generic" or "reduction" not in _loop_kinds(owner):
            continue
        t = ir.RankedTensorType(src.type)
        identity = ir.AffineMap.get_identity(t.rank)
        with mat.location, ir.InsertionPoint(mat):
            init = tensor.EmptyOp(t.shape, t.element_type).result
            copy = linalg.GenericOp([t], [src], [init], ir.ArrayAttr.get([ir.AffineMapAttr.get(identity)] * 2),
                                    ir.ArrayAttr.get([ir.Attribute.parse("#linalg.iterator_type<parallel>")] * t.rank))
            body = copy.regions[0].blocks.append(t.element_type, t.element_type)
            with ir.InsertionPoint(body):
                linalg.YieldOp([body.arguments[0]])
        mat.operands[0] = copy.results[0]


def row_length(func_op, sizes_of, row_dims: int = 1) -> int:
    """Elements per row: the reductions' trailing `row_dims` loops (the longest)."""
    block = func_op.regions[0].blocks[0]
    n = 0
    for r in block.operations:
        if r.operation.name == "linalg.generic" and "reduction" in _loop_kinds(r):
            size = 1
            for s in sizes_of(r)[-row_dims:]:
                size *= s
            n = max(n, size)
    return n


def row_threads(func_op, n: int, vector: int = 4) -> int:
    """Threads per row: `lamina.gpu_row_threads` where a reduction has it, else
    default_row_threads."""
    block = func_op.regions[0].blocks[0]
    threads = default_row_threads(n, vector)
    for r in block.operations:
        if ROW_THREADS in r.attributes:
            threads = ir.IntegerAttr(r.attributes[ROW_THREADS]).value
    if threads < 1 or threads > 1024:
        raise NotARowKernel(f"{ROW_THREADS} = {threads}")
    return threads


def plan_rows(func_op, roots: list, sizes_of, producers_of, segments: list[int] | None = None) -> list[dict]:
    """Decisions for a kernel with row reductions (reductions over the innermost loop, the
    other loops rows; with `segments`, over the trailing [S, T, V] loops of a segmented
    row, gpu_row_segments.py): one CUDA block per row of each root, `lamina.gpu_row_threads`
    threads splitting each reduction (partials in shared memory, combined by the block) and
    the root's row. Tags what the schedule fuses where. Raises NotARowKernel otherwise."""
    block = func_op.regions[0].blocks[0]
    m = len(segments) if segments else 1   # loops of a row
    reductions = [op for op in block.operations if op.operation.name == "linalg.generic"
                  and "reduction" in _loop_kinds(op)]
    k = None
    for r in reductions:
        kinds = _loop_kinds(r)
        if kinds.count("reduction") != m or kinds[-m:] != ["reduction"] * m:
            raise NotARowKernel("a reduction that is not over the innermost loop alone")
        if segments and sizes_of(r)[-m:] != segments:
            raise NotARowKernel("rows of two lengths in a segmented kernel")
        if k is not None and k != len(kinds) - m:
            raise NotARowKernel("reductions of different row ranks")
        k = len(kinds) - m
    if not 1 <= k <= 3:
        raise NotARowKernel("rows of more than three dims (or none)")
    n = row_length(func_op, sizes_of, m)
    threads = segments[1] if segments else row_threads(func_op, n)
    # the loop the threads split: the row's (contiguous chunks) or a segment's T loop
    thread_dim = k + 1 if segments else k
    for j, r in enumerate(reductions):
        r.attributes[ROW_THREADS] = ir.IntegerAttr.get(ir.IntegerType.get_signless(64), threads)
        r.attributes[f"{_RED}_{j}"] = ir.UnitAttr.get()
        for p in _pointwise_producers(r, block, reductions):
            p.attributes[f"{_FUSE}{j}"] = ir.UnitAttr.get()
    items = []
    for i, root in enumerate(roots):
        sizes = sizes_of(root)
        if len(sizes) < k or any(s == 0 for s in sizes):
            raise NotARowKernel("a root without the rows")
        kinds = _loop_kinds(root) if "iterator_types" in root.attributes else ["parallel"] * len(sizes)
        segmented_root = bool(segments) and sizes[k:] == segments
        item = {"id": i, "rows": k, "sizes": sizes, "threads": threads, "reduction_root": None,
                "row_loops": k + m, "thread_dim": thread_dim,
                # each thread's contiguous share of a row: a vector of a segment, or its chunk
                "chunk": segments[-1] if segments else (n // threads if n % threads == 0 else None),
                "element_loop": len(sizes) > k and sizes[-1] > 1 and kinds[-1] == "parallel",
                "element_thread_dim": thread_dim if segmented_root else k}
        if root in reductions:
            item["reduction_root"] = reductions.index(root)
        else:
            tag = f"{_FUSE}root{i}"
            for p in _pointwise_producers(root, block, reductions):
                p.attributes[tag] = ir.UnitAttr.get()
        item["reductions"] = len(reductions)   # (the root's thread loop is numbered after them)
        mine = producers_of(root)
        item["reduction_ids"] = [j for j, r in enumerate(reductions) if r in mine or r == root]
        items.append(item)
    return items


def _arr(xs) -> str:
    return "[" + ", ".join(str(int(x)) for x in xs) + "]"


def _block_mapping(k: int) -> str:
    ids = ("x", "y", "z")
    return "[" + ", ".join(f"#gpu.block<{ids[k - 1 - d]}>" for d in range(k)) + "]"


def row_schedule(item: dict, root_attr: str, producer_attr: str) -> str:
    """Script 1 of a row root: block tiling by rows, producers fused into the block, each
    reduction split across the threads (tile_reduction_using_forall), the root's row (or the
    root reduction's combine, on one thread) on the threads; thread loops annotated with
    lamina.gpu_thread_forall = j for the fusions that follow (row_fusion_schedule)."""
    i, k, sizes, t = item["id"], item["rows"], item["sizes"], item["threads"]
    n_loops = len(sizes)
    lines = [
        f'%r = transform.structured.match attributes{{{root_attr} = {i} : i64}} in %root : ({_A}) -> {_A}',
        f'%bt, %bf = transform.structured.tile_using_forall %r tile_sizes {_arr([1] * k + [0] * (n_loops - k))} '
        f'(mapping = {_block_mapping(k)}) : ({_A}) -> ({_A}, {_A})',
        f'%p = transform.structured.match attributes{{{producer_attr}{i}}} in %root : ({_A}) -> {_A}',
        f'%pf, %bf2 = transform.structured.fuse_into_containing_op %p into %bf : ({_A}, {_A}) -> ({_A}, {_A})',
    ]
    split = [0] * item["row_loops"]
    split[item["thread_dim"]] = t
    for j in item["reduction_ids"]:
        lines += [
            f'%red{j} = transform.structured.match attributes{{{_RED}_{j}}} in %bf2 : ({_A}) -> {_A}',
            f'%fill{j}, %split{j}, %comb{j}, %rf{j} = transform.structured.tile_reduction_using_forall %red{j} '
            f'by num_threads = {_arr(split)} tile_sizes = [] mapping = [#gpu.thread<x>] '
            f': ({_A}) -> ({_A}, {_A}, {_A}, {_A})',
            # each thread initializes its own partial (a fill by the whole block could land
            # after another thread's partial: there is no barrier between them)
            f'%ff{j}, %rfb{j} = transform.structured.fuse_into_containing_op %fill{j} into %rf{j} '
            f': ({_A}, {_A}) -> ({_A}, {_A})',
            f'%pj{j} = transform.param.constant {j} : i64 -> !transform.param<i64>',
            f'transform.annotate %rfb{j} "{_THREAD_FORALL}" = %pj{j} : {_A}, !transform.param<i64>',
        ]
    j = item["reductions"]
    if item["reduction_root"] is not None:
        # the root is a reduction: its combine (the row's result) is written by one thread
        c = item["reduction_root"]
        lines.append(f'%rt, %rtf = transform.structured.tile_using_forall %comb{c} num_threads {_arr([1] + [0] * (k - 1))} '
                     f'(mapping = [#gpu.thread<x>]) : ({_A}) -> ({_A}, {_A})')
    elif item["element_loop"]:
        threads = [0] * n_loops
        threads[item["element_thread_dim"]] = t
        lines.append(f'%rt, %rtf = transform.structured.tile_using_forall %bt num_threads {_arr(threads)} '
                     f'(mapping = [#gpu.thread<x>]) : ({_A}) -> ({_A}, {_A})')
    else:
        lines.append(f'%rt, %rtf = transform.structured.tile_using_forall %bt num_threads {_arr([1] + [0] * (n_loops - 1))} '
                     f'(mapping = [#gpu.thread<x>]) : ({_A}) -> ({_A}, {_A})')
    lines += [f'%pr = transform.param.constant {j} : i64 -> !transform.param<i64>',
              f'transform.annotate %rtf "{_THREAD_FORALL}" = %pr : {_A}, !transform.param<i64>']
    return transform_script(lines)


def fuse_into_thread_loops(func_op, item: dict, apply) -> None:
    """Script 2, one per thread loop: the pointwise producers a thread loop reads (tagged by
    plan_rows) fused into it. Tags of copies already fused elsewhere are dropped first, so
    each script fuses the block's own copies (a producer two loops read is cloned into each)."""
    loops = [(j, f"{_FUSE}{j}") for j in item["reduction_ids"]]
    loops.append((item["reductions"], f"{_FUSE}root{item['id']}" if item["reduction_root"] is None else None))
    for j, tag in loops:
        if tag is None:
            continue
        _drop_nested_tags(func_op, tag)
        present = []
        visit_ops(func_op, lambda op: present.append(op) if tag in op.attributes else None)
        if not present:
            continue
        apply(transform_script([
            f'%f = transform.structured.match attributes{{{_THREAD_FORALL} = {j} : i64}} in %root : ({_A}) -> {_A}',
            f'%p = transform.structured.match attributes{{{tag}}} in %root : ({_A}) -> {_A}',
            f'%pf, %nf = transform.structured.fuse_into_containing_op %p into %f : ({_A}, {_A}) -> ({_A}, {_A})',
        ]))
    # (the next root's thread loops get the same numbers)
    visit_ops(func_op, lambda op: op.attributes.__delitem__(_THREAD_FORALL) if _THREAD_FORALL in op.attributes else None)


def _drop_nested_tags(func_op, tag: str) -> None:
    """Remove `tag` from ops inside thread loops (copies fused there already) and from dead
    ones (originals a fusion cloned)."""
    def visit(op):
        if tag in op.attributes and (_in_thread_forall(op) or not any(True for r in op.results for _ in r.uses)):
            del op.attributes[tag]
    visit_ops(func_op, visit)


def compensated_combines(func_op) -> int:
    """The block's combine of a split sum (linalg.reduce {addf} over the threads' partials,
    run by every thread after the barrier) as a compensated loop (Kahan): the partials are
    sums of a few elements each, and a plain sequential sum of 256 of them loses what eager's
    cascade keeps. Other combiners (max, min, products) stay as they are."""
    from mlir.dialects import scf

    reduces = []
    visit_ops(func_op, lambda op: reduces.append(op) if op.operation.name == "linalg.reduce" else None)
    n = 0
    for red in reduces:
        body = list(red.regions[0].blocks[0].operations)
        if len(body) != 2 or body[0].operation.name != "arith.addf" or len(red.operands) != 2:
            continue
        src, acc = red.operands[0], red.operands[1]
        st, at = ir.MemRefType(src.type), ir.MemRefType(acc.type)
        if not st.has_static_shape or not isinstance(st.element_type, ir.FloatType) or \
                list(st.shape[:-1]) != [1] * (st.rank - 1) or list(at.shape) != [1] * at.rank:
            continue
        with red.location, ir.InsertionPoint(red):
            index = ir.IndexType.get()
            zero_i = arith.ConstantOp(index, 0).result
            zeros = [zero_i] * at.rank
            start = memref.load(acc, zeros)
            comp0 = arith.ConstantOp(st.element_type, 0.0).result
            loop = scf.ForOp(zero_i, arith.ConstantOp(index, st.shape[-1]).result, arith.ConstantOp(index, 1).result,
                             [start, comp0])
            with ir.InsertionPoint(loop.body):
                i = loop.induction_variable
                s_, c_ = loop.inner_iter_args
                x = memref.load(src, [zero_i] * (st.rank - 1) + [i])
                y = arith.subf(x, c_)
                t = arith.addf(s_, y)
                c_new = arith.subf(arith.subf(t, s_), y)
                # (an infinite sum keeps no compensation: inf - inf would make it NaN)
                inf = arith.ConstantOp(st.element_type, float("inf")).result
                finite = arith.cmpf(arith.CmpFPredicate.OLT, math.absf(t), inf)
                c_new = arith.select(finite, c_new, comp0)
                scf.YieldOp([t, c_new])
            memref.store(loop.results[0], acc, zeros)
        red.operation.erase()
        n += 1
    return n


_SHUFFLE_TYPES = ("f32", "f64", "i32", "i64")


def _combiner(red):
    """The reduce's combining op (`arith.X %in, %init`), or None."""
    block = red.regions[0].blocks[0]
    body = list(block.operations)
    if len(body) != 2 or len(body[0].results) != 1:
        return None
    op = body[0]
    if not op.operation.name.startswith("arith.") or set(op.operands) != set(block.arguments):
        return None
    return op


def _combine(combiner, a, b):
    op = ir.Operation.create(combiner.operation.name, results=[a.type], operands=[a, b],
                             attributes={k: combiner.attributes[k] for k in combiner.attributes})
    return op.results[0]


def warp_combines(func_op, module_body: ir.Block, prefix: str, threads: int) -> int:
    """The block's combine of the threads' partials as a tree: each warp combines its 32
    partials with shuffles (gpu.shuffle xor: 5 steps), lane 0 stores the warp's value in
    shared memory, and after a barrier every thread combines the threads / 32 warp values
    (at most 8) -- instead of every thread reading all the partials in a row. Needs whole
    warps (threads a multiple of 32) and a partial type a shuffle moves (f32/f64/i32/i64);
    other combines stay loops (compensated_combines)."""
    from mlir.dialects import gpu, scf

    if threads % 32 or threads > 1024:
        return 0
    warps = threads // 32
    reduces = []
    visit_ops(func_op, lambda op: reduces.append(op) if op.operation.name == "linalg.reduce" else None)
    n = 0
    for red in reduces:
        combiner = _combiner(red)
        if combiner is None or len(red.operands) != 2:
            continue
        src, acc = red.operands[0], red.operands[1]
        st, at = ir.MemRefType(src.type), ir.MemRefType(acc.type)
        if str(st.element_type) not in _SHUFFLE_TYPES or not st.has_static_shape or st.shape[-1] != threads \
                or list(st.shape[:-1]) != [1] * (st.rank - 1) or list(at.shape) != [1] * at.rank:
            continue
        elem = st.element_type
        name = f"{prefix}_warps_{n}"
        with red.location, ir.InsertionPoint(red):
            index, i32 = ir.IndexType.get(), ir.IntegerType.get_signless(32)
            zero = arith.ConstantOp(index, 0).result
            tid = gpu.thread_id(gpu.Dimension.x)
            p = memref.load(src, [zero] * (st.rank - 1) + [tid])
            width = arith.ConstantOp(i32, 32).result
            for offset in (16, 8, 4, 2, 1):
                shuffled = gpu.ShuffleOp(p, arith.ConstantOp(i32, offset).result, width, gpu.ShuffleMode.XOR).results[0]
                p = _combine(combiner, p, shuffled)
            warp_t = ir.MemRefType.get([warps], elem, None, ir.Attribute.parse("#gpu.address_space<workgroup>"))
            with ir.InsertionPoint.at_block_begin(module_body):
                memref.GlobalOp(sym_name=name, type_=ir.TypeAttr.get(warp_t), sym_visibility="private",
                                initial_value=ir.UnitAttr.get())
            totals = memref.memory_space_cast(ir.MemRefType.get([warps], elem), memref.get_global(warp_t, name))
            c32 = arith.ConstantOp(index, 32).result
            lane = arith.remui(tid, c32)
            first = arith.cmpi(arith.CmpIPredicate.eq, lane, zero)
            if_op = scf.IfOp(first)
            with ir.InsertionPoint(if_op.then_block):
                memref.store(p, totals, [arith.divui(tid, c32)])
                scf.YieldOp([])
            gpu.barrier()
            value = memref.load(acc, [zero] * at.rank)
            for w in range(warps):
                value = _combine(combiner, value, memref.load(totals, [arith.ConstantOp(index, w).result]))
            memref.store(value, acc, [zero] * at.rank)
        red.operation.erase()
        n += 1
    return n


def erase_self_copies(func_op) -> None:
    copies = []
    visit_ops(func_op, lambda op: copies.append(op) if op.operation.name == "memref.copy"
          and op.operands[0] == op.operands[1] else None)
    for c in copies:
        c.operation.erase()


def check_block_writes(func_op) -> None:
    """Code of a block outside its thread loops runs on every thread: it may only write
    thread-private buffers (a write to a kernel argument there would race)."""
    def visit(op):
        name = op.operation.name
        if _in_thread_forall(op) or not (name.startswith("linalg.") or name in ("memref.copy", "memref.store", "vector.store")):
            return
        if name.startswith("linalg.") and "operandSegmentSizes" in op.attributes:
            n_out = list(ir.DenseI32ArrayAttr(op.attributes["operandSegmentSizes"]))[-1]
            written = list(op.operands)[len(op.operands) - n_out:]
        elif name == "memref.copy":
            written = [op.operands[1]]
        elif name == "memref.store":
            written = [op.operands[1]]
        elif name == "vector.store":
            written = [op.operands[1]]
        else:
            return
        for v in written:
            base = v
            while isinstance(base, ir.OpResult) and base.owner.name in ("memref.subview", "memref.cast"):
                base = base.owner.operands[0]
            if isinstance(base, ir.BlockArgument):
                raise ValueError("a write to a kernel argument outside the thread loops")
    for op in func_op.regions[0].blocks[0].operations:
        if op.operation.name == "scf.forall":
            visit_ops(op, visit)
