"""lamina-map-gpu (L5, cuda target with `gpu_codegen="nvvm"`): map kernels onto CUDA blocks
and threads with transform-dialect schedules, the first half of the NVVM code generator
(nvvm_lower.py is the second: outlining and PTX; nvvm_runtime.py launches the result).

Runs on kernel functions in lamina-kernel-abi form (memrefs at the boundary, linalg on
tensors inside), each on a copy: a kernel it cannot map (dynamic shapes, contractions,
scans, ...) keeps its linalg body and gets `lamina.gpu_codegen = "triton: <why>"`
(lamina-to-triton emits it, the report lists it); a mapped one gets "nvvm". First the
data-movement named ops become generics and elementwise fusion merges what it can
(compensated sums become plain ones, unit dims are folded where there are reductions,
outputs stored as reshapes are stored into views of the output buffer). Then:

* pointwise kernels (and reductions over outer loops only, whose loop stays whole in each
  thread's tile): every root (an op a `materialize_in_destination` stores) gets its
  decisions as attributes, unless the user set them first,
        lamina.gpu_tile    = array<i64: 8, 100>   block tile per loop (one CUDA block each)
        lamina.gpu_threads = array<i64: 8, 25>    threads per loop inside a block (0: the
                                                  loop is not split across threads)
  and one schedule (`dump_schedule` prints it): tile_using_forall(root, gpu_tile) mapped
  to #gpu.block, the root's producers fused, tile_using_forall to #gpu.thread (tile sizes
  per thread when the tiles divide the loops: then the thread's ops are vectorized, 16
  bytes per thread; num_threads otherwise), the producers fused again;
* row kernels (a reduction over the innermost loop: softmax, norms): gpu_reductions.py,
  one block per row, reductions split across the threads and combined through shared
  memory and warp shuffles;

then bufferization, vector transfers to loads and stores (aligned where provably so),
and map_forall_to_blocks(generate_gpu_launch) / map_nested_forall_to_threads: one
`gpu.launch` per root in the kernel function, which stays a host function of launches.
"""
from __future__ import annotations


from mlir import ir, passmanager

from ...lowering.kernel_abi import kernel_functions
from ...lowering.kernel_cse import unshare_destinations, unshare_for_bufferization
from ...lowering.tiling import _loop_kinds, _try_vectorize_each
from ...lowering.vector_math import expand_small_powers
from ...transforms.common import ANY_OP, apply_transform_script, transform_script, visit_ops
from ...transforms.registry import register_pass
from ..cpu import _identity_layout, copies_to_loops
from .gpu_reductions import (ROW_THREADS, NotARowKernel, _in_thread_forall, check_block_writes,
                             compensated_combines, copy_reduction_roots, erase_self_copies, fuse_into_thread_loops,
                             one_use_per_op, plain_sums, plan_rows, row_length, row_schedule, row_threads,
                             shared_partials, warp_combines)
from .gpu_row_segments import segment_rows, segment_shape
from .gpu_vectors import (TRANSFER_LOWERING, aligned_operands, mark_aligned_accesses, row_aligned_operands,
                          argument_vector_elements, written_arguments)

GPU_TILE = "lamina.gpu_tile"
GPU_THREADS = "lamina.gpu_threads"
GPU_CODEGEN = "lamina.gpu_codegen"
GPU_ALIGNED_ARGS = "lamina.gpu_aligned_args"   # arguments whose base must be 16-byte aligned
GPU_WRITTEN_ARGS = "lamina.gpu_written_args"   # (and of those, the ones the kernel writes)
_ROOT = "lamina.gpu_root"
_PRODUCER = "lamina.gpu_producer_"

THREADS_PER_BLOCK = 256
_BLOCK_IDS = ("x", "y", "z")

# Ops a mappable kernel body may hold at its top level (besides linalg ops that tile).
_BODY_OPS = ("bufferization.to_tensor", "bufferization.materialize_in_destination", "tensor.empty",
             "arith.constant", "func.return", "memref.collapse_shape", "memref.expand_shape")
# Ops inside linalg bodies that have no NVVM lowering here (loops per element stay on Triton).
_UNSUPPORTED_IN_BODY = ("scf.while", "func.call")


# Views of a kernel argument (after bufferization: memref views of the argument's buffer,
# read by the tiles like the argument itself)
_VIEW_OPS = ("tensor.collapse_shape", "tensor.expand_shape", "tensor.extract_slice")


def _views_an_argument(v: ir.Value) -> bool:
    while isinstance(v, ir.OpResult) and v.owner.name in _VIEW_OPS:
        v = v.owner.operands[0]
    return isinstance(v, ir.OpResult) and v.owner.name == "bufferization.to_tensor" and \
        isinstance(v.owner.operands[0], ir.BlockArgument)


class NotMappable(Exception):
    """Why a kernel stays on the Triton generator (its message goes into lamina.gpu_codegen)."""


def _static_shape(t: ir.Type) -> list[int] | None:
    if not isinstance(t, ir.ShapedType):
        return []
    st = ir.ShapedType(t)
    if not st.has_rank or not st.has_static_shape:
        return None
    return list(st.shape)


def _element_ok(t: ir.Type) -> bool:
    if isinstance(t, ir.ShapedType):
        t = ir.ShapedType(t).element_type
    return not isinstance(t, ir.ComplexType)


def _check_types(values, what: str) -> None:
    for v in values:
        shape = _static_shape(v.type)
        if shape is None:
            raise NotMappable(f"dynamic shape in {what}")
        if 0 in shape:
            raise NotMappable("a size 0")
        if not _element_ok(v.type):
            raise NotMappable("complex element type")


def check_mappable(func_op, fused: bool = True) -> None:
    """Raise NotMappable with the reason when this generator cannot map the kernel
    (`fused`: after elementwise fusion, which folds splat constant tensors into bodies)."""
    from .operand_views import OUTPUT_SOURCES, VIEW_OUTPUTS

    for attr in (VIEW_OUTPUTS, OUTPUT_SOURCES):
        if attr in func_op.attributes:
            raise NotMappable("outputs that are views of inputs")
    block = func_op.regions[0].blocks[0]
    _check_types(block.arguments, "the kernel's operands")
    for op in block.operations:
        name = op.operation.name
        if name.startswith("linalg."):
            if name in ("linalg.matmul", "linalg.batch_matmul") or name.startswith("linalg.conv") \
                    or name.startswith("linalg.pooling"):
                raise NotMappable(f"{name} (contractions and convolutions)")
            _check_types(list(op.operands) + list(op.results), name)

            def visit(inner):
                if inner.operation.name in _UNSUPPORTED_IN_BODY:
                    raise NotMappable(f"{inner.operation.name} in a loop body")
            visit_ops(op, visit)
        elif name == "arith.constant":
            if fused and isinstance(op.results[0].type, ir.ShapedType):
                raise NotMappable("a constant tensor")
        elif name in _VIEW_OPS:
            if fused and not _views_an_argument(op.results[0]):
                raise NotMappable(f"{name} of a computed value")
        elif name.startswith(("arith.", "math.")) and not any(isinstance(r.type, ir.ShapedType) for r in op.results):
            continue   # scalar arithmetic (recomputed in the launches: nvvm_lower.sink_constants)
        elif name not in _BODY_OPS:
            raise NotMappable(name)
    if not any(op.operation.name == "bufferization.materialize_in_destination" for op in block.operations):
        raise NotMappable("no output")


def reshaped_outputs_to_views(func_op) -> int:
    """An output stored as a reshape of a computed value (a keepdim row value [8, 10, 1]
    computed as [8, 10]) is stored unreshaped into the inverse reshape of the output
    buffer (a memref view): the value's producer stays the output's root."""
    from mlir.dialects import memref

    block = func_op.regions[0].blocks[0]
    n = 0
    for mat in [op for op in block.operations if op.operation.name == "bufferization.materialize_in_destination"]:
        src, dest = mat.operands[0], mat.operands[1]
        owner = src.owner if isinstance(src, ir.OpResult) else None
        if owner is None or owner.name not in ("tensor.expand_shape", "tensor.collapse_shape") \
                or not isinstance(dest.type, ir.MemRefType) or not _identity_layout(dest.type):
            continue
        value = owner.operands[0]
        vt = ir.RankedTensorType(value.type)
        reassoc = owner.attributes["reassociation"]
        with mat.location, ir.InsertionPoint(mat):
            view_t = ir.MemRefType.get(vt.shape, vt.element_type)
            if owner.name == "tensor.expand_shape":   # the value has fewer dims: collapse the buffer
                view = memref.collapse_shape(view_t, dest, reassoc)
            else:
                view = memref.expand_shape(view_t, dest, reassoc, [], list(vt.shape))
        mat.operands[0] = value
        mat.operands[1] = view
        if not any(True for _ in owner.results[0].uses):
            owner.erase()
        n += 1
    return n


# ---- decisions -----------------------------------------------------------------------------------

def _largest_divisor(n: int, at_most: int) -> int:
    for d in range(min(n, at_most), 0, -1):
        if n % d == 0:
            return d
    return 1


def default_mapping(sizes: list[int], vector: int = 1, kinds: list[str] | None = None) -> tuple[list[int], list[int]]:
    """Block tile and threads per loop of a parallel op with static `sizes`.

    Vector path (`vector` > 1 elements make 16 bytes, and the innermost loop is a multiple
    of it): each thread takes `vector` adjacent elements of the innermost loop (one 128-bit
    load or store per operand), up to THREADS_PER_BLOCK threads per block, tiles that
    divide the loops exactly (static tiles: what vectorization needs). Otherwise, or when no
    divisor gives at least a warp across the innermost loop: one element per thread, tiles
    of the innermost loops filling a block (the last ones partial). Adjacent threads take
    adjacent elements (coalesced); at most three loops split across threads. Reduction
    loops (`kinds`; never the innermost here) stay whole in every thread's tile."""
    n = len(sizes)
    if kinds and "reduction" in kinds:
        tile, threads = [1] * n, [0] * n
        par = [d for d in range(n) if kinds[d] == "parallel"]
        sub_tile, sub_threads = default_mapping([sizes[d] for d in par], vector)
        for d, t, th in zip(par, sub_tile, sub_threads):
            tile[d], threads[d] = t, th
        for d in range(n):
            if kinds[d] == "reduction":
                tile[d] = sizes[d]
        return tile, threads
    tile, threads = [1] * n, [0] * n
    inner = sizes[-1] // vector if vector > 1 and sizes[-1] % vector == 0 else 0
    if inner:
        tx = _largest_divisor(inner, THREADS_PER_BLOCK)
        if tx >= min(32, inner):
            tile[-1], threads[-1] = tx * vector, tx
            budget = THREADS_PER_BLOCK // tx
            for d in reversed(range(max(0, n - 3), n - 1)):
                if budget <= 1 or tile[d + 1] < sizes[d + 1]:
                    break
                t = _largest_divisor(sizes[d], budget)
                tile[d] = t
                if t > 1:
                    threads[d] = t
                budget //= t
            return tile, threads
    budget = THREADS_PER_BLOCK
    for d in reversed(range(n)):
        if budget <= 1 or n - d > 3:
            break
        t = min(sizes[d], budget)
        tile[d] = t
        if t > 1:
            threads[d] = t
        budget //= t
        if t < sizes[d]:
            break
    return tile, threads


def static_tiles(sizes: list[int], tile: list[int], threads: list[int]) -> list[int] | None:
    """Each thread's tile when the block tiles divide the loops and the threads divide the
    block tiles (every tile static: the thread's ops vectorize), else None."""
    per_thread = []
    for size, t, th in zip(sizes, tile, threads):
        if size % t or (th and t % th):
            return None
        per_thread.append(t // th if th else t)
    return per_thread


def _i64s(attr) -> list[int]:
    return [int(x) for x in ir.DenseI64ArrayAttr(attr)]


def _loop_sizes(op) -> list[int]:
    """Static loop sizes of a tileable linalg op (from its indexing maps and shapes)."""
    shapes = [_static_shape(v.type) for v in list(op.operands)]
    if "indexing_maps" in op.attributes:
        maps = [ir.AffineMapAttr(m).value for m in ir.ArrayAttr(op.attributes["indexing_maps"])]
        n = maps[0].n_dims
        sizes = [None] * n
        for m, shape in zip(maps, shapes):
            for pos, e in enumerate(m.results):
                if isinstance(e, ir.AffineDimExpr) and shape:
                    sizes[ir.AffineDimExpr(e).position] = shape[pos]
        if None in sizes:
            raise NotMappable("a loop no operand's shape gives")
        return sizes
    # named ops (linalg.transpose, copy, broadcast, fill): the loops are the init's dims
    return _static_shape(op.results[0].type) or []


def _roots(block) -> list:
    roots = []
    for op in block.operations:
        if op.operation.name == "bufferization.materialize_in_destination":
            src = op.operands[0]
            owner = src.owner if isinstance(src, ir.OpResult) else None
            if owner is None or not owner.name.startswith("linalg."):
                raise NotMappable("an output that is not computed by a linalg op")
            if owner not in [r for r in roots]:
                roots.append(owner)
    return roots


def _producers(root, block) -> list:
    """Linalg ops of the kernel whose values `root` reads, transitively."""
    found, stack = [], [root]
    while stack:
        op = stack.pop()
        for v in op.operands:
            if not isinstance(v, ir.OpResult):
                continue
            owner = v.owner
            if owner.name.startswith("linalg.") and owner not in found and owner != root:
                found.append(owner)
                stack.append(owner)
    return found


def plan_kernel(func_op) -> list[dict]:
    """Record the mapping decisions on each root of the kernel (keeping any already there)."""
    block = func_op.regions[0].blocks[0]
    items = []
    # 16 bytes of the widest element in memory per thread (a bf16 kernel computing in f32
    # moves 8 elements at a time)
    vector = argument_vector_elements(func_op)
    for i, root in enumerate(_roots(block)):
        sizes = _loop_sizes(root)
        if not sizes:
            raise NotMappable("a rank-0 output")
        kinds = _loop_kinds(root) if "iterator_types" in root.attributes else None
        producers = _producers(root, block)
        tile, threads = default_mapping(sizes, vector, kinds)
        if GPU_TILE in root.attributes:
            tile = _i64s(root.attributes[GPU_TILE])
        if GPU_THREADS in root.attributes:
            threads = _i64s(root.attributes[GPU_THREADS])
        if len(tile) != len(sizes) or len(threads) != len(sizes):
            raise NotMappable(f"{GPU_TILE}/{GPU_THREADS} of the wrong length")
        block_dims = [d for d in range(len(sizes)) if tile[d] < sizes[d]]
        thread_dims = [d for d in range(len(sizes)) if threads[d] > 0]
        if len(block_dims) > 3 or len(thread_dims) > 3:
            raise NotMappable("more than three loops across blocks or threads")
        total = 1
        for t in threads:
            total *= max(t, 1)
        if total > 1024:
            raise NotMappable("more than 1024 threads per block")
        root.attributes[GPU_TILE] = ir.DenseI64ArrayAttr.get(tile)
        root.attributes[GPU_THREADS] = ir.DenseI64ArrayAttr.get(threads)
        root.attributes[_ROOT] = ir.IntegerAttr.get(ir.IntegerType.get_signless(64), i)
        for p in producers:
            p.attributes[f"{_PRODUCER}{i}"] = ir.UnitAttr.get()
        items.append({"id": i, "sizes": sizes, "tile": tile, "threads": threads,
                      "block_dims": block_dims, "thread_dims": thread_dims,
                      "per_thread": static_tiles(sizes, tile, threads),
                      # (a thread's tile with a whole reduction loop would be one huge vector)
                      "vectorize": not any("reduction" in _loop_kinds(op)
                                           for op in [root] + producers if "iterator_types" in op.attributes),
                      "has_producers": bool(producers)})
    return items


# ---- the schedule --------------------------------------------------------------------------------

_A = ANY_OP


def _mapping(kind: str, dims: list[int]) -> str:
    # innermost loop -> x: consecutive threads (blocks) take consecutive elements (tiles)
    ids = {d: _BLOCK_IDS[len(dims) - 1 - k] for k, d in enumerate(dims)}
    return "[" + ", ".join(f"#gpu.{kind}<{ids[d]}>" for d in dims) + "]"


def _arr(xs) -> str:
    return "[" + ", ".join(str(int(x)) for x in xs) + "]"


def build_tiling_schedule(items: list[dict]) -> str:
    lines = []
    for it in items:
        i = it["id"]
        tile_sizes = [0 if d not in it["block_dims"] else t for d, t in enumerate(it["tile"])]
        lines.append(f'%r{i} = transform.structured.match attributes{{{_ROOT} = {i} : i64}} in %root : ({_A}) -> {_A}')
        if it["block_dims"]:
            lines.append(f'%bt{i}, %bf{i} = transform.structured.tile_using_forall %r{i} tile_sizes {_arr(tile_sizes)} '
                         f'(mapping = {_mapping("block", it["block_dims"])}) : ({_A}) -> ({_A}, {_A})')
        else:   # one block: a forall of one iteration, so the kernel still has a grid to map
            ones = [1] * len(it["tile"])
            lines.append(f'%bt{i}, %bf{i} = transform.structured.tile_using_forall %r{i} num_threads {_arr(ones[:1] + [0] * (len(ones) - 1))} '
                         f'(mapping = [#gpu.block<x>]) : ({_A}) -> ({_A}, {_A})')
        fused = None
        if it["has_producers"]:
            lines.append(f'%p{i} = transform.structured.match attributes{{{_PRODUCER}{i}}} in %root : ({_A}) -> {_A}')
            lines.append(f'%pf{i}, %bf{i}b = transform.structured.fuse_into_containing_op %p{i} into %bf{i} '
                         f': ({_A}, {_A}) -> ({_A}, {_A})')
            fused = f"%pf{i}"
        if it["thread_dims"]:
            per_thread = it["per_thread"]
            if per_thread is not None:   # static tiles: tile sizes per thread, then vectors
                sizes = [per_thread[d] if d in it["thread_dims"] else 0 for d in range(len(per_thread))]
                how = f"tile_sizes {_arr(sizes)}"
            else:
                how = f"num_threads {_arr(it['threads'])}"
            lines.append(f'%tt{i}, %tf{i} = transform.structured.tile_using_forall %bt{i} {how} '
                         f'(mapping = {_mapping("thread", it["thread_dims"])}) : ({_A}) -> ({_A}, {_A})')
            if fused:
                lines.append(f'%qf{i}, %tf{i}b = transform.structured.fuse_into_containing_op {fused} into %tf{i} '
                             f': ({_A}, {_A}) -> ({_A}, {_A})')
            if per_thread is not None and per_thread[-1] > 1 and it["vectorize"]:   # (one element: nothing to vectorize)
                forall = f"%tf{i}b" if fused else f"%tf{i}"
                lines.append(f'%v{i} = transform.structured.match interface{{LinalgOp}} in {forall} : ({_A}) -> {_A}')
                lines.append(f'transform.structured.vectorize %v{i} : {_A}')
    return transform_script(lines)


def _apply(func_op, text: str, dump: bool) -> None:
    apply_transform_script(func_op, text, dump)


def _run(op, pipeline: str) -> None:
    passmanager.PassManager.parse(pipeline, context=op.context).run(op.operation)


def _threads_of(it: dict) -> list[int]:
    """block_dims of the launch: thread counts of the mapped loops, x = innermost."""
    counts = [it["threads"][d] for d in it["thread_dims"]]
    return list(reversed(counts)) or [1]


def map_kernel(func_op, *, dump_schedule: bool = False) -> None:
    """Map one kernel (in place); NotMappable or an MLIR error leaves it partly rewritten,
    so callers work on a copy (map_gpu)."""
    check_mappable(func_op, fused=False)
    func_op.operation.verify()
    expand_small_powers(func_op)   # (x ** 2 as x * x, not libdevice's general powf)
    plain_sums(func_op)
    block = func_op.regions[0].blocks[0]
    # row kernels: a reduction over the innermost loop (softmax, norms); reductions over
    # outer loops only (a bias gradient's column sums) map like pointwise kernels, each
    # thread looping over the reduced rows of its columns
    rows = any("reduction" in str(list(ir.ArrayAttr(op.attributes["iterator_types"]))[-1])
               for op in block.operations if op.operation.name == "linalg.generic")
    # named ops (transpose, broadcast, copy) as generics, so that they fuse into their users;
    # with reductions, unit dims folded away (a keepdim reduction's (d0, 0) output map is
    # one that tiling cannot take)
    reduces = any("reduction" in str(op.attributes["iterator_types"]) for op in block.operations
                  if op.operation.name == "linalg.generic")
    fold = "linalg-fold-unit-extent-dims, " if reduces else ""
    _apply(func_op, _GENERALIZE, dump_schedule)
    # (unit dims folded again after fusion: an elementwise op on keepdim row values, fed by
    # expand_shapes of the reductions' folded results, would keep the reshape otherwise)
    _run(func_op, f"func.func({fold}linalg-fuse-elementwise-ops, {fold}canonicalize, cse)")
    unshare_destinations(func_op)
    reshaped_outputs_to_views(func_op)
    check_mappable(func_op)
    if rows:
        _map_row_kernel(func_op, dump_schedule)
    else:
        _map_pointwise_kernel(func_op, dump_schedule)
    _run(func_op, "func.func(canonicalize, cse)")
    _check_host_function(func_op)
    func_op.attributes[GPU_CODEGEN] = ir.StringAttr.get("nvvm")


_HOST_OPS = ("gpu.launch", "func.return", "ub.poison", "memref.collapse_shape", "memref.expand_shape",
             "memref.subview", "memref.cast")


def _check_host_function(func_op) -> None:
    """After mapping, the kernel function may only launch (what nvvm_runtime.host_launches
    reads): work left outside the launches (a producer no block loop took) is refused."""
    for op in func_op.regions[0].blocks[0].operations:
        name = op.operation.name
        if name not in _HOST_OPS and not name.startswith(("arith.", "math.")):
            raise NotMappable(f"{name} outside the launches")


def _bufferize(func_op) -> None:
    # (one-shot-bufferize works on modules; the kernel is alone in its scratch module)
    unshare_for_bufferization(func_op)   # (cse merged them: no output may start from another's destination)
    _run(func_op.parent, "builtin.module(eliminate-empty-tensors, one-shot-bufferize, canonicalize, cse)")


def _map_block_loops(func_op, threads_per_root: list[list[int]], dump: bool) -> None:
    """Each root's block loop (a top-level scf.forall, in order) becomes a gpu.launch."""
    block = func_op.regions[0].blocks[0]
    launches = [op for op in block.operations if op.operation.name == "scf.forall"]
    if len(launches) != len(threads_per_root):
        raise NotMappable("not every root became one block loop")
    for forall in launches:
        forall.attributes["lamina.gpu_launch_pending"] = ir.UnitAttr.get()
    for threads in threads_per_root:
        pending = next(op for op in func_op.regions[0].blocks[0].operations
                       if "lamina.gpu_launch_pending" in op.attributes)
        del pending.attributes["lamina.gpu_launch_pending"]
        _map_one_forall(func_op, pending, threads, dump)


def _in_launch_loop(op) -> bool:
    parent = op.operation.parent
    while parent is not None and parent.name != "func.func":
        if parent.name == "scf.forall":
            return True
        parent = parent.parent
    return False


def _map_pointwise_kernel(func_op, dump_schedule: bool) -> None:
    items = plan_kernel(func_op)
    candidates = aligned_operands(func_op, items, _ROOT)
    written = written_arguments(func_op)
    func_op.operation.verify()
    _apply(func_op, build_tiling_schedule(items), dump_schedule)
    _run(func_op, "func.func(canonicalize, cse)")
    _bufferize(func_op)
    erase_self_copies(func_op)
    copies_to_loops(func_op)
    outside = []
    visit_ops(func_op, lambda op: outside.append(op) if op.operation.name == "memref.alloc"
               and not _in_launch_loop(op) else None)
    if outside:
        raise NotMappable("a temporary buffer (a producer that did not fuse)")
    try:   # a thread's own temporaries (a column sum's accumulator) private, anything the block shares in shared memory
        name = ir.StringAttr(func_op.attributes["sym_name"]).value   # (globals per kernel: no clash when moved)
        shared_partials(func_op, func_op.parent.regions[0].blocks[0], f"__lamina_{name}")
    except ValueError as e:
        raise NotMappable(str(e)) from None
    _apply(func_op, TRANSFER_LOWERING, dump_schedule)
    aligned = mark_aligned_accesses(func_op, candidates)
    if aligned:
        func_op.attributes[GPU_ALIGNED_ARGS] = ir.DenseI64ArrayAttr.get(sorted(aligned))
        func_op.attributes[GPU_WRITTEN_ARGS] = ir.DenseI64ArrayAttr.get(sorted(written))
    _map_block_loops(func_op, [_threads_of(it) for it in items], dump_schedule)


def _map_row_kernel(func_op, dump_schedule: bool) -> None:
    """Kernels with row reductions (softmax, norms, sums over the last dim): gpu_reductions.py."""
    block = func_op.regions[0].blocks[0]
    try:
        segments = _segment_long_rows(func_op)
        copy_reduction_roots(func_op)
        one_use_per_op(func_op)
        unshare_destinations(func_op)
        roots = _roots(block)
        items = plan_rows(func_op, roots, _loop_sizes, lambda root: _producers(root, block), segments)
    except NotARowKernel as e:
        raise NotMappable(str(e)) from None
    for i, root in enumerate(roots):
        root.attributes[_ROOT] = ir.IntegerAttr.get(ir.IntegerType.get_signless(64), i)
        for p in _producers(root, block):
            p.attributes[f"{_PRODUCER}{i}"] = ir.UnitAttr.get()
    # arguments every op reads or writes along the row with the row's innermost index: a
    # thread's chunk starts at a multiple of the chunk there
    row_candidates = row_aligned_operands(func_op, items[0]["chunk"] or 0)
    written = written_arguments(func_op)
    func_op.operation.verify()
    for item in items:
        unshare_destinations(func_op)   # (each fill fuses into the one loop that reads it)
        _apply(func_op, row_schedule(item, _ROOT, _PRODUCER), dump_schedule)
        _run(func_op, "func.func(canonicalize)")   # (the originals the block fusion cloned; no CSE,
        fuse_into_thread_loops(func_op, item, lambda text: _apply(func_op, text, dump_schedule))
        _run(func_op, "func.func(canonicalize)")   # which would merge equal fills again)
    chunk = items[0]["chunk"] if all(it["chunk"] == items[0]["chunk"] for it in items) else None
    vectorized = chunk is not None and chunk > 1 and _vectorize_thread_tiles(func_op, dump_schedule)
    unshare_destinations(func_op)
    _bufferize(func_op)
    erase_self_copies(func_op)
    copies_to_loops(func_op)   # (a strided memref.copy would call MLIR's runtime: no such thing on the GPU)
    name = ir.StringAttr(func_op.attributes["sym_name"]).value
    module_body = func_op.parent.regions[0].blocks[0]
    if len({it["threads"] for it in items}) == 1:
        warp_combines(func_op, module_body, f"__lamina_{name}", items[0]["threads"])
    compensated_combines(func_op)   # (the combines warp_combines left)
    if vectorized:
        _apply(func_op, TRANSFER_LOWERING, dump_schedule)
        aligned = mark_aligned_accesses(func_op, row_candidates, through_reshapes=True)
        if aligned:
            func_op.attributes[GPU_ALIGNED_ARGS] = ir.DenseI64ArrayAttr.get(sorted(aligned))
            func_op.attributes[GPU_WRITTEN_ARGS] = ir.DenseI64ArrayAttr.get(sorted(written))
    shared_partials(func_op, module_body, f"__lamina_{name}")
    try:
        check_block_writes(func_op)
    except ValueError as e:
        raise NotMappable(str(e)) from None
    _map_block_loops(func_op, [[it["threads"]] for it in items], dump_schedule)


def _decide_row_threads(func_op) -> tuple[int, int, int]:
    """(row length, threads per row, vector elements): the vector is 16 bytes of the widest
    element the kernel's arguments hold (a bf16 row computed in f32 reads 8 elements at a
    time); the threads are recorded on the reductions (lamina.gpu_row_threads)."""
    n = row_length(func_op, _loop_sizes)
    vector = argument_vector_elements(func_op)
    threads = row_threads(func_op, n, vector)
    _set_row_threads(func_op, threads)
    return n, threads, vector


def _set_row_threads(func_op, threads: int) -> None:
    for op in func_op.regions[0].blocks[0].operations:
        if op.operation.name == "linalg.generic" and "reduction" in _loop_kinds(op):
            op.attributes[ROW_THREADS] = ir.IntegerAttr.get(ir.IntegerType.get_signless(64), threads)


def _segment_long_rows(func_op) -> list[int] | None:
    """Rows longer than a vector per thread, segmented (gpu_row_segments.py): tried on a
    copy first, since the propagation may stop short of some op (then the rows stay whole:
    contiguous chunks per thread, correct but uncoalesced)."""
    n, threads, vector = _decide_row_threads(func_op)
    segments = segment_shape(n, threads, vector)
    if segments is None:
        return None
    with func_op.context, func_op.location:
        trial_module = ir.Module.create()
        trial = func_op.operation.clone(ip=ir.InsertionPoint(trial_module.body))
        try:
            segment_rows(trial.opview if hasattr(trial, "opview") else trial, n, segments)
        except Exception:   # (not segmented entirely, or a pass failed on the copy)
            return None
        _adopt_body(func_op, trial)
    reshaped_outputs_to_views(func_op)
    _set_row_threads(func_op, threads)   # (the propagation rebuilt the ops)
    return segments


def _adopt_body(func_op, other) -> None:
    """Replace func_op's body by the ops of `other`, a function of the same signature (the
    rewritten copy), instead of rewriting func_op a second time."""
    mine, theirs = func_op.regions[0].blocks[0], other.regions[0].blocks[0]
    for ours, its in zip(mine.arguments, theirs.arguments):
        its.replace_all_uses_with(ours)
    for op in reversed(list(mine.operations)):
        op.operation.erase()
    for op in list(theirs.operations):
        mine.append(op.operation)


def _vectorize_thread_tiles(func_op, dump: bool) -> bool:
    """Each thread's ops on its chunk of the row as vectors (registers instead of a local
    buffer per value; 128-bit accesses where aligned)."""
    count = [0]

    def tag(op):
        if op.operation.name.startswith("linalg.") and _in_thread_forall(op):
            op.attributes["lamina.gpu_vectorize"] = ir.UnitAttr.get()
            count[0] += 1
    visit_ops(func_op, tag)
    if not count[0]:
        return False
    _apply(func_op, transform_script([
        f'%ops = transform.structured.match attributes{{lamina.gpu_vectorize}} in %root : ({_A}) -> {_A}',
        _try_vectorize_each("%ops")]), dump)
    return True


# Data-movement named ops as generics (elementwise fusion then merges them into their users);
# fills stay fills: a reduction's init fuses into its loops as one
_GENERALIZE = transform_script([
    f'%ops = transform.structured.match ops{{["linalg.transpose", "linalg.broadcast", "linalg.copy", "linalg.map", '
    f'"linalg.elementwise", "linalg.reduce"]}} in %root : ({_A}) -> {_A}',
    f'transform.structured.generalize %ops : ({_A}) -> {_A}'])


def _map_one_forall(func_op, forall, threads: list[int], dump: bool) -> None:
    """map_forall_to_blocks over the whole function would take every top-level forall at
    once (it allows one): wrap this forall's mapping in a transform that targets it alone."""
    forall.attributes["lamina.gpu_map_now"] = ir.UnitAttr.get()
    bx, by, bz = (threads + [1, 1, 1])[:3]
    _apply(func_op, transform_script([
        f'%f = transform.structured.match ops{{["scf.forall"]}} attributes{{lamina.gpu_map_now}} in %root '
        f': ({_A}) -> {_A}',
        f'%launch = transform.gpu.map_forall_to_blocks %f generate_gpu_launch : ({_A}) -> {_A}',
        f'%mapped = transform.gpu.map_nested_forall_to_threads %launch block_dims = {_arr([bx, by, bz])} '
        f': ({_A}) -> {_A}']), dump)


def map_gpu(module: ir.Module, *, dump_schedule: bool = False, kernels=None, ptx_arch: str | None = None) -> dict[str, str]:
    """Map every kernel of `module` this generator can (each on a copy first); returns
    {kernel: "nvvm" | "triton: <why>"} and records it as lamina.gpu_codegen. With
    `ptx_arch`, each mapped copy is also compiled to PTX (lamina-to-nvvm) before it replaces
    the kernel, so that a failure there too leaves the kernel to Triton."""
    results = {}
    for func_op in kernel_functions(module):
        name = ir.StringAttr(func_op.attributes["sym_name"]).value
        if kernels is not None and name not in kernels:
            continue
        if GPU_CODEGEN in func_op.attributes and ir.StringAttr(func_op.attributes[GPU_CODEGEN]).value == "triton":
            results[name] = "triton: requested"
            continue
        with func_op.context, ir.Location.unknown():
            scratch = ir.Module.create()
            copy = func_op.operation.clone(ip=ir.InsertionPoint(scratch.body))
            try:
                map_kernel(copy.opview if hasattr(copy, "opview") else copy, dump_schedule=dump_schedule)
                if ptx_arch is not None:
                    from .nvvm_lower import lower_to_ptx

                    lower_to_ptx(scratch, arch=ptx_arch)
            except NotMappable as e:
                why = f"triton: {e}"
            except Exception as e:   # an MLIR failure (a transform it does not take): the kernel stays
                first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
                why = f"triton: mapping failed ({first[:120]})"
            else:
                for op in list(scratch.body.operations):   # the kernel (and its gpu.binary or globals)
                    op.move_before(func_op.operation)
                if "gpu.container_module" in scratch.operation.attributes:
                    module.operation.attributes["gpu.container_module"] = ir.UnitAttr.get()
                func_op.operation.erase()
                results[name] = "nvvm"
                continue
        func_op.attributes[GPU_CODEGEN] = ir.StringAttr.get(why)
        results[name] = why
    return results


def _register() -> None:
    register_pass("lamina-map-gpu", level="L5",
                  description="cuda target, NVVM generator: map kernels onto blocks and threads (transform "
                              "schedules; decisions as lamina.gpu_tile / lamina.gpu_threads) as gpu.launch")(
        lambda module, **options: map_gpu(module, dump_schedule=bool(options.get("dump_schedule")))
    )


_register()
