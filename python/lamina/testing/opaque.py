"""An op lamina never compiles, for tests of what happens around one: the eager fallback,
graph partitions, strict mode. A custom op of the tests' own (not an ATen op lamina lacks
today, which a later change may claim: igamma served until it compiled)."""
from __future__ import annotations

import torch

OPAQUE_OP = "lamina_testing.opaque_scale.default"   # its name in reports and messages


@torch.library.custom_op("lamina_testing::opaque_scale", mutates_args=())
def opaque_scale(x: torch.Tensor) -> torch.Tensor:
    """x / 2 + 1, computed by torch (eagerly, even inside a compiled graph)."""
    return x * 0.5 + 1.0


@opaque_scale.register_fake
def _(x):
    return torch.empty_like(x)


def _backward(ctx, grad):
    return grad * 0.5


opaque_scale.register_autograd(_backward)
