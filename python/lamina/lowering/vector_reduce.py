"""Vector row reductions (part of lamina-tile-cpu, for kernels without a contraction).

lamina-to-linalg emits reductions as linalg.generic ops whose reduced loops are innermost:
sums carry a compensated pair (s, c) (`lamina.accumulate = "compensated"`), max/min/plain
sums one accumulator. The linalg vectorizer only knows single-combiner reductions, so this
rewrites such a generic G (loops [rows..., reduced...], inputs read whole rows or one value
per row) into an all-parallel generic over the rows whose body reduces one row with vectors:

    acc[u] = identity (vector<L>, u < UNROLL)       L = the host's lanes of the accumulator
                                                    type (f32, or f64 for f64 reductions)
    for j in 0 .. N - N % (L*UNROLL) step L*UNROLL:  U independent lane sets (hide latency)
        acc[u] = body(x[r, j + u*L : +L], acc[u])   G's own body, applied lane-wise
    for j in .. N step L:                           the tail: masked reads, masked update
        acc[0] = select(mask, body(x[r, j:], acc[0]), acc[0])
    merge the sets, then the lanes: max/min/add via vector.reduction

Compensated sums (`lamina.accumulate = "compensated"`) are chunked instead: the U sets are
plain lane partials of the body's addend over CHUNK unrolled steps (one add per element),
each chunk is folded into a compensated lane pair (S, C) with TwoSum, and the lanes of
(S, C) merge as a TwoSum tree (halving the vector), so the row sum keeps the accumulation
contract (docs/ir-levels.md) at the cost of a plain sum: every lane partial is a sum of at
most CHUNK terms, and the chunks are summed with compensation.

so each lane is its own accumulator over N/L elements, and the new
row generic is tiled over rows like any elementwise op (parallel above the grain). It is
marked `lamina.vector_reduction = L` and gets `lamina.vector_sizes = array<i64: 1>` (one row
per step: its body is the vector code). Reductions that do not fit (integer accumulators,
inputs read other than by row, a reduced loop that is not innermost, rows shorter than L)
stay as they are.
"""
from __future__ import annotations

import math as _pymath

from mlir import ir
from mlir.dialects import arith, linalg, scf, tensor, vector

from .tile_pointwise import GRAIN, TILE_SIZES, VECTOR_SIZES, threads, vector_lanes
from .to_linalg import two_sum_step

MARK = "lamina.vector_reduction"
UNROLL = 4
CHUNK = 16     # unrolled steps a plain lane partial sums before it is folded, compensated

# Combiners of single-accumulator reductions: arith op -> vector.reduction kind.
_COMBINERS = {"arith.addf": "add", "arith.maximumf": "maximumf", "arith.minimumf": "minimumf",
              "arith.mulf": "mul"}
_BODY_OPS = ("arith.", "math.")


def _kinds(op) -> list[str]:
    return ["reduction" if "reduction" in str(a) else "parallel" for a in ir.ArrayAttr(op.attributes["iterator_types"])]


def _maps(op) -> list[ir.AffineMap]:
    return [ir.AffineMapAttr(m).value for m in ir.ArrayAttr(op.attributes["indexing_maps"])]


def _is_row_map(m: ir.AffineMap, k: int) -> bool:
    """Reads one value per row: the parallel dims 0..k-1 in order, constant-0 dims between."""
    dims = [ir.AffineDimExpr(e).position for e in m.results if isinstance(e, ir.AffineDimExpr)]
    others = [e for e in m.results if not isinstance(e, ir.AffineDimExpr)]
    return dims == list(range(k)) and all(str(e) == "0" for e in others)


def _fill_value(v: ir.Value):
    """The constant a linalg.fill init holds, or None."""
    owner = v.owner if isinstance(v, ir.OpResult) else None
    if owner is None or owner.name != "linalg.fill":
        return None
    c = owner.operands[0]
    if not isinstance(c, ir.OpResult) or c.owner.name != "arith.constant":
        return None
    return c.owner.attributes["value"]


def _is_compensated(op, block: ir.Block, n_in: int) -> bool:
    """lamina-to-linalg's compensated pair: marked so, or (after elementwise fusion, which
    drops discardable attributes) its TwoSum tail: yield(s + y, select(finite, e, 0))."""
    if "lamina.accumulate" in op.attributes:
        return ir.StringAttr(op.attributes["lamina.accumulate"]).value == "compensated"
    s_arg = block.arguments[n_in]
    ys = list(list(block.operations)[-1].operands)
    t, c = ys
    return (isinstance(t, ir.OpResult) and t.owner.name == "arith.addf" and s_arg in list(t.owner.operands)
            and isinstance(c, ir.OpResult) and c.owner.name == "arith.select")


def match(op) -> dict | None:
    """The facts the rewrite needs, or None when `op` is not a row reduction it handles."""
    if op.operation.name != "linalg.generic" or MARK in op.attributes:
        return None
    kinds = _kinds(op)
    k = kinds.index("reduction") if "reduction" in kinds else len(kinds)
    if k == len(kinds) or any(x != "reduction" for x in kinds[k:]):
        return None
    n_out = len(op.results)
    operands = list(op.operands)
    ins, outs = operands[:-n_out], operands[-n_out:]
    maps = _maps(op)
    full = ir.AffineMap.get_identity(len(kinds))
    for v in operands:
        if not isinstance(v.type, ir.RankedTensorType):
            return None
        t = ir.RankedTensorType(v.type)
        # Static rows; the reduced dims (row length) may be dynamic: the loops then read
        # their bounds at run time.
        if any(t.is_dynamic_dim(i) for i in range(min(k, t.rank))) or (
                not t.has_static_shape and (v in outs or k == 0)):
            return None
    in_kinds = []
    for v, m in zip(ins, maps[:len(ins)]):
        if m == full:
            in_kinds.append("row_elements")
        elif _is_row_map(m, k):
            in_kinds.append("row_value")
        else:
            return None
    if "row_elements" not in in_kinds or not all(_is_row_map(m, k) for m in maps[len(ins):]):
        return None
    row_t = ir.RankedTensorType(ins[in_kinds.index("row_elements")].type)
    shape = row_t.shape
    rows = _pymath.prod(shape[:k])
    n = None if not row_t.has_static_shape else _pymath.prod(shape[k:])   # None: dynamic
    acc_types = {str(ir.RankedTensorType(v.type).element_type) for v in outs}
    if len(acc_types) != 1 or not acc_types <= {"f32", "f64"}:
        return None
    acc_type = ir.RankedTensorType(outs[0].type).element_type
    lanes = vector_lanes() * 32 // (64 if str(acc_type) == "f64" else 32)   # the same vector width
    if (n is not None and n < lanes) or rows == 0:
        return None
    identities = [_fill_value(v) for v in outs]
    if any(x is None for x in identities):
        return None
    block = op.regions[0].blocks[0]
    body = list(block.operations)
    if any(not b.operation.name.startswith(_BODY_OPS) for b in body[:-1]):
        return None
    mode = None
    addend = None
    if n_out == 2 and _is_compensated(op, block, len(ins)):
        addend = _compensated_addend(block, len(ins))
        mode = "compensated" if addend is not None else None
    elif n_out == 1:
        y = body[-1].operands[0]
        acc = block.arguments[len(ins)]
        if isinstance(y, ir.OpResult) and y.owner.name in _COMBINERS and acc in list(y.owner.operands):
            mode = _COMBINERS[y.owner.name]
    if mode is None:
        return None
    return dict(k=k, rows=rows, n=n, ins=ins, in_kinds=in_kinds, outs=outs, mode=mode,
                identities=identities, addend=addend, acc=acc_type, lanes=lanes)


def _compensated_addend(block: ir.Block, n_in: int) -> ir.Value | None:
    """The term a compensated body adds: y in its first op `addf(y, c)` (two_sum_step)."""
    c_arg = block.arguments[n_in + 1]
    for use in c_arg.uses:
        owner = use.owner
        if owner.name == "arith.addf" and use.operand_number == 1:
            return owner.operands[0]
    return None


def _collapse(v: ir.Value, groups: list[list[int]], shape: list[int]) -> ir.Value:
    t = ir.RankedTensorType(v.type)
    out_t = ir.RankedTensorType.get(shape, t.element_type)
    if t.rank == len(shape) and list(t.shape) == shape:
        return v
    if t.rank == 0:   # a scalar row: [] -> [1]
        return tensor.expand_shape(out_t, v, _reassoc([]), [], shape)
    return tensor.collapse_shape(out_t, v, _reassoc(groups))


def _reassoc(groups) -> ir.ArrayAttr:
    i64 = ir.IntegerType.get_signless(64)
    return ir.ArrayAttr.get([ir.ArrayAttr.get([ir.IntegerAttr.get(i64, i) for i in g]) for g in groups])


def _as_rows_by_n(v: ir.Value, k: int, rows: int, n: int | None) -> ir.Value:
    """[p..., r...] -> [rows, n] (a full reduction gets rows = 1); n None: dynamic (k > 0)."""
    t = ir.RankedTensorType(v.type)
    if n is None:
        return _collapse(v, [list(range(k)), list(range(k, t.rank))], [rows, T_DYNAMIC])
    if k == 0:
        flat = _collapse(v, [list(range(t.rank))], [n]) if t.rank != 1 else v
        return tensor.expand_shape(ir.RankedTensorType.get([1, n], t.element_type), flat, _reassoc([[0, 1]]), [], [1, n])
    return _collapse(v, [list(range(k)), list(range(k, t.rank))], [rows, n])


def _as_rows(v: ir.Value, rows: int) -> ir.Value:
    t = ir.RankedTensorType(v.type)
    return _collapse(v, [list(range(t.rank))], [rows])


def _from_rows(v: ir.Value, like: ir.Type) -> ir.Value:
    lt = ir.RankedTensorType(like)
    if lt.rank == 0:
        return tensor.collapse_shape(lt, v, _reassoc([]))
    if lt.rank == 1:
        return v
    return tensor.expand_shape(lt, v, _reassoc([list(range(lt.rank))]), [], list(lt.shape))


def _splat(t: ir.Type, attr: ir.Attribute) -> ir.Value:
    return arith.constant(t, ir.DenseElementsAttr.get_splat(t, attr))


T_DYNAMIC = ir.ShapedType.get_dynamic_size() if hasattr(ir.ShapedType, "get_dynamic_size") else -(2**63)


def _bound(n, step: int):
    """(n as an index Value, the end of its whole `step`s): static ints folded, dynamic
    ones computed (n - n % step)."""
    if isinstance(n, int):
        return _index(n), _index(n - n % step)
    return n, arith.subi(n, arith.remsi(n, _index(step)))


def _index(i: int) -> ir.Value:
    return arith.constant(ir.IndexType.get(), i)


class _BodyCloner:
    """G's body, applied to vectors of L lanes (its ops are elementwise arith/math)."""

    def __init__(self, block: ir.Block, lanes: int):
        self.ops = list(block.operations)
        self.args = list(block.arguments)
        self.lanes = lanes

    def vtype(self, t: ir.Type) -> ir.Type:
        return ir.VectorType.get([self.lanes], t)

    def __call__(self, values: list[ir.Value], want: list[ir.Value] | None = None) -> list[ir.Value]:
        """The body on vectors `values` (one per block argument): its yielded values, or the
        values `want` of the original body."""
        env = dict(zip(self.args, values))
        for op in self.ops[:-1]:
            op = op.operation
            if op.name == "arith.constant":
                new = _splat(self.vtype(op.results[0].type), op.attributes["value"])
                env[op.results[0]] = new
                continue
            attrs = {op.attributes[i].name: op.attributes[i].attr for i in range(len(op.attributes))}
            new = ir.Operation.create(op.name, results=[self.vtype(r.type) for r in op.results],
                                      operands=[env[v] if v in env else self._outer(v) for v in op.operands],
                                      attributes=attrs)
            for old, r in zip(op.results, new.results):
                env[old] = r
        wanted = list(self.ops[-1].operands) if want is None else want
        return [env[v] if v in env else self._outer(v) for v in wanted]

    def _outer(self, v: ir.Value) -> ir.Value:
        """A value defined above the generic: broadcast it to the lanes."""
        return vector.broadcast(self.vtype(v.type), v)


def _merge_lanes(mode: str, accs: list[list[ir.Value]], acc_type: ir.Type) -> list[ir.Value]:
    """The row's result from UNROLL sets of single-accumulator lane partials (compensated
    sums merge in _chunked_compensated_sum)."""
    combine = {"add": arith.addf, "maximumf": arith.maximumf, "minimumf": arith.minimumf, "mul": arith.mulf}[mode]
    acc = accs[0][0]
    for other in accs[1:]:
        acc = combine(acc, other[0])
    kind = ir.Attribute.parse(f"#vector.kind<{mode}>")
    return [vector.ReductionOp(acc_type, kind, acc).result]


def rewrite(op, facts: dict) -> None:
    """Replace the reduction generic `op` by a row generic with a vector body."""
    lanes = facts["lanes"]
    k, rows, n = facts["k"], facts["rows"], facts["n"]
    acc_t = facts["acc"]   # the accumulator type: f32, or f64 for f64 reductions
    vacc = ir.VectorType.get([lanes], acc_t)
    cloner = _BodyCloner(op.regions[0].blocks[0], lanes)
    n_out = len(facts["outs"])
    with ir.InsertionPoint(op), op.location:
        ins = [_as_rows_by_n(v, k, rows, n) if kind == "row_elements" else _as_rows(v, rows)
               for v, kind in zip(facts["ins"], facts["in_kinds"])]
        outs = [tensor.empty([rows], acc_t) for _ in range(n_out)]
        idm = ir.AffineMap.get_identity(1)
        gen = linalg.GenericOp([ir.RankedTensorType.get([rows], acc_t)] * n_out, [], outs,
                               ir.ArrayAttr.get([ir.AffineMapAttr.get(idm)] * n_out),
                               ir.ArrayAttr.get([ir.Attribute.parse("#linalg.iterator_type<parallel>")]))
        gen.attributes[MARK] = ir.IntegerAttr.get(ir.IntegerType.get_signless(64), lanes)
        gen.attributes[VECTOR_SIZES] = ir.DenseI64ArrayAttr.get([1])
        # Parallel row tiles when the whole reduction is above the grain (the row generic's
        # own size, rows, says nothing about its work); a user's tile on the rows wins.
        if TILE_SIZES in op.attributes and k:
            rows_tile = list(ir.DenseI64ArrayAttr(op.attributes[TILE_SIZES]))[0]
        else:
            nt = threads()
            rows_tile = -(-rows // nt) if n is not None and rows * n >= GRAIN and nt > 1 and rows >= nt else 0
        gen.attributes[TILE_SIZES] = ir.DenseI64ArrayAttr.get([rows_tile])
        block = gen.regions[0].blocks.append(*([acc_t] * n_out))
        with ir.InsertionPoint(block):
            r = linalg.IndexOp(ir.IntegerAttr.get(ir.IntegerType.get_signless(64), 0)).result
            zero_i = _index(0)
            pad = {}
            row_vals = []
            for v, kind in zip(ins, facts["in_kinds"]):
                et = ir.RankedTensorType(v.type).element_type
                pad.setdefault(str(et), arith.constant(et, ir.FloatAttr.get(et, 0.0) if "f" in str(et) else ir.IntegerAttr.get(et, 0)))
                row_vals.append(None if kind == "row_elements" else vector.broadcast(ir.VectorType.get([lanes], et), tensor.extract(v, [r])))
            ident = [_splat(vacc, a) for a in facts["identities"]]
            minor = ir.AffineMapAttr.get(ir.AffineMap.get(2, 0, [ir.AffineDimExpr.get(1)]))

            def read(j, mask=None):
                vals = []
                for v, kind, rv in zip(ins, facts["in_kinds"], row_vals):
                    if kind != "row_elements":
                        vals.append(rv)
                        continue
                    et = ir.RankedTensorType(v.type).element_type
                    vals.append(vector.TransferReadOp(ir.VectorType.get([lanes], et), v, [r, j], minor,
                                                      pad[str(et)], [mask is None], mask=mask).result)
                return vals

            step = lanes * UNROLL
            if n is None:   # the row length of this call
                n_dyn = tensor.dim(ins[facts["in_kinds"].index("row_elements")], _index(1))
            nn = n if n is not None else n_dyn
            if facts["mode"] == "compensated":
                linalg.YieldOp(_chunked_compensated_sum(cloner, read, facts["addend"], nn, lanes, acc_t))
                return _finish(op, gen)
            n_v, main_v = _bound(nn, step)
            static = n is not None
            sets = [list(ident) for _ in range(UNROLL)]
            if not static or n - n % step:
                loop = scf.ForOp(zero_i, main_v, _index(step), [a for s in sets for a in s])
                with ir.InsertionPoint(loop.body):
                    j = loop.induction_variable
                    carried = list(loop.inner_iter_args)
                    new = []
                    for u in range(UNROLL):
                        ju = arith.addi(j, _index(u * lanes)) if u else j
                        new += cloner(read(ju) + carried[u * n_out:(u + 1) * n_out])
                    scf.YieldOp(new)
                res = list(loop.results)
                sets = [res[u * n_out:(u + 1) * n_out] for u in range(UNROLL)]
            if not static or n % step:
                tail = scf.ForOp(main_v, n_v, _index(lanes), sets[0])
                with ir.InsertionPoint(tail.body):
                    j = tail.induction_variable
                    left = arith.subi(n_v, j)
                    mask = vector.CreateMaskOp(ir.VectorType.get([lanes], ir.IntegerType.get_signless(1)), [left]).result
                    old = list(tail.inner_iter_args)
                    upd = cloner(read(j, mask) + old)
                    scf.YieldOp([arith.select(mask, a, b) for a, b in zip(upd, old)])
                sets[0] = list(tail.results)
            linalg.YieldOp(_merge_lanes(facts["mode"], sets, acc_t))
    _finish(op, gen)


def _finish(op, gen) -> None:
    with ir.InsertionPoint(op), op.location:
        for old, new in zip(op.results, gen.results):
            old.replace_all_uses_with(_from_rows(new, old.type))
    op.operation.erase()


def _chunked_compensated_sum(cloner, read, addend: ir.Value, n, lanes: int, acc_t: ir.Type) -> list[ir.Value]:
    """A row's compensated sum (s, c), cheaply: UNROLL sets of plain lane accumulators sum
    CHUNK vectors each (one add per element), then each set is folded into a compensated
    lane pair (S, C) with TwoSum; the lanes of (S, C) merge as a TwoSum tree. Every lane
    partial sums at most CHUNK terms in plain arithmetic of the accumulator type, so the error stays that of a CHUNK-term
    sum per chunk plus a compensated sum of the chunks (docs/ir-levels.md, accumulation).
    `acc_t` is the accumulator type (f32, or f64 for f64 sums)."""
    vacc = ir.VectorType.get([lanes], acc_t)
    zero = _splat(vacc, ir.FloatAttr.get(acc_t, 0.0))
    step = lanes * UNROLL
    chunk = step * CHUNK

    def term(j, mask=None):
        y = cloner(read(j, mask) + [zero, zero], [addend])[0]
        return y if mask is None else arith.select(mask, y, zero)

    def plain_loop(lo, hi) -> list[ir.Value]:
        loop = scf.ForOp(lo, hi, _index(step), [zero] * UNROLL)
        with ir.InsertionPoint(loop.body):
            j = loop.induction_variable
            acc = list(loop.inner_iter_args)
            scf.YieldOp([arith.addf(acc[u], term(arith.addi(j, _index(u * lanes)) if u else j))
                         for u in range(UNROLL)])
        return list(loop.results)

    def fold(parts, S, C):
        for p in parts:
            S, C = two_sum_step(p, S, C)
        return S, C

    S, C = zero, zero
    static = isinstance(n, int)
    n_v, chunks_v = _bound(n, chunk)
    _, main_v = _bound(n, step)
    if not static or n - n % chunk:
        outer = scf.ForOp(_index(0), chunks_v, _index(chunk), [S, C])
        with ir.InsertionPoint(outer.body):
            jc = outer.induction_variable
            parts = plain_loop(jc, arith.addi(jc, _index(chunk)))
            scf.YieldOp(list(fold(parts, *outer.inner_iter_args)))
        S, C = outer.results
    if not static or (n - n % chunk) < (n - n % step):
        S, C = fold(plain_loop(chunks_v, main_v), S, C)
    if not static or n % step:
        tail = scf.ForOp(main_v, n_v, _index(lanes), [zero])
        with ir.InsertionPoint(tail.body):
            j = tail.induction_variable
            mask = vector.CreateMaskOp(ir.VectorType.get([lanes], ir.IntegerType.get_signless(1)),
                                       [arith.subi(n_v, j)]).result
            scf.YieldOp([arith.addf(tail.inner_iter_args[0], term(j, mask))])
        S, C = fold(list(tail.results), S, C)
    # Lanes: halve the vector, adding the upper half into the lower one with TwoSum.
    width = lanes
    while width > 1:
        h = width // 2
        half = ir.VectorType.get([h], acc_t)

        def part(v, off):
            return vector.extract_strided_slice(half, v, [off], [h], [1])
        S, C = two_sum_step(part(S, h), part(S, 0), arith.addf(part(C, 0), part(C, h)))
        width = h
    return [vector.extract(S, [], [0]), vector.extract(C, [], [0])]


def vectorize_reductions(block: ir.Block) -> int:
    """Rewrite every row reduction of one block (a kernel's body, or its per-row body after
    row_kernel.py); returns how many."""
    count = 0
    for op in list(block.operations):
        facts = match(op)
        if facts is not None:
            rewrite(op, facts)
            count += 1
    return count
