"""lamina.argsort -> a bitonic sorting network as loops.

For a dim of size n, m = ceil(log2 n) rounds; round t (block k = 2^(t+1)) has t + 1 steps,
the first comparing i with i ^ (k - 1) (its mirror in the block), the rest with i ^ (k >> s)
(the form of the network where every comparator puts the smaller element first, so a
partner beyond n is a virtual +inf and no padding is needed). The masks are a constant
table (network_masks), and the steps run two per iteration, ping-ponging between two
buffers so that every value the loop yields is written in place into its own iter_arg
(one-shot bufferization needs that):

    scf.for %q = 0 to len(masks) / 2 iter_args(%ka = x, %ia = iota, %kb, %ib) {
      %kb', %ib' = step(%ka, %ia -> %kb, %ib, masks[2q])
      %ka', %ia' = step(%kb', %ib' -> %ka, %ia, masks[2q + 1])
    } {lamina.argsort = {dim, descending}}

A step is scalar loops over every element i (a linalg.generic that does not read its outs
gets fresh outs from linalg's canonicalizations, breaking the ping-pong):
    p = i ^ mask; (pk, pi) = (key, idx)[.., p, ..] if p < n
    take = p < n && (i < p ? before(partner, self) : before(self, partner))

`before` is the total order of (value, position) pairs: NaN after every number (before
every number when descending), equal values by position: a stable sort, torch's
stable=True order. Loops keep the IR one step long whatever n is (an unrolled network is
O(log^2 n) kernels' worth of code: 55 steps for n = 1000, seconds of LLVM). The attribute
names the loop for targets that run it elsewhere (the cuda target: torch.sort(stable=True)
in its launcher).
"""
from __future__ import annotations

import numpy as np
from mlir import ir
from mlir.dialects import arith, bufferization, scf, tensor

from lamina.dialect import infer, ops

from .to_linalg import _dim, _empty, _fill, _generic, _idx, _is_float, _loop_index, _rt, _shape, _st, lowering

ARGSORT_ATTR = "lamina.argsort"


def _before(ak, ai, bk, bi, descending: bool) -> ir.Value:
    """(ak, ai) sorts before (bk, bi): scalars, positions as i64."""
    idx_lt = arith.cmpi(arith.CmpIPredicate.slt, ai, bi)
    if _is_float(ak.type):
        a_nan = arith.cmpf(arith.CmpFPredicate.UNO, ak, ak)
        b_nan = arith.cmpf(arith.CmpFPredicate.UNO, bk, bk)
        true = arith.constant(ir.IntegerType.get_signless(1), 1)
        if descending:
            first = arith.ori(arith.andi(a_nan, arith.xori(b_nan, true)), arith.cmpf(arith.CmpFPredicate.OGT, ak, bk))
        else:
            first = arith.ori(arith.andi(b_nan, arith.xori(a_nan, true)), arith.cmpf(arith.CmpFPredicate.OLT, ak, bk))
        tie = arith.ori(arith.cmpf(arith.CmpFPredicate.OEQ, ak, bk), arith.andi(a_nan, b_nan))
    else:
        first = arith.cmpi(arith.CmpIPredicate.sgt if descending else arith.CmpIPredicate.slt, ak, bk)
        tie = arith.cmpi(arith.CmpIPredicate.eq, ak, bk)
    return arith.ori(first, arith.andi(tie, idx_lt))


def _iota_along(rt: ir.RankedTensorType, d: int, dyn) -> ir.Value:
    init = _empty(rt, dyn)
    i64 = ir.IntegerType.get_signless(64)
    return _generic([], [init], [ir.AffineMap.get_identity(rt.rank)], ["parallel"] * rt.rank,
                    lambda _o: [arith.index_cast(i64, _loop_index(d))])[0]


def network_masks(n: int) -> list[int]:
    """The partner mask (p = i ^ mask) of every step for a dim of size n, padded to an even
    count with 0 (p = i: a step that keeps everything)."""
    masks = []
    k = 2
    while k // 2 < n:
        masks.append(k - 1)
        j = k // 4
        while j >= 1:
            masks.append(j)
            j //= 2
        k *= 2
    return masks + [0] * (len(masks) % 2)


def _step(key, idx, into_key, into_idx, mask: ir.Value, d: int, n: int, descending: bool):
    """One compare-exchange step, (key, idx) -> (into_key, into_idx) written in place, as
    scalar loops over every element (a linalg.generic that does not read its outs would
    get fresh outs from linalg's canonicalizations, which breaks the in-place ping-pong)."""
    shp = _shape(key)
    r = len(shp)
    nv = _idx(n)

    def nest(level: int, at: list, dk, di):
        size = _idx(shp[level]) if shp[level] is not None else tensor.dim(key, _idx(level))
        loop = scf.ForOp(_idx(0), size, _idx(1), [dk, di])
        with ir.InsertionPoint(loop.body):
            here = at + [loop.induction_variable]
            lk, li = loop.inner_iter_args
            if level + 1 < r:
                lk, li = nest(level + 1, here, lk, li)
            else:
                i = here[d]
                p = arith.xori(i, mask)
                valid = arith.cmpi(arith.CmpIPredicate.ult, p, nv)
                there = [e if j != d else arith.select(valid, p, i) for j, e in enumerate(here)]
                sk, si = tensor.extract(key, here), tensor.extract(idx, here)
                pk, pi = tensor.extract(key, there), tensor.extract(idx, there)
                lower = arith.cmpi(arith.CmpIPredicate.ult, i, p)
                take = arith.select(lower, _before(pk, pi, sk, si, descending), _before(sk, si, pk, pi, descending))
                take = arith.andi(valid, take)
                lk = tensor.insert(arith.select(take, pk, sk), lk, here)
                li = tensor.insert(arith.select(take, pi, si), li, here)
            scf.YieldOp([lk, li])
        return loop.results[0], loop.results[1]

    return nest(0, [], into_key, into_idx)


@lowering("argsort")
def _lower_argsort(op: ir.Operation) -> ir.Value:
    x = _st(op.operands[0])
    attrs = ops.attributes_of(op)
    out_t = _rt(op.results[0])
    r = out_t.rank
    if r == 0:
        return _fill(arith.constant(ir.IntegerType.get_signless(64), 0), _empty(out_t))
    d = infer.normalize_dim(int(attrs["dim"]), r)
    n = _shape(x)[d]
    if n is None:
        raise NotImplementedError("lamina.argsort along a dynamic dim")
    descending = bool(attrs["descending"])
    dyn = [_dim(x, i) if s is None else None for i, s in enumerate(_shape(x))]
    idx0 = _iota_along(out_t, d, dyn)
    masks = network_masks(n)
    if not masks:
        return idx0
    i64 = ir.IntegerType.get_signless(64)
    table_t = ir.RankedTensorType.get([len(masks)], i64)
    table = arith.constant(table_t, ir.DenseElementsAttr.get(np.array(masks, dtype=np.int64), type=table_t))
    # ping-pong between two buffers, two steps per iteration: every value the loop yields is
    # written in place into its own iter_arg (one-shot bufferization needs that)
    # the ping-pong buffers are allocations of their own (two tensor.empty of one type would
    # be CSE'd into one value, and the two buffers bufferized into one)
    dyn_sizes = [v for v in dyn if v is not None]
    temps = [bufferization.AllocTensorOp(_rt(t), dyn_sizes).result for t in (x, idx0)]
    loop = scf.ForOp(_idx(0), _idx(len(masks) // 2), _idx(1), [x, idx0, *temps])
    with ir.InsertionPoint(loop.body):
        q2 = arith.muli(loop.induction_variable, _idx(2))
        ka, ia, kb, ib = loop.inner_iter_args
        first = arith.index_cast(ir.IndexType.get(), tensor.extract(table, [q2]))
        second = arith.index_cast(ir.IndexType.get(), tensor.extract(table, [arith.addi(q2, _idx(1))]))
        kb, ib = _step(ka, ia, kb, ib, first, d, n, descending)
        ka, ia = _step(kb, ib, ka, ia, second, d, n, descending)
        scf.YieldOp([ka, ia, kb, ib])
    loop.operation.attributes[ARGSORT_ATTR] = ir.DictAttr.get({
        "dim": ir.IntegerAttr.get(i64, d), "descending": ir.BoolAttr.get(descending)})
    return loop.results[1]
