"""lamina-map-gpu (L5, cuda target with `gpu_codegen="nvvm"`): map kernels onto CUDA blocks
and threads with transform-dialect schedules, the first half of the NVVM code generator
(nvvm_lower.py is the second: outlining and PTX).

Runs on kernel functions in lamina-kernel-abi form (memrefs at the boundary, linalg on
tensors inside). For each kernel it can map (`mappable`: static shapes, no size 0, only
parallel loops, ops that implement TilingInterface), after upstream elementwise fusion:

  1. every root (an op whose value a `materialize_in_destination` stores) gets its
     decisions as attributes, unless the user set them first:
        lamina.gpu_tile    = array<i64: 2, 100>   block tile per loop (one CUDA block each)
        lamina.gpu_threads = array<i64: 2, 100>   threads per loop inside a block (0: the
                                                  loop is not split across threads)
  2. the schedule (one transform script per kernel, `dump_schedule` prints it):
        tile_using_forall(root, tile_sizes = gpu_tile)  mapped to #gpu.block<x/y/z>
        fuse_into_containing_op(root's producers)       (each tile recomputes what it reads)
        tile_using_forall(tiled root, num_threads = gpu_threads) mapped to #gpu.thread<x/y/z>
        fuse_into_containing_op(the fused producers)
  3. bufferization (results straight into the output memrefs), then
     map_forall_to_blocks(generate_gpu_launch) and map_nested_forall_to_threads: one
     `gpu.launch` per root in the kernel function, which stays a host function.

A kernel it cannot map keeps its linalg body and gets `lamina.gpu_codegen = "triton: <why>"`
(lamina-to-triton emits it, and the report counts it); a mapped one gets "nvvm". Every
attempt runs on a copy of the kernel, so a failure leaves the kernel as it was.
"""
from __future__ import annotations

import sys

from mlir import ir, passmanager
from mlir.dialects.transform import interpreter

from ...lowering.kernel_abi import kernel_functions
from ...lowering.tiling import _unshare_inits
from ...transforms.registry import register_pass

GPU_TILE = "lamina.gpu_tile"
GPU_THREADS = "lamina.gpu_threads"
GPU_CODEGEN = "lamina.gpu_codegen"
_ROOT = "lamina.gpu_root"
_PRODUCER = "lamina.gpu_producer_"

THREADS_PER_BLOCK = 256
_BLOCK_IDS = ("x", "y", "z")

# Ops a mappable kernel body may hold at its top level (besides linalg ops that tile).
_BODY_OPS = ("bufferization.to_tensor", "bufferization.materialize_in_destination", "tensor.empty",
             "arith.constant", "func.return")
# Ops inside linalg bodies that have no NVVM lowering here (loops per element stay on Triton).
_UNSUPPORTED_IN_BODY = ("scf.while", "func.call")


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


def _walk_body(op, visit) -> None:
    for region in op.regions:
        for block in region.blocks:
            for inner in block.operations:
                visit(inner)
                _walk_body(inner, visit)


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
            its = op.attributes["iterator_types"] if "iterator_types" in op.attributes else None
            if its is not None and any("reduction" in str(a) for a in ir.ArrayAttr(its)):
                raise NotMappable("a reduction")
            _check_types(list(op.operands) + list(op.results), name)

            def visit(inner):
                if inner.operation.name in _UNSUPPORTED_IN_BODY:
                    raise NotMappable(f"{inner.operation.name} in a loop body")
            _walk_body(op, visit)
        elif name == "arith.constant":
            if fused and isinstance(op.results[0].type, ir.ShapedType):
                raise NotMappable("a constant tensor")
        elif name not in _BODY_OPS:
            raise NotMappable(name)
    if not any(op.operation.name == "bufferization.materialize_in_destination" for op in block.operations):
        raise NotMappable("no output")


# ---- decisions -----------------------------------------------------------------------------------

def default_mapping(sizes: list[int]) -> tuple[list[int], list[int]]:
    """Block tile and threads per loop of a parallel op with static `sizes`: the innermost
    loops fill one block of THREADS_PER_BLOCK threads, one element per thread (adjacent
    threads, adjacent elements: coalesced); at most three loops split across threads."""
    n = len(sizes)
    tile, threads = [1] * n, [0] * n
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
    for i, root in enumerate(_roots(block)):
        sizes = _loop_sizes(root)
        if not sizes:
            raise NotMappable("a rank-0 output")
        tile, threads = default_mapping(sizes)
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
        for p in _producers(root, block):
            p.attributes[f"{_PRODUCER}{i}"] = ir.UnitAttr.get()
        items.append({"id": i, "sizes": sizes, "tile": tile, "threads": threads,
                      "block_dims": block_dims, "thread_dims": thread_dims,
                      "has_producers": bool(_producers(root, block))})
    return items


# ---- the schedule --------------------------------------------------------------------------------

_A = "!transform.any_op"


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
            lines.append(f'%tt{i}, %tf{i} = transform.structured.tile_using_forall %bt{i} num_threads {_arr(it["threads"])} '
                         f'(mapping = {_mapping("thread", it["thread_dims"])}) : ({_A}) -> ({_A}, {_A})')
            if fused:
                lines.append(f'%qf{i}, %tf{i}b = transform.structured.fuse_into_containing_op {fused} into %tf{i} '
                             f': ({_A}, {_A}) -> ({_A}, {_A})')
    body = "\n    ".join(lines)
    return (f'module attributes {{transform.with_named_sequence}} {{\n'
            f'  transform.named_sequence @__transform_main(%root: {_A} {{transform.readonly}}) {{\n'
            f'    {body}\n    transform.yield\n  }}\n}}\n')


def _apply(func_op, text: str, dump: bool) -> None:
    if dump:
        print(text, file=sys.stderr)
    schedule = ir.Module.parse(text, context=func_op.context)
    main = next(op for op in schedule.body.operations
                if ir.StringAttr(op.attributes["sym_name"]).value == "__transform_main")
    interpreter.apply_named_sequence(func_op.operation, main, schedule)


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
    # named ops (transpose, broadcast, copy) as generics, so that they fuse into their users
    _run(func_op, "func.func(linalg-generalize-named-ops, linalg-fuse-elementwise-ops, canonicalize, cse)")
    _unshare_inits(func_op)
    check_mappable(func_op)
    items = plan_kernel(func_op)
    func_op.operation.verify()
    _apply(func_op, build_tiling_schedule(items), dump_schedule)
    _run(func_op, "func.func(canonicalize, cse)")
    # (one-shot-bufferize works on modules; the kernel is alone in its scratch module)
    _run(func_op.parent if hasattr(func_op, "parent") else func_op,
         "builtin.module(eliminate-empty-tensors, one-shot-bufferize, canonicalize, cse)")
    block = func_op.regions[0].blocks[0]
    allocs = []
    _walk_body(func_op, lambda op: allocs.append(op) if op.operation.name in ("memref.alloc", "memref.alloca") else None)
    if allocs:
        raise NotMappable("a temporary buffer (a producer that did not fuse)")
    launches = [op for op in block.operations if op.operation.name == "scf.forall"]
    if len(launches) != len(items):
        raise NotMappable("not every root became one block loop")
    # each root's forall gets its own threads: map them one at a time
    for forall, it in zip(launches, items):
        forall.attributes["lamina.gpu_launch_pending"] = ir.UnitAttr.get()
    for it in items:
        pending = next(op for op in func_op.regions[0].blocks[0].operations
                       if "lamina.gpu_launch_pending" in op.attributes)
        del pending.attributes["lamina.gpu_launch_pending"]
        _map_one_forall(func_op, pending, _threads_of(it), dump_schedule)
    _run(func_op, "func.func(canonicalize, cse)")
    func_op.attributes[GPU_CODEGEN] = ir.StringAttr.get("nvvm")


def _map_one_forall(func_op, forall, threads: list[int], dump: bool) -> None:
    """map_forall_to_blocks over the whole function would take every top-level forall at
    once (it allows one): wrap this forall's mapping in a transform that targets it alone."""
    forall.attributes["lamina.gpu_map_now"] = ir.UnitAttr.get()
    bx, by, bz = (threads + [1, 1, 1])[:3]
    text = (f'module attributes {{transform.with_named_sequence}} {{\n'
            f'  transform.named_sequence @__transform_main(%root: {_A} {{transform.readonly}}) {{\n'
            f'    %f = transform.structured.match ops{{["scf.forall"]}} attributes{{lamina.gpu_map_now}} in %root : ({_A}) -> {_A}\n'
            f'    %launch = transform.gpu.map_forall_to_blocks %f generate_gpu_launch : ({_A}) -> {_A}\n'
            f'    %mapped = transform.gpu.map_nested_forall_to_threads %launch block_dims = {_arr([bx, by, bz])} '
            f': ({_A}) -> {_A}\n'
            f'    transform.yield\n  }}\n}}\n')
    _apply(func_op, text, dump)


def map_gpu(module: ir.Module, *, dump_schedule: bool = False, kernels=None) -> dict[str, str]:
    """Map every kernel of `module` this generator can (each on a copy first); returns
    {kernel: "nvvm" | "triton: <why>"} and records it as lamina.gpu_codegen."""
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
            except NotMappable as e:
                why = f"triton: {e}"
            except Exception as e:   # an MLIR failure (a transform it does not take): the kernel stays
                first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
                why = f"triton: mapping failed ({first[:120]})"
            else:
                copy.move_before(func_op.operation)
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
