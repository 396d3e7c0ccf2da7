"""Backward graphs go through lamina too: gradients match eager, with no fallback."""
import pytest
import torch

import lamina.backend
from lamina.testing.eager_match import assert_gradients_match_eager
from lamina.testing.models import MLP, GPTBlock


@pytest.mark.parametrize("make", [lambda: (MLP(), torch.randn(8, 64)),
                                  lambda: (GPTBlock(64, 4), torch.randn(2, 8, 64))], ids=["mlp", "gpt_block"])
def test_gradients_match_eager(make):
    torch._dynamo.reset()
    torch.manual_seed(0)
    model, x = make()
    before = len(lamina.backend.reports())
    actual, expected = assert_gradients_match_eager(
        model, x, lambda m: torch.compile(m, backend="lamina", options={"strict": True}))
    torch.testing.assert_close(actual, expected, rtol=1e-4, atol=1e-4)
    records = lamina.backend.reports()[before:]
    assert [r["graph"].rsplit("_", 1)[1] for r in records] == ["forward", "backward"]
    assert all(r["fallback_ops"] == [] and r["kernels"] >= 1 for r in records)


def test_grid_sample_trains():
    """F.grid_sample's backward (2-d bilinear, 3-d nearest; 3-d trilinear and bicubic checked
    by hand: their backward graphs take 7 and 13 s to compile): autograd of the samplers' decompositions (backend/autograd_rewrites.py),
    gradients of the inputs and of the grids as eager's, nothing eager."""
    torch._dynamo.reset()
    gen = torch.Generator().manual_seed(0)
    x2, x3 = torch.randn(2, 3, 5, 6, generator=gen), torch.randn(1, 2, 3, 4, 5, generator=gen)
    g2, g3 = torch.rand(2, 4, 3, 2, generator=gen) * 2.6 - 1.3, torch.rand(1, 2, 3, 4, 3, generator=gen) * 2.6 - 1.3
    F = torch.nn.functional

    def fn(x2, g2, x3, g3):
        return (F.grid_sample(x2, g2, padding_mode="reflection", align_corners=False).sum()
                + F.grid_sample(x3, g3, mode="nearest").sum())

    inputs = [t.requires_grad_() for t in (x2, g2, x3, g3)]
    want = torch.autograd.grad(fn(*inputs), inputs)
    before = len(lamina.backend.reports())
    got = torch.autograd.grad(torch.compile(fn, backend="lamina", options={"strict": True})(*inputs), inputs)
    for a, b in zip(got, want):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5)
    assert all(r["fallback_ops"] == [] for r in lamina.backend.reports()[before:])



class _SpatialTransformer(torch.nn.Module):
    """affine_grid + grid_sample from an identity transform, a spatial transformer's usual
    start: every sample lies on a cell boundary, where the grid's gradient depends on which
    cell the rounding of the source coordinate picks (a 1-ulp difference moved it)."""

    def __init__(self, rank, align_corners, padding_mode, mode):
        super().__init__()
        self.theta = torch.nn.Parameter(torch.eye(rank, rank + 1).unsqueeze(0))
        self.options = dict(align_corners=align_corners, padding_mode=padding_mode, mode=mode)

    def forward(self, x):
        F = torch.nn.functional
        grid = F.affine_grid(self.theta.expand(x.shape[0], -1, -1), x.shape, align_corners=self.options["align_corners"])
        grid = torch.cat([grid[:1], grid[1:] * 1.7], 0)   # the second image also samples outside
        return F.grid_sample(x, grid, **self.options)


@pytest.mark.parametrize("rank", [2, 3])
@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align_corners", [False, True])
def test_spatial_transformer_at_identity_matches_eager(rank, padding_mode, align_corners):
    torch._dynamo.reset()
    torch.manual_seed(0)
    shape = (2, 3, 6, 7) if rank == 2 else (2, 2, 4, 5, 3)
    model = _SpatialTransformer(rank, align_corners, padding_mode, "bilinear")
    x = torch.randn(*shape)
    want_out = model(x)
    weight = torch.randn_like(want_out)
    want = torch.autograd.grad((want_out * weight).sum(), model.theta)[0]
    before = len(lamina.backend.reports())
    got_out = torch.compile(model, backend="lamina", options={"strict": True})(x)
    got = torch.autograd.grad((got_out * weight).sum(), model.theta)[0]
    torch.testing.assert_close(got_out, want_out, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-4)
    assert all(r["fallback_ops"] == [] for r in lamina.backend.reports()[before:])


def test_grid_sample_nan_coordinates_as_eager():
    """A NaN or infinite coordinate: CPU's 2-d kernel gives NaN with zero padding (a masked 0
    times a NaN weight), its 3-d kernel skips the corner; border/reflection clip NaN as each
    kernel's min/max does."""
    F = torch.nn.functional
    torch.manual_seed(0)
    for rank in (2, 3):
        x = torch.randn(1, 2, 5, 6) if rank == 2 else torch.randn(1, 2, 3, 4, 5)
        grid = torch.randn((1, 4, 3, 2) if rank == 2 else (1, 2, 4, 3, 3)) * 2
        grid.view(-1)[:4] = torch.tensor([float("nan"), float("inf"), -float("inf"), 1.0])
        for padding_mode in ("zeros", "border", "reflection"):
            torch._dynamo.reset()
            fn = lambda x, g: F.grid_sample(x, g, padding_mode=padding_mode, align_corners=False)   # noqa: E731
            got = torch.compile(fn, backend="lamina", options={"strict": True})(x, grid)
            torch.testing.assert_close(got, fn(x, grid), rtol=1e-5, atol=1e-5, equal_nan=True)


class _TensorLiterals(torch.nn.Module):
    """torch.tensor(...) built in forward: a constant the training graph's forward is imported
    with under AOTAutograd's fake mode (its detach() raised there, and the graph ran eagerly)."""

    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(6, 4)

    def forward(self, x):
        y = torch.min(self.linear(x), torch.tensor(0.5))
        return torch.clamp(y * torch.tensor([1.0, -2.0, 0.5, 3.0]), min=torch.tensor(-1.0))


def test_tensor_literals_in_a_training_forward():
    torch._dynamo.reset()
    torch.manual_seed(0)
    before = len(lamina.backend.reports())
    assert_gradients_match_eager(_TensorLiterals(), torch.randn(5, 6),
                                 lambda m: torch.compile(m, backend="lamina", options={"strict": True}))
    records = lamina.backend.reports()[before:]
    assert len(records) == 2 and all(r["fallback_ops"] == [] for r in records)


@pytest.mark.parametrize("dynamic", [False, True])
def test_strided_slice_and_replication_pad_backward(dynamic):
    """x[..., 1::3]'s backward is a slice_scatter with a step (a rotary embedding's x[..., ::2]
    and x[..., 1::2]), a replication pad's an ATen kernel: both compile, over symbolic sizes
    too (an even size's s // 2 written by torch as (s + 1) // 2)."""
    F = torch.nn.functional

    def fn(x, y):
        a, b = x[..., ::2], x[..., 1::2]
        rotated = torch.stack([a * 2 - b, a + b * 3], -1).flatten(-2)
        return ((rotated ** 2).sum() + (x[..., 1::3] * 1.5).sum() + (x[:, 2:-1:2] ** 3).sum()
                + (F.pad(y, (1, -1, 2, 0), mode="replicate") ** 2).sum()
                + (F.pad(y[:, 0], (2, 3), mode="replicate") ** 2).sum())

    torch._dynamo.reset()
    compiled = torch.compile(fn, backend="lamina", dynamic=dynamic, options={"strict": True})
    for n in (8, 10) if dynamic else (8,):
        x = torch.randn(3, n, requires_grad=True)
        y = torch.randn(2, 3, 4, n - 3, requires_grad=True)
        want = torch.autograd.grad(fn(x, y), (x, y))
        got = torch.autograd.grad(compiled(x, y), (x, y))
        for g, w in zip(got, want):
            torch.testing.assert_close(g, w, rtol=1e-5, atol=1e-5)


def _traced(op, shapes):
    """op's graph on CPU fakes through lamina's decomposition table (what AOTAutograd gives)."""
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.fx.experimental.proxy_tensor import make_fx

    from lamina.backend.decompositions import lamina_decompositions

    with FakeTensorMode():
        fakes = [torch.empty(s) for s in shapes]
        return make_fx(lambda *a: tuple(x for x in op(*a) if x is not None),
                       decomposition_table=lamina_decompositions(), tracing_mode="real")(*fakes)


def test_fused_rnn_cells_of_the_gpu():
    """nn.LSTMCell / nn.GRUCell on a GPU run _thnn_fused_lstm_cell / _thnn_fused_gru_cell and
    their backwards (CUDA kernels, no decomposition in torch): lamina's decompositions
    (backend/rnn_cells.py), compiled, against autograd of the cells' math; the workspace
    one gives is what the other's backward reads."""
    from lamina.backend.compile_fx import compile_fx
    from lamina.backend.options import Options

    aten = torch.ops.aten
    g = torch.Generator().manual_seed(0)
    B, H = 3, 5
    run = lambda gm, args: compile_fx(gm, args, Options(strict=True, target="cpu"))(*args)   # noqa: E731
    grad_h, grad_c = torch.randn(B, H, generator=g), torch.randn(B, H, generator=g)

    ins = [torch.randn(s, generator=g) for s in [(B, 4 * H), (B, 4 * H), (B, H), (4 * H,), (4 * H,)]]
    leaves = [t.clone().requires_grad_() for t in ins]
    i, f, c, o = (leaves[0] + leaves[1] + leaves[3] + leaves[4]).chunk(4, 1)
    cy = torch.sigmoid(f) * leaves[2] + torch.sigmoid(i) * torch.tanh(c)
    hy = torch.sigmoid(o) * torch.tanh(cy)
    (hy * grad_h + cy * grad_c).sum().backward()
    got_h, got_c, workspace = run(_traced(aten._thnn_fused_lstm_cell.default, [t.shape for t in ins]), ins)
    torch.testing.assert_close((got_h, got_c), (hy, cy))
    backward = _traced(lambda *a: aten._thnn_fused_lstm_cell_backward_impl.default(*a, True), [(B, H)] * 4 + [(B, 4 * H)])
    grads = run(backward, [grad_h, grad_c, ins[2], got_c, workspace])
    torch.testing.assert_close(grads, (leaves[0].grad, leaves[2].grad, leaves[3].grad))

    ins = [torch.randn(s, generator=g) for s in [(B, 3 * H), (B, 3 * H), (B, H), (3 * H,), (3 * H,)]]
    leaves = [t.clone().requires_grad_() for t in ins]
    ir, ii, in_ = (leaves[0] + leaves[3]).chunk(3, 1)
    hr, hi, hn = (leaves[1] + leaves[4]).chunk(3, 1)
    r, z = torch.sigmoid(ir + hr), torch.sigmoid(ii + hi)
    n = torch.tanh(in_ + r * hn)
    hy = (1 - z) * n + z * leaves[2]
    (hy * grad_h).sum().backward()
    got_h, workspace = run(_traced(aten._thnn_fused_gru_cell.default, [t.shape for t in ins]), ins)
    torch.testing.assert_close(got_h, hy)
    backward = _traced(lambda *a: aten._thnn_fused_gru_cell_backward.default(*a, True), [(B, H), (B, 5 * H)])
    grads = run(backward, [grad_h, workspace])
    torch.testing.assert_close(grads, tuple(t.grad for t in leaves[:2]) + (leaves[2].grad, leaves[3].grad, leaves[4].grad))
