"""Row-blocked reduction kernels (part of lamina-tile-cpu, for kernels without a contraction).

A softmax, a layer norm or an RMS norm is, after lamina-to-linalg, a chain of linalg ops
over the whole [rows, n] input: a max or sum reduction, a pointwise op reading its result,
another reduction, the stored output. Run op by op, every op streams all rows through the
caches again (layer norm: four passes over 4 MiB) and forks OpenMP threads once per op.
Here, when every op of a kernel is *row-aligned*, the whole chain runs row by row instead:

    scf.forall (%i0, ..., %ik-1) in (P0, ..., Pk-1) shared_outs(%o = ...)   (scf.for below
      every op of the kernel on the [1, ..., 1, n...] slice of row (%i...)   the grain)
      parallel_insert_slice the row of each stored value into its output

so a row is read from memory once and re-read from L1/L2 by the later ops, and the kernel
forks once. The per-row ops keep their bodies and maps (their row loops now have size 1),
so vector_reduce.py and tile_pointwise.py vectorize them as before.

Row-aligned, for the leading k loops (k = the number of parallel loops before the reduced
ones, the same for every reduction of the kernel, k >= 1):
  * every linalg.generic has k leading parallel loops of sizes P, and each operand's map
    either starts with d0..dk-1 and uses them nowhere else (a row-sliced operand, its
    tensor's leading dims are P) or uses none of them (an invariant operand: a weight, a
    constant, defined outside the rows);
  * linalg.fill and tensor.empty of row-shaped tensors; constants and kernel inputs
    (bufferization.to_tensor) stay outside; row values leave only through the kernel's
    outputs (bufferization.materialize_in_destination).
The decision is recorded as `lamina.row_dims = k` on the kernel function (0: not
row-blocked); set it to 0 in the IR and replay lamina-tile-cpu to keep the op-by-op form.

Symbolic sizes (dynamic row counts or row lengths): the row loops' bounds are read off a
kernel input at run time, and the rows run in chunks along the first row dim, of
max(1, ceil(GRAIN / threads / work per index of that dim)) indices, computed at run time: the
scf.forall is over the chunks, each chunk runs its rows serially, and a call with one
chunk runs on one thread (lamina-omp-to-gomp asks libgomp for a team of 1 when a parallel
loop has one iteration), so one compiled kernel forks only where the static one would.
Pure pointwise kernels of symbolic shape (no reduction) are row-blocked the same way over
all their dims but the last (`lamina.row_dims = rank - 1`).
"""
from __future__ import annotations

import math
import re

from mlir import ir
from mlir.dialects import arith, bufferization, scf, tensor

from ..dialect import symbols as S
from ..dialect import types as T
from .tile_pointwise import GRAIN, chunk_size, threads

ROW_DIMS = "lamina.row_dims"
_OUTSIDE = ("arith.constant", "bufferization.to_tensor")


def _kinds(op) -> list[str]:
    return ["reduction" if "reduction" in str(a) else "parallel" for a in ir.ArrayAttr(op.attributes["iterator_types"])]


def _maps(op) -> list[ir.AffineMap]:
    return [ir.AffineMapAttr(m).value for m in ir.ArrayAttr(op.attributes["indexing_maps"])]


def _dims_used(expr) -> set[int]:
    """Loop dims an affine expression reads (through its printed form: dN)."""
    return {int(d) for d in re.findall(r"d(\d+)", str(expr))}


def _static_shape(v: ir.Value) -> list[int] | None:
    if not isinstance(v.type, ir.RankedTensorType):
        return None
    t = ir.RankedTensorType(v.type)
    return list(t.shape) if t.has_static_shape else None


def _shape(v: ir.Value) -> list[int] | None:
    """Sizes, T.DYNAMIC for a dynamic dim (equal to any other dynamic dim here: torch
    guarantees the sizes an op combines agree)."""
    if not isinstance(v.type, ir.RankedTensorType):
        return None
    return list(ir.RankedTensorType(v.type).shape)


def _enclosing_function(op):
    while op is not None and op.name != "func.func":
        op = op.parent
    return op


def _size_key(v: ir.Value):
    """A key that two `index` values of one size share: the symbol's expression of a
    `lamina.symbol` argument or of a dim read off a tensor whose dims are known, a constant,
    else the value itself."""
    owner = v.owner
    if isinstance(owner, ir.Block):
        func_op = _enclosing_function(owner.owner)
        args = S.symbol_args(func_op) if func_op is not None else {}
        return next((name for name, a in args.items() if a == v), v)
    if owner.name in ("tensor.dim", "memref.dim"):
        c = owner.operands[1].owner
        if not isinstance(c, ir.Block) and c.name == "arith.constant":
            keys = _dim_keys(owner.operands[0])
            at = ir.IntegerAttr(c.attributes["value"]).value
            if keys is not None and 0 <= at < len(keys) and keys[at] is not None:
                return keys[at]
    if owner.name == "arith.constant":
        return ir.IntegerAttr(owner.attributes["value"]).value
    return v


def _dim_keys(v: ir.Value) -> list | None:
    """Per dim of a tensor (or memref) value: its static size, or for a dynamic one a key
    (_size_key) that sizes known to be equal share; None for a dim nothing is known about.
    After lamina-to-linalg types no longer say which symbol a `?` is; two `?` dims are the
    same size only when this says so."""
    t = v.type
    if not isinstance(t, (ir.RankedTensorType, ir.MemRefType)):
        return None
    shape = list(ir.ShapedType(t).shape)
    static = [d if d != T.DYNAMIC else None for d in shape]
    if T.DYNAMIC not in shape:
        return static
    owner = v.owner
    if isinstance(owner, ir.Block):
        func_op = _enclosing_function(owner.owner)
        number = ir.BlockArgument(v).arg_number
        dims = S.argument_dims(func_op, number) if func_op is not None else None
        if dims is None or len(dims) != len(shape):   # an argument's own dims: equal to themselves
            return [d if d is not None else ("arg", number, j) for j, d in enumerate(static)]
        return [d if isinstance(d, int) else (None if d == S.UNKNOWN else d) for d in dims]
    name = owner.name
    if name == "bufferization.to_tensor":
        return _dim_keys(owner.operands[0])
    if name in ("tensor.empty", "tensor.expand_shape", "tensor.extract_slice"):
        sizes = {"tensor.empty": lambda: list(owner.operands),
                 "tensor.expand_shape": lambda: list(owner.operands)[1:],
                 "tensor.extract_slice": lambda: list(getattr(owner, "opview", owner).sizes)}[name]()
        if len(sizes) != shape.count(T.DYNAMIC):
            return static
        return [d if d != T.DYNAMIC else _size_key(sizes.pop(0)) for d in shape]
    if name == "tensor.collapse_shape":
        source = _dim_keys(owner.operands[0])
        groups = [[ir.IntegerAttr(i).value for i in ir.ArrayAttr(g)]
                  for g in ir.ArrayAttr(owner.attributes["reassociation"])]
        if source is None or len(groups) != len(shape):
            return static
        return [d if d != T.DYNAMIC else
                (None if any(source[i] is None for i in g) else ("*",) + tuple(source[i] for i in g))
                for d, g in zip(shape, groups)]
    if name in ("linalg.generic", "linalg.fill"):
        results = list(owner.results)
        n_in = len(owner.operands) - len(results)
        for i, r in enumerate(results):
            if r == v:
                return _dim_keys(owner.operands[n_in + i])
    return static


def _same_sizes(a: list | None, b: list | None) -> bool:
    return a is not None and b is not None and len(a) == len(b) and all(x is not None and x == y for x, y in zip(a, b))


def _dynamic(shape) -> bool:
    return any(d == T.DYNAMIC for d in shape)


def _row_dims(ops) -> int:
    """k of the kernel's reductions (0 when they disagree or there are none); a kernel of
    symbolic shape with no reduction: its rank - 1 (pointwise rows)."""
    generics = [op for op in ops if op.name == "linalg.generic"]
    ks = {_kinds(op).index("reduction") for op in generics if "reduction" in _kinds(op)}
    if not ks and generics:
        shapes = [_shape(r) for op in generics for r in op.results]
        ranks = {len(sh) for sh in shapes if sh is not None}
        if len(ranks) == 1 and any(_dynamic(sh) for sh in shapes if sh) and min(ranks) >= 2:
            return min(ranks) - 1
    return ks.pop() if len(ks) == 1 else 0


def _outside(v: ir.Value) -> bool:
    """A value defined outside the kernel's linalg ops (a kernel input, or a reshape of one)."""
    owner = v.owner
    if isinstance(owner, ir.Block) or owner.name in _OUTSIDE:
        return True
    return owner.name in ("tensor.reshape", "tensor.expand_shape", "tensor.collapse_shape") and _outside(owner.operands[0])


def _row_shape(ops, k: int) -> tuple[list[int], list, ir.Value | None] | None:
    """The sizes of the row loops, from the first reduction (or, with none, the first
    generic), their keys (_dim_keys), and, when some are dynamic, a kernel input in the row
    form to read them from."""
    generics = [op for op in ops if op.name == "linalg.generic"]
    reductions = [op for op in generics if "reduction" in _kinds(op)]
    for op in reductions or generics[:1]:
        for v, m in zip(list(op.operands), _maps(op)):
            shape = _shape(v)
            pos = _row_positions(m, k)
            if shape is not None and pos is not None and _is_standard_row(pos, k):
                keys = (_dim_keys(v) or [None] * len(shape))[:k]
                if not _dynamic(shape):
                    return shape[:k], keys, None
                if any(x is None for x in keys):
                    return None   # rows of a size nothing ties to the other ops' sizes
                # dynamic rows or row length: the same sizes, read at run time off a kernel
                # input in row form (then rows run in chunks, row temporaries made per chunk)
                for g in generics:
                    for u, mu in zip(list(g.operands), _maps(g)):
                        su, pu = _shape(u), _row_positions(mu, k)
                        if _outside(u) and su is not None and pu is not None and _is_standard_row(pu, k) \
                                and _same_sizes((_dim_keys(u) or [None] * len(su))[:k], keys):
                            return shape[:k], keys, u
                return None if _dynamic(shape[:k]) else (shape[:k], keys, None)
    return None


class _Plan:
    def __init__(self, k: int, rows: list[int], source: ir.Value | None = None, row_keys: list | None = None):
        self.k, self.rows = k, rows
        self.row_keys = row_keys if row_keys is not None else rows   # sizes as _dim_keys gives them
        self.source = source          # a kernel input giving the dynamic row sizes
        self.row_ops: list = []       # ops recomputed per row, in program order
        self.stored: list = []        # row values read outside the rows (kernel outputs)
        self.post_ops: list = []      # reshapes of stored values (moved after the loop)


_EXITS = ("bufferization.materialize_in_destination", "func.return")
_RESHAPES = ("tensor.expand_shape", "tensor.collapse_shape")


def _row_positions(m: ir.AffineMap, k: int) -> list[int | None] | None:
    """Per map result: the row dim it reads (d_i, i < k), or None for a result free of row
    dims; None overall when a result mixes a row dim into an expression or repeats one."""
    out, seen = [], set()
    for e in m.results:
        used = _dims_used(e) & set(range(k))
        if not used:
            out.append(None)
            continue
        if not isinstance(e, ir.AffineDimExpr) or len(used) != 1:
            return None
        d = ir.AffineDimExpr(e).position
        if d in seen:
            return None
        seen.add(d)
        out.append(d)
    return out


def _is_standard_row(pos: list[int | None], k: int) -> bool:
    """The row form of row values: results 0..k-1 are d0..dk-1, no row dims after them."""
    return len(pos) >= k and pos[:k] == list(range(k)) and all(p is None for p in pos[k:])


def _row_aligned(op, k: int, rows: list, row_values: set) -> bool:
    """A linalg.generic that runs per row: k leading parallel loops of sizes `rows` (keys of
    _dim_keys), outputs in the row form, inputs sliceable per row (row values only in the
    row form)."""
    kinds = _kinds(op)
    if len(kinds) < k or any(x != "parallel" for x in kinds[:k]):
        return False
    operands = list(op.operands)
    n_in = len(operands) - len(op.results)
    for i, (v, m) in enumerate(zip(operands, _maps(op))):
        pos = _row_positions(m, k)
        shape = _shape(v)
        if pos is None or shape is None:
            return False
        keys = _dim_keys(v) or [None] * len(shape)
        if any(p is not None and (keys[j] is None or keys[j] != rows[p]) for j, p in enumerate(pos)):
            return False
        if (i >= n_in or v in row_values) and not _is_standard_row(pos, k):
            return False
    return True


def analyze(func_op) -> _Plan | None:
    """The row-blocking plan of one kernel, or None when it is not row-aligned.

    Ops that read no row value and do not run per row (a causal mask built from iotas,
    a reshape of an input) stay outside the loop, computed once; reshapes of stored values
    move after it."""
    block = func_op.regions[0].blocks[0]
    ops = [op.operation for op in block.operations]
    k = _row_dims(ops)
    if k == 0:
        return None
    found = _row_shape(ops, k)
    if found is None:
        return None
    rows, row_keys, source = found
    row_values: set = set()
    plan = _Plan(k, rows, source, row_keys)
    for op in ops:
        name = op.name
        if name in _OUTSIDE or name in _EXITS:
            continue
        reads_rows = any(v in row_values for v in op.operands)
        if name == "tensor.empty":
            shape = _shape(op.results[0])
            if shape is not None and len(shape) >= k and _same_sizes((_dim_keys(op.results[0]) or [])[:k], row_keys) and \
                    all(_outside_or_static(x) for x in op.operands):
                plan.row_ops.append(op)
                row_values.add(op.results[0])
            continue   # an empty of another shape: an init outside the rows
        if name == "linalg.fill":
            if reads_rows:
                plan.row_ops.append(op)
                row_values.add(op.results[0])
            continue
        if name in _RESHAPES:
            if reads_rows:
                if any(u.owner.name not in _EXITS for u in op.results[0].uses):
                    return None
                plan.post_ops.append(op)
            continue
        if name == "linalg.generic" and _row_aligned(op, k, row_keys, row_values):
            plan.row_ops.append(op)
            row_values.update(op.results)
            continue
        if not reads_rows and (name.startswith(("linalg.", "tensor.", "arith.", "memref.dim"))):
            continue   # computed once, outside the rows
        return None
    if not any(op.name == "linalg.generic" for op in plan.row_ops):
        return None
    # Row values may leave the rows only as kernel outputs (possibly through a reshape).
    for op in plan.row_ops:
        for r in op.results:
            outside = [u.owner for u in r.uses if u.owner not in plan.row_ops]
            if any(u.name not in _EXITS and u not in plan.post_ops for u in outside):
                return None
            if outside and r not in plan.stored:
                plan.stored.append(r)
    if not plan.stored:
        return None
    return plan


def _outside_or_static(v: ir.Value) -> bool:
    """A size operand computed outside the rows (tensor.dim of an input, a symbol, arith)."""
    owner = v.owner
    return isinstance(owner, ir.Block) or owner.name in ("tensor.dim", "memref.dim", "arith.constant",
                                                         "arith.muli", "arith.addi", "arith.floordivsi")


def _idx(i: int) -> ir.Value:
    return arith.constant(ir.IndexType.get(), i)


def _row_slice(v: ir.Value, ivs: list[ir.Value], k: int, pos: list[int | None] | None = None) -> ir.Value:
    """The slice of `v` that row `ivs` reads: tensor dim j fixed to ivs[pos[j]] where pos[j]
    is a row dim (default: the row form, dims 0..k-1), whole elsewhere."""
    t = ir.RankedTensorType(v.type)
    shape = list(t.shape)
    pos = pos if pos is not None else list(range(k)) + [None] * (len(shape) - k)
    sizes = [1 if p is not None else s for p, s in zip(pos, shape)]
    rt = ir.RankedTensorType.get(sizes, t.element_type)
    offsets = [T.DYNAMIC if p is not None else 0 for p in pos]
    dyn = [ivs[p] for p in pos if p is not None]
    dyn_sizes = [tensor.dim(v, _idx(j)) for j, s in enumerate(sizes) if s == T.DYNAMIC]
    return tensor.extract_slice(rt, v, dyn, dyn_sizes, [], offsets, sizes, [1] * len(shape))


def _row_placement(dest: ir.Value, k: int) -> tuple[list, list[int], list[int], list[int]]:
    """Dynamic sizes, then static offsets, sizes and strides of a row (ivs as the k dynamic
    offsets) in `dest`."""
    shape = list(ir.RankedTensorType(dest.type).shape)
    sizes = [1] * k + shape[k:]
    dyn = [tensor.dim(dest, _idx(j)) for j, s in enumerate(sizes) if s == T.DYNAMIC]
    return dyn, [T.DYNAMIC] * k + [0] * (len(shape) - k), sizes, [1] * len(shape)


def _insert_row(row: ir.Value, dest: ir.Value, ivs: list, k: int, parallel: bool = False):
    dyn, offsets, sizes, strides = _row_placement(dest, k)
    if parallel:
        return tensor.parallel_insert_slice(row, dest, ivs, dyn, [], offsets, sizes, strides)
    return tensor.insert_slice(row, dest, ivs, dyn, [], offsets, sizes, strides)


def _row_type(t: ir.Type, k: int) -> ir.Type:
    rt = ir.RankedTensorType(t)
    return ir.RankedTensorType.get([1] * k + list(rt.shape)[k:], rt.element_type)


def _offset_row_indices(op, ivs: list[ir.Value], k: int) -> None:
    """linalg.index d (d < k) in a per-row body counts from the row, not from 0: add the row."""
    indices = []

    def collect(o):
        if o.name == "linalg.index" and int(ir.IntegerAttr(o.attributes["dim"]).value) < k:
            indices.append(o)
        return ir.WalkResult.ADVANCE

    op.walk(collect)
    for ix in indices:
        d = int(ir.IntegerAttr(ix.attributes["dim"]).value)
        uses = list(ix.results[0].uses)
        with ir.InsertionPoint.after(ix), ix.location:
            shifted = arith.addi(ix.results[0], ivs[d])
        for u in uses:
            u.owner.operands[u.operand_number] = shifted


def _emit_rows(plan: _Plan, ivs: list[ir.Value], dests: list[ir.Value],
               dest_ivs: list[ir.Value] | None = None, temps_at: ir.InsertionPoint | None = None) -> list[ir.Value]:
    """Clone the row ops for row `ivs`; returns the row slice of each stored value.
    `dests`: the output tensors the stored values are inserted into (their row slices become
    the stored ops' inits, so the ops write the output rows in place), at row `dest_ivs`
    (default `ivs`; a chunk of rows has its own origin)."""
    k = plan.k
    dest_ivs = ivs if dest_ivs is None else dest_ivs
    env: dict = {}
    slices: dict = {}
    stored_dest = dict(zip(plan.stored, dests))
    chunk_temps: dict = {}   # dynamic row temporary -> (shape, element type), made per use

    def row_of(v, pos=None):
        if v in chunk_temps:
            # A temporary per op that writes it: two row ops sharing one would make
            # bufferization copy the first one's row into a fresh heap buffer for every row.
            # (bufferization.alloc_tensor: CSE would merge identical tensor.empty ops again)
            shape, element_type = chunk_temps[v]
            rt = ir.RankedTensorType.get([x if isinstance(x, int) else T.DYNAMIC for x in shape], element_type)
            with temps_at:
                return bufferization.alloc_tensor(rt, [x for x in shape if not isinstance(x, int)])
        if v in env:
            return env[v]
        key = (v, None if pos is None else tuple(pos))
        if key not in slices:
            slices[key] = _row_slice(v, ivs, k, pos)
        return slices[key]

    for op in plan.row_ops:
        if op.name == "tensor.empty":
            rt = ir.RankedTensorType(_row_type(op.results[0].type, k))
            old_shape = list(ir.RankedTensorType(op.results[0].type).shape)
            sizes = list(op.operands)
            dyn_of = {j: sizes.pop(0) for j, d in enumerate(old_shape) if d == T.DYNAMIC}
            shape = [dyn_of[j] if d == T.DYNAMIC else d for j, d in enumerate(rt.shape)]
            # A row temporary of dynamic size is made once per chunk (`temps_at`), not per
            # row: it would be a heap allocation per row (only static ones go on the stack).
            if temps_at is not None and any(not isinstance(x, int) for x in shape):
                chunk_temps[op.results[0]] = (shape, rt.element_type)
            else:
                env[op.results[0]] = tensor.empty(shape, rt.element_type)
            continue
        # The row operands first (their slices must dominate the clone).
        replace: dict[int, ir.Value] = {}
        if op.name == "linalg.fill":
            replace[1] = row_of(op.operands[1])
        else:
            for i, (v, m) in enumerate(zip(list(op.operands), _maps(op))):
                pos = _row_positions(m, k)
                if any(p is not None for p in pos):
                    replace[i] = row_of(v, pos)
            n_in = len(op.operands) - len(op.results)
            for j, r in enumerate(op.results):
                init = op.operands[n_in + j]
                if r in stored_dest and isinstance(init, ir.OpResult) and init.owner.name == "tensor.empty":
                    replace[n_in + j] = _row_slice(stored_dest[r], dest_ivs, k)
        new = op.clone()
        for i, v in replace.items():
            new.operands[i] = v
        if op.name != "linalg.fill":
            _offset_row_indices(new, ivs, k)
        for old_r, new_r in zip(op.results, new.results):
            new_r.set_type(_row_type(old_r.type, k))
            env[old_r] = new_r
    return [env[v] for v in plan.stored]


def _sizes_of(v: ir.Value, row_sizes: list[ir.Value], k: int) -> list:
    """Dynamic sizes of a stored value (for its output tensor.empty): row dims from the row
    loops' bounds, the others from the tensor.empty its init chain starts at."""
    shape = list(ir.RankedTensorType(v.type).shape)
    init = v
    while isinstance(init, ir.OpResult) and init.owner.name != "tensor.empty":
        op = init.owner
        n_in = len(op.operands) - len(op.results)
        init = op.operands[n_in + list(op.results).index(init)] if op.name == "linalg.generic" else op.operands[-1]
    empty_sizes = list(init.owner.operands) if isinstance(init, ir.OpResult) else []
    out = []
    for j, d in enumerate(shape):
        if d != T.DYNAMIC:
            continue
        if j < k:
            out.append(row_sizes[j])
        else:
            out.append(empty_sizes[sum(1 for x in shape[:j] if x == T.DYNAMIC)])
    return out


def _empty_like(v: ir.Value, dynamic_sizes: list) -> ir.Value:
    rt = ir.RankedTensorType(v.type)
    sizes = list(dynamic_sizes)
    return tensor.empty([sizes.pop(0) if d == T.DYNAMIC else d for d in rt.shape], rt.element_type)


def _parallel(plan: _Plan) -> bool:
    # The largest tensor a row op reads or writes (a row sum's work is its input, not its
    # [rows, 1] result).
    work = max(math.prod(_static_shape(v) or [0]) for op in plan.row_ops
               for v in list(op.operands) + list(op.results))
    return threads() > 1 and math.prod(plan.rows) >= 2 and work >= GRAIN


def apply(func_op, plan: _Plan) -> ir.Block:
    """Build the row loop(s) after the last row op; returns the block holding the per-row ops."""
    k, rows = plan.k, plan.rows
    last = plan.row_ops[-1]
    loc = last.location
    with ir.InsertionPoint.after(last), loc:
        if plan.source is not None:
            row_sizes = [tensor.dim(plan.source, _idx(j)) for j in range(k)]
            inits = [_empty_like(v, _sizes_of(v, row_sizes, k)) for v in plan.stored]
            results, body = _chunked_rows(plan, inits, row_sizes)
        elif _parallel(plan):
            # static rows; a row of symbolic length still sizes its outputs at run time
            inits = [_empty_like(v, _sizes_of(v, [_idx(r) for r in rows], k)) for v in plan.stored]
            loop = scf.ForallOp([0] * k, list(rows), [1] * k, inits)
            with ir.InsertionPoint(loop.body):
                ivs = list(loop.induction_variables)
                outs = list(loop.inner_iter_args)
                row_vals = _emit_rows(plan, ivs, outs)
                term = loop.terminator()
                with ir.InsertionPoint(term.block):
                    for rv, o in zip(row_vals, outs):
                        _insert_row(rv, o, list(ivs), k, parallel=True)
            results, body = list(loop.results), loop.body
        else:
            inits = [_empty_like(v, _sizes_of(v, [_idx(r) for r in rows], k)) for v in plan.stored]
            results, body = _serial_loops(plan, inits)
    for v, r in zip(plan.stored, results):
        uses = [u for u in v.uses if u.owner.name in _EXITS or u.owner in plan.post_ops]
        for u in uses:
            u.owner.operands[u.operand_number] = r
    after = results[0].owner
    for op in plan.post_ops:   # reshapes of the results: after the loop that defines them
        op.move_after(after)
        after = op
    for op in reversed(plan.row_ops):
        op.erase()
    func_op.attributes[ROW_DIMS] = ir.IntegerAttr.get(ir.IntegerType.get_signless(64), k)
    return body


def _chunked_rows(plan: _Plan, inits: list[ir.Value], row_sizes: list[ir.Value]):
    """Rows of dynamic count: scf.forall over chunks of the first row dim (each about GRAIN
    elements of work, at least one index), serial loops over the chunk's rows."""
    k = plan.k
    # Work per index of row dim 0: the elements of the row source below it.
    per_index = _idx(1)
    shape = list(ir.RankedTensorType(plan.source.type).shape)
    for j in range(1, len(shape)):
        d = row_sizes[j] if j < k else (tensor.dim(plan.source, _idx(j)) if shape[j] == T.DYNAMIC else _idx(shape[j]))
        per_index = arith.muli(per_index, d)
    chunk = chunk_size(per_index)
    n_chunks = arith.ceildivsi(row_sizes[0], chunk)
    loop = scf.ForallOp([_idx(0)], [n_chunks], [_idx(1)], inits)
    with ir.InsertionPoint(loop.body):
        (c,) = list(loop.induction_variables)
        outs = list(loop.inner_iter_args)
        lo = arith.muli(c, chunk)
        hi = arith.minsi(arith.addi(lo, chunk), row_sizes[0])
        count = arith.subi(hi, lo)
        chunk_outs = [_chunk_slice(o, lo, count) for o in outs]
        ivs: list[ir.Value] = []
        bodies: list[ir.Block] = []
        outermost: list = []   # the chunk's first row loop: row temporaries go before it

        def build(d: int, carried: list[ir.Value]):
            inner = scf.ForOp(_idx(0), count if d == 0 else row_sizes[d], _idx(1), carried)
            if d == 0:
                outermost.append(inner)
            with ir.InsertionPoint(inner.body):
                ivs.append(inner.induction_variable)
                inner_carried = list(inner.inner_iter_args)
                if d == k - 1:
                    bodies.append(inner.body)
                    global_ivs = [arith.addi(ivs[0], lo)] + ivs[1:]
                    row_vals = _emit_rows(plan, global_ivs, inner_carried, dest_ivs=list(ivs),
                                          temps_at=ir.InsertionPoint(outermost[0].operation))
                    scf.YieldOp([_insert_row(rv, o, list(ivs), k) for rv, o in zip(row_vals, inner_carried)])
                else:
                    scf.YieldOp(list(build(d + 1, inner_carried).results))
            return inner

        done = build(0, chunk_outs)
        geometry = [_chunk_geometry(o, count) for o in outs]  # before the terminator: it holds inserts only
        term = loop.terminator()
        with ir.InsertionPoint(term.block):
            for r, o, g in zip(done.results, outs, geometry):
                _insert_chunk(r, o, lo, g)
    return list(loop.results), bodies[0]


def _chunk_geometry(t: ir.Value, count: ir.Value):
    shape = list(ir.RankedTensorType(t.type).shape)
    sizes = [T.DYNAMIC] + shape[1:]
    dyn = [count] + [tensor.dim(t, _idx(j)) for j in range(1, len(shape)) if shape[j] == T.DYNAMIC]
    return shape, sizes, dyn


def _chunk_slice(t: ir.Value, lo: ir.Value, count: ir.Value) -> ir.Value:
    shape, sizes, dyn = _chunk_geometry(t, count)
    rt = ir.RankedTensorType.get(sizes, ir.RankedTensorType(t.type).element_type)
    return tensor.extract_slice(rt, t, [lo], dyn, [], [T.DYNAMIC] + [0] * (len(shape) - 1), sizes, [1] * len(shape))


def _insert_chunk(r: ir.Value, dest: ir.Value, lo: ir.Value, geometry) -> None:
    shape, sizes, dyn = geometry
    tensor.parallel_insert_slice(r, dest, [lo], dyn, [], [T.DYNAMIC] + [0] * (len(shape) - 1), sizes, [1] * len(shape))


def _serial_loops(plan: _Plan, inits: list[ir.Value]):
    """Nested scf.for over the row dims (below the grain: no OpenMP fork)."""
    k, rows = plan.k, plan.rows
    ivs: list[ir.Value] = []
    bodies: list[ir.Block] = []

    def build(d: int, carried: list[ir.Value]):
        loop = scf.ForOp(_idx(0), _idx(rows[d]), _idx(1), carried)
        with ir.InsertionPoint(loop.body):
            ivs.append(loop.induction_variable)
            inner_carried = list(loop.inner_iter_args)
            if d == k - 1:
                bodies.append(loop.body)
                row_vals = _emit_rows(plan, ivs, inner_carried)
                new = [_insert_row(rv, o, list(ivs), k) for rv, o in zip(row_vals, inner_carried)]
                scf.YieldOp(new)
            else:
                scf.YieldOp(list(build(d + 1, inner_carried).results))
        return loop

    outer = build(0, inits)
    return list(outer.results), bodies[0]


def row_block(func_op) -> ir.Block | None:
    """Row-block one kernel when it is row-aligned (and `lamina.row_dims` does not say 0);
    returns the block of per-row ops, or None (the kernel is unchanged)."""
    if ROW_DIMS in func_op.attributes and int(ir.IntegerAttr(func_op.attributes[ROW_DIMS]).value) == 0:
        return None
    plan = analyze(func_op)
    if plan is None:
        if ROW_DIMS not in func_op.attributes:
            func_op.attributes[ROW_DIMS] = ir.IntegerAttr.get(ir.IntegerType.get_signless(64), 0)
        return None
    return apply(func_op, plan)
