"""Training steps with torch.optim compiled whole (forward, backward, the optimizer's update),
against eager over three steps: parameters, optimizer state and losses, with no fallback.

The optimizer's state is not an input of the graph dynamo makes but its attributes (get_attr),
updated in place: the inference path's export ran the graph on them once at compile time
(Adam's step counter advanced twice), and `addcmul_(..., value=v)` reaches lamina as
inductor's `prims.fma`."""
from __future__ import annotations

import copy

import pytest
import torch

import lamina.backend

OPTIMIZERS = {
    "sgd": lambda p, fe: torch.optim.SGD(p, lr=0.1, foreach=fe),
    "sgd_nesterov_wd": lambda p, fe: torch.optim.SGD(p, lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.01,
                                                     foreach=fe),
    "adam": lambda p, fe: torch.optim.Adam(p, lr=0.01, foreach=fe),
    "adam_amsgrad": lambda p, fe: torch.optim.Adam(p, lr=0.01, amsgrad=True, foreach=fe),
    "adamw": lambda p, fe: torch.optim.AdamW(p, lr=0.01, weight_decay=0.1, foreach=fe),
    "rmsprop": lambda p, fe: torch.optim.RMSprop(p, lr=0.01, momentum=0.5, foreach=fe),
    "adagrad": lambda p, fe: torch.optim.Adagrad(p, lr=0.1, lr_decay=0.01, foreach=fe),
}


def _model():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.LayerNorm(16), torch.nn.GELU(),
                               torch.nn.Linear(16, 4))


def _steps_match_eager(step, eager, compiled, batches):
    """`step(model, optimizer, x, y)` run eagerly on `eager` and compiled (strict) on
    `compiled` (two (model, optimizer) pairs that start equal), batch by batch: the losses,
    then the parameters, match, and no graph fell back."""
    run = torch.compile(step, backend="lamina", options={"strict": True})
    before = len(lamina.backend.reports())
    for x, y in batches:
        want, got = step(*eager, x, y), run(*compiled, x, y)
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6)
    for p, q in zip(compiled[0].parameters(), eager[0].parameters()):
        torch.testing.assert_close(p, q, rtol=1e-5, atol=1e-6)
    records = lamina.backend.reports()[before:]
    assert records and all(r["fallback_ops"] == [] for r in records), records


@pytest.mark.parametrize("foreach", [False, True], ids=["single_tensor", "foreach"])
@pytest.mark.parametrize("name", list(OPTIMIZERS))
def test_compiled_training_step_matches_eager(name, foreach):
    torch._dynamo.reset()
    eager_model = _model()
    model = copy.deepcopy(eager_model)
    eager_opt, opt = OPTIMIZERS[name](eager_model.parameters(), foreach), OPTIMIZERS[name](model.parameters(), foreach)

    def step(m, o, x, y):
        loss = torch.nn.functional.mse_loss(m(x), y)
        loss.backward()
        o.step()
        o.zero_grad()
        return loss

    g = torch.Generator().manual_seed(1)
    _steps_match_eager(step, (eager_model, eager_opt), (model, opt),
                       [(torch.randn(5, 8, generator=g), torch.randn(5, 4, generator=g)) for _ in range(3)])
    for p, q in zip(model.parameters(), eager_model.parameters()):
        for key, value in eager_opt.state[q].items():
            # (dynamo writes addcmul_ with a value as a fused multiply-add where eager rounds
            # twice: RMSprop's momentum buffer differs from eager's by 2.3e-4 relative under
            # backend="aot_eager" too)
            torch.testing.assert_close(opt.state[p][key], value, rtol=1e-3, atol=1e-6)


def test_gradient_clipping_and_adamw_foreach():
    """clip_grad_norm_ (_foreach_norm, _foreach_mul_) before a foreach AdamW step."""
    torch._dynamo.reset()
    eager_model = _model()
    model = copy.deepcopy(eager_model)
    eager_opt = torch.optim.AdamW(eager_model.parameters(), lr=0.01, foreach=True)
    opt = torch.optim.AdamW(model.parameters(), lr=0.01, foreach=True)

    def step(m, o, x, y):
        loss = torch.nn.functional.cross_entropy(m(x), y)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(m.parameters(), 0.5, foreach=True)
        o.step()
        o.zero_grad()
        return loss

    g = torch.Generator().manual_seed(2)
    _steps_match_eager(step, (eager_model, eager_opt), (model, opt),
                       [(torch.randn(6, 8, generator=g), torch.randint(0, 4, (6,), generator=g)) for _ in range(3)])
