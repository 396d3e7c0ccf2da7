"""Reductions whose rows are not the leading dims or run along the innermost dim, against
eager on every target (the cuda suite runs this file under TRITON_INTERPRET=1): sums and
arg-reductions over a middle dim ("column" rows: XBLOCK neighbours along the contiguous
dim per program, persistent and looped), softmax / RMS norm over channels (rows N, H, W;
lanes C), group and instance norm (their statistics per row through the reshape to
[N, G, -1] or [1, N*C, H, W], not per element), reductions over H, W of NHWC tensors
(column rows along C, their lanes split where few), and split reductions (few rows of many
lanes: partials over lane chunks by one program each, then combined; batch norm's statistics
computed that way first, then its elements as a flat program)."""
import pytest
import torch
import torch.nn.functional as F


def _rms(x):
    return x / torch.sqrt(torch.mean(x ** 2, dim=1, keepdim=True) + 1e-5)


CASES = {
    "sum_dim1_keepdim": (lambda x: torch.sum(x, dim=1, keepdim=True), (3, 40, 33)),
    "sum_dim1_looped": (lambda x: torch.sum(x, dim=1), (2, 300, 20)),
    "argmax_dim1": (lambda x: torch.argmax(x, dim=1), (2, 50, 40)),
    "amin_dim0": (lambda x: torch.amin(x, dim=0), (70, 24)),
    "mean_dims02": (lambda x: x.mean(dim=(0, 2)), (3, 20, 17)),
    "var_dim1": (lambda x: torch.var(x, dim=1, keepdim=True), (3, 45, 20)),
    "softmax_dim1": (lambda x: torch.softmax(x, dim=1), (2, 12, 3, 20)),
    "rms_dim1": (_rms, (2, 16, 4, 18)),
    "group_norm": (lambda x: F.group_norm(x, 4), (2, 8, 6, 5)),
    "instance_norm": (lambda x: F.instance_norm(x), (2, 3, 6, 5)),
    "batch_norm_train": (lambda x: F.batch_norm(x, None, None, training=True), (3, 4, 5, 6)),
    # split reductions (rows < 2 SMs' worth, >= 16384 lanes; the test pretends to 132 SMs)
    "sum_all_split": (lambda x: x.sum(), (3, 7000)),
    "mse_loss_split": (lambda x: F.mse_loss(x, torch.tanh(x)), (150, 150)),
    "amax_dim1_split": (lambda x: x.amax(dim=1), (3, 20000)),
    "batch_norm_train_split": (lambda x: F.batch_norm(x, None, None, training=True), (16, 2, 64, 64)),
    # an NHWC tensor seen NCHW (what the reductions read is contiguous along C): column rows
    # along C; few of them with long rows split their lanes (a mean, a max over H, W)
    "nhwc_instance_norm": (lambda y: F.instance_norm(y.permute(0, 3, 1, 2)), (2, 6, 5, 40)),
    "nhwc_mean_split": (lambda y: torch.tanh(y.permute(0, 3, 1, 2)).mean((2, 3)), (2, 64, 64, 48)),
    "nhwc_amax_split": (lambda y: y.permute(0, 3, 1, 2).amax((2, 3), keepdim=True) + 1, (1, 96, 48, 40)),
    # ... or their statistics' (instance norm's sum and squared deviations, a Welford pair;
    # a softmax over H, W's max and sum of exps, an online softmax pair); the normalization
    # itself then reads NHWC and writes NCHW in 2-D tiles
    "nhwc_instance_norm_split": (lambda y: F.instance_norm(y.permute(0, 3, 1, 2)), (2, 64, 64, 48)),
    "nhwc_spatial_softmax_split": (lambda y: y.permute(0, 3, 1, 2).flatten(2).softmax(-1), (1, 64, 80, 40)),
}


@pytest.mark.parametrize("name", list(CASES))
def test_matches_eager(name, monkeypatch):
    from lamina.codegen.cuda import launch

    monkeypatch.setattr(launch, "_sm_count", lambda: 132)   # (the interpreter has 1)
    fn, shape = CASES[name]
    x = torch.randn(*shape, generator=torch.Generator().manual_seed(len(name)))
    x[0, 1] = x[0, 1] * 1e3   # rows of very different magnitudes
    torch._dynamo.reset()
    got = torch.compile(fn, backend="lamina", options={"strict": True})(x)
    torch.testing.assert_close(got, fn(x), rtol=1e-5, atol=1e-4)


def test_split_max_propagates_nan(monkeypatch):
    from lamina.codegen.cuda import launch

    monkeypatch.setattr(launch, "_sm_count", lambda: 132)
    x = torch.randn(2, 20000, generator=torch.Generator().manual_seed(0))
    x[1, 17000] = float("nan")
    torch._dynamo.reset()
    got = torch.compile(lambda x: x.amax(dim=1), backend="lamina", options={"strict": True})(x)
    torch.testing.assert_close(got, x.amax(dim=1), equal_nan=True)


# Several reductions of one kernel, each stored into an output of its own: CSE gives them one
# shared zero fill, which must not make them share a destination (lowering/kernel_cse.py's
# unshare_destinations before eliminate-empty-tensors; the second output held the first's sums).
MULTI_OUTPUT_CASES = {
    "two_sums_of_one_input": (lambda x: (x.sum(0), (x * 2).sum(0)), (5, 7)),
    "sums_after_a_reduction": (lambda x: (lambda a: (a.sum(0), (a * 2).sum(0), a.amax(0)))(
        x.reshape(2, 3, -1).sum(-1)), (6, 16)),
    "mean_and_var": (lambda x: (x.mean(1), x.var(1), x.abs().sum(1)), (4, 9, 3)),
    # two concatenations sharing a prefix (a GRU cell's input and hidden gate gradients):
    # both outputs held the first one's last part
    "cats_with_a_shared_prefix": (lambda x: (torch.cat([x * 2, x * 3, x.exp()], -1),
                                            torch.cat([x * 2, x * 3, x.exp() * x], -1)), (3, 5)),
    "a_tensor_and_a_cat_of_it": (lambda x: (lambda p: (p, torch.cat([p, x.sin()], -1)))(torch.cat([x, x * 2], -1)),
                                 (4, 6)),
}


@pytest.mark.parametrize("name", list(MULTI_OUTPUT_CASES))
def test_reductions_with_outputs_of_their_own(name):
    fn, shape = MULTI_OUTPUT_CASES[name]
    x = torch.randn(*shape, generator=torch.Generator().manual_seed(len(name)))
    torch._dynamo.reset()
    got = torch.compile(fn, backend="lamina", options={"strict": True})(x)
    for g, want in zip(got, fn(x)):
        torch.testing.assert_close(g, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("norm", ["instance", "group"])
def test_affine_norm_parameter_gradients(norm):
    """InstanceNorm2d(affine) in training: the weight's and the bias's gradients are two sums
    of one backward kernel (the weight's was the bias's before the fix)."""
    torch.manual_seed(0)
    m = torch.nn.InstanceNorm2d(3, affine=True) if norm == "instance" else torch.nn.GroupNorm(2, 4)
    with torch.no_grad():
        m.weight.uniform_(0.5, 1.5)
        m.bias.uniform_(-1, 1)
    x = torch.randn(2, m.weight.numel(), 5, 4, requires_grad=True)
    g = torch.randn(x.shape)
    (m(x) * g).sum().backward()
    want = [x.grad, m.weight.grad, m.bias.grad]
    x.grad = m.weight.grad = m.bias.grad = None
    torch._dynamo.reset()
    (torch.compile(m, backend="lamina", options={"strict": True})(x) * g).sum().backward()
    for got, w in zip([x.grad, m.weight.grad, m.bias.grad], want):
        torch.testing.assert_close(got, w, rtol=1e-4, atol=1e-5)
