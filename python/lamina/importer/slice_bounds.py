"""Slice bounds along a dim whose size, or whose bounds, are symbolic (dynamic shapes).

torch normalizes Python-style bounds (negative from the end, None, past the end) with
guards on the symbolic sizes: which way each comparison went is fixed for every input the
graph runs on, and shows in the example inputs' values (the hints). The bounds here are
normalized the same way, as expressions of the symbols: a lamina.slice whose start and end
are in [0, size] with start <= end needs no clamping at run time. The size they give is
checked against torch's result size; bounds that do not provably give it are refused
(the op runs eagerly, reported), never used.
"""
from __future__ import annotations

import torch

from ..dialect import symbols as S

Term = tuple  # (int or expression, its value for the example inputs)


def is_symbolic(v) -> bool:
    """An FX argument that is a symbolic int (a SymInt node, or a SymInt)."""
    if isinstance(v, torch.fx.Node):
        v = v.meta.get("val")
    return isinstance(v, torch.SymInt) and not isinstance(S.dim_of(v), int)


def term(v) -> Term:
    """An int, a SymInt, or an FX node holding one, as (dim, hint)."""
    if isinstance(v, torch.fx.Node):
        v = v.meta["val"]
    if isinstance(v, torch.SymInt):
        hint = v.node.hint
        if hint is None:
            raise ValueError(f"a size with no value in the example inputs ({v})")
        return S.dim_of(v), int(hint)
    return int(v), int(v)


def plus(a: Term, b: Term) -> Term:
    return S.combine("+", a[0], b[0]), a[1] + b[1]


def wrapped_index(size: Term, index: Term) -> Term:
    """An index counted from the end when negative (select, narrow's start)."""
    return plus(index, size) if index[1] < 0 else index


def python_bounds(size: Term, start: Term | None, end: Term | None) -> tuple[Term, Term]:
    """x[start:end] normalized as Python (and torch) do: in [0, size], start <= end."""
    start = (0, 0) if start is None else start
    end = size if end is None else end
    if start[1] < 0:
        start = plus(start, size)
    if end[1] < 0:
        end = plus(end, size)
    start = (0, 0) if start[1] < 0 else size if start[1] > size[1] else start
    end = start if end[1] < start[1] else size if end[1] > size[1] else end
    return start, end


def checked(start: Term, end: Term, step: int, want) -> tuple | None:
    """(start, end) as dims when the size they give along the dim is torch's `want`
    (an int or a SymInt), else None."""
    got = S.combine("-", end[0], start[0])
    if step != 1:
        got = S.combine("//", S.combine("+", got, step - 1), step)
    return (start[0], end[0]) if S.equivalent(got, S.dim_of(want)) else None
