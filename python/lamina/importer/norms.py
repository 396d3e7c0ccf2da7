"""Norms composed of lamina reductions: linalg_vector_norm (every p torch takes), batch norm
(training: batch statistics and the running statistics' update; eval) and group norm.

linalg_vector_norm:

    p = 2: sqrt(sum(x^2))   p = 1: sum(|x|)   p = inf / -inf: max / min of |x|
    p = 0: count of non-zeros   other p: sum(|x|^p)^(1/p)
computed in the result's float type (`dtype` when given; f16/bf16 in f32, rounded once), over
`dim` (all when None).
"""
from __future__ import annotations

import math

from ..dialect import ops
from ..dialect import types as T
from ..dialect import symbols as S
from .aten_ops import _static_args, cast, constant, meta_type, norm_dims, rank, register


# (a symbolic ord, a float graph input under dynamic=True, would need its special cases 0, 1, 2
# and +-inf chosen at run time)
@register("aten.linalg_vector_norm.default", check=_static_args("ord"))
def _vector_norm(imp, node, a):
    want = meta_type(node)
    et = T.widened(want.element_type)   # f16/bf16 accumulate in f32 (and p, 1/p unrounded), as eager
    x = cast(a.self, et)
    p = float(a.ord) if a.ord is not None else 2.0
    if rank(x) == 0:
        x = ops.reshape(x, result_type=T.tensor_type([1], et))
    dims = norm_dims(a.dim, rank(x))
    keep = bool(a.keepdim)

    def finish(v):
        v = cast(v, want.element_type)
        return v if v.type == want else ops.reshape(v, result_type=want)

    if p == 0.0:
        nz = ops.cast(ops.ne(x, constant(0, et)), result_type=x.type)
        return finish(ops.reduce_sum(nz, dims=dims, keepdim=keep))
    ax = ops.abs(x)
    if math.isinf(p):
        return finish((ops.reduce_max if p > 0 else ops.reduce_min)(ax, dims=dims, keepdim=keep))
    if p == 1.0:
        return finish(ops.reduce_sum(ax, dims=dims, keepdim=keep))
    if p == 2.0:
        return finish(ops.sqrt(ops.reduce_sum(ops.mul(x, x), dims=dims, keepdim=keep)))
    s = ops.reduce_sum(ops.pow(ax, constant(p, et)), dims=dims, keepdim=keep)
    return finish(ops.pow(s, constant(1.0 / p, et)))


# ---- batch and group norm -------------------------------------------------------------------
#
# Statistics (and the normalization) compute in f32 for f16/bf16 inputs, as torch's kernels
# do, rounding once at the end; mean and rstd come out in the dtype torch reports for them.

def _acc(et):
    return T.widened(et)


def _per_channel(v, r: int, et):
    """A [C] tensor as [1, C, 1, ...] for an input of rank r, in type et."""
    return ops.reshape(cast(v, et), result_type=T.tensor_type([1, T.dims_of(v.type)[0]] + [1] * (r - 2), et))


def _normalize(x, mean, rstd, weight, bias, r, acc):
    y = ops.mul(ops.sub(x, mean), rstd)
    if weight is not None:
        y = ops.mul(y, _per_channel(weight, r, acc))
    if bias is not None:
        y = ops.add(y, _per_channel(bias, r, acc))
    return y


def _stat_out(v, node, index):
    want = meta_type(node, index)
    return ops.reshape(cast(v, want.element_type), result_type=want) if v.type != want else v


def _empty_stat(node, index):
    want = meta_type(node, index)
    return constant(0, want.element_type, T.dims_of(want))


def _batch_statistics(x, r, eps, acc):
    dims = [0] + list(range(2, r))
    mean = ops.reduce_mean(x, dims=dims, keepdim=True)
    var = ops.var(x, dims=dims, keepdim=True, correction=0.0)
    return dims, mean, var, ops.rsqrt(ops.add(var, constant(eps, acc)))


def _train(node, a, running):
    """Batch statistics; with `running`, also the running statistics' update (unbiased var)."""
    x0 = a.input
    out_et = meta_type(node, 0).element_type
    acc = _acc(out_et)
    x = cast(x0, acc)
    r = rank(x)
    dims, mean, var, rstd = _batch_statistics(x, r, a.eps, acc)
    y = cast(_normalize(x, mean, rstd, a.weight, a.bias, r, acc), out_et)
    results = [y, _stat_out(mean, node, 1), _stat_out(rstd, node, 2)]
    if running:
        m = float(a.momentum)
        unbiased = ops.var(x, dims=dims, keepdim=True, correction=1.0)
        for stat, batch, index in ((a.running_mean, mean, 3), (a.running_var, unbiased, 4)):
            st_et = meta_type(node, index).element_type
            flat = ops.reshape(batch, result_type=T.tensor_type(T.dims_of(stat.type), acc))
            new = ops.add(ops.mul(cast(stat, acc), constant(1.0 - m, acc)), ops.mul(flat, constant(m, acc)))
            results.append(cast(new, st_et))
    return tuple(results)


@register("aten._native_batch_norm_legit_functional.default")
def _batch_norm_functional(imp, node, a):
    if not a.training:
        y = _eval(node, a)
        # (the running stats come back unchanged, in the dtype torch's meta gives them: f32
        # for bf16 ones on the CPU)
        return (y, _empty_stat(node, 1), _empty_stat(node, 2), _stat_out(a.running_mean, node, 3),
                _stat_out(a.running_var, node, 4))
    return _train(node, a, running=True)


@register("aten._native_batch_norm_legit.no_stats")
def _batch_norm_no_stats(imp, node, a):
    return _train(node, a, running=False)


def _eval(node, a):
    x0 = a.input
    out_et = meta_type(node, 0).element_type
    acc = _acc(out_et)
    x = cast(x0, acc)
    r = rank(x)
    mean = _per_channel(a.running_mean, r, acc)
    rstd = ops.rsqrt(ops.add(_per_channel(a.running_var, r, acc), constant(a.eps, acc)))
    return cast(_normalize(x, mean, rstd, a.weight, a.bias, r, acc), out_et)


@register("aten._native_batch_norm_legit_no_training.default")
def _batch_norm_eval(imp, node, a):
    return (_eval(node, a), _empty_stat(node, 1), _empty_stat(node, 2))


def _training_arg(node):
    training = node.args[5] if len(node.args) > 5 else node.kwargs.get("training")
    if training:
        return "batch norm in training mode that updates running statistics in place (functionalized graphs " \
               "use _native_batch_norm_legit_functional)"
    return None


@register("aten._native_batch_norm_legit.default", "aten.native_batch_norm.default", check=_training_arg)
def _batch_norm_inference(imp, node, a):
    if a.running_mean is None:   # native_batch_norm without running statistics: batch statistics
        return _train(node, a, running=False)
    return (_eval(node, a), _empty_stat(node, 1), _empty_stat(node, 2))


@register("aten.native_group_norm.default")
def _group_norm(imp, node, a):
    x0 = a.input
    out_et = meta_type(node, 0).element_type
    acc = _acc(out_et)
    x = cast(x0, acc)
    shp = T.dims_of(x.type)
    r = len(shp)
    g = int(a.group)
    c = shp[1]
    if not isinstance(c, int):
        raise NotImplementedError("group norm with a symbolic channel count")
    # [N, C, *S] -> [N, G, C/G * prod(S)]: statistics per (sample, group)
    rest = S.product([c // g] + shp[2:])
    xg = ops.reshape(x, result_type=T.tensor_type([shp[0], g, rest], acc))
    mean = ops.reduce_mean(xg, dims=[2], keepdim=True)
    var = ops.var(xg, dims=[2], keepdim=True, correction=0.0)
    rstd = ops.rsqrt(ops.add(var, constant(a.eps, acc)))
    y = ops.reshape(ops.mul(ops.sub(xg, mean), rstd), result_type=T.tensor_type(shp, acc))
    if a.weight is not None:
        y = ops.mul(y, _per_channel(a.weight, r, acc))
    if a.bias is not None:
        y = ops.add(y, _per_channel(a.bias, r, acc))
    return (cast(y, out_et), _stat_out(mean, node, 1), _stat_out(rstd, node, 2))


# ---- cdist -------------------------------------------------------------------------------------

@register("aten._cdist_forward.default")
def _cdist(imp, node, a):
    """||x1[..., i, :] - x2[..., j, :]||_p by broadcasting the difference (torch's direct
    path; its matrix-product path for p = 2 on large inputs rounds differently, within
    float tolerance)."""
    want = meta_type(node)
    et = want.element_type
    x1, x2 = cast(a.x1, et), cast(a.x2, et)
    s1, s2 = T.dims_of(x1.type), T.dims_of(x2.type)
    d1 = ops.reshape(x1, result_type=T.tensor_type(s1[:-1] + [1, s1[-1]], et))
    d2 = ops.reshape(x2, result_type=T.tensor_type(s2[:-2] + [1] + s2[-2:], et))
    diff = ops.abs(ops.sub(d1, d2))
    p = float(a.p)
    dim = [len(T.dims_of(diff.type)) - 1]   # the feature dim (the batch dims broadcast: x1 and x2 may differ in rank)
    if p == 0.0:
        out = ops.reduce_sum(ops.cast(ops.ne(diff, constant(0, et)), result_type=diff.type), dims=dim, keepdim=False)
    elif math.isinf(p):
        out = ops.reduce_max(diff, dims=dim, keepdim=False)
    elif p == 1.0:
        out = ops.reduce_sum(diff, dims=dim, keepdim=False)
    elif p == 2.0:
        out = ops.sqrt(ops.reduce_sum(ops.mul(diff, diff), dims=dim, keepdim=False))
    else:
        out = ops.pow(ops.reduce_sum(ops.pow(diff, constant(p, et)), dims=dim, keepdim=False), constant(1.0 / p, et))
    return out if out.type == want else ops.reshape(out, result_type=want)
