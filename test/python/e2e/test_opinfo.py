"""torch's OpInfo samples (op_db) through lamina, against eager: every op lamina compiles
with no fallback must match eager (lamina.testing.opinfo). CI runs a deterministic slice of
the ops (every 8th, float32, one sample each); LAMINA_OPINFO=all runs every op, and
`python tools/gen_ops_doc.py` writes docs/ops.md (claimed and unclaimed ops, with reasons)."""
from __future__ import annotations

import os

import pytest
import torch

pytest.importorskip("expecttest")   # torch's op database imports it
from torch.testing._internal.common_methods_invocations import op_db   # noqa: E402

from lamina.testing.opinfo import run_sample   # noqa: E402

_OPS = sorted((o for o in op_db if torch.float32 in o.supported_dtypes("cpu")),
              key=lambda o: (o.name, o.variant_test_name))
_SELECTED = _OPS if os.environ.get("LAMINA_OPINFO") == "all" else _OPS[::8]


@pytest.mark.parametrize("opinfo", _SELECTED, ids=lambda o: o.name + (f".{o.variant_test_name}" if o.variant_test_name else ""))
def test_claimed_ops_match_eager(opinfo):
    result = run_sample(opinfo)
    if result.status in ("skipped", "unclaimed"):
        pytest.skip(f"{result.status}: {result.detail}")
    assert result.status == "passed", f"{result.name}: {result.detail}"
