"""Schedules for kernels without a contraction (part of lamina-tile-cpu): the elementwise ops
a kernel stores run as parallel outer tiles and vector inner tiles.

After elementwise fusion, every top-level all-parallel linalg.generic of a kernel with an
identity output map (dynamic sizes too: the peeled vector remainder is masked) (the fused pointwise chains, stored or not) is tiled; for
such an op R of loop sizes [d0, ..., dn-1]:

    lamina.tile_sizes   = array<i64: T, 0, ...>   scf.forall over one dim (-> OpenMP), chunks
                                                  of ceil(d/threads); all zeros (no forall)
                                                  when R has fewer than GRAIN elements, so a
                                                  small kernel does not pay an OpenMP fork
    lamina.vector_sizes = array<i64: 1, ..., V>   the register tile: V = f32 lanes of the host
                                                  (16 with AVX-512, else 8) along the last dim

The schedule: tile_using_forall by the tile sizes, tile_using_for by the vector sizes, peel
the vector loop (full tiles get static vectors, the remainder a masked one), vectorize every
tile with its vector sizes. A reduction generic gets only `lamina.tile_sizes`: parallel tiles
over its outermost parallel loop above the grain (each thread reduces whole rows); its inner
loops stay scalar (lamina's compensated sums are not linalg reductions the vectorizer knows).
Attributes already on an op win (set them in the IR and replay lamina-tile-cpu to override);
transposes get parallel tiles and, when they swap the last two dims, 8x8 vector tiles (of
symbolic size too: `lamina.tile_sizes = array<i64: -1, 0, ...>` splits dim 0 into chunks of
about GRAIN / threads elements computed at run time, by the index op marked
`lamina.chunk_of`); other data movement (copies, gathers) stays untiled for now.
"""
from __future__ import annotations

import functools
import math
import os

from mlir import ir
from mlir.dialects import arith, tensor

from ..codegen.blas import is_library
from .transposed_epilogues import swapped_map

TILE_SIZES = "lamina.tile_sizes"
VECTOR_SIZES = "lamina.vector_sizes"
TILE_ID = "lamina.tile_id"
RUNTIME_CHUNK = -1   # in lamina.tile_sizes: a chunk of that dim sized at run time (dynamic shapes)
CHUNK_OF = "lamina.chunk_of"   # marks the index op computing the run-time chunk of a tiled op

GRAIN = 1 << 15          # elements per op below which one thread runs it (fork ~5-10 us)
POINTWISE_ID_BASE = 2000000   # tile ids of pointwise roots (contractions use 0.., 1000000..)


@functools.lru_cache(maxsize=None)
def vector_lanes() -> int:
    """f32 lanes of the host's widest vector unit the JIT targets (it compiles for the host);
    LAMINA_VECTOR_LANES=8|16 overrides it (lit tests pin it, so their IR is host-independent)."""
    forced = os.environ.get("LAMINA_VECTOR_LANES", "").strip()
    if forced:
        return int(forced)
    try:
        with open("/proc/cpuinfo") as f:
            flags = next((line for line in f if line.startswith("flags")), "")
    except OSError:
        flags = ""
    return 16 if " avx512f" in flags else 8


def threads() -> int:
    from ..codegen.host import fact

    return fact("threads", _torch_threads)


def _torch_threads() -> int:
    try:
        import torch

        return max(1, torch.get_num_threads())
    except ImportError:
        return max(1, os.cpu_count() or 1)


def _i64s(attr) -> list[int]:
    return list(ir.DenseI64ArrayAttr(attr))


def _all_parallel_identity(op) -> list[int] | None:
    """Loop sizes of an all-parallel linalg.generic with an identity output map and static
    shapes, else None."""
    if op.operation.name != "linalg.generic" or len(op.results) < 1:
        return None
    if any("parallel" not in str(a) for a in ir.ArrayAttr(op.attributes["iterator_types"])):
        return None
    maps = ir.ArrayAttr(op.attributes["indexing_maps"])
    t = ir.RankedTensorType(op.results[0].type)
    if t.rank == 0:
        return None
    identity = ir.AffineMap.get_identity(t.rank)
    for i, r in enumerate(op.results):   # every result: the same shape, written in loop order
        out_map = ir.AffineMapAttr(maps[len(maps) - len(op.results) + i]).value
        if list(ir.RankedTensorType(r.type).shape) != list(t.shape) or out_map != identity:
            return None
    sizes = [-1 if t.is_dynamic_dim(i) else t.get_dim_size(i) for i in range(t.rank)]
    return None if 0 in sizes else sizes


def default_sizes(sizes: list[int]) -> tuple[list[int], list[int]]:
    """Outer (parallel) and inner (vector) tiles of loops of `sizes` (-1: dynamic). An op of
    dynamic size gets no parallel tiles here: a kernel of symbolic shape runs its rows in
    chunks sized at run time (row_kernel.py)."""
    rank = len(sizes)
    outer = [0] * rank
    n = threads()
    if -1 not in sizes and math.prod(sizes) >= GRAIN and n > 1:
        # The outermost dim that splits into a chunk per thread (the last only for rank 1).
        cands = [d for d in range(rank) if sizes[d] >= n and (d < rank - 1 or rank == 1)]
        if cands:
            d = cands[0]
            outer[d] = -(-sizes[d] // n)
    inner = [1] * (rank - 1) + [vector_lanes()]
    return outer, inner


def _reduction_loops(op) -> tuple[list[int], list[str]] | None:
    """(loop sizes, iterator kinds) of a static linalg.generic with reduction loops, else None."""
    if op.operation.name != "linalg.generic":
        return None
    kinds = ["reduction" if "reduction" in str(a) else "parallel"
             for a in ir.ArrayAttr(op.attributes["iterator_types"])]
    if "reduction" not in kinds:
        return None
    maps = [ir.AffineMapAttr(m).value for m in ir.ArrayAttr(op.attributes["indexing_maps"])]
    sizes: list = [None] * len(kinds)
    for m, v in zip(maps, list(op.operands)):
        t = ir.ShapedType(v.type)
        if not t.has_static_shape:
            return None
        for k, e in enumerate(m.results):
            if isinstance(e, ir.AffineDimExpr):
                sizes[ir.AffineDimExpr(e).position] = t.get_dim_size(k)
    if None in sizes or 0 in sizes:
        return None
    return sizes, kinds


def reduction_sizes(sizes: list[int], kinds: list[str]) -> list[int]:
    """Parallel tiles over the outermost parallel loop that splits into a chunk per thread
    (reduction loops stay whole: each tile reduces complete rows); all zeros below the grain."""
    outer = [0] * len(sizes)
    n = threads()
    if math.prod(sizes) >= GRAIN and n > 1:
        for d, (size, kind) in enumerate(zip(sizes, kinds)):
            if kind == "parallel" and size >= n:
                outer[d] = -(-size // n)
                break
    return outer


def chunk_size(per_index: ir.Value) -> ir.Value:
    """Indices of a dim per parallel chunk when each index covers `per_index` elements
    (known only at run time): about GRAIN / threads elements a chunk, at least one index. A
    call of at least GRAIN elements then has a chunk per thread and forks, as the static
    schedule does; a smaller one runs on one thread (gomp.py sizes the team)."""
    idx = ir.IndexType.get()
    one = arith.constant(idx, 1)
    work = arith.constant(idx, max(1, GRAIN // max(1, threads())))
    return arith.maxsi(one, arith.ceildivsi(work, arith.maxsi(per_index, one)))


def _runtime_chunk(op, dim: int, tid: int) -> None:
    """Before `op`, the index op computing the run-time chunk of its loop `dim` (from the
    sizes of the loops after it), tagged for the schedule's tile_using_forall."""
    out = op.operands[len(op.operands) - 1]
    t = ir.RankedTensorType(out.type)
    with ir.InsertionPoint(op), op.location:
        idx = ir.IndexType.get()
        per_index = arith.constant(idx, 1)
        for j in range(dim + 1, t.rank):
            d = tensor.dim(out, arith.constant(idx, j)) if t.is_dynamic_dim(j) else arith.constant(idx, t.get_dim_size(j))
            per_index = arith.muli(per_index, d)
        chunk = chunk_size(per_index)
    chunk.owner.attributes[CHUNK_OF] = ir.IntegerAttr.get(ir.IntegerType.get_signless(64), tid)


TRANSPOSE_TILE = 8   # an 8x8 f32 block: 8 vector loads, an in-register transpose, 8 stores


def _transpose_tile(op, sizes: list[int]) -> list[int] | None:
    """The vector tile of a linalg.transpose that swaps its last two dims (the weight
    transpose of F.linear, attention's K^T): [1, ..., 8, 8], so each tile is read as 8
    rows and written as 8 rows (vector.transpose, lowered with shuffles); other
    permutations keep scalar loops."""
    perm = list(ir.DenseI64ArrayAttr(op.attributes["permutation"]))
    n = len(perm)
    t = ir.RankedTensorType(op.results[0].type)
    if n < 2 or perm != list(range(n - 2)) + [n - 1, n - 2] or str(t.element_type) != "f32":
        return None
    if 0 <= sizes[-1] < TRANSPOSE_TILE or 0 <= sizes[-2] < TRANSPOSE_TILE:   # -1: dynamic
        return None
    return [1] * (n - 2) + [TRANSPOSE_TILE, TRANSPOSE_TILE]


def transposing_sizes(op) -> list[int] | None:
    """Loop sizes of an all-parallel generic of static f32 shapes whose outputs are all
    written with the last two loops swapped (lowering/transposed_epilogues.py: a transpose
    folded into its epilogue), else None."""
    if op.operation.name != "linalg.generic" or len(op.results) < 1:
        return None
    if any("parallel" not in str(a) for a in ir.ArrayAttr(op.attributes["iterator_types"])):
        return None
    maps = [ir.AffineMapAttr(m).value for m in ir.ArrayAttr(op.attributes["indexing_maps"])]
    t = ir.RankedTensorType(op.results[0].type)
    n = t.rank
    if n < 2 or maps[0].n_dims != n:
        return None
    swapped = swapped_map(n)
    for i, r in enumerate(op.results):
        rt = ir.RankedTensorType(r.type)
        if maps[len(maps) - len(op.results) + i] != swapped or list(rt.shape) != list(t.shape) \
                or str(rt.element_type) != "f32":
            return None
    if any(t.is_dynamic_dim(i) for i in range(n)) or 0 in list(t.shape):
        return None
    sizes = list(t.shape)
    return sizes[:-2] + [sizes[-1], sizes[-2]]


def _feeds_library_contraction(op) -> bool:
    """An op that lamina-contraction-to-blas folds into its BLAS call, so it stays a plain
    linalg op: the fill of the contraction's init (beta = 0) or the transpose of an operand
    (a 'T' view), when the contraction is its only user."""
    if op.operation.name not in ("linalg.fill", "linalg.transpose") or len(op.results) != 1:
        return False
    uses = list(op.results[0].uses)
    return len(uses) == 1 and is_library(uses[0].owner)


def plan_pointwise(block: ir.Block, next_id: list[int]) -> list[dict]:
    """Record the decisions on the ops of one kernel; return the schedule items.

    Stored all-parallel ops and intermediate ones alike get vector tiles (and parallel tiles
    above the grain); reductions get parallel tiles over their rows (above the grain) and
    keep their scalar inner loops (compensated sums do not vectorize as linalg reductions)."""
    items = []
    for op in block.operations:
        if is_library(op) or _feeds_library_contraction(op):
            continue  # a BLAS call after bufferization (codegen/blas.py)
        red = _reduction_loops(op)
        if red is not None:
            outer = reduction_sizes(*red)
            if TILE_SIZES in op.attributes:
                outer = _i64s(op.attributes[TILE_SIZES])
            else:
                op.attributes[TILE_SIZES] = ir.DenseI64ArrayAttr.get(outer)
            if len(outer) != len(red[0]) or any(x < 0 for x in outer) or \
                    any(x for x, k in zip(outer, red[1]) if k == "reduction"):
                raise ValueError(f"lamina-tile-cpu: bad {TILE_SIZES} {outer} on a reduction with loops {red[1]}")
            if any(outer):
                tid = _new_tile_id(op, next_id)
                items.append(dict(id=tid, outer=outer, inner=None))
            continue
        if op.operation.name == "linalg.transpose":
            rt = ir.RankedTensorType(op.results[0].type)
            sizes = [-1 if rt.is_dynamic_dim(i) else rt.get_dim_size(i) for i in range(rt.rank)]
            if 0 in sizes or not sizes:
                continue
            if TILE_SIZES in op.attributes:
                outer = _i64s(op.attributes[TILE_SIZES])
            elif -1 in sizes and threads() > 1 and len(sizes) > 1:
                outer = [RUNTIME_CHUNK] + [0] * (len(sizes) - 1)   # dim 0 in chunks sized at run time
            else:
                outer = default_sizes(sizes)[0]
            if len(outer) != len(sizes) or any(x < RUNTIME_CHUNK for x in outer) or outer.count(RUNTIME_CHUNK) > 1:
                raise ValueError(f"lamina-tile-cpu: bad {TILE_SIZES} {outer} on a transpose of loops {sizes}")
            op.attributes[TILE_SIZES] = ir.DenseI64ArrayAttr.get(outer)
            inner = _transpose_tile(op, sizes)
            if inner is not None:
                inner = _i64s(op.attributes[VECTOR_SIZES]) if VECTOR_SIZES in op.attributes else inner
                op.attributes[VECTOR_SIZES] = ir.DenseI64ArrayAttr.get(inner)
            if any(outer) or inner is not None:
                tid = _new_tile_id(op, next_id)
                if RUNTIME_CHUNK in outer:
                    _runtime_chunk(op, outer.index(RUNTIME_CHUNK), tid)
                items.append(dict(id=tid, outer=outer, inner=inner, peel_all=True))
            continue
        sizes = _all_parallel_identity(op)
        if sizes is None:
            sizes = transposing_sizes(op)
            if sizes is not None:
                items += _plan_transposing(op, sizes, next_id)
            continue
        outer, inner = default_sizes(sizes)
        if TILE_SIZES in op.attributes:
            outer = _i64s(op.attributes[TILE_SIZES])
        else:
            op.attributes[TILE_SIZES] = ir.DenseI64ArrayAttr.get(outer)
        if _loops_in_body(op):
            # a loop per element (orthogonal polynomials): parallel tiles, scalar elements
            # (the vectorizer takes no region in a body)
            if any(x < 0 for x in outer) or len(outer) != len(sizes):
                raise ValueError(f"lamina-tile-cpu: bad {TILE_SIZES} {outer} on a pointwise op with loops {sizes}")
            if any(outer):
                tid = _new_tile_id(op, next_id)
                items.append(dict(id=tid, outer=outer, inner=None))
            continue
        if VECTOR_SIZES in op.attributes:
            inner = _i64s(op.attributes[VECTOR_SIZES])
        else:
            op.attributes[VECTOR_SIZES] = ir.DenseI64ArrayAttr.get(inner)
        if len(outer) != len(sizes) or len(inner) != len(sizes) or any(x <= 0 for x in inner) \
                or any(x < 0 for x in outer):
            raise ValueError(f"lamina-tile-cpu: bad {TILE_SIZES}/{VECTOR_SIZES} {outer}/{inner} "
                             f"on a pointwise op with loops {sizes}")
        tid = _new_tile_id(op, next_id)
        items.append(dict(id=tid, outer=outer, inner=inner))
    return items


def _plan_transposing(op, sizes: list[int], next_id: list[int]) -> list[dict]:
    """A transposing generic's plan: parallel tiles as a pointwise op's, and the 8x8 vector
    tiles of a transpose (both loops peeled) where both swapped loops have 8 or more
    iterations, scalar elements otherwise."""
    outer = _i64s(op.attributes[TILE_SIZES]) if TILE_SIZES in op.attributes else default_sizes(sizes)[0]
    op.attributes[TILE_SIZES] = ir.DenseI64ArrayAttr.get(outer)
    if VECTOR_SIZES in op.attributes:
        inner = _i64s(op.attributes[VECTOR_SIZES])
    elif min(sizes[-2:]) >= TRANSPOSE_TILE:
        inner = [1] * (len(sizes) - 2) + [TRANSPOSE_TILE, TRANSPOSE_TILE]
        op.attributes[VECTOR_SIZES] = ir.DenseI64ArrayAttr.get(inner)
    else:
        inner = None
    if len(outer) != len(sizes) or any(x < 0 for x in outer) or \
            (inner is not None and (len(inner) != len(sizes) or any(x <= 0 for x in inner))):
        raise ValueError(f"lamina-tile-cpu: bad {TILE_SIZES}/{VECTOR_SIZES} {outer}/{inner} "
                         f"on a transposing op with loops {sizes}")
    if not any(outer) and inner is None:
        return []
    n = len(sizes)
    # tiles along the output's rows innermost: 8 rows written in sequence (as a transpose's)
    interchange = list(range(n - 2)) + [n - 1, n - 2]
    return [dict(id=_new_tile_id(op, next_id), outer=outer, inner=inner, peel_all=True, interchange=interchange)]


def _new_tile_id(op, next_id: list[int]) -> int:
    """The next pointwise tile id, recorded on `op` (lamina.tile_id names it in the schedule)."""
    tid = POINTWISE_ID_BASE + next_id[0]
    next_id[0] += 1
    op.attributes[TILE_ID] = ir.IntegerAttr.get(ir.IntegerType.get_signless(64), tid)
    return tid


def _loops_in_body(op) -> bool:
    """A body with a loop per element (an scf.while: lowering/orthogonal_polynomials.py);
    vectorize_reductions' own bodies with regions vectorize as planned."""
    return any(o.operation.name == "scf.while" for o in op.regions[0].blocks[0].operations)


def _arr(xs) -> str:
    return "[" + ", ".join(str(x) for x in xs) + "]"


def _dense(xs) -> str:
    return "array<i64: " + ", ".join(str(x) for x in xs) + ">"


def peel_loops(loops: list[str]) -> list[str]:
    """Transform-script lines that peel each scf.for handle in `loops` (a loop whose trip
    count divides evenly cannot be peeled, a silenceable failure: suppressed).

    `loops` lists each tiled op's loops outermost first; they are peeled innermost first, so
    peeling an outer loop clones inner loops that are already peeled, and every remainder
    (outer remainder x inner main, ...) gets static shapes. Outer first would leave the inner
    loop of the outer remainder unpeeled: a masked, dynamic-shape body for all its iterations
    (a 50x50 matmul tile, 2 remainder rows: 4x slower than the rest)."""
    if not loops:
        return []
    loops = loops[::-1]
    return [f'%loops = transform.merge_handles {", ".join(loops)} : !transform.any_op',
            '%floops = transform.cast %loops : !transform.any_op to !transform.op<"scf.for">',
            'transform.foreach %floops : !transform.op<"scf.for"> {\n'
            '^bb0(%l: !transform.op<"scf.for">):\n'
            '  transform.sequence %l : !transform.op<"scf.for"> failures(suppress) {\n'
            '  ^bb1(%l1: !transform.op<"scf.for">):\n'
            '    %main, %rem = transform.loop.peel %l1 : (!transform.op<"scf.for">) -> (!transform.any_op, !transform.any_op)\n'
            '  }\n'
            '}']


def build_pointwise_schedule(items: list[dict]) -> str:
    A = "!transform.any_op"
    body = []
    vec_loops = []
    for it in items:
        t = it["id"]
        body.append(f'%r{t} = transform.structured.match attributes{{{TILE_ID} = {t} : i64}} in %f : ({A}) -> {A}')
        root = f"%r{t}"
        if RUNTIME_CHUNK in it["outer"]:
            body.append(f'%c{t} = transform.structured.match attributes{{{CHUNK_OF} = {t} : i64}} in %f : ({A}) -> {A}')
            sizes = ", ".join(f"%c{t}" if x == RUNTIME_CHUNK else str(x) for x in it["outer"])
            body.append(f'%t{t}, %fa{t} = transform.structured.tile_using_forall {root} tile_sizes [{sizes}] : ({A}, {A}) -> ({A}, {A})')
            root = f"%t{t}"
        elif any(it["outer"]):
            body.append(f'%t{t}, %fa{t} = transform.structured.tile_using_forall {root} tile_sizes {_arr(it["outer"])} : ({A}) -> ({A}, {A})')
            root = f"%t{t}"
        if it["inner"] is None:
            continue
        n = sum(1 for x in it["inner"] if x)
        loops = ", ".join(f"%l{t}_{j}" for j in range(n))
        interchange = f' interchange = {_arr(it["interchange"])}' if it.get("interchange") else ""
        body.append(f'%v{t}, {loops} = transform.structured.tile_using_for {root} tile_sizes {_arr(it["inner"])}'
                    f'{interchange} : ({A}) -> ({", ".join([A] * (1 + n))})')
        if it.get("peel_all"):
            vec_loops += [f"%l{t}_{j}" for j, x in enumerate(x for x in it["inner"] if x) if x > 1]
        elif it["inner"][-1] > 1:
            vec_loops.append(f"%l{t}_{n - 1}")
    # Peel the vector loops: full tiles get static shapes (plain vectors), the remainder a
    # dynamic one (masked).
    body += peel_loops(vec_loops)
    body.append('transform.apply_patterns to %f {\n  transform.apply_patterns.canonicalization\n} : !transform.any_op')
    for sizes in sorted({tuple(it["inner"]) for it in items if it["inner"] is not None}):
        k = "_".join(str(x) for x in sizes)
        body.append(f'%p_{k} = transform.structured.match attributes{{{VECTOR_SIZES} = {_dense(sizes)}}} in %f : ({A}) -> {A}')
        body.append(f'transform.foreach %p_{k} : {A} {{\n^bb0(%o: {A}):\n'
                    f'  transform.sequence %o : {A} failures(suppress) {{\n'
                    f'  ^bb1(%o1: {A}):\n'
                    f'    transform.structured.vectorize %o1 vector_sizes {_arr(sizes)} : {A}\n'
                    f'  }}\n}}')
    # vector<1x...x1xV> -> vector<V>: 1-D vectors are what LLVM (and math-to-llvm) handle.
    body.append('transform.apply_patterns to %f {\n'
                '  transform.apply_patterns.vector.cast_away_vector_leading_one_dim\n'
                '  transform.apply_patterns.vector.transfer_permutation_patterns\n'
                '  transform.apply_patterns.vector.lower_masked_transfers\n'
                '  transform.apply_patterns.canonicalization\n'
                '} : !transform.any_op')
    if any(it.get("peel_all") and it["inner"] is not None for it in items):
        # Transposed tiles: vector.transpose of 8x8 as shuffles (not element by element).
        body.append('transform.apply_patterns to %f {\n'
                    '  transform.apply_patterns.vector.lower_transpose lowering_strategy = "shuffle_1d" avx2_lowering_strategy = true\n'
                    '} : !transform.any_op')
    body.append('transform.apply_cse to %f : !transform.any_op')
    body.append('transform.yield')
    inner = "\n".join("    " + line for chunk in body for line in chunk.splitlines())
    return ('module attributes {transform.with_named_sequence} {\n'
            '  transform.named_sequence @__transform_main(%f: !transform.any_op {transform.readonly}) {\n'
            f'{inner}\n'
            '  }\n'
            '}\n')
