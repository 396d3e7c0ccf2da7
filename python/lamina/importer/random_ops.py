"""Random ops from lamina.random_uniform (Philox4x32-10, counter-based: lowering/random.py):

    rand / rand_like / uniform            u, or from + (to - from) * u
    randn / randn_like / normal           Box-Muller: sqrt(-2 log(1 - u1)) * cos(2 pi u2)
    bernoulli(p) / bernoulli(x)           u < p
    native_dropout(x, p, train)           keep = u >= p ... as torch: mask = bernoulli(1 - p),
                                          out = x * mask / (1 - p) (mask returned for backward)
    randint / randint_like                low + floor(u * (high - low)), u of 48 bits (two
                                          uniforms) for ranges over 2^24

The key is the graph's seed input, `lamina_rng_seed` (backend/rng.py adds it to every graph
with random ops and draws it from torch's generator of the device at each call, so
torch.manual_seed reproduces a run); each random op of the graph reads its own counter
range (`offset`), so two ops never share numbers. The distributions are torch's; the bits
are not eager's (not required: the generator differs).
"""
from __future__ import annotations

import math

from ..dialect import ops
from ..dialect import symbols as S
from ..dialect import types as T
from .aten_ops import cast, constant, elem, meta_type, register

SEED_INPUT = "lamina_rng_seed"
# Counter ranges of symbolic-size random tensors are this far apart.
SYMBOLIC_STRIDE = 1 << 40


def _seed_node(node):
    for n in node.graph.nodes:
        if n.op == "placeholder" and n.name == SEED_INPUT:
            return n
    return None


def _seeded(node):
    if _seed_node(node) is None:
        return "a random op in a graph without lamina's seed input (compile it through the backend)"
    for kw in ("generator",):
        if node.kwargs.get(kw) is not None:
            return "a random op with an explicit torch.Generator (not supported yet)"
    return None


def _uniform(imp, node, result_type):
    """lamina.random_uniform of result_type's shape (f32 for f16/bf16 results)."""
    seed = imp.values[_seed_node(node)]
    offset = getattr(imp, "_rng_offset", 0)
    dims = T.dims_of(result_type)
    n = S.product(dims) if dims else 1
    imp._rng_offset = offset + (n if isinstance(n, int) else SYMBOLIC_STRIDE)
    et = result_type.element_type
    acc = T.element_type("f32") if str(et) in ("f16", "bf16") or not T.is_float(et) else et
    return ops.random_uniform(seed, offset=offset, result_type=T.with_element_type(result_type, acc))


def _normal(imp, node, result_type):
    u1 = _uniform(imp, node, result_type)
    u2 = _uniform(imp, node, result_type)
    acc = elem(u1)
    radius = ops.sqrt(ops.mul(constant(-2.0, acc), ops.log(ops.sub(constant(1.0, acc), u1))))
    return ops.mul(radius, ops.cos(ops.mul(u2, constant(2.0 * math.pi, acc))))


@register("aten.rand.default", "aten.rand_like.default", check=_seeded, sizes_only=True)
def _rand(imp, node, a):
    want = meta_type(node)
    return cast(_uniform(imp, node, want), want.element_type)


@register("aten.randn.default", "aten.randn_like.default", check=_seeded, sizes_only=True)
def _randn(imp, node, a):
    want = meta_type(node)
    return cast(_normal(imp, node, want), want.element_type)


@register("aten.uniform.default", check=_seeded)
def _uniform_op(imp, node, a):
    want = meta_type(node)
    u = _uniform(imp, node, want)
    lo, hi = float(a["from"]), float(a.to)
    return cast(ops.add(ops.mul(u, constant(hi - lo, elem(u))), constant(lo, elem(u))), want.element_type)


@register("aten.normal.Tensor_float", "aten.normal.float_Tensor", "aten.normal.Tensor_Tensor", check=_seeded)
def _normal_op(imp, node, a):
    want = meta_type(node)
    z = _normal(imp, node, want)
    mean = a.mean if isinstance(a.mean, type(z)) else constant(float(a.mean), elem(z))
    std = a.std if isinstance(a.std, type(z)) else constant(float(a.std), elem(z))
    return cast(ops.add(ops.mul(z, cast(std, elem(z))), cast(mean, elem(z))), want.element_type)


@register("aten.bernoulli.p", "aten.bernoulli.default", "aten.bernoulli.Tensor", check=_seeded)
def _bernoulli(imp, node, a):
    want = meta_type(node)
    u = _uniform(imp, node, want)
    p = a.p if "p" in a and a.p is not None else a.self
    p = cast(p, elem(u)) if isinstance(p, type(u)) else constant(float(p), elem(u))
    return cast(ops.lt(u, p), want.element_type)


@register("aten.native_dropout.default", check=_seeded)
def _native_dropout(imp, node, a):
    x = a.input
    out_t, mask_t = meta_type(node, 0), meta_type(node, 1)
    p = float(a.p)
    if a.train is False or p == 0.0:
        return x, ops.broadcast_to(constant(True, "i1"), result_type=mask_t) if T.dims_of(mask_t) else constant(True, "i1")
    if p >= 1.0:
        zero = ops.mul(x, constant(0.0, elem(x)))
        return zero, ops.broadcast_to(constant(False, "i1"), result_type=mask_t)
    u = _uniform(imp, node, out_t)
    keep = ops.lt(u, constant(1.0 - p, elem(u)))
    acc = T.widened(elem(x))
    scaled = ops.mul(cast(x, acc), constant(1.0 / (1.0 - p), acc))
    out = ops.where(keep, scaled, constant(0.0, acc))
    return cast(out, out_t.element_type), cast(keep, mask_t.element_type)


@register("aten.randint.default", "aten.randint.low", "aten.randint_like.default", "aten.randint_like.low_dtype",
          check=_seeded, sizes_only=True)
def _randint(imp, node, a):
    want = meta_type(node)
    low = int(a.get("low", 0) or 0)
    high = int(a.high)
    f64 = T.element_type("f64")
    f32_type = T.with_element_type(want, T.element_type("f32"))
    u = cast(_uniform(imp, node, f32_type), f64)
    if high - low > 1 << 24:   # a uniform has 24 bits: two make 48, every value of a wider range reachable
        u = ops.add(u, ops.mul(cast(_uniform(imp, node, f32_type), f64), constant(2.0 ** -24, f64)))
    v = ops.floor(ops.mul(u, constant(float(high - low), f64)))
    return cast(ops.add(v, constant(float(low), f64)), want.element_type)

