"""Symbolic shapes: one compile serves every batch size and sequence length, with no
fallback, for inference and training (a smaller last batch)."""
import pytest
import torch

import lamina.backend
from lamina.testing.models import MLP, GPTBlock


def _records_since(n):
    return lamina.backend.reports()[n:]


def _assert_no_fallback(records):
    for r in records:
        assert r["fallback_ops"] == [], r
        assert r["ops_compiled"] == r["ops_total"] > 0, r


def test_mlp_varying_batch_compiles_once_when_dynamic():
    """Default dynamic=None: the second size makes dynamo recompile with a symbolic batch;
    every later size reuses that graph."""
    torch._dynamo.reset()
    torch.manual_seed(0)
    model = MLP().eval()
    compiled = torch.compile(model, backend="lamina", options={"strict": True})
    before = len(lamina.backend.reports())
    with torch.no_grad():
        for batch in (4, 8, 16, 32, 7):
            x = torch.randn(batch, 64)
            torch.testing.assert_close(compiled(x), model(x), rtol=1e-4, atol=1e-5)
    records = _records_since(before)
    _assert_no_fallback(records)
    assert [r["dynamic"] for r in records] == [False, True], records
    assert list(records[1]["symbols"].values()) == [8]


def test_gpt_block_sequence_lengths_and_batches():
    torch._dynamo.reset()
    torch.manual_seed(0)
    model = GPTBlock(64, 4).eval()
    compiled = torch.compile(model, backend="lamina", dynamic=True, options={"strict": True})
    before = len(lamina.backend.reports())
    with torch.no_grad():
        # 20 sequence lengths in 1..512 and batch sizes in 1..16
        lengths = [16, 5, 127, 64, 9, 200, 33, 1, 2, 3, 48, 77, 100, 256, 301, 384, 450, 500, 511, 512]
        batches = [2, 3, 2, 5, 16, 4, 1, 1, 7, 2, 8, 3, 2, 1, 2, 1, 1, 2, 1, 1]
        for batch, seq in zip(batches, lengths):
            x = torch.randn(batch, seq, 64)
            torch.testing.assert_close(compiled(x), model(x), rtol=1e-4, atol=1e-4)
    records = _records_since(before)
    _assert_no_fallback(records)
    # one symbolic graph, plus dynamo's own specializations of a size 1 (batch 1, seq 1, both)
    assert records[0]["dynamic"] and len(records) <= 4, records


def test_training_with_a_smaller_last_batch():
    torch._dynamo.reset()
    torch.manual_seed(0)
    model = MLP()
    reference = MLP()
    reference.load_state_dict(model.state_dict())
    compiled = torch.compile(model, backend="lamina", options={"strict": True})
    before = len(lamina.backend.reports())
    for batch in (8, 8, 6, 5):
        x = torch.randn(batch, 64)
        for m, fn in ((model, compiled), (reference, reference)):
            m.zero_grad()
            fn(x).square().mean().backward()
        for p, q in zip(model.parameters(), reference.parameters()):
            torch.testing.assert_close(p.grad, q.grad, rtol=1e-4, atol=1e-5)
    records = _records_since(before)
    _assert_no_fallback(records)
    kinds = [(r["graph"].rsplit("_", 1)[1], r["dynamic"]) for r in records]
    # static forward+backward for 8, then one symbolic pair for 6 and 5
    assert kinds == [("forward", False), ("backward", False), ("forward", True), ("backward", True)], kinds


def _marked(t, dims):
    t = t.clone()
    for d in dims:
        torch._dynamo.mark_dynamic(t, d)
    return t


def test_symbolic_row_length_with_static_rows():
    """Only the reduced dim symbolic (mark_dynamic on the last dim): the rows are static, the
    row temporaries and the outputs are sized at run time."""
    torch._dynamo.reset()
    torch.manual_seed(0)

    def norms(x, w):
        return torch.softmax(x * 2, -1), torch.nn.functional.layer_norm(x, x.shape[-1:]) * w.sum()

    compiled = torch.compile(norms, backend="lamina", options={"strict": True})
    before = len(lamina.backend.reports())
    for n in (37, 256, 3, 1000):
        x, w = _marked(torch.randn(6, 5, n), [2]), torch.randn(4)
        for got, want in zip(compiled(x, w), norms(x, w)):
            torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-5)
    records = _records_since(before)
    _assert_no_fallback(records)
    assert records[0]["dynamic"] and len(records) == 1, records


def test_symbolic_transposes_have_masked_remainders():
    """Transposes of symbolic size run in run-time chunks of 8x8 vector tiles: sizes that are
    not multiples of 8, below 8, and large enough to fork all match eager."""
    torch._dynamo.reset()

    def transposes(x):
        return x.transpose(-2, -1).contiguous() + 1, x.permute(2, 0, 1).contiguous()

    compiled = torch.compile(transposes, backend="lamina", dynamic=True, options={"strict": True})
    before = len(lamina.backend.reports())
    for shape in ((2, 13, 21), (3, 8, 8), (1, 5, 3), (4, 64, 257), (2, 300, 130)):
        x = torch.randn(*shape)
        for got, want in zip(compiled(x), transposes(x)):
            torch.testing.assert_close(got, want)
    records = _records_since(before)
    _assert_no_fallback(records)
    assert records[0]["dynamic"], records


def test_bf16_attention_with_symbolic_heads_reshape():
    """bf16 attention under dynamic=True: the widened (f32) reshape keeps its symbols, and the
    [s0*s1, t, t] -> [s0, s1, t, t] reshape (two dynamic sizes in one group) lowers without
    expand-strided-metadata's assertion (it aborted the process)."""
    from lamina.testing.models import CausalAttention

    torch._dynamo.reset()
    torch.manual_seed(0)
    model = CausalAttention()
    compiled = torch.compile(model, backend="lamina", dynamic=True, options={"strict": True})
    before = len(lamina.backend.reports())
    for b, t in ((2, 8), (3, 5)):
        q, k, v = (torch.randn(b, 2, t, 16, dtype=torch.bfloat16) for _ in range(3))
        with torch.no_grad():
            got = compiled(q, k, v).float()
        want = model(q.float(), k.float(), v.float())
        torch.testing.assert_close(got, want, rtol=2e-2, atol=2e-2)
    _assert_no_fallback(_records_since(before))


def test_size_arithmetic_as_kernel_operands():
    """Sizes combined on the host (x.shape[0] - 2, a product, a floor division) feed kernels
    as operands: the graph entry computes them (CPU), the plan runner evaluates them (cuda
    target); one compile serves every size."""
    torch._dynamo.reset()
    fns = [lambda x: x // (x.shape[0] - 2) + x.shape[1] * 3,
           lambda x: x.sum(0) * (x.shape[0] * x.shape[1] - 1) - x.shape[0] // 4]
    for fn in fns:
        compiled = torch.compile(fn, backend="lamina", dynamic=True, options={"strict": True})
        before = len(lamina.backend.reports())
        for rows in (6, 9, 13):
            x = torch.arange(rows * 3).reshape(rows, 3)
            assert torch.equal(compiled(x), fn(x))
        records = _records_since(before)
        _assert_no_fallback(records)
        assert len(records) == 1 and records[0]["dynamic"]


class _CausalMask(torch.nn.Module):
    """GPT-2's mask: a static buffer sliced to the (symbolic) sequence length."""

    def __init__(self):
        super().__init__()
        self.register_buffer("bias", torch.tril(torch.ones(32, 32)).view(1, 1, 32, 32))

    def forward(self, att):
        t = att.size(-1)
        return att.masked_fill(self.bias[:, :, :t, :t] == 0, float("-inf")).softmax(-1)


def _write_middle(x):
    y = x * 1.5
    y[:, 1:-1] = y[:, 1:-1] * 2   # slice_scatter along the symbolic dim
    return y


_SLICES = [
    ("last_token", lambda x: x[:, -1] * 2),
    ("inner", lambda x: x[:, 1:-1].exp()),
    ("tail_and_stride", lambda x: x[:, -3:].sum(1, keepdim=True) + x[:, 1::3].mean(1, keepdim=True)),
    ("half", lambda x: x[:, x.shape[1] // 2:] - x[:, : x.shape[1] - x.shape[1] // 2]),
    ("narrow_select", lambda x: torch.narrow(x, 1, x.shape[1] // 3, 2) * x.select(1, x.shape[1] // 2).unsqueeze(1)),
    ("write_middle", _write_middle),
    ("pad", lambda x: torch.nn.functional.pad(x, (-1, 2, 1, 0), value=3.0)),   # (a cut and a fill)
    ("flip", lambda x: x.flip(1) - x.flip(0, 1)),
    ("chunk", lambda x: torch.cat(torch.chunk(x, 2, 1)[::-1], 1)),   # split_with_sizes of symbolic sizes
    ("split_sizes", lambda x: torch.split(x, [2, x.shape[1] - 2], 1)[1] * 2),
    ("diagonal", lambda x: torch.diagonal(x, 1) * 2 + torch.diagonal(x.t(), -1)),   # a gather: symbolic step
]


@pytest.mark.parametrize("target", ["cpu", "cuda"])
def test_slicing_along_symbolic_dims(target):
    """Slices, narrow, select, slice writes, pads, flips, splits and diagonals along a symbolic dim, with static, negative,
    strided and symbolic bounds, and a static buffer sliced to a symbolic length: one compile
    serves every size (the cuda target in Triton's interpreter without a GPU)."""
    device = "cuda" if target == "cuda" and torch.cuda.is_available() else "cpu"

    def slices(x):   # (one graph for all of them: a compile each would double the test's time)
        return tuple(fn(x) for _, fn in _SLICES)

    for name, fn in [("slices", slices), ("causal_mask", _CausalMask().to(device))]:
        torch._dynamo.reset()
        compiled = torch.compile(fn, backend="lamina", dynamic=True, options={"strict": True, "target": target})
        before = len(lamina.backend.reports())
        for n in (7, 12):
            x = torch.randn(2, 4, n, n, device=device) if name == "causal_mask" else torch.randn(3, n, device=device)
            torch.testing.assert_close(compiled(x), fn(x), rtol=1e-5, atol=1e-5, msg=name)
        records = _records_since(before)
        _assert_no_fallback(records)
        assert len(records) == 1 and records[0]["dynamic"], (name, records)


def test_training_through_symbolic_slices():
    """The backward of a slice along a symbolic dim is a slice_scatter of the same bounds."""
    torch._dynamo.reset()

    def loss(x, w):
        return ((x[:, 1:] * w[:-1]).sum(-1) + x[:, 0]).pow(2).mean()

    compiled = torch.compile(loss, backend="lamina", dynamic=True, options={"strict": True})
    before = len(lamina.backend.reports())
    for n in (6, 11):
        x, w = torch.randn(4, n, requires_grad=True), torch.randn(n, requires_grad=True)
        compiled(x, w).backward()
        got = (x.grad, w.grad)
        x.grad = w.grad = None
        loss(x, w).backward()
        torch.testing.assert_close(got, (x.grad, w.grad), rtol=1e-5, atol=1e-6)
    _assert_no_fallback(_records_since(before))


@pytest.mark.parametrize("target", ["cpu", "cuda"])
def test_gathers_and_scatters_with_a_changing_batch(target):
    """cross_entropy / nll_loss (a gather at each row's target), gather, scatter_add,
    x[index] and sorts along a static dim (topk, median, sort) with a symbolic batch (dynamo's automatic dynamic after a smaller batch): index arithmetic on
    symbolic sizes, no fallback, eager's values and gradients."""
    import torch.nn.functional as F

    def step(x, t):
        loss = F.cross_entropy(x, t) + F.nll_loss(F.log_softmax(x, 1), t, reduction="sum") * 0.5
        picked = torch.gather(x, 1, t[:, None])
        spread = torch.zeros_like(x).scatter_add(1, t[:, None].expand(-1, 2), x[:, :2])
        rows = x[t % x.shape[0]]   # advanced indexing along the symbolic dim
        ordered = torch.topk(x, 2, 1).values.sum() + x.median(1).values.sum() + torch.sort(x, 1)[0][:, -1].sum()
        return loss + picked.sum() + (spread * x).sum() + (rows * rows).sum() + ordered

    device = "cuda" if target == "cuda" and torch.cuda.is_available() else "cpu"
    torch._dynamo.reset()
    compiled = torch.compile(step, backend="lamina", options={"strict": True, "target": target})
    before = len(lamina.backend.reports())
    for n in (8, 5, 3):
        x = torch.randn(n, 6, device=device, requires_grad=True)
        t = torch.randint(0, 6, (n,), device=device)
        got = compiled(x, t)
        got.backward()
        grad, x.grad = x.grad, None
        want = step(x, t)
        want.backward()
        torch.testing.assert_close((got, grad), (want, x.grad), rtol=1e-5, atol=1e-5)
    records = _records_since(before)
    _assert_no_fallback(records)
    assert any(r["dynamic"] for r in records), records


def _module_matches_eager(cls, inputs, train: bool) -> list:
    """A freshly seeded `cls` compiled with dynamic=True (strict) against an eager copy with
    the same weights, over each tuple of `inputs`: outputs, and in train mode the parameter
    gradients of a squared-sum loss and the buffers (running statistics). The new reports."""
    torch._dynamo.reset()
    torch.manual_seed(0)
    model, ref = cls().train(train), cls().train(train)
    ref.load_state_dict(model.state_dict())
    compiled = torch.compile(model, backend="lamina", dynamic=True, options={"strict": True})
    before = len(lamina.backend.reports())
    for args in inputs:
        with torch.set_grad_enabled(train):
            got, want = compiled(*args), ref(*args)
        torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-5)
        if train:
            got.square().sum().backward()
            want.square().sum().backward()
            for p, q in zip(model.parameters(), ref.parameters()):
                torch.testing.assert_close(p.grad, q.grad, rtol=1e-4, atol=1e-4)
                p.grad = q.grad = None
            for b, c in zip(model.buffers(), ref.buffers()):   # running statistics
                torch.testing.assert_close(b, c)
    return _records_since(before)


class _ConvNet(torch.nn.Module):
    """Convolutions of every kind a symbolic length reaches: a strided 1-d one with a kernel
    longer than 3 (its output length s - 3 is negative at sample values the memory-plan check
    tries), a depthwise 2-d one, a transposed one, batch norm (float attributes: dynamo
    restarts its analysis to specialize them)."""

    def __init__(self):
        super().__init__()
        self.c1 = torch.nn.Conv1d(3, 6, 4)
        self.c2 = torch.nn.Conv2d(6, 6, 3, padding=1, groups=6, stride=2)
        self.bn = torch.nn.BatchNorm2d(6)
        self.up = torch.nn.ConvTranspose2d(6, 4, 3, stride=2, padding=1, output_padding=1)

    def forward(self, x, img):
        y = torch.relu(self.c1(x)).amax(-1)                       # [N, 6]
        z = self.up(torch.relu(self.bn(self.c2(img))))            # [N, 4, H', W']
        return z * y[:, :4, None, None]


@pytest.mark.parametrize("train", [False, True])
def test_convolutions_of_symbolic_sizes_forward_and_backward(train):
    """dynamic=True: convolutions whose decomposition needs a symbolic size (transposed,
    backward, the weight gradient over a symbolic batch) are library calls of the ATen routine;
    every graph compiles with no fallback, for two sets of sizes, forward and backward."""
    records = _module_matches_eager(_ConvNet, [(torch.randn(n, 3, length), torch.randn(n, 6, hw, hw + 1))
                                               for n, length, hw in ((3, 11, 9), (2, 17, 14))], train)
    _assert_no_fallback(records)
    assert any(r["dynamic"] for r in records), records


class _PooledNet(torch.nn.Module):
    """A ResNet stem's max pool, a VGG's adaptive average pool to 3x3, a DenseNet transition's
    average pool and a global max pool (CBAM-style), all over symbolic image sizes."""

    def __init__(self):
        super().__init__()
        self.stem = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.head = torch.nn.Linear(8 * 9 + 8, 5)

    def forward(self, x):
        y = torch.nn.functional.max_pool2d(torch.relu(self.stem(x)), 3, 2, 1)
        y = torch.nn.functional.avg_pool2d(y, 2, ceil_mode=True, count_include_pad=False)
        grid = torch.nn.functional.adaptive_avg_pool2d(y, (3, 3)).flatten(1)
        peak = torch.nn.functional.adaptive_max_pool2d(y, 1).flatten(1)
        return self.head(torch.cat([grid, peak], 1))


@pytest.mark.parametrize("train", [False, True])
def test_pooling_over_symbolic_image_sizes(train):
    """dynamic=True: the pools take symbolic spatial sizes (every size's remainder modulo the
    strides), eager's values and gradients, no fallback."""
    records = _module_matches_eager(_PooledNet, [(torch.randn(n, 3, h, w),)
                                                 for n, h, w in ((2, 20, 17), (3, 13, 22), (2, 31, 29))], train)
    _assert_no_fallback(records)
    assert records and all(r["dynamic"] for r in records), records


class _NormUpsampleNet(torch.nn.Module):
    """InstanceNorm (its weight repeated by the symbolic batch), GroupNorm, pixel shuffle and
    bilinear upsampling by a scale factor (its backward divides by sizes as scalar tensors)."""

    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(4, 8, 3, padding=1)
        self.inorm = torch.nn.InstanceNorm2d(8, affine=True)
        self.gnorm = torch.nn.GroupNorm(2, 8)
        self.shuffle = torch.nn.PixelShuffle(2)

    def forward(self, x):
        y = torch.nn.functional.silu(self.inorm(self.conv(x)))
        y = self.shuffle(self.gnorm(torch.cat([y[:, :4], torch.nn.functional.hardswish(y[:, 4:])], 1)))
        return torch.nn.functional.interpolate(y, scale_factor=2, mode="bilinear", align_corners=False)


def test_norms_and_upsampling_of_a_symbolic_batch_train():
    _assert_no_fallback(_module_matches_eager(_NormUpsampleNet, [(torch.randn(n, 4, hw, hw),)
                                                                 for n, hw in ((3, 6), (2, 5))], True))


class _SpecializedSizes(torch.nn.Module):
    """A stride-4 convolution of a 4x4 input: dynamo specializes its 1x1 output (lamina's rule
    states 1 + (s - 1) // 4); a class token and a position embedding of static length added to
    patches whose count torch keeps as an expression (its guard makes them equal)."""

    def __init__(self):
        super().__init__()
        self.c = torch.nn.Conv2d(3, 8, 3, stride=4, padding=1)
        self.bn = torch.nn.BatchNorm2d(8)
        self.patches = torch.nn.Conv2d(3, 8, 2, stride=2)
        self.pos = torch.nn.Parameter(torch.randn(1, 5, 8))

    def forward(self, x):
        y = torch.relu(self.bn(self.c(x)))
        tokens = torch.cat([y.flatten(2).transpose(1, 2), self.patches(x).flatten(2).transpose(1, 2)], 1)
        return (tokens + self.pos).softmax(-1)


def test_sizes_torch_states_otherwise():
    """A size static on one side and symbolic on the other (equal under dynamo's guards)
    takes torch's statement (a reshape), where the import failed."""
    torch._dynamo.reset()
    torch.manual_seed(0)
    model = _SpecializedSizes().eval()
    compiled = torch.compile(model, backend="lamina", dynamic=True, options={"strict": True})
    before = len(lamina.backend.reports())
    with torch.no_grad():
        for n in (2, 3):
            x = torch.randn(n, 3, 4, 4)
            torch.testing.assert_close(compiled(x), model(x), rtol=1e-5, atol=1e-6)
    _assert_no_fallback(_records_since(before))


def test_bf16_convolutions_of_symbolic_sizes_train():
    """The library convolutions of symbolic sizes take bf16 too (their backward fell back,
    and so did the graph partition after it): no fallback, and lamina's outputs and
    gradients as close to float64's as eager's bf16 ones."""
    torch._dynamo.reset()
    torch.manual_seed(0)
    ref = _ConvNet().double().train()
    eager, model = _ConvNet().train(), _ConvNet().train()
    eager.load_state_dict(ref.state_dict())
    model.load_state_dict(ref.state_dict())
    eager, model = eager.to(torch.bfloat16), model.to(torch.bfloat16)
    compiled = torch.compile(model, backend="lamina", dynamic=True, options={"strict": True})
    before = len(lamina.backend.reports())
    x, img = torch.randn(3, 3, 11, dtype=torch.float64), torch.randn(3, 6, 9, 10, dtype=torch.float64)
    outs = [m(x.to(dt), img.to(dt)) for m, dt in ((ref, torch.float64), (eager, torch.bfloat16),
                                                   (compiled, torch.bfloat16))]
    for out in outs:
        out.double().square().sum().backward()

    def err(a, b):
        return ((a.double() - b).abs().max() / b.abs().max()).item()

    assert err(outs[2], outs[0]) <= 3 * err(outs[1], outs[0]) + 1e-2
    for p, q, r in zip(ref.parameters(), eager.parameters(), model.parameters()):
        assert err(r.grad, p.grad) <= 3 * err(q.grad, p.grad) + 1e-2
    _assert_no_fallback(_records_since(before))


def test_convolution_weight_of_symbolic_out_channels():
    """A weight passed in (dynamic=True makes its out-channels symbolic) goes to the library
    convolution: lamina.convolution takes static weights only, and the import failed."""
    torch._dynamo.reset()
    fn = lambda x, w: torch.nn.functional.conv2d(x[:, :3], w, padding=1).relu()   # noqa: E731
    compiled = torch.compile(fn, backend="lamina", dynamic=True, options={"strict": True})
    before = len(lamina.backend.reports())
    for out_channels, hw in ((8, 9), (5, 12)):
        x, w = torch.randn(2, out_channels, hw, hw), torch.randn(out_channels, 3, 3, 3)
        torch.testing.assert_close(compiled(x, w), fn(x, w), rtol=1e-4, atol=1e-5)
    _assert_no_fallback(_records_since(before))


def test_sizes_scaled_by_dyadic_floats():
    """Upsampling by a float scale factor sizes its output TruncToInt(1.5*ToFloat(s0)): with a
    dyadic factor that is exact integer arithmetic ((3*s0) // 2), so the size nodes compile
    (they fell back, and the graph with them); a factor like 1.1 stays refused."""
    import sympy
    from torch.utils._sympy.functions import ToFloat, TruncToInt

    from lamina.dialect import symbols as S

    s0 = sympy.Symbol("s0", integer=True, positive=True)
    assert S.from_sympy(TruncToInt(1.5 * ToFloat(s0))) == "(3*s0) // 2"
    assert S.from_sympy(TruncToInt(2.0 * ToFloat(s0))) == "2*s0"
    with pytest.raises(S.SymbolError):
        S.free_symbols(str(S.from_sympy(TruncToInt(1.1 * ToFloat(s0)))))
    # a size padded to a multiple of 32 (CUDA attention's logsumexp), an integer ceil / floor
    from torch.utils._sympy.functions import CeilToInt, FloorToInt, IntTrueDiv
    assert S.from_sympy(32 * CeilToInt(IntTrueDiv(s0, 32))) == "32*((31 + s0) // 32)"
    assert S.from_sympy(FloorToInt(IntTrueDiv(s0, 4))) == "s0 // 4"

    def upsample(x):
        return (torch.nn.functional.interpolate(x, scale_factor=1.5, mode="bicubic"),
                torch.nn.functional.interpolate(x, scale_factor=0.5, mode="bilinear"),
                torch.nn.functional.interpolate(x, scale_factor=2.5, mode="nearest"))

    torch._dynamo.reset()
    compiled = torch.compile(upsample, backend="lamina", dynamic=True, options={"strict": True})
    before = len(lamina.backend.reports())
    for shape in ((2, 3, 9, 12), (1, 2, 13, 10), (2, 2, 7, 11)):
        x = torch.randn(shape)
        torch.testing.assert_close(compiled(x), upsample(x), rtol=1e-4, atol=1e-4)
    _assert_no_fallback(_records_since(before))


class _Encoder(torch.nn.Module):
    """A causal transformer layer (pre-norm, GELU) over a symbolic batch and length: the CPU
    flash-attention op and its backward, whose scale 1 / sqrt(E) is symbolic when the head
    size is (an import error before), and nn.TransformerEncoderLayer's unfused path."""

    def __init__(self):
        super().__init__()
        self.layer = torch.nn.TransformerEncoderLayer(32, 4, 64, dropout=0.0, activation="gelu", norm_first=True,
                                                      batch_first=True)
        self.q = torch.nn.Linear(32, 32)

    def forward(self, x):
        h = self.layer(x, is_causal=True, src_mask=torch.nn.Transformer.generate_square_subsequent_mask(x.shape[1]))
        q = self.q(h).unflatten(-1, (4, -1)).transpose(1, 2)
        return torch.nn.functional.scaled_dot_product_attention(q, q, q, is_causal=True).sum(1)


@pytest.mark.parametrize("train", [False, True], ids=["eval", "train"])
def test_transformer_layer_and_attention(train):
    torch.manual_seed(1)
    records = _module_matches_eager(_Encoder, [(torch.randn(2, 7, 32),), (torch.randn(3, 5, 32),)], train)
    assert records and all(r["fallback_ops"] == [] for r in records)


def test_attention_backward_of_symbolic_head_size():
    F = torch.nn.functional
    fn = lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True).square().sum()   # noqa: E731
    torch._dynamo.reset()
    compiled = torch.compile(fn, backend="lamina", dynamic=True, options={"strict": True})
    for length, head in ((9, 16), (5, 8)):
        inputs = [torch.randn(2, 3, length, head, requires_grad=True) for _ in range(3)]
        got = torch.autograd.grad(compiled(*inputs), inputs)
        want = torch.autograd.grad(fn(*inputs), inputs)
        for g, w in zip(got, want):
            torch.testing.assert_close(g, w, rtol=1e-4, atol=1e-5)


_SCANS_AND_SORTS = {
    "cumsum": lambda x: torch.cumsum(x, 1),
    "cumprod": lambda x: torch.cumprod(x, 0),
    "logcumsumexp": lambda x: torch.logcumsumexp(x, 1),
    "cummax": lambda x: torch.cummax(x, 1),
    "cummin": lambda x: torch.cummin(x, 0),
    "sort": lambda x: torch.sort(x, dim=1, descending=True, stable=True),
    "topk": lambda x: torch.topk(x, 2, 1),
    "kthvalue": lambda x: torch.kthvalue(x, 2, 0, keepdim=True),
}


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int32], ids=str)
@pytest.mark.parametrize("name", list(_SCANS_AND_SORTS))
def test_scans_and_sorts_along_symbolic_dims(name, dtype):
    """A symbolic size fixes no number of prefix / network steps: these are library calls of
    ATen's routines there (static sizes compile), no fallback, eager's values and indices
    (NaN, ties)."""
    if name == "logcumsumexp" and not dtype.is_floating_point:
        pytest.skip("logcumsumexp takes floats")
    fn = _SCANS_AND_SORTS[name]
    torch._dynamo.reset()
    compiled = torch.compile(fn, backend="lamina", dynamic=True, options={"strict": True})
    before = len(lamina.backend.reports())
    for shape in ((3, 7), (5, 4)):
        x = (torch.randn(shape) * 3).to(dtype) if dtype.is_floating_point else torch.randint(-3, 3, shape, dtype=dtype)
        if dtype.is_floating_point:
            x[0, 1] = float("nan")
        got, want = compiled(x), fn(x)
        for g, w in zip(*(v if isinstance(v, tuple) else (v,) for v in (got, want))):
            torch.testing.assert_close(g, w, equal_nan=True, rtol=1e-5, atol=1e-6)
    assert all(r["fallback_ops"] == [] for r in _records_since(before))


def test_arange_with_symbolic_start_and_step():
    """arange(0, b * n, n) (embedding_bag's offsets of a 2-d input) and arange(b, 40, n):
    a symbolic start or step is the graph's symbol, not only the result's size."""
    fn = lambda x: (torch.arange(0, x.shape[0] * x.shape[1], x.shape[1])   # noqa: E731
                    + torch.arange(x.shape[1], 3 * x.shape[1]).sum() + torch.arange(x.shape[0], 40, x.shape[1]).sum())
    torch._dynamo.reset()
    compiled = torch.compile(fn, backend="lamina", dynamic=True, options={"strict": True})
    for shape in ((3, 4), (5, 7)):
        x = torch.randn(shape)
        assert torch.equal(compiled(x), fn(x))


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_embedding_bag_of_symbolic_counts(mode):
    """nn.EmbeddingBag under dynamic=True: a symbolic number of indices and of bags (2-d
    input, offsets, include_last_offset, padding_idx), forward and the weight's gradient."""
    nn = torch.nn
    cases = [dict(), dict(include_last_offset=True), dict(padding_idx=3)]
    for options in cases:
        torch.manual_seed(0)
        model, ref = nn.EmbeddingBag(20, 6, mode=mode, **options), nn.EmbeddingBag(20, 6, mode=mode, **options)
        ref.load_state_dict(model.state_dict())
        torch._dynamo.reset()
        compiled = torch.compile(model, backend="lamina", dynamic=True, options={"strict": True})
        for n, bags in ((12, 4), (17, 5)):
            idx = torch.randint(0, 20, (n,))
            idx[:3] = 3
            offsets = torch.sort(torch.randint(0, n, (bags,)))[0]
            offsets[0] = 0
            if options.get("include_last_offset"):
                offsets = torch.cat([offsets, torch.tensor([n])])
            for args in ((idx, offsets), (idx[: bags * 3].view(bags, 3),)):
                got, want = compiled(*args), ref(*args)
                torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)
                got.square().sum().backward()
                want.square().sum().backward()
                torch.testing.assert_close(model.weight.grad, ref.weight.grad, rtol=1e-5, atol=1e-5)
                model.weight.grad = ref.weight.grad = None


def test_pad_by_symbolic_amounts():
    """F.pad by amounts computed from sizes (pad to a length, to another input's size, cut
    by a negative amount), any dtype and fill value, and its gradient: a gather whose
    positions outside the input read the fill value."""
    cases = [
        (lambda x, y: torch.nn.functional.pad(x, (1, 24 - x.shape[-1]), value=-2.5), torch.float32),
        (lambda x, y: torch.nn.functional.pad(x, (0, 0, y.shape[0] - x.shape[0], 1)), torch.int64),
        (lambda x, y: torch.nn.functional.pad(x, (3 - x.shape[-1] // 2, 0)), torch.float32),
    ]
    for fn, dtype in cases:
        torch._dynamo.reset()
        compiled = torch.compile(fn, backend="lamina", dynamic=True, options={"strict": True})
        for rows, cols in ((3, 11), (5, 17), (2, 1)):
            x = (torch.randn(rows, cols) * 10).to(dtype)
            y = torch.randn(rows + 4, 2)
            assert torch.equal(compiled(x, y), fn(x, y))
    torch._dynamo.reset()
    pad_to = lambda x: torch.nn.functional.pad(x, (2, 20 - x.shape[-1])).square().sum(-1)   # noqa: E731
    compiled = torch.compile(pad_to, backend="lamina", dynamic=True, options={"strict": True})
    for cols in (7, 12):
        xc, xe = torch.randn(3, cols, requires_grad=True), None
        xe = xc.detach().clone().requires_grad_()
        torch.testing.assert_close(compiled(xc), pad_to(xe))
        compiled(xc).sum().backward()
        pad_to(xe).sum().backward()
        torch.testing.assert_close(xc.grad, xe.grad)


def test_unfold_along_a_symbolic_dim():
    """Tensor.unfold over a symbolic length (framing a signal, sliding windows): windows
    gathered by iota arithmetic; forward and backward."""
    fn = lambda x: x.unfold(-1, 4, 3) * torch.arange(4.0)   # noqa: E731
    torch._dynamo.reset()
    compiled = torch.compile(fn, backend="lamina", dynamic=True, options={"strict": True})
    for shape in ((2, 13), (3, 20), (2, 4)):
        xc = torch.randn(shape, requires_grad=True)
        xe = xc.detach().clone().requires_grad_()
        got, want = compiled(xc), fn(xe)
        torch.testing.assert_close(got, want)
        got.square().sum().backward()
        want.square().sum().backward()
        torch.testing.assert_close(xc.grad, xe.grad)
    _assert_no_fallback(_records_since(len(lamina.backend.reports()) - 2))


def test_channel_shuffle_of_a_split_block():
    """ShuffleNet's unit under dynamic=True: a half of the channels through a branch, the
    halves concatenated, then shuffled by view / transpose / reshape over a symbolic batch
    and size (the cuda target's kernels read a tensor.cast of the concatenation)."""
    nn = torch.nn

    class Unit(nn.Module):
        def __init__(self):
            super().__init__()
            self.branch = nn.Sequential(nn.Conv2d(4, 4, 1), nn.BatchNorm2d(4), nn.ReLU())

        def forward(self, x):
            a, b = x.chunk(2, 1)
            y = torch.cat([a, self.branch(b)], 1)
            n, c, h, w = y.shape
            return y.view(n, 2, c // 2, h, w).transpose(1, 2).reshape(n, c, h, w)

    torch.manual_seed(0)
    model = Unit().eval()
    torch._dynamo.reset()
    compiled = torch.compile(model, backend="lamina", dynamic=True, options={"strict": True})
    with torch.no_grad():
        for shape in ((2, 8, 5, 5), (3, 8, 7, 6)):
            x = torch.randn(shape)
            torch.testing.assert_close(compiled(x), model(x), rtol=1e-5, atol=1e-5)


def test_rmsnorm_swiglu_training():
    """A LLaMA feed-forward block (RMSNorm, SwiGLU) trained under dynamic=True. On the cuda
    target its backward returns views of inputs whose shapes are symbolic: their expressions
    were renamed twice (an input named a<i> by the first pass became another operand in the
    second: IndexError, or a wrong shape)."""
    nn = torch.nn

    class FeedForward(nn.Module):
        def __init__(self):
            super().__init__()
            self.norm = nn.RMSNorm(32)
            self.w1, self.w3 = nn.Linear(32, 48, bias=False), nn.Linear(32, 48, bias=False)
            self.w2 = nn.Linear(48, 32, bias=False)

        def forward(self, x):
            h = self.norm(x)
            return x + self.w2(torch.nn.functional.silu(self.w1(h)) * self.w3(h))

    torch.manual_seed(0)
    model, ref = FeedForward(), FeedForward()
    ref.load_state_dict(model.state_dict())
    torch._dynamo.reset()
    compiled = torch.compile(model, backend="lamina", dynamic=True, options={"strict": True})
    for shape in ((2, 7, 32), (3, 5, 32)):
        x = torch.randn(shape)
        xc, xe = x.clone().requires_grad_(), x.clone().requires_grad_()
        got, want = compiled(xc), ref(xe)
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)
        got.square().sum().backward()
        want.square().sum().backward()
        torch.testing.assert_close(xc.grad, xe.grad, rtol=1e-4, atol=1e-5)
        for p, q in zip(model.parameters(), ref.parameters()):
            torch.testing.assert_close(p.grad, q.grad, rtol=1e-4, atol=1e-4)
            p.grad = q.grad = None


def test_concatenations_sharing_a_prefix():
    """cat([x, y, z]) and cat([x, y, w]) over a symbolic batch: after cse both start from one
    [x, y] tensor, which each output must get a copy of (lowering/kernel_cse.py)."""
    fn = lambda a, b: (torch.cat([a * 2, b * 3, b.exp()], -1), torch.cat([a * 2, b * 3, b.exp() * a], -1))   # noqa: E731
    torch._dynamo.reset()
    compiled = torch.compile(fn, backend="lamina", dynamic=True, options={"strict": True})
    for n in (3, 6):
        a, b = torch.randn(n, 5), torch.randn(n, 5)
        for got, want in zip(compiled(a, b), fn(a, b)):
            torch.testing.assert_close(got, want)


def _compile_dynamic_and_compare(fn, *args):
    torch._dynamo.reset()
    before = len(lamina.backend.reports())
    got = torch.compile(fn, backend="lamina", dynamic=True, options={"strict": True})(*args)
    want = fn(*args)
    got, want = (got, want) if isinstance(want, tuple) else ((got,), (want,))
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == w.shape
        torch.testing.assert_close(g, w, rtol=1e-5, atol=1e-6, equal_nan=True)
    _assert_no_fallback(_records_since(before))
    return got


@pytest.mark.parametrize("view", ["hsplit", "chunk_of_transpose", "narrow", "tail_slice", "split_sizes",
                                  "view_of_intermediate"])
def test_outputs_that_are_views_over_symbolic_offsets(view):
    """An output that is a view of an input (or of another output) at a symbolic offset:
    AOTAutograd rebuilds it as base.as_strided(<the compiled output's size, strides and
    offset>), so the compiled graph returns the view itself, not a copy at offset 0 (every
    part of hsplit came back as the first half)."""
    fns = {
        "hsplit": lambda x: torch.hsplit(x, 2),
        "chunk_of_transpose": lambda x: x.t().chunk(2, 1),
        "narrow": lambda x: x.narrow(1, 1, x.shape[1] - 2),
        "tail_slice": lambda x: x[x.shape[0] // 3:],
        "split_sizes": lambda x: torch.split(x, [x.shape[0] - 2, 2]),
        "view_of_intermediate": lambda x: (lambda y: (y, y[y.shape[0] // 2:], y[:, 1:].t()))(x * 2),
    }
    x = torch.randn(10, 6)
    got = _compile_dynamic_and_compare(fns[view], x)
    if view != "view_of_intermediate":
        assert all(g.untyped_storage().data_ptr() == x.untyped_storage().data_ptr() for g in got)


def test_outputs_of_different_symbolic_row_counts_in_one_kernel():
    """Two outputs of one kernel, s0 and s2 rows of s1: row blocking ran both over s0 rows
    (the types lose their symbols in linalg), leaving the other's rows unwritten."""
    _compile_dynamic_and_compare(lambda x, y: (x.exp(), y.tanh()), torch.randn(7, 40), torch.randn(300, 40))


@pytest.mark.parametrize("reduce", ["sum", "prod", "mean", "amax", "amin"])
def test_scatter_reduce_without_self_over_symbolic_sizes(reduce):
    """include_self=False: the mask of scattered positions ([s0, s1], zeros) shared a kernel
    with the index arithmetic ([s1, s1]) and was filled over the index's rows only."""
    torch.manual_seed(0)
    x, src = torch.randn(10, 5), torch.randn(5, 5)
    index = torch.randint(0, 10, (5, 5))
    _compile_dynamic_and_compare(lambda x, i, s: x.scatter_reduce(0, i, s, reduce, include_self=False), x, index, src)


@pytest.mark.parametrize("shape,offset,dim1,dim2", [((5, 7), 2, 0, 1), ((5, 7), -3, 1, 0), ((3, 4, 6), -1, 0, 2),
                                                    ((2, 3, 4, 5), 0, 1, 3)])
def test_diagonal_scatter_over_symbolic_sizes(shape, offset, dim1, dim2):
    """diagonal_scatter (a diagonal's backward) of symbolic sizes: positions from iotas times
    the row-major strides (it fell back)."""
    torch.manual_seed(0)
    x = torch.randn(shape)
    src = torch.randn(torch.diagonal(x, offset, dim1, dim2).shape)
    _compile_dynamic_and_compare(lambda x, s: torch.diagonal_scatter(x, s, offset, dim1, dim2), x, src)


def _train_dynamic_and_compare(fn, shapes):
    """fn compiled with dynamic=True (strict): at each input shape its value and the input's
    gradient match eager's, with no fallback."""
    torch._dynamo.reset()
    before = len(lamina.backend.reports())
    compiled = torch.compile(fn, backend="lamina", dynamic=True, options={"strict": True})
    for shape in shapes:
        x = torch.randn(shape, requires_grad=True)
        xe = x.detach().clone().requires_grad_()
        got, want = compiled(x), fn(xe)
        torch.testing.assert_close(got, want)
        got.backward()
        want.backward()
        torch.testing.assert_close(x.grad, xe.grad)
    _assert_no_fallback(_records_since(before))


def test_diagonal_backward_over_symbolic_sizes():
    _train_dynamic_and_compare(lambda x: (torch.diagonal(x, 1) ** 2).sum() + torch.diag(x[0]).sum(),
                               [(5, 6), (8, 9)])


def test_scans_with_a_dtype_along_symbolic_dims():
    """cumsum/cumprod with dtype= along a symbolic dim are library calls; the dtype argument
    crosses as JSON (it was refused, and the graph fell back)."""
    fn = lambda x: torch.cumsum(x, 1, dtype=torch.float64) + x.cumprod(0, dtype=torch.float64)   # noqa: E731
    _compile_dynamic_and_compare(fn, torch.randn(5, 8))


def test_matmul_backward_with_a_zero_size_dim():
    """A static 0 beside symbolic dims (dynamo specializes 0): the 0-byte intermediate still
    needs its symbolic type in the memory plan (lamina-kernel-abi sized its view from it; the
    IR failed to verify and the graph fell back)."""
    torch._dynamo.reset()
    before = len(lamina.backend.reports())
    compiled = torch.compile(torch.mm, backend="lamina", dynamic=True, options={"strict": True})
    a, b = torch.randn(0, 5, requires_grad=True), torch.randn(5, 10, requires_grad=True)
    out = compiled(a, b)
    out.sum().backward()
    assert out.shape == (0, 10) and a.grad.shape == (0, 5)
    torch.testing.assert_close(b.grad, torch.zeros(5, 10))
    _assert_no_fallback(_records_since(before))


def test_std_backward_over_symbolic_sizes():
    """std's backward multiplies a 0-d f32 tensor by a SymFloat (1 / (n - 1)): a Python
    number, which keeps the tensor's f32 (the symbolic scalar is an f64 rank-0 tensor in
    lamina, and the product came out f64: the graph fell back)."""
    _train_dynamic_and_compare(lambda x: x.std(1).sum() + x.std() * 2 + x.var(0, correction=0).mean(),
                               [(5, 7), (9, 11)])


def test_select_at_a_symint_index():
    """x.select(1, i) with i a SymInt graph input: the kernel needs the symbol i although no
    type carries it (lamina-outline-kernels passes symbols that size attributes use)."""
    fn = lambda x, i: torch.select(x, 1, i) * 2   # noqa: E731
    torch._dynamo.reset()
    before = len(lamina.backend.reports())
    compiled = torch.compile(fn, backend="lamina", dynamic=True, options={"strict": True})
    x = torch.randn(3, 5, 4)
    for i in (2, 3, 4):
        torch.testing.assert_close(compiled(x, i), fn(x, i))
    _assert_no_fallback(_records_since(before))
