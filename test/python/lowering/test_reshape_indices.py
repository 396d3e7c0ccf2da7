"""The cuda emitter's reshape indices (triton_program._split_terms): each index of a
row-major offset split with the ranges of the indices that make it, against the plain
(offset // stride) % size, for every in-bounds index of reshapes between random static
shapes (an index the split does not simplify keeps the plain form: None)."""
import itertools
import random

import pytest

from lamina.codegen.cuda.triton_program import _index_terms, _split_terms


def _factor(n: int, rng: random.Random) -> list[int]:
    """A random shape of n elements (size-1 dims included)."""
    out = []
    while n > 1:
        d = rng.choice([k for k in range(2, n + 1) if n % k == 0])
        out.append(d)
        n //= d
    for _ in range(rng.randint(0, 2)):
        out.insert(rng.randint(0, len(out)), 1)
    rng.shuffle(out)
    return out or [1]


@pytest.mark.parametrize("seed", range(40))
def test_split_matches_row_major(seed):
    rng = random.Random(seed)
    n = rng.choice([12, 24, 32, 48, 64, 96, 128, 120])
    dst, src = _factor(n, rng), _factor(n, rng)
    names = [f"i{d}" for d in range(len(dst))]
    terms = _index_terms(names, [str(s) for s in dst])
    exprs = _split_terms(terms, src)
    strides, dst_strides = _strides(src), _strides(dst)
    for idx in itertools.product(*[range(s) for s in dst]):
        env = dict(zip(names, idx))
        offset = sum(i * s for i, s in zip(idx, dst_strides))
        for k, e in enumerate(exprs):
            if e is None:
                continue
            assert eval(e, {}, env) == (offset // strides[k]) % src[k], (dst, src, k, e, idx)


def _strides(shape):
    out = [1] * len(shape)
    for d in reversed(range(len(shape) - 1)):
        out[d] = out[d + 1] * shape[d + 1]
    return out


def test_instance_norm_reshape_needs_no_division_a_lane():
    # [1, N * C, H, W] (rows along N * C, lanes H, W) read as [N, C, H, W]
    exprs = _split_terms(_index_terms(["0", "x", "h", "w"], ["1", "8", "16", "16"]), [2, 4, 16, 16])
    assert exprs == ["(x // 4)", "(x % 4)", "h", "w"]


def test_indices_read_from_data_are_not_split():
    assert _index_terms(["v3", "r"], ["4", "8"]) is None


def test_zero_size_shapes_are_left_alone():
    # (strides of 0 there: nothing to simplify, and no lane runs)
    assert _index_terms(["x", "r"], ["0", "5"]) is None
    assert _split_terms([("x", 5, 2), ("r", 1, 5)], [2, 0, 5]) == [None, None, None]
