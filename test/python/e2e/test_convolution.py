"""Convolutions end to end (strict: no fallback) against eager: 1-3 spatial dims, stride,
padding, dilation, groups (depthwise too), transposed with output_padding, bias; the
backward (convolution_backward) in float64; layouts (channels-last, non-contiguous,
storage offsets), bf16, a symbolic batch, size-0 dims.
"""
from __future__ import annotations

import os

import pytest
import torch
import torch.nn.functional as F

lamina_backend = pytest.importorskip("lamina.backend")


def _randn(*shape, dtype=torch.float32, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=dtype)


def _compiled(fn, **options):
    torch._dynamo.reset()
    return torch.compile(fn, backend="lamina", options={"strict": True, **options})


FORWARD = [
    ("2d_s2_p1_bias", lambda x, w, b: F.conv2d(x, w, b, stride=2, padding=1), [(2, 4, 9, 9), (6, 4, 3, 3), (6,)]),
    ("2d_dilation2", lambda x, w: F.conv2d(x, w, dilation=2), [(2, 4, 9, 9), (6, 4, 3, 3)]),
    ("2d_groups2", lambda x, w: F.conv2d(x, w, padding=1, groups=2), [(2, 4, 9, 9), (6, 2, 3, 3)]),
    ("2d_depthwise", lambda x, w: F.conv2d(x, w, padding=1, groups=4), [(2, 4, 9, 9), (4, 1, 3, 3)]),
    # (unpadded: the grouped view is a reshape of the kernel's argument itself)
    ("2d_depthwise_unpadded", lambda x, w: F.conv2d(x, w, groups=64), [(2, 64, 9, 9), (64, 1, 3, 3)]),
    # (a non-square depthwise kernel: channels-first on the cuda target)
    ("2d_depthwise_3x1", lambda x, w: F.conv2d(x, w, padding=(1, 0), groups=8), [(2, 8, 9, 7), (8, 1, 3, 1)]),
    ("2d_groups2_unpadded", lambda x, w: F.conv2d(x, w, groups=2, stride=2), [(2, 32, 9, 9), (64, 16, 3, 3)]),
    ("2d_depthwise_multiplier", lambda x, w: F.conv2d(x, w, padding=2, groups=4, stride=2),
     [(1, 4, 8, 7), (8, 1, 5, 5)]),
    ("2d_1x1", lambda x, w, b: F.conv2d(x, w, b), [(2, 8, 5, 5), (3, 8, 1, 1), (3,)]),
    ("2d_asym_kernel_stride", lambda x, w: F.conv2d(x, w, stride=(2, 1), padding=(0, 2)), [(1, 3, 8, 6), (2, 3, 3, 5)]),
    ("2d_padding_same", lambda x, w: F.conv2d(x, w, padding="same"), [(1, 3, 7, 6), (2, 3, 4, 3)]),
    ("1d", lambda x, w: F.conv1d(x, w, padding=2, stride=3), [(2, 4, 17), (5, 4, 4)]),
    ("3d", lambda x, w, b: F.conv3d(x, w, b, padding=1), [(1, 2, 5, 6, 7), (3, 2, 3, 3, 3), (3,)]),
    ("transposed_s2_outpad", lambda x, w: F.conv_transpose2d(x, w, stride=2, padding=1, output_padding=1),
     [(2, 4, 9, 9), (4, 3, 3, 3)]),
    ("transposed_groups_dilation", lambda x, w, b: F.conv_transpose2d(x, w, b, stride=2, groups=2, dilation=2),
     [(2, 4, 5, 5), (4, 3, 2, 2), (6,)]),
    ("transposed_1d", lambda x, w: F.conv_transpose1d(x, w, stride=3, padding=2), [(2, 3, 6), (3, 2, 5)]),
    # (8 or more input channels, strided: the library's transposed convolution, not the decomposition)
    ("transposed_library_2d", lambda x, w, b: F.conv_transpose2d(x, w, b, stride=2, padding=1, output_padding=1, groups=2),
     [(2, 8, 5, 6), (8, 3, 3, 3), (6,)]),
    ("transposed_library_3d", lambda x, w: F.conv_transpose3d(x, w, stride=(2, 1, 2), padding=1), [(1, 8, 3, 4, 3), (8, 4, 3, 3, 3)]),
    ("transposed_3d", lambda x, w: F.conv_transpose3d(x, w, stride=2), [(1, 2, 3, 3, 2), (2, 2, 2, 2, 2)]),
    ("kernel_as_large_as_input", lambda x, w: F.conv2d(x, w), [(2, 3, 4, 4), (5, 3, 4, 4)]),
    ("conv_bias_relu_pool_chain", lambda x, w, b: torch.relu(F.conv2d(x, w, b, padding=1)).mean((2, 3)),
     [(2, 3, 8, 8), (4, 3, 3, 3), (4,)]),
]


@pytest.mark.parametrize("fn,shapes", [pytest.param(f, s, id=i) for i, f, s in FORWARD])
def test_forward(fn, shapes):
    args = [_randn(*s, seed=i) for i, s in enumerate(shapes)]
    f = _compiled(fn)
    torch.testing.assert_close(f(*args), fn(*args), rtol=1e-4, atol=1e-4)
    report = lamina_backend.last_report()
    assert report["fallback_ops"] == [] and report["kernels"] >= 1


@pytest.mark.parametrize("fn,shapes", [pytest.param(f, s, id=i) for i, f, s in FORWARD if not i.startswith("conv_bias")])
def test_backward_float64(fn, shapes):
    args = [_randn(*s, dtype=torch.float64, seed=i).requires_grad_() for i, s in enumerate(shapes)]
    ref = fn(*args)
    grad = _randn(*ref.shape, dtype=torch.float64, seed=9)
    expected = torch.autograd.grad(ref, args, grad)
    out = _compiled(fn)(*args)
    got = torch.autograd.grad(out, args, grad)
    torch.testing.assert_close(out, ref, rtol=1e-10, atol=1e-10)
    for g, e in zip(got, expected):
        torch.testing.assert_close(g, e, rtol=1e-10, atol=1e-10)
    assert all(r["fallback_ops"] == [] for r in lamina_backend.reports()[-2:])


def test_layouts_channels_last_noncontiguous_offset():
    w, b = _randn(6, 4, 3, 3, seed=1), _randn(6, seed=2)
    fn = lambda x: F.conv2d(x, w, b, padding=1)   # noqa: E731
    base = _randn(3, 4, 10, 12)
    for x in (base.to(memory_format=torch.channels_last), base[:, :, 1:, ::2], base[1:], base.transpose(2, 3)):
        torch.testing.assert_close(_compiled(fn)(x), fn(x), rtol=1e-4, atol=1e-4)


def test_symbolic_spatial_sizes():
    """Called with other image sizes, dynamo makes the spatial sizes symbolic."""
    torch.manual_seed(0)
    conv = torch.nn.Conv2d(3, 5, 3, stride=2, padding=1, dilation=2)   # parameters stay static
    fn = lambda x: torch.relu(conv(x))   # noqa: E731
    torch._dynamo.reset()
    f = torch.compile(fn, backend="lamina", dynamic=True, options={"strict": True})
    with torch.no_grad():
        for hw in ((11, 9), (16, 16), (7, 12)):
            x = _randn(2, 3, *hw, seed=hw[0])
            torch.testing.assert_close(f(x), fn(x), rtol=1e-4, atol=1e-4)


def test_bfloat16():
    x, w, b = (_randn(*s, dtype=torch.bfloat16, seed=i) for i, s in enumerate([(2, 8, 9, 9), (6, 8, 3, 3), (6,)]))
    fn = lambda x, w, b: F.conv2d(x, w, b, padding=1)   # noqa: E731
    out = _compiled(fn)(x, w, b)
    assert out.dtype == torch.bfloat16
    ref64 = F.conv2d(x.double(), w.double(), b.double(), padding=1)
    # f32 accumulation, rounded to bf16 after the convolution and after the bias (eager's
    # bias is inside its convolution: one rounding): within two bf16 ulps of the exact result
    torch.testing.assert_close(out.double(), ref64, rtol=2 ** -6, atol=5e-2)
    torch.testing.assert_close(out, fn(x, w, b), rtol=2 ** -6, atol=5e-2)


def test_transposed_library_epilogue_fuses():
    """A strided transposed convolution is a library call without its bias: the bias and the
    pointwise ops after it run in the call's kernel (one kernel, not a call, a bias pass and
    an epilogue pass); a reduction of the result is a second kernel (on the cuda target the
    same kernel: convolution_reductions). fp32 and bf16 (bf16:
    f32 convolution, one more rounding than eager's bias inside the call)."""
    for dtype, tol in ((torch.float32, 1e-4), (torch.bfloat16, 3e-2)):
        x, w, b = (_randn(*s, dtype=dtype, seed=i) for i, s in enumerate([(2, 8, 5, 6), (8, 6, 3, 3), (6,)]))
        conv = lambda x, w, b: F.conv_transpose2d(x, w, b, stride=2, padding=1, output_padding=1)   # noqa: E731
        epilogue = lambda x, w, b: torch.clamp(conv(x, w, b) * 2.0, 0.0, 1.0) - 0.5   # noqa: E731
        out = _compiled(epilogue)(x, w, b)
        report = lamina_backend.last_report()
        assert report["fallback_ops"] == [] and report["kernels"] == 1, report
        torch.testing.assert_close(out, epilogue(x, w, b), rtol=tol, atol=tol)
        pooled = lambda x, w, b: torch.tanh(conv(x, w, b)).mean((2, 3))   # noqa: E731
        out = _compiled(pooled)(x, w, b)
        report = lamina_backend.last_report()   # (cuda: the mean in the call's kernel too)
        assert report["kernels"] == (1 if report["target"] == "cuda" else 2), report
        torch.testing.assert_close(out, pooled(x, w, b), rtol=tol, atol=tol)


REDUCTIONS = [
    # (the cuda target keeps each reduction in the convolution's kernel: column rows along the
    # channels of cuDNN's channels-last result, or lanes along them)
    ("global_mean", lambda x, w, b: F.gelu(F.conv2d(x, w, b, padding=1)).mean((2, 3), keepdim=True)),
    # (64x64 positions: the column rows' lanes split across programs, launch.column_split)
    ("global_mean_long", lambda x, w, b: F.gelu(F.conv2d(x, w, b, padding=1)).mean((2, 3))),
    ("instance_norm", lambda x, w, b: F.instance_norm(F.conv2d(x, w, b, padding=1)) / 2),
    ("softmax_channels", lambda x, w, b: torch.sigmoid(torch.softmax(F.conv2d(x, w, b, padding=1), 1))),
    ("min_channels", lambda x, w, b: torch.tanh(torch.min(F.conv2d(x, w, b, padding=1), 1, keepdim=True)[0])),
    # (a reduction over W alone, and training batch norm's statistics: a kernel of their own)
    ("mean_w", lambda x, w, b: F.conv2d(x, w, b, padding=1).mean(3)),
    ("batch_norm_train", lambda x, w, b: F.batch_norm(F.conv2d(x, w, b, padding=1), None, None, training=True)),
]


@pytest.mark.parametrize("fn", [pytest.param(f, id=i) for i, f in REDUCTIONS])
def test_convolution_reductions(fn):
    """Reductions of a convolution's result, with their epilogues, against eager; on the cuda
    target those over channels or all positions are one kernel with the convolution
    (fusion's convolution_reductions), the others two."""
    size = 64 if fn is REDUCTIONS[1][1] else 16
    x, w, b = _randn(2, 8, size, size), _randn(32, 8, 3, 3, seed=1), _randn(32, seed=2)
    out = _compiled(fn)(x, w, b)
    report = lamina_backend.last_report()
    torch.testing.assert_close(out, fn(x, w, b), rtol=1e-4, atol=1e-4)
    assert report["fallback_ops"] == []
    if report["target"] == "cuda":
        fused = fn not in (REDUCTIONS[5][1], REDUCTIONS[6][1])
        assert report["kernels"] == (1 if fused else 2), report


def test_symbolic_batch():
    torch.manual_seed(0)
    conv = torch.nn.Conv2d(3, 5, 3, stride=2, padding=1)
    fn = lambda x: conv(x)   # noqa: E731
    torch._dynamo.reset()
    f = torch.compile(fn, backend="lamina", dynamic=True, options={"strict": True})
    with torch.no_grad():
        for n in (2, 3, 5):
            x = _randn(n, 3, 11, 9, seed=n)
            torch.testing.assert_close(f(x), fn(x), rtol=1e-4, atol=1e-4)


def test_zero_size_batch_and_size_one_dims():
    fn = lambda x, w: F.conv2d(x, w, padding=1)   # noqa: E731
    for xs, ws in (((0, 3, 5, 5), (4, 3, 3, 3)), ((2, 3, 1, 5), (4, 3, 3, 3))):
        x, w = _randn(*xs), _randn(*ws, seed=1)
        torch.testing.assert_close(_compiled(fn)(x, w), fn(x, w))


def test_nan_and_inf_propagate():
    x = _randn(1, 2, 6, 6)
    x[0, 0, 2, 2] = float("nan")
    x[0, 1, 4, 4] = float("inf")
    w = _randn(3, 2, 3, 3, seed=1)
    fn = lambda x, w: F.conv2d(x, w, padding=1)   # noqa: E731
    torch.testing.assert_close(_compiled(fn)(x, w), fn(x, w), equal_nan=True)


def _bn_relu(c: int, seed: int):
    """An eval-mode batch norm + ReLU as plain tensor ops (its parameters captured)."""
    g = torch.Generator().manual_seed(seed)
    mean, var = torch.randn(c, generator=g), torch.rand(c, generator=g) + 0.5
    scale, shift = torch.randn(c, generator=g), torch.randn(c, generator=g)
    view = (1, c) + (1,) * 3

    def f(y):
        v = view[:y.dim()]
        return torch.relu((y - mean.view(v)) * torch.rsqrt(var.view(v) + 1e-5) * scale.view(v) + shift.view(v))
    return f


CHAINS = [
    # conv -> BN -> ReLU -> conv -> + x -> ReLU: the activation between the convolutions is
    # an intermediate that only feeds a convolution (channels-last on the cuda target)
    ("resnet_block", lambda x, w1, w2, a=_bn_relu(6, 1): torch.relu(F.conv2d(a(F.conv2d(x, w1, padding=1)), w2, padding=1) + x),
     [(2, 6, 7, 9), (6, 6, 3, 3), (6, 6, 3, 3)]),
    # depthwise 3x3 -> BN/ReLU -> 1x1 to more channels (MobileNet), stride 2
    ("depthwise_pointwise", lambda x, w1, w2, a=_bn_relu(4, 2): F.conv2d(a(F.conv2d(x, w1, padding=1, stride=2, groups=4)), w2),
     [(3, 4, 9, 8), (4, 1, 3, 3), (8, 4, 1, 1)]),
    # the intermediate also read elementwise: stays contiguous
    ("shared_intermediate", lambda x, w1, w2: (lambda h: F.conv2d(h, w2, padding=1) + h.sum())(torch.relu(F.conv2d(x, w1, padding=1))),
     [(2, 3, 6, 6), (5, 3, 3, 3), (5, 5, 3, 3)]),
    # rank 5: channels_last_3d
    ("conv3d_chain", lambda x, w1, w2: F.conv3d(torch.sigmoid(F.conv3d(x, w1, padding=1)), w2, stride=2),
     [(1, 3, 5, 6, 7), (4, 3, 3, 3, 3), (2, 4, 2, 2, 2)]),
    # three convolutions, a 1-channel input, a pooling in between (not a convolution reader)
    ("three_convs_pool", lambda x, w1, w2, w3: F.conv2d(F.max_pool2d(F.conv2d(F.conv2d(x, w1, padding=2).relu(), w2), 2), w3),
     [(2, 1, 12, 12), (3, 1, 5, 5), (4, 3, 3, 3), (2, 4, 1, 1)]),
]


@pytest.mark.parametrize("fn,shapes", [pytest.param(f, s, id=i) for i, f, s in CHAINS])
def test_convolution_chains(fn, shapes, tmp_path):
    """Convolutions feeding convolutions, and what the memory plan records for their
    intermediates: on the cuda target (cuDNN's NHWC kernels) every intermediate that only
    feeds convolutions is laid out channels-last (lowering/conv_layouts.py), else none is."""
    args = [_randn(*s, seed=i) for i, s in enumerate(shapes)]
    channels_last = torch.channels_last if len(shapes[0]) == 4 else torch.channels_last_3d
    for x in (args[0], args[0].to(memory_format=channels_last), _randn(2 * shapes[0][0], *shapes[0][1:])[::2]):
        out = _compiled(fn, dump_ir=str(tmp_path))(x, *args[1:])
        torch.testing.assert_close(out, fn(x, *args[1:]), rtol=1e-4, atol=1e-4)
        assert out.is_contiguous()   # eager's layout for the caller, whatever the plan chose inside
    report = lamina_backend.last_report()
    assert report["fallback_ops"] == []
    plans = "".join(p.read_text() for p in tmp_path.glob("*-plan.mlir"))
    laid_out = plans.count('layout = "channels_last"')
    if report["target"] == "cuda" and fn is not CHAINS[2][1]:
        assert laid_out >= 1
    elif report["target"] != "cuda" or fn is CHAINS[2][1]:
        assert laid_out == 0


def test_convolution_chain_symbolic_batch():
    """A channels-last intermediate of symbolic size: its arena slot and view follow the batch."""
    fn, shapes = CHAINS[0][1], CHAINS[0][2]
    w1, w2 = _randn(*shapes[1], seed=1), _randn(*shapes[2], seed=2)
    torch._dynamo.reset()
    block = lambda x: fn(x, w1, w2)   # noqa: E731 - the weights static, as a module's parameters
    f = torch.compile(block, backend="lamina", dynamic=True, options={"strict": True})
    for n in (2, 3, 5):
        x = _randn(n, *shapes[0][1:], seed=n)
        torch.testing.assert_close(f(x), block(x), rtol=1e-4, atol=1e-4)


CHANNELS_LAST_CASES = [c for c in FORWARD if c[0][:2] in ("2d", "3d") or c[0].startswith(("kernel", "conv_bias"))] \
    + [c for c in CHAINS if c[0] != "three_convs_pool"]


@pytest.mark.parametrize("layout", ["channels_last", "channels_first"])
@pytest.mark.parametrize("fn,shapes", [pytest.param(f, s, id=i) for i, f, s in CHANNELS_LAST_CASES])
def test_library_convolution_layouts(fn, shapes, layout, monkeypatch, tmp_path):
    """Library convolutions (f32, 2-3 spatial dims) in both layouts of
    lowering/conv_channels_last.py: channels_last (the default) transposes the input to
    [N, *S, C] in the CPU kernel, the library convolves channels-last (padding still folded
    into its call) and the kernel transposes the result back; channels_first hands NCHW
    buffers to the library. Eager's results, forward and (float32) backward, including the
    weight-gradient convolutions."""
    monkeypatch.setenv("LAMINA_CONVOLUTION", "library")
    monkeypatch.setenv("LAMINA_CONV_LAYOUT", layout)
    args = [_randn(*s, seed=i) for i, s in enumerate(shapes)]
    out = _compiled(fn, dump_ir=str(tmp_path))(*args)
    torch.testing.assert_close(out, fn(*args), rtol=1e-4, atol=1e-4)
    report = lamina_backend.last_report()
    assert report["fallback_ops"] == []
    if report["target"] == "cpu":
        schedules = "".join(p.read_text() for p in tmp_path.glob("*-schedule.mlir"))
        other = "channels_first" if layout == "channels_last" else "channels_last"
        assert schedules.count(f'lamina.conv_layout = "{layout}"') >= 1
        assert f'lamina.conv_layout = "{other}"' not in schedules
    grads = [a.clone().requires_grad_() for a in args]
    g = _compiled(fn)
    g(*grads).square().sum().backward()
    ref = [a.clone().requires_grad_() for a in args]
    fn(*ref).square().sum().backward()
    for a, r in zip(grads, ref):
        torch.testing.assert_close(a.grad, r.grad, rtol=1e-3, atol=1e-3)


def test_channels_last_symbolic_batch(monkeypatch):
    """Channels-last library convolutions of a symbolic batch (the transposes' sizes and
    parallel chunks at run time)."""
    monkeypatch.setenv("LAMINA_CONVOLUTION", "library")
    test_convolution_chain_symbolic_batch()


NATIVE_CASES = [c for c in CHANNELS_LAST_CASES if c[0].startswith("2d")]
cpu_target_only = pytest.mark.skipif(os.environ.get("LAMINA_TARGET", "cpu") != "cpu",
                                     reason="the CPU target's library convolutions")


@cpu_target_only

@pytest.mark.parametrize("in_process", [False, True])
@pytest.mark.parametrize("fn,shapes", [pytest.param(f, s, id=i) for i, f, s in NATIVE_CASES])
def test_native_convolution_glue(fn, shapes, in_process, monkeypatch):
    """f32 2-d channels-last library convolutions run in codegen/native_convolution.py's C
    glue (torch's C shim, no Python callback), from a loaded shared object and from the
    in-process JIT: eager's results, and the glue's count of the calls it ran grows; with
    LAMINA_NATIVE_CONV=0 the Python callback runs them (the count stays)."""
    from lamina.codegen import native_convolution

    monkeypatch.setenv("LAMINA_CONVOLUTION", "library")
    args = [_randn(*s, seed=i) for i, s in enumerate(shapes)]
    options = {"compile_in_process": True} if in_process else {}
    before = native_convolution.native_calls()
    out = _compiled(fn, **options)(*args)
    torch.testing.assert_close(out, fn(*args), rtol=1e-4, atol=1e-4)
    if native_convolution._library() is None:
        pytest.skip("no C compiler or no mkldnn here: the Python callback ran it")
    assert native_convolution.native_calls() > before
    monkeypatch.setenv("LAMINA_NATIVE_CONV", "0")
    before = native_convolution.native_calls()
    out = _compiled(fn, **options)(*[a + 1 for a in args])
    torch.testing.assert_close(out, fn(*[a + 1 for a in args]), rtol=1e-4, atol=1e-4)
    assert native_convolution.native_calls() == before


@cpu_target_only
def test_native_convolution_glue_leaves_other_cases_to_python(monkeypatch):
    """What the glue does not run (3-d, zero-size, channels-first operands) goes to the
    Python callback, results unchanged, and the glue's count stays."""
    from lamina.codegen import native_convolution

    monkeypatch.setenv("LAMINA_CONVOLUTION", "library")
    conv2d = (lambda x, w: F.conv2d(x, w, padding=1), [(2, 4, 9, 9), (6, 4, 3, 3)])
    cases = [(lambda x, w: F.conv3d(x, w, padding=1), [(1, 2, 5, 6, 7), (3, 2, 3, 3, 3)], "channels_last"),
             (lambda x, w: F.conv2d(x, w, padding=1), [(0, 4, 9, 9), (6, 4, 3, 3)], "channels_last"),
             (*conv2d, "channels_first")]
    for fn, shapes, layout in cases:
        monkeypatch.setenv("LAMINA_CONV_LAYOUT", layout)
        args = [_randn(*s, seed=i) for i, s in enumerate(shapes)]
        before = native_convolution.native_calls()
        torch.testing.assert_close(_compiled(fn)(*args), fn(*args), rtol=1e-4, atol=1e-4)
        assert native_convolution.native_calls() == before
