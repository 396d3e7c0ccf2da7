"""torch's OpInfo samples (op_db) through lamina, against eager: every op lamina compiles
with no fallback must match eager (lamina.testing.opinfo), in float32, float64, int64, bool,
uint8, bfloat16 (as close to float64 as eager is) and complex64 where the op takes them. CI runs a
deterministic slice (every 8th op, first sample, float32 and int64); LAMINA_OPINFO=all runs
every op on all its samples in the seven dtypes, and `python tools/gen_ops_doc.py` writes
docs/ops.md (claimed and unclaimed ops, with reasons)."""
from __future__ import annotations

import os

import pytest
import torch

pytest.importorskip("expecttest")   # torch's op database imports it
from torch.testing._internal.common_methods_invocations import op_db   # noqa: E402

from lamina.testing.opinfo import run_sample   # noqa: E402

_ALL = os.environ.get("LAMINA_OPINFO") == "all"
_OPS = sorted((o for o in op_db if torch.float32 in o.supported_dtypes("cpu")),
              key=lambda o: (o.name, o.variant_test_name))
_DTYPES = (torch.float32, torch.float64, torch.int64, torch.bool, torch.uint8, torch.bfloat16, torch.complex64) if _ALL \
    else (torch.float32, torch.int64)
_CASES = [(o, dt) for i, o in enumerate(_OPS) for dt in _DTYPES
          if (_ALL or i % 8 == (0 if dt is torch.float32 else 4)) and dt in o.supported_dtypes("cpu")]


def _case_id(case):
    o, dt = case
    return o.name + (f".{o.variant_test_name}" if o.variant_test_name else "") + "-" + str(dt).split(".")[-1]


@pytest.mark.parametrize("case", _CASES, ids=_case_id)
def test_claimed_ops_match_eager(case):
    opinfo, dtype = case
    result = run_sample(opinfo, dtype, samples=None if _ALL else 1)
    if result.status in ("skipped", "unclaimed"):
        pytest.skip(f"{result.status}: {result.detail}")
    assert result.status == "passed", f"{result.name} ({dtype}): {result.detail}"
