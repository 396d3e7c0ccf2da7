"""Networks that repeat a block: identical kernels are compiled once (lamina-dedupe-kernels),
kernels that differ only in a constant or a shape are not merged, and the results match eager
forward and backward."""
from __future__ import annotations

import re

import torch
import torch.nn as nn

import lamina.backend


def _kernel_functions(tmp_path, stage: str) -> int:
    texts = [p.read_text() for p in sorted(tmp_path.glob(f"*forward.*-{stage}.mlir"))]
    assert texts, f"no {stage} dump"
    return len(re.findall(r"func\.func (?:private )?@\w+_kernel_\d+\(", texts[0]))


class Block(nn.Module):
    def __init__(self, width: int, scale: float):
        super().__init__()
        self.fc = nn.Linear(width, width)
        self.scale = scale

    def forward(self, x):
        return x + torch.nn.functional.gelu(self.fc(x)) * self.scale


def _train_step_matches_eager(model, x, tmp_path):
    torch.manual_seed(0)
    ref = model
    test = __import__("copy").deepcopy(model)
    torch._dynamo.reset()
    compiled = torch.compile(test, backend="lamina", options={"strict": True, "dump_ir": str(tmp_path)})
    want = ref(x)
    got = compiled(x)
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)
    want.square().sum().backward()
    got.square().sum().backward()
    for (name, a), b in zip(ref.named_parameters(), test.parameters()):
        torch.testing.assert_close(b.grad, a.grad, rtol=1e-4, atol=1e-5, msg=name)
    assert not lamina.backend.last_report()["fallback_ops"]


def test_identical_blocks_compile_once_and_match_eager(tmp_path):
    torch.manual_seed(0)
    model = nn.Sequential(*[Block(32, 0.5) for _ in range(6)])
    _train_step_matches_eager(model, torch.randn(4, 32), tmp_path)
    outlined = _kernel_functions(tmp_path, "outline")
    scheduled = _kernel_functions(tmp_path, "schedule")
    assert scheduled < outlined, (outlined, scheduled)


def test_blocks_that_differ_in_a_constant_or_a_shape_stay_apart(tmp_path):
    """Same structure, different scales (a constant in the kernel) and widths: a wrong merge
    would compute every block with the first one's constant or shape."""
    torch.manual_seed(0)
    model = nn.Sequential(Block(32, 0.5), Block(32, 2.0), Block(32, -1.0), nn.Linear(32, 16), Block(16, 0.5),
                          Block(16, 0.25))
    _train_step_matches_eager(model, torch.randn(4, 32), tmp_path)
