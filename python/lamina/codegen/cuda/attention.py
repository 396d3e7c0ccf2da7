"""Flash attention for an attention kernel (lamina-fuse attention=1) of the cuda target.

An attention kernel holds, in its linalg form, two contractions around a softmax:

    S  = Q @ K^T                        (linalg.batch_matmul / matmul)
    S' = f(S, masks, biases, ...)       (elementwise generics and reshapes: scale, mask)
    P  = softmax(S', last dim)          (lamina-decompose's form: max, sub, exp, sum, 1/z, mul)
    O  = P @ V                          (through reshapes and a rounding cast)

`match` recognizes it (or returns None: the kernel then runs its generic path, two BLAS
calls around a row program). `emit` writes one program that never stores S or P: each
program owns XBLOCK query rows of one batch, loops over the keys RBLOCK at a time, computes
S's block with tl.dot, evaluates f on it with the kernel's own expression code (so any
elementwise score modification compiles, loads of masks included), and folds the block into
an online softmax (running max m, denominator l, rescaled accumulator), O = acc / l at the
end. Semantics kept from the unfused chain: a row whose scores are all -inf gives NaN (0/0,
like softmax); a NaN or +inf score makes its row NaN.

Precision: S and the accumulator are fp32; P is rounded to V's type before the second dot
(what the unfused chain's bf16/f16 softmax output is); fp32 inputs use IEEE fp32 dots unless
torch allows TF32 for matmuls (then eager's bmm uses TF32 too).
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass

from mlir import ir

from ...lowering.vector_math import _constant_value
from .triton_ir import (Unsupported, _affine_results, _body_names, _cast_generic, _const_val, _dim_pos, _elem,
                        _is_identity, _kinds, _maps, _owner, _readers, _tl)
from .triton_program import _Program, _ProgramBuilder, _Scope

_RESHAPES = ("tensor.expand_shape", "tensor.collapse_shape", "tensor.reshape")
_MATMULS = ("linalg.batch_matmul", "linalg.matmul")
MAX_HEAD_DIM = 256   # static head sizes up to this run in registers (padded to a power of two >= 16)
# fp32 with IEEE dots (_fp32_precision): Triton's IEEE fp32 dots run on the FMA units at about
# half cuBLAS's SGEMM rate (H100: 0.69x the unfused chain at 8x16x1024x64, 1.4-1.6x it up to
# 2x4x256x256), so the flash program is used while the scores are small enough that memory
# traffic and launches dominate; symbolic sizes count as fusion.SYMBOLIC_SIZE_ESTIMATE.
FP32_FLASH_MAX_SCORES = 1 << 22


@dataclass
class AttentionChain:
    c1: ir.Operation          # S = Q @ K^T
    c2: ir.Operation          # O = P @ V
    scores: ir.Value          # S
    logits: ir.Value          # S', the softmax's input


def _is_row_broadcast(m: ir.AffineMap) -> bool:
    """(d0, ..., dn) -> (d0, ..., d(n-1), 0): a keepdim row value read along the last dim."""
    res = _affine_results(m)
    n = m.n_dims
    return len(res) == n and all(_dim_pos(e) == i for i, e in enumerate(res[:-1])) and _const_val(res[-1]) == 0


def _parallel(op, n_in: int) -> bool:
    return (op is not None and op.name == "linalg.generic" and len(op.results) == 1
            and all(k == "parallel" for k in _kinds(op)) and len(op.operands) == n_in + 1
            and _is_identity(_maps(op)[-1]))


def _row_reduction(op, n_out: int) -> bool:
    if op is None or op.name != "linalg.generic" or len(op.results) != n_out:
        return False
    kinds = _kinds(op)
    maps = _maps(op)
    return (kinds[-1] == "reduction" and all(k == "parallel" for k in kinds[:-1])
            and len(op.operands) == 1 + n_out and _is_identity(maps[0])
            and all(_is_row_broadcast(m) for m in maps[1:]))


def _n_uses(v: ir.Value) -> int:
    return len(_readers(v))


def _through_casts_and_reshapes(v: ir.Value) -> ir.Value:
    """The value under reshapes and single-cast generics (a rounding to bf16, ...)."""
    while True:
        op = _owner(v)
        if op is None:
            return v
        if op.name in _RESHAPES and _n_uses(v) == 1:
            v = op.operands[0]
        elif _cast_generic(op) and _n_uses(v) == 1:
            v = op.operands[0]
        else:
            return v


def _softmax_input(p: ir.Value) -> ir.Value | None:
    """S' for p = softmax(S', last dim) in lamina-decompose's form, each inner value used
    only inside the softmax; else None."""
    mul = _owner(p)
    if not _parallel(mul, 2) or _body_names(mul) != ["arith.mulf"]:
        return None
    maps = _maps(mul)
    ins = list(mul.operands[:2])
    if _is_identity(maps[0]) and _is_row_broadcast(maps[1]):
        e, r = ins
    elif _is_identity(maps[1]) and _is_row_broadcast(maps[0]):
        r, e = ins
    else:
        return None
    rec = _owner(r)   # 1 / z
    if not _parallel(rec, 1) or _body_names(rec) not in (["arith.constant", "arith.divf"], ["arith.divf"]) \
            or _n_uses(r) != 1:
        return None
    z = rec.operands[0]
    zop = _owner(z)
    if _parallel(zop, 2) and _body_names(zop) == ["arith.addf"]:   # a compensated pair (s, c): s + c
        red = _owner(zop.operands[0])
        if red is None or _owner(zop.operands[1]) != red or not _row_reduction(red, 2) or _n_uses(z) != 1:
            return None
    elif _row_reduction(zop, 1) and _n_uses(z) == 1:
        red = zop
    else:
        return None
    if red.operands[0] != e or _n_uses(e) != 2:
        return None
    exp = _owner(e)
    if not _parallel(exp, 1) or _body_names(exp) != ["math.exp"] or not _is_identity(_maps(exp)[0]):
        return None
    d = exp.operands[0]
    sub = _owner(d)
    if not _parallel(sub, 2) or _body_names(sub) != ["arith.subf"] or _n_uses(d) != 1:
        return None
    smaps = _maps(sub)
    if not (_is_identity(smaps[0]) and _is_row_broadcast(smaps[1])):
        return None
    logits, m = sub.operands[0], sub.operands[1]
    mx = _owner(m)
    if not _row_reduction(mx, 1) or mx.operands[0] != logits or _n_uses(m) != 1 or _n_uses(logits) != 2:
        return None
    if [n for n in _body_names(mx)] not in (["arith.maximumf"], ["arith.maxnumf"]):
        return None
    # the body must compute (in - out) in that order, e * r in any
    blk = sub.regions[0].blocks[0]
    subf = next(o for o in blk.operations if o.operation.name == "arith.subf")
    if list(subf.operands) != [blk.arguments[0], blk.arguments[1]]:
        return None
    return logits


def _depends_on(v: ir.Value, target: ir.Value, memo: dict) -> bool:
    if v == target:
        return True
    if v in memo:
        return memo[v]
    memo[v] = False
    op = _owner(v)
    out = op is not None and any(_depends_on(x, target, memo) for x in op.operands)
    memo[v] = out
    return out


def _scores_reach(logits: ir.Value, scores: ir.Value) -> bool:
    """S' reads S element for element: a chain of reshapes (which keep the linear order) and
    elementwise generics whose one S-dependent operand is read at the output's own index."""
    memo: dict = {}
    v = logits
    while v != scores:
        op = _owner(v)
        if op is None:
            return False
        if op.name in _RESHAPES and _n_uses(op.operands[0]) == 1:
            v = op.operands[0]
        elif op.name == "linalg.generic" and len(op.results) == 1 and all(k == "parallel" for k in _kinds(op)) \
                and _is_identity(_maps(op)[-1]):
            ins = list(op.operands[:-1])
            on = [(x, m) for x, m in zip(ins, _maps(op)) if _depends_on(x, scores, memo)]
            if len(on) != 1 or not _is_identity(on[0][1]) or _n_uses(on[0][0]) != 1:
                return False
            v = on[0][0]
        else:
            return False
    return True


def _matmul_rank(op) -> int | None:
    """3 for a batch matmul C[b,m,n] = sum_k A[b,m,k] B[b,k,n] (linalg.batch_matmul or the
    same contraction as a generic), 2 for a matmul; else None."""
    if op.name in _MATMULS:
        maps = _maps(op) if "indexing_maps" in op.attributes else None
        rank = 3 if op.name == "linalg.batch_matmul" else 2
        if maps is None:
            return rank
    elif op.name == "linalg.generic":
        kinds = _kinds(op)
        if kinds not in (["parallel"] * 3 + ["reduction"], ["parallel"] * 2 + ["reduction"]):
            return None
        body = [n for n in _body_names(op) if n not in ("arith.extf", "arith.truncf")]
        if body != ["arith.mulf", "arith.addf"]:
            return None
        maps = _maps(op)
        rank = len(kinds) - 1
    else:
        return None
    want = [[0, 1, 3], [0, 3, 2], [0, 1, 2]] if rank == 3 else [[0, 2], [2, 1], [0, 1]]
    got = [[_dim_pos(e) for e in _affine_results(m)] for m in maps]
    return rank if got == want else None


def match(k) -> AttentionChain | None:
    """The attention chain of kernel `k` (a _Kernel), or None."""
    if len(k.contractions) != 2:
        return None
    c1, c2 = (c.operation for c in k.contractions)
    rank = _matmul_rank(c1)
    if rank is None or _matmul_rank(c2) != rank or len(c1.results) != 1 or len(c2.results) != 1:
        return None
    scores = c1.results[0]   # (read once, by the path to the softmax: _scores_reach / _softmax_input)
    p = _through_casts_and_reshapes(c2.operands[0])
    logits = _softmax_input(p)
    if logits is None or not _scores_reach(logits, scores):
        return None
    st, lt = ir.ShapedType(scores.type), ir.ShapedType(logits.type)
    if lt.get_dim_size(lt.rank - 1) != st.get_dim_size(st.rank - 1):
        return None   # the softmax's rows must be the rows of S (symbolic sizes: compared in emit)
    elems = {_elem(c1.operands[0].type), _elem(c1.operands[1].type), _elem(c2.operands[1].type)}
    if len(elems) != 1 or elems.pop() not in ("f32", "bf16", "f16"):
        return None
    for v in (c1.operands[0], c2.operands[1]):
        t = ir.ShapedType(v.type)
        if not t.is_dynamic_dim(t.rank - 1) and t.get_dim_size(t.rank - 1) > MAX_HEAD_DIM:
            return None
    if _elem(c1.operands[0].type) == "f32" and _fp32_precision() == "ieee":
        from ...transforms.fusion import SYMBOLIC_SIZE_ESTIMATE
        n_scores = 1
        for d in range(st.rank):
            n_scores *= SYMBOLIC_SIZE_ESTIMATE if st.is_dynamic_dim(d) else st.get_dim_size(d)
        if n_scores > FP32_FLASH_MAX_SCORES:
            return None   # cuBLAS's SGEMMs around the softmax are faster there
    return AttentionChain(c1, c2, scores, logits)


def emit(cg, chain: AttentionChain) -> None:
    """The flash program of `chain` and its launch, into kernel codegen `cg` (_KernelCodegen):
    afterwards O (c2's result) is materialized like a contraction's result."""
    c1, c2 = chain.c1, chain.c2
    batched = ir.ShapedType(c1.results[0].type).rank == 3
    elem = _elem(c1.operands[0].type)
    out_elem = _elem(c2.results[0].type)
    # head sizes: a static power of two >= 16 is the block itself; any other (or symbolic)
    # size is a masked block of the next power of two (BDQ / BDV, chosen at launch)
    d_qk = _head_dim(c1.operands[0])
    d_v = _head_dim(c2.operands[1])
    if not (cg._is_zero_fill(c1.operands[2]) and cg._is_zero_fill(c2.operands[2])):
        raise Unsupported("an attention matmul that accumulates into a non-zero init")
    p = _Program(cg, "flash", "flash")
    b = _ProgramBuilder(cg, p, cg.shape(chain.logits), ir.ShapedType(chain.logits.type).rank - 1, [])
    L = cg.launcher

    # operands as strided torch views: [batch dims..., rows, cols] (a collapse of the batch
    # dims is undone, so head-split views need no copy)
    views = {}
    for key, v in (("q", c1.operands[0]), ("k", c1.operands[1]), ("v", c2.operands[1])):
        L.append(f"_{key} = attention_operand({_strided_operand(cg, v)})")
        views[key] = 2
    res = c2.results[0]
    out_name = f"c{cg.contraction_count}"
    cg.contraction_count += 1
    direct = _direct_output(cg, res)
    if direct is not None:
        expr, arg, out_elem = direct
        L.append(f"{out_name} = {expr}")
    else:
        arg = None
        sizes = cg._launcher_sizes(res)
        L.append(f"{out_name} = torch.empty(({', '.join(sizes)},), dtype={_torch_dtype(out_elem)}, device=_device)")
    cg.materialized[res] = (out_name, True, arg)
    L.append(f"_o = {out_name}")
    if not batched:
        L.append("_o = _o.unsqueeze(0)")
    sizes = cg._launcher_sizes(chain.scores)
    B = "1" if not batched else sizes[0]
    M, N = sizes[-2], sizes[-1]
    L.append(f"_B, _M, _N = {B}, {M}, {N}")
    rows_n = cg._launcher_expr(cg.size(chain.logits, ir.ShapedType(chain.logits.type).rank - 1))
    if rows_n != N:   # symbolic sizes the IR does not show equal: checked per call
        L.append(f"if {rows_n} != _N:")
        L.append("    raise RuntimeError('lamina: attention kernel: the softmax rows are not the score rows')")

    # -- the program -------------------------------------------------------------------------
    for t in ("fq", "fk", "fv", "fo"):
        p.use_tensor(t)
    scalars = []   # (param name, launcher expression)

    def param(nm, expr):
        scalars.append((nm, expr))
        return nm

    for key, nb in views.items():
        for d in range(nb + 2):
            param(f"{key}_st{d}", f"_{key}.stride({d})")
        for d in range(1, nb):
            param(f"{key}_sz{d}", f"_{key}.shape[{d}]")
    for d in range(3):
        param(f"o_st{d}", f"_o.stride({d})")
    param("fM", "_M")
    param("fN", "_N")
    # a 1-D grid of (batch, query block) pairs, the query blocks of one batch adjacent (they
    # share its K and V in L2); a 2-D grid would cap the batch at 65535
    p.emit("pid = tl.program_id(0).to(tl.int64)")
    p.emit("nqb = tl.cdiv(fM, XBLOCK)")
    p.emit("fb = pid // nqb")
    p.emit("xq = (pid % nqb) * XBLOCK + tl.arange(0, XBLOCK)[:, None]")
    p.emit("xmask = xq < fM")
    offs = {}
    for key, nb in views.items():
        off, rest = "0", "fb"
        for d in reversed(range(nb)):
            part = rest if d == 0 else f"({rest} % {key}_sz{d})"
            off = f"{off} + {part} * {key}_st{d}"
            rest = f"({rest} // {key}_sz{d})" if d else rest
        offs[key] = off
        p.emit(f"{key}_base = {off}")
    nq, nk, nv = views["q"], views["k"], views["v"]
    bdq, bdv = _block(d_qk, "BDQ"), _block(d_v, "BDV")
    dqm = "" if bdq == str(d_qk) else " & (dq < fDQ)"
    dkm = "" if bdq == str(d_qk) else " & (dk < fDQ)"
    dvm = "" if bdv == str(d_v) else " & (dv < fDV)"
    if dqm:
        param("fDQ", "_q.shape[-1]")
    if dvm:
        param("fDV", "_v.shape[-1]")
    p.emit(f"dq = tl.arange(0, {bdq})[None, :]")
    p.emit(f"qb = tl.load(fq + q_base + xq * q_st{nq} + dq * q_st{nq + 1}, mask=xmask{dqm}, other=0.0)")
    p.emit(f"dk = tl.arange(0, {bdq})[:, None]")
    p.emit(f"dv = tl.arange(0, {bdv})[None, :]")
    p.emit('m_i = tl.full([XBLOCK, 1], float("-inf"), tl.float32)')
    p.emit("l_i = tl.zeros([XBLOCK, 1], tl.float32)")
    p.emit(f"acc = tl.zeros([XBLOCK, {bdv}], tl.float32)")
    # the row of the scores (b, query) as an index of S' (same linear order)
    p.emit("xrow = fb * fM + xq")
    lrank = ir.ShapedType(chain.logits.type).rank
    lshape = cg.shape(chain.logits)
    # (over the leading sizes as arguments, not literals: the program's source, and so its
    # compiled code in Triton's cache, is the same for every batch and sequence length)
    lead = [param(f"fS{d}", s) if s.isdigit() else s for d, s in enumerate(lshape[:-1])]
    xidx = b._split("xrow", lead) if lrank > 1 else []
    p.loop_names.update({"r", "rmask"})
    p.current_rmask = "rmask"
    key_range = _live_key_range(p, b, chain, xidx)
    loop = _Scope(p.root, p.root.indent + 1)
    p.scope = loop
    p.emit("r = roff + tl.arange(0, RBLOCK)[None, :]")
    p.emit("rmask = r < fN")
    p.emit(f"kb = tl.load(fk + k_base + dk * k_st{nk} + r * k_st{nk + 1}, mask=rmask{dkm}, other=0.0)")
    precision = _fp32_precision() if elem == "f32" else None
    prec = f", input_precision=\"{precision}\"" if precision else ""
    _dot(p, "qk", "qb", "kb", prec)
    cg.in_register = {chain.scores: "qk"}
    try:
        s = b.value(chain.logits, xidx + ["r"])
    finally:
        cg.in_register = {}
    p.emit(f's = tl.where(rmask, {s}.to(tl.float32), float("-inf"))')
    p.emit("m_new = tl.maximum(m_i, tl.max(s, 1)[:, None])")
    p.emit("m_safe = tl.where(m_new == float(\"-inf\"), 0.0, m_new)   # rows masked so far: exp(-inf) = 0")
    p.emit("alpha = tl.exp(m_i - m_safe)")
    p.emit("pb = tl.exp(s - m_safe)")
    p.emit("l_i = l_i * alpha + tl.sum(pb, 1)[:, None]")
    p.emit("rv = roff + tl.arange(0, RBLOCK)[:, None]")
    p.emit(f"vb = tl.load(fv + v_base + rv * v_st{nv} + dv * v_st{nv + 1}, mask=(rv < fN){dvm}, other=0.0)")
    p.emit(f"pv = pb.to({_tl(elem)})")
    _dot(p, "pv", "pv", "vb", prec)
    p.emit("acc = acc * alpha + pv")
    p.emit("m_i = m_new")
    p.scope = p.root
    p.emit(f"for roff in range({key_range}, RBLOCK):")
    p.root.lines.extend(loop.lines)
    p.emit("o = acc / l_i   # a row with every score -inf: 0 / 0 = NaN, as softmax gives")
    p.emit(f"tl.store(fo + fb * o_st0 + xq * o_st1 + dv * o_st2, o.to({_tl(out_elem)}), mask=xmask{dvm})")
    for nm, _ in scalars:
        p.use_param(nm)
    p.unspecialized = [nm for nm, _ in scalars if re.fullmatch(r"(q|k|v)_sz\d+|fS\d+", nm)]
    p.name_by_content()

    # -- the launch ------------------------------------------------------------------------------
    launcher_of = dict(scalars)
    call = []
    for t in p.tensor_params:
        call.append({"fq": "_q", "fk": "_k", "fv": "_v", "fo": "_o"}.get(t, t))
    for s_ in p.params:
        call.append(launcher_of[s_] if s_ in launcher_of else _launcher_param(cg, b, s_))
    cg.programs.append((p, {"call_args": call, "lane_domains": []}))
    blocks = {}
    for nm, d, view in (("BDQ", d_qk, "_q"), ("BDV", d_v, "_v")):
        if _block(d, nm) == nm:
            L.append(f"_{nm.lower()} = max(16, 1 << ({view}.shape[-1] - 1).bit_length())")
            blocks[nm] = f"_{nm.lower()}"
    meta = "".join(f", {nm}={var}" for nm, var in blocks.items())
    L.append("if _B * _M > 0 and _N > 0:")
    L.append(f"    run_tuned({p.name}, (_B * _M, _N), lambda c: (_B * ((_M + c['XBLOCK'] - 1) // c['XBLOCK']),), "
             f"({', '.join(call)},), attention_configs({blocks.get('BDQ', d_qk)}, {blocks.get('BDV', d_v)}, {elem!r}, _B, _M), "
             f"_autotune == 'max', attention_quick_config({blocks.get('BDQ', d_qk)}, {blocks.get('BDV', d_v)}, {elem!r}), "
             f"UPCAST16=_device.type == 'cpu'{meta})")
    p.block_params = list(blocks)
    L.append("elif _o.numel():")
    L.append("    _o.zero_()   # no keys: P has no columns, P @ V is zeros")


def _mask_select(logits: ir.Value, scores: ir.Value):
    """(generic, condition, dead_when) when S' = select(c, -inf, x) (dead_when True) or
    select(c, x, -inf) (dead_when False) with c independent of S: a mask whose dead blocks
    need no scores at all."""
    op = _owner(logits)
    if op is None or op.name != "linalg.generic" or len(op.results) != 1 \
            or not all(k == "parallel" for k in _kinds(op)):
        return None
    blk = op.regions[0].blocks[0]
    y = next(o for o in blk.operations if o.operation.name == "linalg.yield").operands[0]
    sel = y.owner
    if not isinstance(sel, ir.Operation) and hasattr(sel, "operation"):
        sel = sel.operation
    if not isinstance(sel, ir.Operation) or sel.name != "arith.select":
        return None
    c, a, f = sel.operands
    if _constant_value(a) == float("-inf"):
        dead_when = True
    elif _constant_value(f) == float("-inf"):
        dead_when = False
    else:
        return None
    # the block arguments the condition reads must come from operands that do not read S
    args, stack, seen = set(), [c], set()
    while stack:
        x = stack.pop()
        if x in seen:
            continue
        seen.add(x)
        if isinstance(x, ir.BlockArgument):
            args.add(x.arg_number)
            continue
        d = x.owner
        d = getattr(d, "operation", d)
        if isinstance(d, ir.Operation) and d.parent is not None and d.parent.name == "linalg.generic":
            stack.extend(d.operands)
    memo: dict = {}
    if any(_depends_on(op.operands[i], scores, memo) for i in args if i < len(op.operands) - 1):
        return None
    return op, c, dead_when


def _live_key_range(p, b, chain, xidx) -> str:
    """`lo, hi` of the key loop: with a mask that does not depend on the scores (causal,
    padding: _mask_select) a first pass over the keys evaluates only the mask and finds the
    blocks where some row of the program is live; the flash loop visits those. Else 0, N."""
    found = _mask_select(chain.logits, chain.scores)
    if found is None:
        return "0, fN"
    op, c, dead_when = found
    scan = _Scope(p.root, p.root.indent + 1)
    p.scope = scan
    p.emit("r = roff + tl.arange(0, RBLOCK)[None, :]")
    p.emit("rmask = r < fN")
    try:
        loop = b._loop_from_output(op, 0, xidx + ["r"])
        env = b._body_env(op, loop, None)
        cond = b._env(env, c, loop)
    except Unsupported:
        p.scope = p.root
        return "0, fN"
    live = f"~({cond})" if dead_when else f"({cond})"
    p.emit(f"live = tl.max(tl.where(xmask & rmask & {live}, 1, 0))")
    p.emit("lo = tl.where(live > 0, tl.minimum(lo, roff), lo)")
    p.emit("hi = tl.where(live > 0, roff + RBLOCK, hi)")
    p.scope = p.root
    p.emit("lo = fN * 0 + fN   # the live key blocks of these rows: [lo, hi)")
    p.emit("hi = fN * 0")
    p.emit("for roff in range(0, fN, RBLOCK):")
    p.root.lines.extend(scan.lines)
    return "lo, hi"


def _head_dim(v: ir.Value):
    """The static last dim of `v`, or None when symbolic."""
    t = ir.ShapedType(v.type)
    return None if t.is_dynamic_dim(t.rank - 1) else t.get_dim_size(t.rank - 1)


def _block(d, constexpr: str) -> str:
    """The block of a head dim: itself (a static power of two >= 16), else a constexpr."""
    if d is not None and d >= 16 and d & (d - 1) == 0:
        return str(d)
    return constexpr


def _dot(p, out: str, a: str, b: str, prec: str) -> None:
    """out = a @ b (fp32). UPCAST16: Triton's interpreter (CI) multiplies bf16 blocks wrongly;
    there the 16-bit operands go to fp32 first (exact: their products are what the GPU's
    fp32-accumulating dot sums)."""
    p.emit("if UPCAST16:")
    p.emit(f"    {out} = tl.dot({a}.to(tl.float32), {b}.to(tl.float32){prec})")
    p.emit("else:")
    p.emit(f"    {out} = tl.dot({a}, {b}{prec})")


def _launcher_param(cg, b, s: str) -> str:
    import re
    if re.fullmatch(r"(a\d+|t\d+|c\d+)_size\d+", s):
        return cg._launcher_expr(s)
    return b._launcher_param(s)


def _fp32_precision() -> str:
    """input_precision of an fp32 flash program's dots. With TF32 allowed (torch's switch),
    "tf32", as cuBLAS then. Without: "tf32x3" on tensor cores that take TF32 (sm_80+):
    each operand split into a TF32 head and tail, three TF32 products, fp32 accumulation;
    error of the order of fp32 rounding (H100, causal attention against fp64: max error
    8.5e-7, eager 5.9e-7, IEEE dots 7.8e-7) at 1.9x the speed of the unfused SGEMM chain.
    "ieee" (FMA units) before sm_80 or when LAMINA_FP32_ATTENTION_DOT=ieee asks for it.
    (A compile worker is told the user process's TF32 switch and GPU: codegen/host.py.)"""
    from ..host import cuda_facts

    allow_tf32, capability = cuda_facts()
    if allow_tf32:
        return "tf32"
    asked = os.environ.get("LAMINA_FP32_ATTENTION_DOT", "")
    if asked in ("ieee", "tf32x3"):
        return asked
    if capability is not None and tuple(capability) < (8, 0):
        return "ieee"
    return "tf32x3"


def _torch_dtype(elem: str) -> str:
    from ...dialect import types as T
    return T.torch_dtype_text(elem)


def _strided_operand(cg, v: ir.Value) -> str:
    """A torch expression viewing `v` ([B, R, C] or [R, C]) without a copy where its layout
    allows: a collapse of leading batch dims is left undone (a head split, [b, h, t, d]
    viewed as [b*h, t, d], is not one strided tensor); the launcher's attention_operand
    brings it to 4-D, [b0, b1, R, C]."""
    v = skip_identity_reshapes(v)
    op = _owner(v)
    if op is not None and op.name == "tensor.collapse_shape" and uncollapsed_batch(op):
        inner = cg._torch_view(op.operands[0])
        if inner is not None:
            return inner
    view = cg._torch_view(v)
    return view if view is not None else cg._materialize(v)


def keeps_every_dim(op) -> bool:
    """A collapse / expand shape whose groups are all of one dim (it changes nothing)."""
    return op is not None and op.name in ("tensor.collapse_shape", "tensor.expand_shape") and \
        all(len(ir.ArrayAttr(g)) == 1 for g in ir.ArrayAttr(op.attributes["reassociation"]))


def skip_identity_reshapes(v: ir.Value) -> ir.Value:
    """`v` under collapse / expand shapes that keep every dim."""
    while keeps_every_dim(_owner(v)):
        v = _owner(v).operands[0]
    return v


def uncollapsed_batch(op) -> bool:
    """A collapse_shape that only merges leading (batch) dims of a rank >= 4 tensor into
    one, leaving the last two: the flash program reads the batch dims with their strides."""
    groups = [[ir.IntegerAttr(j).value for j in ir.ArrayAttr(g)] for g in ir.ArrayAttr(op.attributes["reassociation"])]
    src_rank = ir.ShapedType(op.operands[0].type).rank
    return src_rank >= 4 and len(groups) == 3 and groups[1] == [src_rank - 2] and groups[2] == [src_rank - 1]


def _direct_output(cg, res: ir.Value):
    """(expression, arg, element type) of the kernel output that is `res`, or `res` through
    reshapes and a rounding (f32 -> bf16, ...), read by nothing else, when that output is
    contiguous: the program writes it in place, in its type."""
    for v, o in cg.k.stores:
        x = v
        while x != res:
            op = _owner(x)
            if op is None or _n_uses(x) != 1:
                break
            if op.name in _RESHAPES or _cast_generic(op):
                x = op.operands[0]
            else:
                break
        if x == res and cg.k.contiguous(o) and (v == res or _n_uses(res) == 1):
            expr = f"a{o}" if v == res else f"a{o}.view({', '.join(cg._launcher_sizes(res))})"
            if v != res:
                cg.materialized[v] = (f"a{o}", True, o)
            return expr, o, _elem(v.type)
    return None
