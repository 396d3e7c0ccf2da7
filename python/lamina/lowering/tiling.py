"""lamina-tile-cpu (L4): tile, parallelize and vectorize kernels with transform-dialect
schedules. Kernels without a contraction go to tile_pointwise.py (elementwise ops: vector
tiles, parallel tiles above a grain) after vector_reduce.py has turned their row reductions
into vector code; the rest of this docstring is about contraction kernels.

Runs on kernel functions (`lamina.kernel`) after lamina-kernel-abi, while their bodies are
still linalg on tensors (between bufferization.to_tensor and materialize_in_destination).
Kernels without a contraction (linalg.matmul, linalg.batch_matmul, or a linalg.generic that
`linalg.isa_contraction_op` accepts) are left untouched, and so is a contraction with a
static size 0 in any operand or result (lamina-to-linalg emits none, but hand-written IR
may: tiling it would assert). The kernel is verified before the schedule is applied, so
invalid IR raises instead of aborting. For each contraction C:

  1. fuse the elementwise epilogue (upstream linalg-fuse-elementwise-ops, on this kernel only)
     so bias + relu (...) become one linalg.generic E consuming C;
  2. decide, and record as attributes on C before anything is applied (a user who sets them
     first wins; the pass then only fills in what is missing):
        lamina.tile_sizes   = array<i64: 64, 64, 0>   outer tiles per loop of C (0 = whole loop),
                                                      parallel loops run in parallel (scf.forall
                                                      -> OpenMP); a reduction entry > 0 blocks
                                                      the k loop inside each tile (a multiple
                                                      of its vector size; default 0, K_BLOCK)
        lamina.vector_sizes = array<i64: 8, 32, 1>    register tile per loop of C (the vector
                                                      shape; the reduction loop steps by it)
  3. apply the schedule (passes/cpu-tiling.mlir documents the same sequence for one matmul):
        tile_using_forall(root = E if C feeds only E, else C)  + fuse C and C's init (fill)
        tile_using_for every op in the forall by its register tile; peel every such loop so
        full tiles have static shapes; vectorize (masked on the peeled remainders);
        reduction_to_contract, hoist the accumulator out of the k loop
        (hoist_loop_invariant_subsets), lower vector.contract to outer products (FMAs).

The output still needs bufferization and the vector lowerings: passes/cpu-tiled.pipeline.
Options (lamina-opt `--lamina-tile-cpu="annotate-only=1"`): annotate_only records the
decisions without applying them; dump_schedule prints each generated transform script.
"""
from __future__ import annotations

import os

from mlir import ir, passmanager
from mlir.dialects import linalg

from ..codegen.blas import epilogues_in_place, is_library, mark_contractions
from ..codegen.conv_library import mark_convolutions
from ..transforms.common import apply_transform_script
from ..transforms.registry import register_pass
from .conv_channels_last import channels_last_convolutions, choose_layouts
from .kernel_abi import kernel_functions
from .kernel_cse import unshare_destinations
from .tile_pointwise import (TILE_ID, TILE_SIZES, VECTOR_SIZES, _arr, _dense, _i64s, build_pointwise_schedule,
                             peel_loops, plan_pointwise, vector_lanes)
from .transposed_epilogues import (cancel_transpose_pairs, fuse_transposed_epilogues, reshape_arguments_as_views,
                                   split_group_swaps, store_through_reshapes, unswap_transposed_outputs)
from .row_kernel import row_block
from .vector_reduce import vectorize_reductions


# Defaults for f32: 64x64 output tiles per OpenMP task (A/B panels of 64xK stay in L2 for K
# up to a few thousand) and a register tile (the accumulator) that fits the vector registers:
# AVX-512 has 32 zmm, so 8 rows x 32 lanes = 16 accumulators; AVX2 has 16 ymm, where 8x32
# (32 accumulators) spills: 6 rows x 16 lanes = 12 accumulators + B row + A broadcast
# (512^3 matmul+bias+relu on 2 AVX2 cores: 56 -> 80-110 GFLOP/s).
OUTER_MN = (64, 64)
# Reduction (k) blocking inside an outer tile: a nonzero reduction entry of lamina.tile_sizes
# runs the tile's k loop in blocks of that size, so the B rows (and A columns) a block reads
# stay in L1 while every register tile of the outer tile consumes them. K_BLOCK is the default
# (0: none): on the 2-core AVX2 host, 64/128/256 measured no better than whole-K for a 512^3
# matmul within the noise (100-104 GFLOP/s), so the default stays off and users may set it.
K_BLOCK = 0


def register_mn() -> tuple[int, int]:
    return (8, 32) if vector_lanes() >= 16 else (6, 16)


# ---- analysis ---------------------------------------------------------------------------------

def _is_contraction(op) -> bool:
    name = op.operation.name
    if name in ("linalg.matmul", "linalg.batch_matmul"):
        return True
    if name == "linalg.generic":
        try:
            return bool(linalg.isa_contraction_op(op.operation))
        except Exception:
            return False
    return False


def _loop_kinds(op) -> list[str]:
    """'parallel'/'reduction' per loop of a contraction op (named ops: from their shape)."""
    name = op.operation.name
    if name == "linalg.matmul":
        return ["parallel", "parallel", "reduction"]
    if name == "linalg.batch_matmul":
        return ["parallel", "parallel", "parallel", "reduction"]
    kinds = []
    for a in ir.ArrayAttr(op.attributes["iterator_types"]):
        kinds.append("reduction" if "reduction" in str(a) else "parallel")
    return kinds


def _output_loop_dims(op) -> list[int] | None:
    """Loop dim of each output dim of a contraction, or None if the output map is not a
    projection (d_i...)."""
    name = op.operation.name
    if name == "linalg.matmul":
        return [0, 1]
    if name == "linalg.batch_matmul":
        return [0, 1, 2]
    maps = ir.ArrayAttr(op.attributes["indexing_maps"])
    out_map = ir.AffineMapAttr(maps[len(maps) - 1]).value
    dims = []
    for e in out_map.results:
        if not isinstance(e, ir.AffineDimExpr):
            return None
        dims.append(ir.AffineDimExpr(e).position)
    return dims


def outer_tile(size: int | None, target: int, register: int) -> int:
    """The outer (OpenMP) tile of a parallel loop of static `size`: `target` when it divides
    the loop; the whole loop when it is no longer than `target`; else a divisor of `size`
    in [target/2, target] (else in (target, 5 target/4]), a multiple of the register tile
    first, then the closest to `target` (M = 500: 50, 70: 35, 130: 65). A tile that divides
    its loop keeps every tile's shape static, so the register-tile remainders inside it are
    static vectors too; a tile that does not (no such divisor, or a dynamic loop: `target`)
    makes the last tile dynamic and its remainders masked vectors (500^3 matmul with 64x64
    tiles: 18 GFLOP/s; with 50x50 tiles: 76)."""
    if size is None or size < 0 or size % target == 0:
        return target
    if size <= target:
        return size
    divisors = [d for d in range(max(1, target // 2), target + 1) if size % d == 0] or \
        [d for d in range(target + 1, target * 5 // 4 + 1) if size % d == 0]
    if not divisors:
        return target
    return min(divisors, key=lambda d: (d % register != 0, abs(d - target)))


def _default_sizes(kinds: list[str], out_dims: list[int], k_size: int | None = None,
                   loop_sizes: list[int] | None = None) -> tuple[list[int], list[int]]:
    """Outer tile and register tile per loop: the last two output dims are (M, N), any
    other parallel loops (batch) are tiled by 1; M and N by outer_tile() of their static
    sizes (`loop_sizes`, -1 where dynamic) around OUTER_MN; a single reduction loop of
    static size `k_size` > K_BLOCK is blocked by K_BLOCK inside the outer tile (else whole),
    and steps by 1 inside (an outer-product update per k)."""
    n = len(kinds)
    sizes = loop_sizes or [-1] * n
    outer = [0] * n
    inner = [1] * n
    par = [d for d in out_dims]
    red = [i for i, k in enumerate(kinds) if k == "reduction"]
    if K_BLOCK and len(red) == 1 and k_size is not None and k_size > K_BLOCK:
        outer[red[0]] = K_BLOCK
    for d in par[:-2]:
        outer[d], inner[d] = 1, 1
    if len(par) >= 2:
        m, nn = par[-2], par[-1]
        inner[m], inner[nn] = register_mn()
        outer[m] = outer_tile(sizes[m], OUTER_MN[0], inner[m])
        outer[nn] = outer_tile(sizes[nn], OUTER_MN[1], inner[nn])
    elif len(par) == 1:
        inner[par[0]] = register_mn()[1]
        outer[par[0]] = outer_tile(sizes[par[0]], OUTER_MN[1], inner[par[0]])
    return outer, inner


def _reduction_size(c, kinds: list[str]) -> int | None:
    """The static size of a contraction's single reduction loop (None: several, or dynamic)."""
    red = [i for i, k in enumerate(kinds) if k == "reduction"]
    if len(red) != 1:
        return None
    size = _static_loop_ranges(c)[red[0]]
    return size if size >= 0 else None


def _static_loop_ranges(c) -> list[int]:
    """Loop sizes from the indexing maps and the operand shapes (-1 where dynamic)."""
    name = c.operation.name
    shapes = [ir.ShapedType(v.type).shape for v in c.operands]
    if name == "linalg.matmul":
        (m, k), (_, n) = shapes[0], shapes[1]
        return [m, n, k]
    if name == "linalg.batch_matmul":
        (b, m, k), (_, _, n) = shapes[0], shapes[1]
        return [b, m, n, k]
    maps = [ir.AffineMapAttr(a).value for a in ir.ArrayAttr(c.attributes["indexing_maps"])]
    sizes = [None] * maps[0].n_dims
    for amap, shape in zip(maps, shapes):
        for e, dim in zip(amap.results, shape):
            if isinstance(e, ir.AffineDimExpr) and sizes[ir.AffineDimExpr(e).position] is None and dim >= 0:
                sizes[ir.AffineDimExpr(e).position] = dim
    return [-1 if x is None else x for x in sizes]


def _elementwise_root(c) -> object | None:
    """The unique user of C's result when it is an all-parallel linalg.generic whose loops
    are C's output dims in order (identity output map, same shape): the epilogue to tile
    around C. None otherwise (C itself is then the root)."""
    res = c.results[0]
    users = [u.owner for u in res.uses]
    if len(users) != 1:
        return None
    e = users[0]
    if e.name != "linalg.generic":
        return None
    if any("reduction" in str(a) for a in ir.ArrayAttr(e.attributes["iterator_types"])):
        return None
    if len(e.results) != 1 or e.results[0].type != res.type:
        return None
    maps = ir.ArrayAttr(e.attributes["indexing_maps"])
    out_map = ir.AffineMapAttr(maps[len(maps) - 1]).value
    if not out_map.is_permutation or any(ir.AffineDimExpr(x).position != i
                                          for i, x in enumerate(out_map.results)):
        return None
    # C must be read through an identity map too (so tiles of E line up with tiles of C).
    for i, operand in enumerate(e.operands):
        if operand == res:
            m = ir.AffineMapAttr(maps[i]).value
            if m != out_map:
                return None
    return e


# ---- the schedule -------------------------------------------------------------------------------


def _any(n: int) -> str:
    return ", ".join(["!transform.any_op"] * n)


def _try_vectorize_each(handle: str) -> str:
    """Vectorize every op of `handle` at its static shape; an op that cannot be (a dynamic
    shape) is left for the masked vectorization by its lamina.vector_sizes."""
    A = "!transform.any_op"
    return (f'transform.foreach {handle} : {A} {{\n  ^bb1(%o: {A}):\n'
            f'    transform.sequence %o : {A} failures(suppress) {{\n'
            f'    ^bb2(%o1: {A}):\n'
            f'      transform.structured.vectorize %o1 : {A}\n'
            f'    }}\n}}')


def _peel_and_split_remainder(loop: str, split: list[int]) -> list[str]:
    """Peel `loop`; tile the op in its remainder (if any: a loop that divides evenly peels
    into an empty remainder handle, which the foreach skips) by `split` and peel that loop
    too (failures suppressed)."""
    A, F = "!transform.any_op", '!transform.op<"scf.for">'
    return [f'transform.foreach {loop} : {A} {{\n'
            f'^bb0(%l: {A}):\n'
            f'  transform.sequence %l : {A} failures(suppress) {{\n'
            f'  ^bb1(%l1: {A}):\n'
            f'    %fl = transform.cast %l1 : {A} to {F}\n'
            f'    %main, %rem = transform.loop.peel %fl : ({F}) -> ({A}, {A})\n'
            f'    transform.foreach %rem : {A} {{\n'
            f'    ^bb2(%r: {A}):\n'
            f'      %rop = transform.structured.match interface{{LinalgOp}} in %r : ({A}) -> {A}\n'
            f'      transform.foreach %rop : {A} {{\n'
            f'      ^bb3(%o: {A}):\n'
            f'        %rt, %rl = transform.structured.tile_using_for %o tile_sizes {_arr(split)} : ({A}) -> ({A}, {A})\n'
            f'        %frl = transform.cast %rl : {A} to {F}\n'
            f'        %m2, %r2 = transform.loop.peel %frl : ({F}) -> ({A}, {A})\n'
            f'      }}\n'
            f'    }}\n'
            f'  }}\n'
            f'}}']


def build_schedule(items: list[dict]) -> str:
    """A transform module whose @__transform_main(%f) tiles every item (one contraction each)."""
    A = "!transform.any_op"
    body = []
    loops = []
    for it in items:
        t = it["id"]
        body.append(f'%c{t} = transform.structured.match attributes{{{TILE_ID} = {t} : i64}} in %f : ({A}) -> {A}')
        if it["has_init"]:
            body.append(f'%i{t} = transform.get_producer_of_operand %c{t}[{it["init_operand"]}] : ({A}) -> {A}')
        if it["root_is_c"]:
            root = f"%c{t}"
        else:
            body.append(f'%r{t} = transform.structured.match attributes{{{TILE_ID} = {t + 1000000} : i64}} in %f : ({A}) -> {A}')
            root = f"%r{t}"
        body.append(f'%rt{t}, %fa{t} = transform.structured.tile_using_forall {root} tile_sizes {_arr(it["root_outer"])} : ({A}) -> ({A}, {A})')
        fa = f"%fa{t}"
        if it["root_is_c"]:
            ct = f"%rt{t}"
        else:
            body.append(f'%ct{t}, %fb{t} = transform.structured.fuse_into_containing_op %c{t} into {fa} : ({A}, {A}) -> ({A}, {A})')
            ct, fa = f"%ct{t}", f"%fb{t}"
        if it["has_init"]:
            body.append(f'%it{t}, %fc{t} = transform.structured.fuse_into_containing_op %i{t} into {fa} : ({A}, {A}) -> ({A}, {A})')
            fa = f"%fc{t}"
        if it["k_block"]:
            body.append(f'%ck{t}, %kb{t} = transform.structured.tile_using_for {ct} tile_sizes {_arr(it["k_block"])} : ({A}) -> ({A}, {A})')
            ct = f"%ck{t}"
        # Register tiles: C by its vector sizes; the epilogue and the init by C's output dims.
        nz = [x for x in it["c_inner"] if x]
        lc = ", ".join(f"%lc{t}_{j}" for j in range(len(nz)))
        body.append(f'%cv{t}, {lc} = transform.structured.tile_using_for {ct} tile_sizes {_arr(it["c_inner"])} : ({A}) -> ({_any(1 + len(nz))})')
        nzi = [i for i, x in enumerate(it["c_inner"]) if x]
        lanes = vector_lanes()
        for j, i in enumerate(nzi):
            if it["c_kinds"][i] != "parallel" or it["c_inner"][i] <= 1:
                continue
            if i == it["n_dim"] and it["c_inner"][i] > lanes:
                # The column remainder of a register tile wider than one vector register
                # (16 = 2 x 8 on AVX2) is split at the register width: a 13-wide remainder
                # is slow (LLVM rebuilds a vector<6x13> accumulator lane by lane on every k
                # step: 384x256 @ 256x61 at 25 GFLOP/s, 48-wide at 75), 8 + 5 is not.
                split = [lanes if d == i else 0 for d in range(len(it["c_inner"]))]
                body += _peel_and_split_remainder(f"%lc{t}_{j}", split)
            else:
                loops.append(f"%lc{t}_{j}")
        others = []
        if not it["root_is_c"]:
            others.append((f"%rt{t}", it["root_inner"], "e"))
        if it["has_init"]:
            others.append((f"%it{t}", it["init_inner"], "i"))
        for h, sizes, tag in others:
            nzz = [x for x in sizes if x]
            ls = ", ".join(f"%l{tag}{t}_{j}" for j in range(len(nzz)))
            body.append(f'%{tag}v{t}, {ls} = transform.structured.tile_using_for {h} tile_sizes {_arr(sizes)} : ({A}) -> ({_any(1 + len(nzz))})')
            loops += [f"%l{tag}{t}_{j}" for j, x in enumerate(nzz) if x > 1]
    # Peel every register-tile loop over a parallel dim: full tiles get static shapes (plain
    # vectors), the remainders keep dynamic shapes (masked vectors).
    body += peel_loops(loops)
    body.append('transform.apply_patterns to %f {\n  transform.apply_patterns.canonicalization\n} : !transform.any_op')
    # Vectorize only what was tiled: the static ops inside the outer tiles (vector.contract for
    # C), then the remainders, masked. vectorize_children_and_apply_patterns on the whole
    # function would also vectorize untiled ops (a 512x128 transpose, a layer norm) at full
    # size, and full unrolling then blows the kernel up to 10^5+ LLVM ops.
    body.append(f'%foralls = transform.structured.match ops{{["scf.forall"]}} in %f : ({A}) -> {A}')
    body.append(f'transform.foreach %foralls : {A} {{\n^bb0(%fo: {A}):\n'
                f'  %tiled = transform.structured.match interface{{LinalgOp}} in %fo : ({A}) -> {A}\n'
                + _try_vectorize_each("%tiled") + '\n}')
    # A kernel whose outer tile is the whole iteration space has no forall left (a 16x61
    # matmul): vectorize its tiled pieces (the contraction's and the epilogue's, found by
    # their tile ids) the same way, so static remainders get static vectors there too.
    for it in items:
        for tid in ([it["id"]] + ([] if it["root_is_c"] else [it["id"] + 1000000])):
            body.append(f'%tiled{tid} = transform.structured.match interface{{LinalgOp}} '
                        f'attributes{{{TILE_ID} = {tid} : i64}} in %f : ({A}) -> {A}')
            body.append(_try_vectorize_each(f"%tiled{tid}"))
    body.append('%v = transform.cast %f : !transform.any_op to !transform.any_op')
    seen = set()
    for it in items:
        for sizes in (it["c_inner"], it["root_inner"], it.get("init_inner")):
            if sizes is None or tuple(sizes) in seen:
                continue
            seen.add(tuple(sizes))
            k = "_".join(str(x) for x in sizes)
            body.append(f'%rem_{k} = transform.structured.match attributes{{{VECTOR_SIZES} = {_dense(sizes)}}} in %v : ({A}) -> {A}')
            body.append(f'transform.foreach %rem_{k} : {A} {{\n^bb0(%o: {A}):\n'
                        f'  transform.structured.vectorize %o vector_sizes {_arr(sizes)} : {A}\n}}')
    body.append('transform.apply_patterns to %v {\n'
                '  transform.apply_patterns.vector.reduction_to_contract\n'
                '  transform.apply_patterns.vector.transfer_permutation_patterns\n'
                '  transform.apply_patterns.vector.lower_masked_transfers\n'
                '  transform.apply_patterns.canonicalization\n'
                '} : !transform.any_op')
    body.append('transform.apply_cse to %v : !transform.any_op')
    # Keep the accumulator in registers across the k loop.
    body.append(f'%fors = transform.structured.match ops{{["scf.for"]}} in %v : ({A}) -> {A}')
    body.append(f'transform.foreach %fors : {A} {{\n^bb0(%l: {A}):\n'
                f'  transform.loop.hoist_loop_invariant_subsets %l : {A}\n}}')
    # vector.contract -> vector.outerproduct -> vector.fma. (Adding lower_masks, lower_broadcast
    # and lower_shape_cast to this set makes the greedy driver loop forever in 22.1.8: those
    # are left to the pipeline's convert-vector-to-llvm.)
    body.append('transform.apply_patterns to %v {\n'
                '  transform.apply_patterns.vector.lower_contraction lowering_strategy = "outerproduct"\n'
                '  transform.apply_patterns.vector.lower_outerproduct\n'
                '  transform.apply_patterns.canonicalization\n'
                '} : !transform.any_op')
    body.append('transform.yield')
    inner = "\n".join("    " + line for chunk in body for line in chunk.splitlines())
    return ('module attributes {transform.with_named_sequence} {\n'
            '  transform.named_sequence @__transform_main(%f: !transform.any_op {transform.consumed}) {\n'
            f'{inner}\n'
            '  }\n'
            '}\n')


# ---- the pass -----------------------------------------------------------------------------------

def _top_linalg_ops(func_op):
    return [op for op in func_op.regions[0].blocks[0].operations if op.operation.name.startswith("linalg.")]


def _fuse_elementwise(func_op) -> None:
    """Upstream elementwise fusion, then CSE (a layer norm's mean and its variance's mean are
    one reduction), on this kernel only. CSE also merges equal tensor.empty / linalg.fill
    inits; each user gets its own again (unshare_destinations), since two ops accumulating into
    one shared init would share one buffer after empty-tensor elimination."""
    pm = passmanager.PassManager.parse("func.func(linalg-fuse-elementwise-ops, cse)", context=func_op.context)
    pm.run(func_op.operation)
    unshare_destinations(func_op)


def _has_empty_loop(op) -> bool:
    """A static 0 in any operand or result shape: some loop has size 0 (tiling would assert
    in computeAllSliceParameters, and there is nothing to compute)."""
    for v in list(op.operands) + list(op.results):
        if isinstance(v.type, ir.ShapedType) and ir.ShapedType(v.type).has_rank:
            t = ir.ShapedType(v.type)
            if any(not t.is_dynamic_dim(i) and t.get_dim_size(i) == 0 for i in range(t.rank)):
                return True
    return False


def plan_kernel(func_op, next_id: list[int]) -> list[dict]:
    """Record tiling decisions on the contractions of one kernel; return the schedule items.
    A contraction with a loop of static size 0 gets no plan (it stays untiled)."""
    items = []
    for c in _top_linalg_ops(func_op):
        if not _is_contraction(c) or is_library(c) or _has_empty_loop(c):
            continue
        res_t = ir.RankedTensorType(c.results[0].type) if len(c.results) == 1 else None
        if res_t is None:
            continue
        kinds = _loop_kinds(c)
        out_dims = _output_loop_dims(c)
        if out_dims is None or sorted(out_dims) != [i for i, k in enumerate(kinds) if k == "parallel"]:
            continue
        outer, inner = _default_sizes(kinds, out_dims, _reduction_size(c, kinds), _static_loop_ranges(c))
        if TILE_SIZES in c.attributes:
            outer = _i64s(c.attributes[TILE_SIZES])
        else:
            c.attributes[TILE_SIZES] = ir.DenseI64ArrayAttr.get(outer)
        if VECTOR_SIZES in c.attributes:
            inner = _i64s(c.attributes[VECTOR_SIZES])
        else:
            c.attributes[VECTOR_SIZES] = ir.DenseI64ArrayAttr.get(inner)
        if len(outer) != len(kinds) or len(inner) != len(kinds) or \
                any(outer[i] % inner[i] for i, k in enumerate(kinds) if k == "reduction") or \
                any(x <= 0 for x in inner) or any(x < 0 for x in outer):
            raise ValueError(f"lamina-tile-cpu: bad {TILE_SIZES}/{VECTOR_SIZES} {outer}/{inner} on "
                             f"{c.operation.name} with loops {kinds}")
        tid = next_id[0]
        next_id[0] += 1
        c.attributes[TILE_ID] = ir.IntegerAttr.get(ir.IntegerType.get_signless(64), tid)
        par_outer = [outer[d] for d in out_dims]
        par_inner = [inner[d] for d in out_dims]
        n_in = len(c.operands) - 1
        init = c.operands[n_in]
        init_op = ir.OpResult(init).owner if isinstance(init, ir.OpResult) else None
        has_init = init_op is not None and init_op.name in ("linalg.fill", "linalg.generic") \
            and len(list(init.uses)) == 1
        root = _elementwise_root(c)
        # Reduction entries of the outer sizes block the k loop inside the tile; the forall
        # tiles only parallel loops.
        k_block = [outer[i] if k == "reduction" else 0 for i, k in enumerate(kinds)]
        forall_outer = [0 if k == "reduction" else outer[i] for i, k in enumerate(kinds)]
        item = dict(id=tid, root_is_c=root is None, c_inner=inner, c_kinds=kinds, n_dim=out_dims[-1],
                    k_block=k_block if any(k_block) else None,
                    root_outer=forall_outer if root is None else par_outer,
                    root_inner=inner if root is None else par_inner,
                    has_init=has_init, init_operand=n_in, init_inner=par_inner if has_init else None)
        if root is not None:
            root.attributes[TILE_ID] = ir.IntegerAttr.get(ir.IntegerType.get_signless(64), tid + 1000000)
            root.attributes[VECTOR_SIZES] = ir.DenseI64ArrayAttr.get(par_inner)
        if has_init:
            init_op.attributes[VECTOR_SIZES] = ir.DenseI64ArrayAttr.get(par_inner)
        items.append(item)
    return items


def has_contraction(func_op) -> bool:
    """A contraction this pass tiles (not one that runs on the host BLAS, codegen/blas.py)."""
    return any(_is_contraction(op) and not is_library(op) for op in _top_linalg_ops(func_op))


def tile_kernel(func_op, *, annotate_only: bool = False, dump_schedule: bool = False) -> bool:
    """Tile one kernel function in place; False when nothing in it is tiled."""
    # Invalid IR would abort the process inside a pass or the interpreter (assertion build):
    # fail in Python instead, here and again after planning.
    func_op.operation.verify()
    _resolve_dynamic_dims(func_op)   # before fusion: a tensor.dim of a producer would keep it alive
    mark_contractions(func_op)
    choose_layouts(mark_convolutions(func_op))
    # kernel arguments and results seen through reshapes become memref views, before the
    # elementwise fusion's reshape propagation (which would expand a library matmul into loops)
    reshape_arguments_as_views(func_op)
    store_through_reshapes(func_op)
    if has_contraction(func_op):
        _fuse_elementwise(func_op)
        if not annotate_only:
            channels_last_convolutions(func_op)
        items = plan_kernel(func_op, [0])
        build = build_schedule
    elif pointwise_enabled():
        _fuse_elementwise(func_op)
        if not annotate_only:
            # after the fusion, whose reshape propagation would fold the transposes' reshapes
            # into 4-d transposes that get no vector tiles
            channels_last_convolutions(func_op)
            split_group_swaps(func_op)
            if cancel_transpose_pairs(func_op) + fuse_transposed_epilogues(func_op) \
                    + unswap_transposed_outputs(func_op):
                store_through_reshapes(func_op)
        epilogues_in_place(func_op)
        # Row-aligned kernels (softmax, norms) run row by row (row_kernel.py); the ops to
        # vectorize are then those of the per-row body.
        block = func_op.regions[0].blocks[0]
        if not annotate_only:
            rows = row_block(func_op)
            block = block if rows is None else rows
            vectorize_reductions(block)
        items = plan_pointwise(block, [0])
        build = build_pointwise_schedule
    else:
        return False
    if not items or annotate_only:
        return bool(items)
    func_op.operation.verify()
    apply_transform_script(func_op, build(items), dump_schedule)
    _strip(func_op.operation)
    hoist_loop_invariants(func_op)
    return True


# Value ops (no memory effects on tensors) that may leave a loop when their operands do
# (tensor.extract_slice only of a kernel input: _read_only_input).
_HOISTABLE = ("arith.", "math.", "vector.broadcast", "tensor.extract")
# ... except integer divisions: hoisted out of a loop that runs no iteration, a zero divisor
# the loop would never have used traps.
_NOT_SPECULATABLE = ("arith.divsi", "arith.divui", "arith.remsi", "arith.remui", "arith.floordivsi",
                     "arith.ceildivsi", "arith.ceildivui")


def hoist_loop_invariants(func_op) -> int:
    """Move loop-invariant value computations out of scf.for loops (innermost first): a row
    value broadcast and everything computed from it alone (`rsqrt(mean + eps)` of a norm)
    runs once per loop instead of once per vector. On tensors, before bufferization, these
    ops read no memory LLVM would have to prove unaliased. Returns how many ops moved."""
    loops = []

    def visit(op):
        if op.name == "scf.for":
            loops.append(op)
        return ir.WalkResult.ADVANCE
    func_op.operation.walk(visit)   # post-order: inner loops first
    moved = 0
    for loop in loops:
        loop = loop.operation
        body = loop.regions[0].blocks[0]
        changed = True
        while changed:
            changed = False
            for op in list(body.operations):
                op = op.operation
                if not op.name.startswith(_HOISTABLE) or len(op.regions) or op.name in _NOT_SPECULATABLE:
                    continue
                if op.name == "tensor.extract_slice" and not _read_only_input(op.operands[0]):
                    continue
                if any(_defined_inside(v, loop) for v in op.operands):
                    continue
                if op.name == "tensor.extract" and not _in_bounds_extract(op):
                    continue   # a load the loop might never have made
                op.move_before(loop)
                moved += 1
                changed = True
    return moved


def _read_only_input(v: ir.Value) -> bool:
    """A kernel input (bufferization.to_tensor, through reshapes): a slice of it is a view of
    memory no loop writes, so hoisting the slice adds no copy. (A per-channel parameter's
    slice, taken per row of an epilogue, then leaves the row loop, and so does everything
    computed from it alone: a batch norm's rsqrt(var + eps) once per channel.)"""
    while isinstance(v, ir.OpResult) and v.owner.name in ("tensor.expand_shape", "tensor.collapse_shape"):
        v = v.owner.operands[0]
    return isinstance(v, ir.OpResult) and v.owner.name == "bufferization.to_tensor"


def _in_bounds_extract(op) -> bool:
    """tensor.extract at constant indices inside a static, non-empty tensor: safe to run
    even where the loop it came from would run no iteration."""
    t = op.operands[0].type
    if not isinstance(t, ir.RankedTensorType) or not t.has_static_shape or 0 in t.shape:
        return False
    for v, size in zip(list(op.operands)[1:], t.shape):
        owner = v.owner
        if isinstance(owner, ir.Block) or owner.name != "arith.constant":
            return False
        if not 0 <= ir.IntegerAttr(owner.attributes["value"]).value < size:
            return False
    return True


def _defined_inside(v: ir.Value, loop) -> bool:
    """Whether `v` is defined in `loop`'s body (at any depth)."""
    owner = v.owner
    op = owner.owner if isinstance(owner, ir.Block) else owner
    op = op.operation if op is not None and hasattr(op, "operation") else op
    while op is not None:
        if op == loop:
            return True
        parent = op.parent
        op = parent.operation if parent is not None and hasattr(parent, "operation") else parent
    return False


def _resolve_dynamic_dims(func_op) -> None:
    """In a kernel of dynamic shape, `tensor.dim` of intermediate values becomes `tensor.dim`
    of the kernel's inputs (and duplicates go), so the sizes are known outside any loop the
    row schedule builds."""
    dynamic = []

    def visit(op):
        if op.name == "tensor.dim":
            dynamic.append(op)
        return ir.WalkResult.ADVANCE
    func_op.operation.walk(visit)
    if dynamic:
        from mlir.passmanager import PassManager

        PassManager.parse("func.func(resolve-ranked-shaped-type-result-dims,canonicalize,cse)",
                          context=func_op.context).run(func_op.operation)


def pointwise_enabled() -> bool:
    """LAMINA_NO_TILE_POINTWISE=1 leaves kernels without a contraction as plain loops (bisecting)."""
    return os.environ.get("LAMINA_NO_TILE_POINTWISE", "").strip() not in ("1", "true", "yes", "on")


def _strip(op) -> None:
    """Drop lamina.tile_id (a schedule-local handle) from what is left."""
    for region in op.regions:
        for block in region.blocks:
            for inner in block.operations:
                if TILE_ID in inner.attributes:
                    del inner.attributes[TILE_ID]
                _strip(inner.operation)


def _flag(v) -> bool:
    return str(v).lower() not in ("0", "false", "no", "")


@register_pass("lamina-tile-cpu", level="L4",
               description="tile (scf.forall -> OpenMP above a grain), peel and vectorize contraction, pointwise and row-reduction "
                           "kernels with a transform schedule; decisions in lamina.tile_sizes/lamina.vector_sizes")
def tile_cpu(module: ir.Module, **options) -> None:
    annotate_only = _flag(options.get("annotate_only", "0"))
    dump = _flag(options.get("dump_schedule", os.environ.get("LAMINA_DUMP_SCHEDULE", "0")))
    for func_op in kernel_functions(module):
        tile_kernel(func_op, annotate_only=annotate_only, dump_schedule=dump)
    module.operation.verify()
