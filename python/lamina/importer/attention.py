"""torch's CPU flash-attention ops (what nn.MultiheadAttention / F.scaled_dot_product_attention
leave in training graphs), composed of lamina matmuls and reductions:

    forward   S = q k^T * scale (+ mask; causal: -inf above the diagonal)
              lse = max(S) + log(sum(exp(S - max(S))))     out = exp(S - lse) v
    backward  P = exp(S - lse)      dV = P^T dO      dP = dO v^T      D = rowsum(dO * out)
              dS = P * (dP - D)     dQ = dS k * scale      dK = dS^T q * scale

(the attention chain the cuda target turns into one flash program is the same math, from
the decomposed SDPA of inference graphs). torch's decomposition of the forward, which
AOTAutograd traces, saves the probabilities P where the op's schema says logsumexp: the
backward then takes P as given. Dropout must be 0.
"""
from __future__ import annotations

import math

import torch

from ..dialect import ops
from ..dialect import types as T
from .aten_ops import cast, constant, elem, meta_type, rank, register, shape


def _no_dropout(node):
    if node.target is torch.ops.aten._scaled_dot_product_flash_attention_for_cpu.default:
        p = node.args[3] if len(node.args) > 3 else node.kwargs.get("dropout_p", 0.0)
    else:
        p = node.args[6] if len(node.args) > 6 else node.kwargs.get("dropout_p", 0.0)
    return "attention dropout (dropout_p > 0)" if p else None


def _t(x):
    r = rank(x)
    return ops.transpose(x, perm=list(range(r - 2)) + [r - 1, r - 2])


def _scores(q, k, a, acc):
    e = shape(q)[-1]
    scale = a.scale if a.scale is not None else 1.0 / math.sqrt(e)
    s = ops.mul(ops.matmul(q, _t(k)), constant(scale, acc))
    lq, lk = shape(q)[-2], shape(k)[-2]
    if a.is_causal:
        i64 = T.element_type("i64")
        rows = ops.reshape(ops.iota(result_type=T.tensor_type([lq], i64)), result_type=T.tensor_type([lq, 1], i64))
        cols = ops.reshape(ops.iota(result_type=T.tensor_type([lk], i64)), result_type=T.tensor_type([1, lk], i64))
        s = ops.where(ops.le(cols, rows), s, constant(-math.inf, acc))
    if a.attn_mask is not None:
        m = a.attn_mask
        if T.is_bool(elem(m)):
            s = ops.where(m, s, constant(-math.inf, acc))
        else:
            s = ops.add(s, cast(m, acc))
    return s, scale


def _acc(q):
    return T.element_type("f32") if str(elem(q)) in ("f16", "bf16") else elem(q)


@register("aten._scaled_dot_product_flash_attention_for_cpu.default", check=_no_dropout)
def _flash_forward(imp, node, a):
    acc = _acc(a.query)
    q, k, v = (cast(t, acc) for t in (a.query, a.key, a.value))
    s, _ = _scores(q, k, a, acc)
    r = rank(s)
    m = ops.reduce_max(s, dims=[r - 1], keepdim=True)
    lse = ops.add(m, ops.log(ops.reduce_sum(ops.exp(ops.sub(s, m)), dims=[r - 1], keepdim=True)))
    out = ops.matmul(ops.exp(ops.sub(s, lse)), v)
    lse_want = meta_type(node, 1)
    lse_flat = ops.reshape(lse, result_type=T.tensor_type(shape(lse)[:-1], acc))
    return (cast(out, meta_type(node, 0).element_type), cast(lse_flat, lse_want.element_type))


@register("aten._scaled_dot_product_flash_attention_for_cpu_backward.default", check=_no_dropout)
def _flash_backward(imp, node, a):
    acc = _acc(a.query)
    q, k, v, o, do = (cast(t, acc) for t in (a.query, a.key, a.value, a.out, a.grad_out))
    s, scale = _scores(q, k, a, acc)
    r = rank(s)
    if rank(a.logsumexp) == r:
        # torch's decomposition of the forward (the one AOTAutograd traces) saves the
        # attention probabilities in the logsumexp slot: use them as they are
        p = cast(a.logsumexp, acc)
    else:
        lse = ops.reshape(cast(a.logsumexp, acc), result_type=T.tensor_type(shape(a.logsumexp) + [1], acc))
        p = ops.exp(ops.sub(s, lse))
    dv = ops.matmul(_t(p), do)
    dp = ops.matmul(do, _t(v))
    d = ops.reduce_sum(ops.mul(do, o), dims=[r - 1], keepdim=True)
    ds = ops.mul(p, ops.sub(dp, d))
    dq = ops.mul(ops.matmul(ds, k), constant(scale, acc))
    dk = ops.mul(ops.matmul(_t(ds), q), constant(scale, acc))
    return tuple(cast(g, meta_type(node, i).element_type) for i, g in enumerate((dq, dk, dv)))
