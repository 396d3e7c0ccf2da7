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
from ..dialect import symbols as S
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


def _scale(imp, q, a, acc):
    """The scores' scale as a rank-0 acc value: the op's, or 1 / sqrt(E) computed in double
    and rounded as ATen's calculate_scale (E may be symbolic: from the graph's symbols)."""
    if a.scale is not None:
        return constant(a.scale, acc)
    e = shape(q)[-1]
    if isinstance(e, int):
        return constant(1.0 / math.sqrt(e), acc)
    f64 = T.element_type("f64")
    return cast(ops.div(constant(1.0, f64), ops.sqrt(cast(imp.size_value(e), f64))), acc)


def _scores(imp, q, k, a, acc):
    scale = _scale(imp, q, a, acc)
    s = ops.mul(ops.matmul(q, _t(k)), scale)
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


def _logsumexp(s):
    """log(sum(exp(s))) over the last dim (kept), its maximum subtracted first."""
    last = [rank(s) - 1]
    m = ops.reduce_max(s, dims=last, keepdim=True)
    return ops.add(m, ops.log(ops.reduce_sum(ops.exp(ops.sub(s, m)), dims=last, keepdim=True)))


def _gradients(p, q, k, v, o, do, scale, acc):
    """dQ, dK, dV and dS of attention with probabilities p, output o and its gradient do."""
    dv = ops.matmul(_t(p), do)
    dp = ops.matmul(do, _t(v))
    d = ops.reduce_sum(ops.mul(do, o), dims=[rank(p) - 1], keepdim=True)
    ds = ops.mul(p, ops.sub(dp, d))
    dq = ops.mul(ops.matmul(ds, k), scale)
    dk = ops.mul(ops.matmul(_t(ds), q), scale)
    return dq, dk, dv, ds


def _acc(q):
    return T.widened(elem(q))


@register("aten._scaled_dot_product_flash_attention_for_cpu.default", check=_no_dropout)
def _flash_forward(imp, node, a):
    acc = _acc(a.query)
    q, k, v = (cast(t, acc) for t in (a.query, a.key, a.value))
    s, _ = _scores(imp, q, k, a, acc)
    lse = _logsumexp(s)
    out = ops.matmul(ops.exp(ops.sub(s, lse)), v)
    lse_want = meta_type(node, 1)
    lse_flat = ops.reshape(lse, result_type=T.tensor_type(shape(lse)[:-1], acc))
    return (cast(out, meta_type(node, 0).element_type), cast(lse_flat, lse_want.element_type))


@register("aten._scaled_dot_product_flash_attention_for_cpu_backward.default", check=_no_dropout)
def _flash_backward(imp, node, a):
    acc = _acc(a.query)
    q, k, v, o, do = (cast(t, acc) for t in (a.query, a.key, a.value, a.out, a.grad_out))
    s, scale = _scores(imp, q, k, a, acc)
    r = rank(s)
    if rank(a.logsumexp) == r:
        # torch's decomposition of the forward (the one AOTAutograd traces) saves the
        # attention probabilities in the logsumexp slot: use them as they are
        p = cast(a.logsumexp, acc)
    else:
        lse = ops.reshape(cast(a.logsumexp, acc), result_type=T.tensor_type(shape(a.logsumexp) + [1], acc))
        p = ops.exp(ops.sub(s, lse))
    dq, dk, dv, ds = _gradients(p, q, k, v, o, do, scale, acc)
    return tuple(cast(g, meta_type(node, i).element_type) for i, g in enumerate((dq, dk, dv)))


# ---- the fused eval paths of nn.TransformerEncoderLayer / nn.MultiheadAttention ----------------
#
# Under torch.no_grad() in eval mode, nn.TransformerEncoderLayer and nn.MultiheadAttention
# call one fused op each (their "fast path"); composed here of the same lamina ops as the
# unfused modules: linear = x @ W^T + b, heads split/merged by reshape + transpose,
# softmax(q k^T / sqrt(d)) v, layer norms in f32 for f16/bf16 inputs.

def _mask_check(node):
    """ATen's masked softmax takes a [L, L] mask (type 0), a [B, L] key padding mask (type 1)
    or one of the scores' shape [B, H, L, S] (type 2)."""
    names = [a.name for a in node.target._schema.arguments]
    values = dict(zip(names, node.args), **node.kwargs)
    mask = values.get("mask")
    if mask is None:
        return None
    q = values.get("src", values.get("query")).meta["val"]
    m = mask.meta["val"]
    if q.dim() != 3:
        return "a fused attention fast path with a mask on an unbatched input"
    if values.get("mask_type") not in (0, 1, 2) or m.dim() not in (2, 4):
        return f"a fused attention fast path with a {m.dim()}-d mask of type {values.get('mask_type')}"
    return None


def _score_mask(mask, mask_type, acc):
    """The masked softmax's mask as a bool of rank 4 (True: left out); a float mask counts
    where it is nonzero (ATen converts it to bool: -inf and 0 of an additive mask)."""
    m = mask if T.is_bool(elem(mask)) else ops.ne(mask, constant(0, elem(mask)))
    if rank(m) == 2:
        sizes = shape(m)
        line = [sizes[0], 1, 1, sizes[1]] if mask_type == 1 else [1, 1] + sizes
        m = ops.reshape(m, result_type=T.tensor_type(line, elem(m)))
    return m


def _linear(x, w, b):
    y = ops.matmul(x, _t(w))
    return ops.add(y, cast(b, elem(y))) if b is not None else y


def _layer_norm(x, w, b, eps):
    r = rank(x)
    mean = ops.reduce_mean(x, dims=[r - 1], keepdim=True)
    var = ops.var(x, dims=[r - 1], keepdim=True, correction=0.0)
    y = ops.mul(ops.sub(x, mean), ops.rsqrt(ops.add(var, constant(eps, elem(x)))))
    return ops.add(ops.mul(y, cast(w, elem(x))), cast(b, elem(x)))


def _self_attention(q_in, k_in, v_in, embed_dim: int, heads: int, qkv_w, qkv_b, proj_w, proj_b, acc,
                    mask=None, mask_type=None):
    """Multi-head attention of [B, L, E] inputs (a 2-D input is one batch). Masked scores
    (mask: _score_mask's) get probability 0; a row masked whole is NaN, as ATen's masked
    softmax makes it."""
    unbatched = rank(q_in) == 2
    if unbatched:
        q_in, k_in, v_in = (ops.reshape(t, result_type=T.tensor_type([1] + shape(t), elem(t))) for t in (q_in, k_in, v_in))
    e, d = embed_dim, embed_dim // heads
    w = cast(qkv_w, acc)
    bvec = cast(qkv_b, acc) if qkv_b is not None else None

    def project(x, i):
        wi = ops.slice(w, dim=0, start=i * e, end=(i + 1) * e, step=1)
        bi = ops.slice(bvec, dim=0, start=i * e, end=(i + 1) * e, step=1) if bvec is not None else None
        y = _linear(x, wi, bi)
        b, length = shape(y)[0], shape(y)[1]
        y = ops.reshape(y, result_type=T.tensor_type([b, length, heads, d], acc))
        return ops.transpose(y, perm=[0, 2, 1, 3])

    q, k, v = project(q_in, 0), project(k_in, 1), project(v_in, 2)
    s = ops.mul(ops.matmul(q, _t(k)), constant(1.0 / math.sqrt(d), acc))
    if mask is not None:
        m = _score_mask(mask, mask_type, acc)
        p = ops.softmax(ops.where(m, constant(-math.inf, acc), s), dim=3)
    else:
        p = ops.softmax(s, dim=3)
    o = ops.transpose(ops.matmul(p, v), perm=[0, 2, 1, 3])
    b, length = shape(o)[0], shape(o)[1]
    o = ops.reshape(o, result_type=T.tensor_type([b, length, e], acc))
    out = _linear(o, cast(proj_w, acc), proj_b)
    if unbatched:
        out = ops.reshape(out, result_type=T.tensor_type(shape(out)[1:], acc))
    return out, p


@register("aten._transformer_encoder_layer_fwd.default", check=_mask_check)
def _encoder_layer(imp, node, a):
    want = meta_type(node)
    acc = T.widened(want.element_type)
    x = cast(a.src, acc)

    def sa(h):
        return _self_attention(h, h, h, a.embed_dim, a.num_heads, a.qkv_weight, a.qkv_bias, a.proj_weight,
                               a.proj_bias, acc, a.mask, a.mask_type)[0]

    def ff(h):
        h = _linear(h, cast(a.ffn_weight_1, acc), a.ffn_bias_1)
        h = ops.gelu(h, approximate="none") if a.use_gelu else ops.relu(h)
        return _linear(h, cast(a.ffn_weight_2, acc), a.ffn_bias_2)

    if a.norm_first:
        x = ops.add(x, sa(_layer_norm(x, a.norm_weight_1, a.norm_bias_1, a.eps)))
        x = ops.add(x, ff(_layer_norm(x, a.norm_weight_2, a.norm_bias_2, a.eps)))
    else:
        x = _layer_norm(ops.add(x, sa(x)), a.norm_weight_1, a.norm_bias_1, a.eps)
        x = _layer_norm(ops.add(x, ff(x)), a.norm_weight_2, a.norm_bias_2, a.eps)
    return cast(x, want.element_type)


@register("aten._native_multi_head_attention.default", check=_mask_check)
def _multi_head_attention(imp, node, a):
    want = meta_type(node, 0)
    acc = T.widened(want.element_type)
    q, k, v = (cast(t, acc) for t in (a.query, a.key, a.value))
    out, p = _self_attention(q, k, v, a.embed_dim, a.num_head, a.qkv_weight, a.qkv_bias, a.proj_weight,
                             a.proj_bias, acc, a.mask, a.mask_type)
    weights_want = meta_type(node, 1)
    if not a.need_weights:
        weights = constant(0, weights_want.element_type, T.dims_of(weights_want))
    else:
        if a.average_attn_weights:
            p = ops.reduce_mean(p, dims=[1], keepdim=False)
        weights = ops.reshape(cast(p, weights_want.element_type), result_type=weights_want) \
            if T.dims_of(weights_want) != shape(p) else cast(p, weights_want.element_type)
    return cast(out, want.element_type), weights


# ---- the CUDA memory-efficient attention ops (fp32 SDPA in training graphs on a GPU) ------------
#
# Their logsumexp is padded (to a multiple of 32 queries) and they return the dropout RNG
# state: the forward gives the padded lse (zeros after the real queries) and zero RNG outputs
# (dropout must be 0), the backward recomputes the probabilities from q and k instead of
# reading the lse.

def _no_efficient_dropout(node):
    names = [a.name for a in node.target._schema.arguments]
    i = names.index("dropout_p")
    p = node.args[i] if len(node.args) > i else node.kwargs.get("dropout_p", 0.0)
    return "attention dropout (dropout_p > 0)" if p else None


class _Args(dict):
    __getattr__ = dict.get


def _probabilities(imp, q, k, a, acc):
    s, scale = _scores(imp, q, k, _Args(scale=a.scale, is_causal=a.is_causal, attn_mask=a.attn_bias), acc)
    return ops.softmax(s, dim=rank(s) - 1), s, scale


@register("aten._scaled_dot_product_efficient_attention.default", check=_no_efficient_dropout)
def _efficient_forward(imp, node, a):
    acc = _acc(a.query)
    q, k, v = (cast(t, acc) for t in (a.query, a.key, a.value))
    p, s, _ = _probabilities(imp, q, k, a, acc)
    out = cast(ops.matmul(p, v), meta_type(node, 0).element_type)
    lse = _logsumexp(s)
    lse = ops.reshape(lse, result_type=T.tensor_type(shape(lse)[:-1], acc))
    want = meta_type(node, 1)
    dims, have = T.dims_of(want), shape(lse)
    rest = [constant(0, meta_type(node, i).element_type, T.dims_of(meta_type(node, i))) for i in (2, 3)]
    if dims and dims[-1] == 0:   # compute_log_sumexp=False (inference graphs): an empty logsumexp
        empty = constant(0.0, want.element_type, dims) if all(isinstance(d, int) for d in dims) \
            else ops.broadcast_to(constant(0.0, want.element_type), result_type=want)
        return (out, empty, *rest)
    if len(dims) != len(have) or not all(S.equivalent(d, e) for d, e in zip(dims[:-1], have[:-1])):
        raise NotImplementedError(f"efficient attention logsumexp of shape {dims}")
    extra = S.combine("-", dims[-1], have[-1])   # (queries padded to a multiple of 32; may be symbolic)
    if extra != 0:
        lse = ops.concat(lse, constant(0.0, acc, list(dims[:-1]) + [extra]), dim=len(dims) - 1)
        if not S.equivalent(shape(lse)[-1], dims[-1]):
            raise NotImplementedError(f"efficient attention logsumexp of shape {dims}")
        lse = ops.reshape(lse, result_type=T.with_element_type(want, acc)) if shape(lse) != dims else lse
    return (out, cast(lse, want.element_type), *rest)


@register("aten._scaled_dot_product_efficient_attention_backward.default", check=_no_efficient_dropout)
def _efficient_backward(imp, node, a):
    acc = _acc(a.query)
    q, k, v, o, do = (cast(t, acc) for t in (a.query, a.key, a.value, a.out, a.grad_out_))
    p, s, scale = _probabilities(imp, q, k, a, acc)
    dq, dk, dv, ds = _gradients(p, q, k, v, o, do, scale, acc)
    mask = list(a.grad_input_mask)
    grads = [dq, dk, dv]
    outs = [cast(g, meta_type(node, i).element_type) if mask[i] else None for i, g in enumerate(grads)]
    bias_grad = None
    if len(mask) > 3 and mask[3] and a.attn_bias is not None:
        want = meta_type(node, 3)
        dims = T.dims_of(want)
        lead = rank(ds) - len(dims)
        summed = [i for i in range(rank(ds)) if i < lead or dims[i - lead] == 1 and shape(ds)[i] != 1]
        g = ops.reduce_sum(ds, dims=summed, keepdim=True) if summed else ds
        bias_grad = cast(ops.reshape(g, result_type=T.with_element_type(want, acc)), want.element_type)
    return (*outs, bias_grad)
