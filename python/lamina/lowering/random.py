"""lamina.random_uniform -> one linalg.generic computing Philox4x32-10 per element (the
random family of lamina-to-linalg).

Counter-based, as torch's CUDA generator and Triton's tl.rand: element i (row-major) of a
random tensor is a pure function of (seed, offset + i), so any tiling, vectorization or
thread split gives the same bits, and a kernel needs no generator state. The 32-bit words
are kept in i64 (multiplies give the 64-bit product whose halves Philox needs), which every
target's integer arithmetic has. The uniform float is the first output word's top 24 bits
times 2^-24: [0, 1), every value a multiple of 2^-24.
"""
from __future__ import annotations

from mlir import ir
from mlir.dialects import arith

from lamina.dialect import ops

from .to_linalg import _empty, _generic, _loop_index, _result_size, _rt, convert, lowering

_M0, _M1 = 0xD2511F53, 0xCD9E8D57
_W0, _W1 = 0x9E3779B9, 0xBB67AE85
_MASK32 = 0xFFFFFFFF
ROUNDS = 10


def _c(v: int) -> ir.Value:
    return arith.ConstantOp(ir.IntegerType.get_signless(64), v).result


def _philox_first_word(counter: ir.Value, seed: ir.Value) -> ir.Value:
    """Philox4x32-10 of the 128-bit counter (counter, 0) under the 64-bit key `seed`: the
    first output word, as an i64 in [0, 2^32)."""
    mask, s32 = _c(_MASK32), _c(32)
    c0, c1 = arith.andi(counter, mask), arith.andi(arith.shrui(counter, s32), mask)
    c2, c3 = _c(0), _c(0)
    k0, k1 = arith.andi(seed, mask), arith.andi(arith.shrui(seed, s32), mask)
    m0, m1, w0, w1 = _c(_M0), _c(_M1), _c(_W0), _c(_W1)
    for _ in range(ROUNDS):
        p0, p1 = arith.muli(c0, m0), arith.muli(c2, m1)   # 32 x 32 -> 64 bits (mod 2^64: exact)
        hi0, lo0 = arith.andi(arith.shrui(p0, s32), mask), arith.andi(p0, mask)
        hi1, lo1 = arith.andi(arith.shrui(p1, s32), mask), arith.andi(p1, mask)
        c0, c1, c2, c3 = (arith.xori(arith.xori(hi1, c1), k0), lo1, arith.xori(arith.xori(hi0, c3), k1), lo0)
        k0, k1 = arith.andi(arith.addi(k0, w0), mask), arith.andi(arith.addi(k1, w1), mask)
    return c0


@lowering("random_uniform")
def _lower_random_uniform(op: ir.Operation) -> ir.Value:
    (seed,) = op.operands
    rt = _rt(op.results[0])
    offset = int(ops.attributes_of(op)["offset"])
    rank = rt.rank
    init = _empty(rt)
    identity = ir.AffineMap.get_identity(rank)
    scalar = ir.AffineMap.get(rank, 0, [])
    i64 = ir.IntegerType.get_signless(64)
    sizes = [None if rt.is_dynamic_dim(d) else rt.get_dim_size(d) for d in range(rank)]
    dyn = {d: arith.index_cast(i64, _result_size(rt, d)) for d in range(rank) if sizes[d] is None}
    f32 = ir.F32Type.get()

    def body(key, _out):
        linear = _c(offset)
        stride = None
        for d in reversed(range(rank)):   # row-major linear index + offset
            i = arith.index_cast(i64, _loop_index(d))
            term = i if stride is None else arith.muli(i, stride)
            linear = arith.addi(linear, term)
            size = _c(sizes[d]) if sizes[d] is not None else dyn[d]
            stride = size if stride is None else arith.muli(stride, size)
        word = _philox_first_word(linear, key)
        top24 = arith.sitofp(f32, arith.shrui(word, _c(8)))
        u = arith.mulf(top24, arith.ConstantOp(f32, 2.0 ** -24).result)
        return [convert(u, rt.element_type)]

    return _generic([seed], [init], [scalar, identity], ["parallel"] * rank, body)[0]

