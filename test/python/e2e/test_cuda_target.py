"""The cuda target (Triton code generation): every e2e model, static and dynamic shapes,
fp32 and bf16, forward and backward, matches eager with no fallback. On a GPU the tensors
live there; without one (CI) the same Triton programs run under TRITON_INTERPRET=1 on CPU
tensors (set by conftest.py before triton is imported)."""
import copy
import os

import pytest
import torch

pytest.importorskip("triton")

import lamina.backend  # noqa: E402
from lamina.testing.eager_match import assert_gradients_match_eager  # noqa: E402
from lamina.testing.models import MODELS, MLP, GPTBlock  # noqa: E402

DEVICE = "cpu" if os.environ.get("TRITON_INTERPRET") == "1" else "cuda"
if DEVICE == "cuda" and not torch.cuda.is_available():
    pytest.skip("no GPU and not interpreting (TRITON_INTERPRET was set off before triton was imported)",
                allow_module_level=True)


@pytest.fixture(autouse=True)
def fresh():
    torch._dynamo.reset()
    torch.manual_seed(0)


def _on(model, inputs):
    if isinstance(model, torch.nn.Module):
        model = model.to(DEVICE)
    return model, tuple(t.to(DEVICE) for t in inputs)


def _compiled(model, dynamic=False):
    return torch.compile(model, backend="lamina", dynamic=dynamic, options={"strict": True, "target": "cuda"})


def _assert_cuda_records(before, kinds=None):
    records = lamina.backend.reports()[before:]
    assert records
    for r in records:
        assert r["target"] == "cuda", r
        assert r["fallback_ops"] == [] and r["ops_compiled"] == r["ops_total"] > 0, r
    if kinds is not None:
        assert [r["graph"].rsplit("_", 1)[1] for r in records] == kinds
    return records


@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
@pytest.mark.parametrize("name", sorted(MODELS))
def test_models_match_eager(name, dynamic):
    model, inputs = _on(*MODELS[name]())
    before = len(lamina.backend.reports())
    compiled = _compiled(model, dynamic)
    with torch.no_grad():
        torch.testing.assert_close(compiled(*inputs), model(*inputs), rtol=1e-4, atol=1e-5)
        if dynamic:   # another size: the same symbolic compile
            n = inputs[0].shape[0]
            resized = tuple(torch.randn([d + 2 if d == n else d for d in t.shape], device=DEVICE) for t in inputs)
            torch.testing.assert_close(compiled(*resized), model(*resized), rtol=1e-4, atol=1e-5)
    records = _assert_cuda_records(before)
    assert all(r.get("dynamic", False) == dynamic for r in records)


@pytest.mark.parametrize("name", ["layer_norm", "softmax", "gelu_bias", "causal_attention"])
def test_bf16_models(name):
    model, inputs = _on(*MODELS[name]())
    if isinstance(model, torch.nn.Module):
        model = model.to(torch.bfloat16)
    low = tuple(t.to(torch.bfloat16) for t in inputs)
    before = len(lamina.backend.reports())
    with torch.no_grad():
        got = _compiled(model)(*low)
        want = model(*low)
    assert got.dtype == torch.bfloat16
    torch.testing.assert_close(got.float(), want.float(), rtol=2e-2, atol=2e-2)
    _assert_cuda_records(before)


@pytest.mark.parametrize("make", [lambda: (MLP(), torch.randn(8, 64)),
                                  lambda: (GPTBlock(64, 4), torch.randn(2, 8, 64))], ids=["mlp", "gpt_block"])
def test_training_gradients(make):
    made, x0 = make()
    model, (x,) = _on(made, (x0,))
    before = len(lamina.backend.reports())
    assert_gradients_match_eager(model, x, _compiled)
    _assert_cuda_records(before, ["forward", "backward"])


def _conv_blocks():
    nn = torch.nn
    resnet = nn.Sequential(nn.Conv2d(8, 8, 3, padding=1, bias=False), nn.BatchNorm2d(8), nn.ReLU(),
                           nn.Conv2d(8, 8, 3, padding=1, bias=False), nn.BatchNorm2d(8))
    mobilenet = nn.Sequential(nn.Conv2d(8, 8, 3, padding=1, groups=8, bias=False), nn.BatchNorm2d(8), nn.ReLU6(),
                              nn.Conv2d(8, 16, 1, bias=False), nn.BatchNorm2d(16), nn.ReLU6())
    volume = nn.Sequential(nn.Conv3d(3, 4, 3, padding=1), nn.SiLU(), nn.Conv3d(4, 2, 3, stride=2))
    return [("resnet", resnet, lambda m, x: torch.relu(m(x) + x), (2, 8, 10, 9)),
            ("mobilenet", mobilenet, lambda m, x: m(x), (3, 8, 9, 8)),
            ("conv3d", volume, lambda m, x: m(x), (1, 3, 6, 5, 7))]


def _block_grads(made, forward, x0, dtype, compiled: bool):
    """Training-mode gradients of sum(block(x)^2) for the parameters and x, in `dtype`."""
    model = copy.deepcopy(made).to(DEVICE, dtype).train()
    x = x0.to(DEVICE, dtype).clone().requires_grad_(True)
    fn = lambda x: forward(model, x)   # noqa: E731
    if compiled:
        torch._dynamo.reset()
        fn = _compiled(fn)
    fn(x).float().square().sum().backward()
    return [p.grad.double() for p in model.parameters()] + [x.grad.double()]


def _as_close_as_eager(got, eager, exact, dtype) -> None:
    """`got` is no further from the fp64 result `exact` than 4x eager's own error in `dtype`,
    plus a floor (of the largest magnitude): 1e-4 fp32, 2% bf16; on a GPU whose cuDNN may
    run fp32 convolutions in TF32 (torch's default, eager's choice too at other shapes or
    layouts), 5e-3 fp32."""
    tf32 = DEVICE == "cuda" and torch.backends.cudnn.allow_tf32
    floor = (5e-3 if tf32 else 1e-4) if dtype == torch.float32 else 2e-2
    for g, e, r in zip(got, eager, exact):
        scale = r.abs().max().item()
        assert (g - r).abs().max().item() <= 4 * (e - r).abs().max().item() + floor * scale, \
            ((g - r).abs().max().item(), (e - r).abs().max().item(), scale)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["fp32", "bf16"])
@pytest.mark.parametrize("index", range(3), ids=["resnet", "mobilenet", "conv3d"])
def test_convolution_blocks(index, dtype):
    """Convolution blocks, eval-mode forward and training-mode forward + backward: cuDNN on
    channels-last operands, the activations between convolutions channels-last in the memory
    plan (lowering/conv_layouts.py), the programs around them in 2-D tiles. Checked against
    fp64, lamina's error against eager's in the same dtype: eager is far from exact too (on
    a GPU, fp32 convolutions run TF32 by default; bf16 gradients through batch statistics
    are off by up to ~10% of the largest one). The 4x is looser than it should be: the
    backward, decomposed by AOTAutograd in bf16, rounds between its ops where eager's fused
    kernels accumulate in fp32 (BN weight gradients 2.7x eager's error here, conv3d + SiLU
    6x at 1% of the largest gradient)."""
    name, made, forward, shape = _conv_blocks()[index]
    x0 = torch.randn(*shape)
    before = len(lamina.backend.reports())

    def outputs(dt, compiled):
        model = copy.deepcopy(made).to(DEVICE, dt).eval()
        fn = lambda x: forward(model, x)   # noqa: E731
        if compiled:
            torch._dynamo.reset()
            fn = _compiled(fn)
        with torch.no_grad():
            return [fn(x0.to(DEVICE, dt)).double()]

    _as_close_as_eager(outputs(dtype, True), outputs(dtype, False), outputs(torch.float64, False), dtype)
    _as_close_as_eager(_block_grads(made, forward, x0, dtype, compiled=True),
                       _block_grads(made, forward, x0, dtype, compiled=False),
                       _block_grads(made, forward, x0, torch.float64, compiled=False), dtype)
    _assert_cuda_records(before)


def test_edge_cases():
    """Non-contiguous and expanded inputs, a size-1 dim, nan/inf through max and softmax,
    a row longer than the persistent limit (the looped reduction)."""
    def f(x, y):
        return torch.softmax(x * 2, -1) + y.amax(-1, keepdim=True), torch.relu(x).sum(-1)

    before = len(lamina.backend.reports())
    compiled = _compiled(f)
    x = torch.randn(6, 5000, device=DEVICE)
    x[0, 3] = float("nan")
    x[1, :] = float("-inf")
    x[2, 7] = float("inf")
    y = torch.randn(5000, 6, device=DEVICE).t()            # non-contiguous
    for got, want in zip(compiled(x, y), f(x, y)):
        torch.testing.assert_close(got, want, equal_nan=True)
    y1 = torch.randn(1, 1, device=DEVICE).expand(6, 5000)  # expanded
    for got, want in zip(compiled(x, y1), f(x, y1)):
        torch.testing.assert_close(got, want, equal_nan=True)
    _assert_cuda_records(before)


@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
def test_flat_programs_of_odd_sizes_peel_their_whole_blocks(tmp_path, dynamic):
    """A flat program whose element count is not a multiple of 16 runs whole blocks under an
    all-true mask and the last under `xoff < numel`: both branches, with a broadcast operand
    and one at a storage offset, nan and inf, bf16 and fp32 outputs."""
    def f(x, b, y):
        return torch.sin(x + b) * y, (x * 2).to(torch.bfloat16)

    before = len(lamina.backend.reports())
    compiled = torch.compile(f, backend="lamina", dynamic=dynamic,
                             options={"strict": True, "target": "cuda", "dump_ir": str(tmp_path)})
    x = torch.randn(131, 129, device=DEVICE)          # 16899 elements: whole blocks, then a tail
    x[0, 0], x[-1, -1], x[70, 3] = float("nan"), float("inf"), -float("inf")
    b, y = torch.randn(129, device=DEVICE), torch.randn(20000, device=DEVICE)[5:5 + 131 * 129].view(131, 129)
    for got, want in zip(compiled(x, b, y), f(x, b, y)):
        torch.testing.assert_close(got, want, equal_nan=True)
    _assert_cuda_records(before)
    programs = "".join(p.read_text() for p in tmp_path.glob("*.cuda.py"))
    assert "xmask = tl.full([XBLOCK], 1, tl.int1)" in programs


def test_which_rows_stay_in_registers():
    """launch.persistent_rows: rows up to 32768 lanes (f32) or 65536 (16-bit) where every
    16-byte access is whole (the row's length and each tensor's start aligned), else up to
    16384 (Triton loads them one by one, each in a register of its own)."""
    from lamina.codegen.cuda.launch import persistent_rows

    f32, bf16 = torch.empty(64, dtype=torch.float32), torch.empty(64, dtype=torch.bfloat16)
    offset = torch.empty(64, dtype=torch.bfloat16)[1:]   # a storage offset of 2 bytes
    assert persistent_rows(32768, 4, f32) and not persistent_rows(32769, 4, f32)
    assert not persistent_rows(32001, 4, f32) and persistent_rows(16383, 4, f32)
    assert persistent_rows(50264, 2, bf16, bf16) and persistent_rows(65536, 2, bf16)
    assert not persistent_rows(65537, 2, bf16)
    assert not persistent_rows(50257, 2, bf16) and not persistent_rows(50258, 2, bf16)
    assert not persistent_rows(50264, 2, bf16, offset)
    assert persistent_rows(16384, 2, offset) and not persistent_rows(30001, 2, bf16)
    # the same of fake tensors (the warm-up pass before a first call), without touching a
    # data pointer (torch warns there, and will raise)
    import warnings

    from torch._subclasses.fake_tensor import FakeTensorMode

    mode = FakeTensorMode(allow_non_fake_inputs=True)
    with warnings.catch_warnings(), mode:
        warnings.simplefilter("error")
        fake, fake_offset = mode.from_tensor(bf16), mode.from_tensor(offset)
        assert persistent_rows(50264, 2, fake) and not persistent_rows(50264, 2, fake, fake_offset)


def test_reductions_of_reductions(tmp_path):
    """A reduction of another's results along its lanes (a row sum then their total; row
    variances then their max; a loss) gets the inner results computed into a temporary by a
    program of its own: one kernel, two programs, no fallback."""
    def f(x, w):
        var = (x - x.mean(-1, keepdim=True)).pow(2).sum(-1)
        return (x * w).sum(-1).sum(), var.amax(), ((x @ w.t()).sum(-1) - 1).pow(2).mean()

    before = len(lamina.backend.reports())
    x, w = torch.randn(37, 300, device=DEVICE), torch.randn(300, device=DEVICE).expand(37, 300)
    got = torch.compile(f, backend="lamina", options={"strict": True, "target": "cuda", "dump_ir": str(tmp_path)})(x, w)
    for g, want in zip(got, f(x, w)):
        torch.testing.assert_close(g, want, rtol=1e-4, atol=1e-3)
    _assert_cuda_records(before)
    programs = "".join(p.read_text() for p in tmp_path.glob("*.cuda.py"))
    assert "t0 = torch.empty(" in programs


def test_mean_and_variance_of_long_rows_in_one_pass(tmp_path):
    """Rows longer than a persistent program holds loop over their lanes; a mean and the
    squared deviations from it (var_mean, layer / instance / batch norm) come from one loop
    (a shifted Welford, lh.welford), not one loop for the mean and another for the deviations.
    Accurate where a running mean would not be: values of 1e4 + 1e-2 * randn (var 1e-4),
    an infinite or nan element (nan variance, as in eager), bf16 rows."""
    import torch.nn.functional as F

    def stats(x, y):
        v, m = torch.var_mean(x, 1)
        return (v, m, torch.std(y, 1, correction=0), F.layer_norm(x, (x.shape[1],)),
                F.instance_norm(x.view(2, 3, 200, 200)), F.batch_norm(x.view(2, 3, 200, 200), None, None, training=True))

    # rows longer than PERSISTENT_MAX (32768), too many for a split in the interpreter (one SM)
    x = torch.randn(6, 40000, device=DEVICE) * 3 + 1
    y = 1e4 + 1e-2 * torch.randn(6, 40000, device=DEVICE)
    y[3, 0], y[4, 9] = float("inf"), float("nan")
    before = len(lamina.backend.reports())
    got = torch.compile(stats, backend="lamina", options={"strict": True, "target": "cuda", "dump_ir": str(tmp_path)})(x, y)
    for g, want in zip(got, stats(x.double(), y.double())):
        torch.testing.assert_close(g.double(), want, rtol=2e-5, atol=1e-5, equal_nan=True)
    _assert_cuda_records(before)
    programs = "".join(p.read_text() for p in tmp_path.glob("*.cuda.py"))
    assert programs.count("lh.welford(") >= 4, programs

    xb = (torch.randn(4, 40000, device=DEVICE) * 2 + 5).bfloat16()
    got = _compiled(lambda t: torch.var_mean(t, 1))(xb)
    for g, want in zip(got, torch.var_mean(xb.double(), 1)):
        torch.testing.assert_close(g.double(), want, rtol=1e-2, atol=1e-2)
    torch._dynamo.reset()
    # fp64 steps for fp64 rows, against sums done exactly (math.fsum): eager's CPU var_mean
    # is ~1e-11 off here itself
    import math
    xd = torch.randn(4, 40000, device=DEVICE, dtype=torch.float64) * 1e-3 + 1e3
    got = _compiled(lambda t: torch.var_mean(t, 1))(xd)
    for i, row in enumerate(xd.tolist()):
        mean = math.fsum(row) / len(row)
        var = math.fsum((v - mean) ** 2 for v in row) / (len(row) - 1)
        assert abs(got[0][i].item() - var) <= 1e-13 * var and abs(got[1][i].item() - mean) <= 1e-13 * mean


def test_softmax_of_long_rows_in_one_pass(tmp_path):
    """Rows longer than a persistent program holds: the max and the sum of exp(x - max)
    (softmax, log_softmax, cross entropy) come from one loop over x (online softmax: the sum
    rescaled as the running max grows, lh.online_softmax), as do a split row's chunks. The
    same values as the two-pass form at its edges: -inf before the first finite element, a
    row of only -inf (nan), a nan or an inf element, magnitudes where exp overflows unshifted,
    bf16 and fp64 rows."""
    import torch.nn.functional as F

    def one_row(x, t):
        # (the sum of exps written out: a row of only -inf sums nan, as eager's)
        return torch.softmax(x, 1), torch.log_softmax(x, 1), torch.exp(x - x.amax(1, keepdim=True)).sum(1)

    def fns(x, t):
        return (*one_row(x, t), F.cross_entropy(x[2:], t))

    def edges(rows, n, dtype=torch.float32):
        x = torch.randn(rows, n, device=DEVICE, dtype=dtype) * 20
        x[0, :5], x[0, 9] = float("-inf"), float("-inf")   # -inf first, then finite
        if rows > 1:
            x[1] = float("-inf")                            # no finite element: nan, as eager
        if rows > 3:
            x[2, 7], x[3, 30000] = float("nan"), float("inf")
            x[4] *= 1e6                                     # exp(x) alone overflows
        return x

    # more rows than the interpreter's one SM splits (a loop a row), then one row (split)
    for rows, n in ((6, 40000), (1, 70000)):
        torch._dynamo.reset()
        x = edges(rows, n)
        t = torch.randint(0, n, (max(rows - 2, 1),), device=DEVICE)
        before = len(lamina.backend.reports())
        out = tmp_path / str(rows)
        fn = fns if rows > 2 else one_row
        got = torch.compile(fn, backend="lamina", options={"strict": True, "target": "cuda", "dump_ir": str(out)})(x, t)
        for g, want in zip(got, fn(x.double(), t)):
            torch.testing.assert_close(g.double(), want, rtol=1e-5, atol=1e-6, equal_nan=True)
        _assert_cuda_records(before)
        programs = "".join(p.read_text() for p in out.glob("*.cuda.py"))
        assert "lh.online_softmax(" in programs, programs
        if rows == 1:
            assert "_part = torch.empty((_rows * _split * 2,)" in programs, programs
    # (bf16 split, fp64 looped: one shape each keeps the interpreter's share short)
    for dtype, tol, (rows, n) in ((torch.bfloat16, 2e-2, (1, 70000)), (torch.float64, 1e-12, (2, 40000))):
        x = edges(rows, n, dtype)
        got = _compiled(lambda t: torch.log_softmax(t, 1))(x)
        torch.testing.assert_close(got.double(), torch.log_softmax(x.double(), 1), rtol=tol, atol=tol,
                                   equal_nan=True)
        torch._dynamo.reset()


@pytest.mark.parametrize("offset", [1, 0], ids=["storage_offset", "aligned_base"])
@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
def test_unaligned_long_rows_loop_from_16_element_boundaries(tmp_path, offset, dynamic):
    """Looped rows of a length that is not a multiple of 16 start their loops at the
    16-element boundary before the row (each row at another offset: 33001 * row % 16, 0 for
    the first row), and only the steps at a row's ends mask lanes: the values at both ends
    of every row, a -inf first element, a nan last one, an input at a storage offset or
    not, static and symbolic sizes, and a layer norm's loop (Welford's, which counts its
    steps: peeled, not aligned) beside it."""
    import torch.nn.functional as F

    def f(x):
        return torch.log_softmax(x, -1), F.layer_norm(x, x.shape[-1:]), x.amax(-1)

    n = 33001
    base = torch.randn(3 * n + offset, device=DEVICE) * 4
    x = base[offset:].view(3, n).to(torch.bfloat16)
    x[0, 0], x[1, -1], x[2, :3], x[2, -3:] = float("-inf"), float("nan"), 30.0, -30.0
    compiled = torch.compile(f, backend="lamina", dynamic=dynamic,
                             options={"strict": True, "target": "cuda", "dump_ir": str(tmp_path)})
    for g, want in zip(compiled(x), f(x.double())):
        torch.testing.assert_close(g.double(), want, rtol=2e-2, atol=2e-2, equal_nan=True)
    programs = "".join(p.read_text() for p in tmp_path.glob("*.cuda.py"))
    assert "xrowa = tl.multiple_of(xrows - rs, 16)" in programs and "(xrowa + j)" in programs


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["fp32", "bf16"])
def test_persistent_rows_of_odd_length_state_their_lanes_alignment(tmp_path, dtype):
    """A persistent row program over 1001 or 1002 lanes tells Triton its lanes are aligned
    to 1 or 2 elements (triton_program._lane_alignment), 1008 lanes nothing: layer norms with
    a weight and a bias (the accesses Triton would otherwise lay out 16 bytes a thread), an
    input at a storage offset, nan in one row, the ends of every row."""
    import torch.nn.functional as F

    def f(x, w, b):
        return F.layer_norm(x, x.shape[-1:], w, b), torch.softmax(x, -1) * w

    for n, hint in ((1001, "[1, 1]"), (1002, "[1, 2]"), (1008, None)):
        base = torch.randn(7 * n + 3, device=DEVICE) * 3
        x = base[3:].view(7, n).to(dtype)
        x[2, 5], x[4, 0], x[5, -1] = float("nan"), 40.0, -40.0
        w, b = torch.randn(n, device=DEVICE, dtype=dtype), torch.randn(n, device=DEVICE, dtype=dtype)
        dump = tmp_path / str(n)
        torch._dynamo.reset()
        compiled = torch.compile(f, backend="lamina", options={"strict": True, "target": "cuda", "dump_ir": str(dump)})
        tol = 2e-2 if dtype == torch.bfloat16 else 1e-5
        for g, want in zip(compiled(x, w, b), f(x.double(), w.double(), b.double())):
            torch.testing.assert_close(g.double(), want, rtol=tol, atol=tol, equal_nan=True)
        programs = "".join(p.read_text() for p in dump.glob("*.cuda.py"))
        stated = "r = tl.multiple_of(tl.arange(0, RBLOCK)[None, :], " + (hint or "")
        assert (stated in programs) if hint else ("tl.multiple_of(tl.arange(0, RBLOCK)" not in programs)
        if hint:
            assert "lane_align=" in programs


@pytest.mark.parametrize("groups,shape,dtype", [
    (4, (3, 16, 9, 7), torch.float32), (8, (2, 64, 16, 16), torch.bfloat16), (1, (2, 6, 5, 5), torch.float32),
    (2, (4, 8, 33), torch.float32), (3, (5, 12), torch.float32), (6, (2, 6, 3, 4), torch.float32)],
    ids=["4d", "4d_bf16", "one_group", "3d", "2d", "group_per_channel"])
@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
def test_group_norm_statistics_computed_once_a_group(tmp_path, groups, shape, dtype, dynamic):
    """A group norm's statistics are computed once a group into temporaries, then read per
    element (triton_emit._rows_reread_reductions), where (N, C) rows would each read their
    whole group; one group a channel, one group in all (rows N, like a layer norm) and [N, C]
    (lamina-sink-reshapes: rows (N, G)) stay one row program over static sizes. Against
    fp64, with a SiLU after it, nan in one group (that group nan, the others not), a
    channels-last input, and large magnitudes beside small ones. Over symbolic sizes too (every dim a row there, each
    element read its whole group; and the launcher took a size for a tensor: a fallback)."""
    norm = torch.nn.GroupNorm(groups, shape[1]).to(DEVICE)
    with torch.no_grad():
        norm.weight.copy_(torch.randn(shape[1]))
        norm.bias.copy_(torch.randn(shape[1]))
    norm = norm.to(dtype)

    def f(x):
        return torch.nn.functional.silu(norm(x))

    x = (torch.randn(*shape, device=DEVICE) * 3 + 1e3).to(dtype)
    x[0, 0] = float("nan")
    x[-1, -1] = x[-1, -1] * 1e-3
    inputs = [x] + ([x.to(memory_format=torch.channels_last)] if len(shape) == 4 else [])
    before = len(lamina.backend.reports())
    compiled = torch.compile(f, backend="lamina", dynamic=dynamic,
                             options={"strict": True, "target": "cuda", "dump_ir": str(tmp_path)})
    ref = torch.nn.GroupNorm(groups, shape[1]).double().to(DEVICE)
    ref.load_state_dict({k: v.double() for k, v in norm.state_dict().items()})
    with torch.no_grad():
        for xi in inputs:
            want = torch.nn.functional.silu(ref(xi.double()))
            tol = 5e-2 if dtype == torch.bfloat16 else 1e-4
            torch.testing.assert_close(compiled(xi).double(), want, rtol=tol, atol=tol, equal_nan=True)
    _assert_cuda_records(before)
    programs = "".join(p.read_text() for p in tmp_path.glob("*.cuda.py"))
    # (over symbolic sizes the reshape to [N, G, -1] is not followed: any group but one a
    # channel reads statistics per element)
    computed_first = (1 < groups < shape[1] and len(shape) > 2) or (dynamic and groups != shape[1])
    assert ("t0 = torch.empty(" in programs) == computed_first, programs[-3000:]


def test_instance_norm_over_symbolic_sizes_computes_its_statistics_first(tmp_path):
    """Over symbolic H, W an instance norm's rows are every dim (its [1, N*C, H, W] reshape
    is not followed), and each element would compute its (n, c) statistics: with a symbol
    left among the rows the statistics go first into temporaries (triton_emit._size_ratio).
    Two shapes (a recompile for H != W), against fp64, large magnitudes."""
    norm = torch.nn.InstanceNorm2d(6, affine=True).to(DEVICE)
    with torch.no_grad():
        norm.weight.copy_(torch.randn(6))
        norm.bias.copy_(torch.randn(6))
    ref = torch.nn.InstanceNorm2d(6, affine=True).double().to(DEVICE)
    ref.load_state_dict({k: v.double() for k, v in norm.state_dict().items()})
    compiled = torch.compile(norm, backend="lamina", dynamic=True,
                             options={"strict": True, "target": "cuda", "dump_ir": str(tmp_path)})
    with torch.no_grad():
        for shape in ((2, 6, 8, 8), (3, 6, 5, 7)):
            x = torch.randn(*shape, device=DEVICE) * 5 + 100
            torch.testing.assert_close(compiled(x).double(), ref(x.double()), rtol=1e-4, atol=1e-4)
    programs = "".join(p.read_text() for p in tmp_path.glob("*.cuda.py"))
    assert "t0 = torch.empty(" in programs and "_flat(" in programs


def test_persistent_configs_of_narrow_lane_accesses():
    """Rows whose lane accesses are one or two elements wide start from fewer elements a
    thread (launch.PERSISTENT_NARROW_ELEMENTS_PER_THREAD): more warps a row; accesses of 16
    bytes keep the heuristic they had, and every candidate stays in the list to tune."""
    from lamina.codegen.cuda.launch import persistent_configs

    for rblock, elem in ((8192, 2), (4096, 4), (8192, 4)):
        wide, narrow = persistent_configs(rblock, None, elem), persistent_configs(rblock, None, elem, lane_align=1)
        assert narrow[0]["num_warps"] > wide[0]["num_warps"] and narrow[0]["XBLOCK"] == wide[0]["XBLOCK"]
        assert sorted(map(str, narrow)) == sorted(map(str, wide))
        assert persistent_configs(rblock, None, elem, lane_align=16 // elem) == wide


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["f32", "bf16"])
@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
def test_lane_loops_run_whole_steps_unmasked_then_the_rest(tmp_path, dtype, dynamic):
    """Looped and split row programs run the steps wholly inside a row unmasked (unrolled
    RUNROLL times) and the rest, masked, in a second loop carrying the same accumulators
    (triton_program._peel_lane_loops): sums, Welford pairs, online softmax pairs and the
    per-lane stores of a row read again. Rows with a partial last step, rows of whole steps
    only (the second loop empty), one row split into chunks whose last one ends past the
    row; nan among the whole steps, a large element in the last step; against fp64."""
    import torch.nn.functional as F

    def f(x, w, b):
        return (x.sum(-1), x.var(-1), torch.softmax(x, -1), F.layer_norm(x, x.shape[-1:], w, b),
                torch.logsumexp(x, -1))

    tol = 3e-2 if dtype == torch.bfloat16 else 2e-5
    for rows, n in ((3, 40003), (2, 40960), (1, 40003)):
        x = (torch.randn(rows, n, device=DEVICE) * 2 + 1).to(dtype)
        x[-1, -2] = 60.0
        if rows > 1:
            x[0, 1000] = float("nan")
        w, b = torch.randn(n, device=DEVICE, dtype=dtype), torch.randn(n, device=DEVICE, dtype=dtype)
        dump = tmp_path / f"{rows}x{n}"
        torch._dynamo.reset()
        compiled = torch.compile(f, backend="lamina", dynamic=dynamic,
                                 options={"strict": True, "target": "cuda", "dump_ir": str(dump)})
        for g, want in zip(compiled(x, w, b), f(x.double(), w.double(), b.double())):
            torch.testing.assert_close(g.double(), want, rtol=tol, atol=tol, equal_nan=True)
        programs = "".join(p.read_text() for p in dump.glob("*.cuda.py"))
        assert "= tl.full([1, RBLOCK], 1, tl.int1)" in programs and "loop_unroll_factor=RUNROLL" in programs
        assert "RUNROLL=lane_loop_unroll(" in programs


def test_lane_loop_unroll_keeps_accumulators_in_registers():
    """Whole lane steps unroll where the accumulators a thread carries stay few (a sum, an
    online softmax pair, fp32 Welford at 4 lanes a thread), not for bf16 Welford's 8 lanes x 4
    accumulators (the registers would cost programs a SM), one-element loads or programs of
    32 warps."""
    from lamina.codegen.cuda.launch import LANE_LOOP_UNROLL, lane_loop_unroll

    assert lane_loop_unroll(1024, 8, 1) == lane_loop_unroll(2048, 8, 2) == lane_loop_unroll(1024, 8, 4) == LANE_LOOP_UNROLL
    assert lane_loop_unroll(2048, 8, 4) == 1
    assert lane_loop_unroll(1024, 8, 1, vector_loads=False) == 1
    assert lane_loop_unroll(8192, 32, 1) == 1   # (a row read again: 64 registers a thread)


def test_mean_and_variance_of_few_long_rows_split_in_one_pass(tmp_path):
    """Few long rows (a layer norm of 65536 lanes, batch norm's statistic per channel) split
    each row across programs: the sum and the squared deviations are one split reduction,
    each chunk's (sum, mean, M2, count) combined by stage 2 (Chan's formula), instead of a
    split sum and then a second split pass over the input for the deviations."""
    import torch.nn.functional as F

    def stats(x, y, z):
        return F.layer_norm(x, (x.shape[1],)), torch.std(y, 1), F.batch_norm(z, None, None, training=True)

    x = torch.randn(1, 65536, device=DEVICE) * 2 + 3
    y = 1e4 + 1e-2 * torch.randn(1, 70000, device=DEVICE)
    z = torch.randn(4, 1, 130, 130, device=DEVICE) + 5
    got = torch.compile(stats, backend="lamina", options={"strict": True, "target": "cuda", "dump_ir": str(tmp_path)})(x, y, z)
    for g, want in zip(got, stats(x.double(), y.double(), z.double())):
        torch.testing.assert_close(g.double(), want, rtol=2e-5, atol=1e-5)
    programs = "".join(p.read_text() for p in tmp_path.glob("*.cuda.py"))
    assert programs.count("_part = torch.empty((_rows * _split * 4,)") >= 3, programs


def test_losses_gathering_from_row_reductions():
    """cross_entropy and friends read a row reduction (log_softmax's max and sum) at a row
    chosen per lane by a gathered index: a nested reduction even though no index is named
    after the lanes (it was computed from them). Before lanes were traced through the
    program's variables, the row statistics were taken at the wrong rows (a wrong loss)."""
    import torch.nn.functional as F

    def losses(x, t, w):
        t_ignored = torch.where(t == 2, -100, t)
        return (F.cross_entropy(x, t), F.cross_entropy(x, t_ignored, weight=w, reduction="sum"),
                F.cross_entropy(x, t, label_smoothing=0.1), F.cross_entropy(x, t, reduction="none"),
                F.nll_loss(F.log_softmax(x, 1), t), x.softmax(-1).gather(1, t[:, None]).sum())

    before = len(lamina.backend.reports())
    x, t = torch.randn(13, 7, device=DEVICE) * 3, torch.randint(0, 7, (13,), device=DEVICE)
    w = torch.rand(7, device=DEVICE) + 0.5
    got = _compiled(losses)(x, t, w)
    for g, want in zip(got, losses(x.double(), t, w.double())):
        torch.testing.assert_close(g.double(), want, rtol=1e-5, atol=1e-5)
    _assert_cuda_records(before)


def test_generated_source_in_the_dump(tmp_path):
    def f(x):
        return torch.sin(x) ** 2 + torch.cos(x) ** 2

    x = torch.randn(33, 7, device=DEVICE)
    torch.compile(f, backend="lamina", options={"target": "cuda", "dump_ir": str(tmp_path),
                                                "gpu_codegen": "triton"})(x)
    sources = list(tmp_path.glob("*.cuda.py"))
    assert sources, list(tmp_path.iterdir())
    text = sources[0].read_text()
    assert "@triton.jit" in text and "def launch(" in text and "test_cuda_target.py" in text


@pytest.mark.skipif(DEVICE != "cuda", reason="CUDA graphs need a GPU")
def test_cudagraphs_replay_with_changing_inputs():
    """options={"cudagraphs": True}: the graph is replayed with inputs at new addresses and of
    new sizes (one capture per signature), outputs are fresh tensors each call."""
    model, inputs = _on(*MODELS["gpt_block"]())
    compiled = torch.compile(model, backend="lamina", dynamic=True,
                             options={"strict": True, "target": "cuda", "cudagraphs": True})
    with torch.no_grad():
        outs = []
        for b, t in ((2, 16), (2, 16), (3, 9), (2, 16)):
            x = torch.randn(b, t, 128, device=DEVICE)
            got = compiled(x)
            torch.testing.assert_close(got, model(x), rtol=1e-4, atol=1e-4)
            outs.append(got)
        assert outs[0].data_ptr() != outs[1].data_ptr()


def test_launch_config_set_in_the_ir_replaces_autotuning():
    """lamina.triton_configs on a kernel (edited IR, replayed with lamina-to-triton) fixes a
    row program's launch config; a malformed one is an error, not a silent default."""
    from mlir import ir

    from lamina import dialect
    from lamina.codegen.cuda.triton_emit import CONFIGS_ATTR, SOURCE_ATTR, Unsupported
    from lamina.transforms.registry import run_pass

    text = """func.func @sm(%x: tensor<64x300xf32>) -> tensor<64x300xf32> attributes {lamina.graph} {
      %0 = "lamina.softmax"(%x) {dim = 1 : i64} : (tensor<64x300xf32>) -> tensor<64x300xf32>
      return %0 : tensor<64x300xf32>
    }"""
    for config, ok in (("XBLOCK=2,num_warps=8", True), ("XBLOCK=two", False)):
        ctx = dialect.make_context()
        with ctx:
            module = ir.Module.parse(text)
            for p in ("lamina-fuse", "lamina-outline-kernels", "lamina-plan-memory", "lamina-to-linalg",
                      "lamina-kernel-abi"):
                run_pass(p, module)
            kernel = next(op for op in module.body.operations if "lamina.kernel" in op.attributes)
            kernel.attributes[CONFIGS_ATTR] = ir.DictAttr.get({"g0_persistent": ir.StringAttr.get(config)})
            if ok:
                run_pass("lamina-to-triton", module)
                source = ir.StringAttr(kernel.attributes[SOURCE_ATTR]).value
                assert "[{'XBLOCK': 2, 'num_warps': 8}]" in source and "persistent_configs(_rb)" not in source
            else:
                with pytest.raises(Unsupported, match="bad config"):
                    run_pass("lamina-to-triton", module)


def test_autotuned_configs_are_recorded_in_the_ir(monkeypatch, tmp_path):
    """What autotuning chose in an earlier run (on disk, for exactly this kernel source)
    shows on the kernel as lamina.triton_autotuned when it is compiled again."""
    from mlir import ir

    from lamina import dialect
    from lamina.codegen.cuda import launch
    from lamina.codegen.cuda.triton_emit import TUNED_ATTR, emit_kernel
    from lamina.codegen.cuda.triton_library import module_name
    from lamina.transforms.registry import run_pass

    monkeypatch.setenv("LAMINA_CACHE_DIR", str(tmp_path))
    text = """func.func @sm(%x: tensor<64x300xf32>) -> tensor<64x300xf32> attributes {lamina.graph} {
      %0 = "lamina.softmax"(%x) {dim = 1 : i64} : (tensor<64x300xf32>) -> tensor<64x300xf32>
      return %0 : tensor<64x300xf32>
    }"""
    with dialect.make_context():
        module = ir.Module.parse(text)
        for p in ("lamina-fuse", "lamina-outline-kernels", "lamina-plan-memory", "lamina-to-linalg", "lamina-kernel-abi"):
            run_pass(p, module)
        kernel = next(op for op in module.body.operations if "lamina.kernel" in op.attributes)
        src = emit_kernel(kernel)
        program = next(fn for fn, part in src.programs.items() if part == "g0_persistent")
        key = f"{module_name(src.text, src.name)}.{program}|(64, 300)|[]"
        monkeypatch.setattr(launch, "_disk", {key: {"XBLOCK": 4, "num_warps": 8}})
        run_pass("lamina-to-triton", module)
        recorded = ir.DictAttr(kernel.attributes[TUNED_ATTR])
        assert [(n.name, ir.StringAttr(n.attr).value) for n in recorded] == [("g0_persistent 64x300", "XBLOCK=4,num_warps=8")]


def test_a_failure_at_the_first_launch_falls_back(monkeypatch):
    """Triton compiles a program at its first launch: a failure there (here injected) runs the
    graph eagerly with one warning instead of breaking the program; strict raises."""
    from lamina.backend.errors import LaminaCompileError, LaminaFallbackWarning
    from lamina.codegen.cuda import triton_library

    def broken(self, kernel):
        def launch(*args):
            raise RuntimeError("injected: Triton failed to compile")
        return launch

    monkeypatch.setattr(triton_library.TritonKernelLibrary, "launcher", broken)

    def f(x):
        return torch.softmax(x * 3, -1)

    x = torch.randn(5, 7, device=DEVICE)
    compiled = torch.compile(f, backend="lamina", options={"target": "cuda"})
    with pytest.warns(LaminaFallbackWarning, match="failed at its first call"):
        torch.testing.assert_close(compiled(x), f(x))
    torch.testing.assert_close(compiled(x), f(x))       # stays on the eager graph
    torch._dynamo.reset()
    strict = torch.compile(f, backend="lamina", options={"target": "cuda", "strict": True})
    with pytest.raises(LaminaCompileError, match="failed at its first call"):
        strict(x)


@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
def test_precompile_runs_the_first_call_on_fake_tensors(monkeypatch, dynamic):
    """Before a graph's first call, PlanRunner.precompile runs that call in the library's
    warming mode on fake tensors: every launcher is reached with the operands' shapes and
    strides of the real call, no real memory is touched, the runner's own arena and views
    stay as they were; then the real first call matches eager. (Launchers recorded here:
    the GPU test below lets them request real compiles.)"""
    from contextlib import contextmanager

    from torch._subclasses.fake_tensor import FakeTensor

    from lamina.runtime.plan_runner import PlanRunner

    calls = {"warm": [], "real": []}
    state = {}
    original = PlanRunner.precompile

    def recording(self, args, workers=True):
        library = self.library
        real_launcher = library.launcher

        def launcher(kernel):
            fn = real_launcher(kernel)
            if fn is None:
                return None

            def launch(*ops):
                phase = "warm" if state.get("warm") else "real"
                calls[phase].append((kernel, [(type(o), tuple(o.shape), o.stride()) for o in ops
                                              if isinstance(o, torch.Tensor)]))
                if phase == "real":
                    return fn(*ops)
            return launch

        @contextmanager
        def warming(workers, tiered=True):
            state["warm"] = True
            try:
                yield {"programs": 0}
            finally:
                state["warm"] = False

        monkeypatch.setattr(library, "launcher", launcher)
        monkeypatch.setattr(library, "warming", warming)
        self._call = self._define(self.call_source)       # (the call reads the launchers once)
        state["arena"], state["views"] = self._arena, self.views
        assert original(self, args, workers) == {"programs": 0}
        assert (self._arena, self.views) == (state["arena"], state["views"])
        self._call(*args)   # the same call for real, through the recording launchers
        return {"programs": 0}

    monkeypatch.setattr(PlanRunner, "precompile", recording)
    model, (x,) = _on(GPTBlock(32, 4), (torch.randn(2, 8, 32),))
    compiled = _compiled(model, dynamic)
    with torch.no_grad():
        want = model(x)
        before = len(lamina.backend.reports())
        got = compiled(x)
    torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-5)
    record = lamina.backend.reports()[before:][0]
    assert "precompile" in record and "precompile_error" not in record, record
    assert len(calls["warm"]) >= 4
    assert all(issubclass(t, FakeTensor) for _, ops in calls["warm"] for t, _, _ in ops), [(k, t) for k, ops in calls["warm"] for t, _, _ in ops if not issubclass(t, FakeTensor)]
    strip = lambda seen: [(k, [(shape, stride) for _, shape, stride in ops]) for k, ops in seen]  # noqa: E731
    assert strip(calls["warm"]) == strip(calls["real"])


@pytest.mark.skipif(DEVICE != "cuda", reason="Triton compiles for a GPU (the interpreter compiles nothing)")
@pytest.mark.parametrize("in_process", [False, True], ids=["workers", "threads"])
def test_precompile_compiles_every_program_before_the_first_call(monkeypatch, tmp_path, in_process):
    """On the GPU every Triton program of the first call (tuning candidates included) is
    compiled before it, at once: on the compile workers, or on threads when compiling in
    process. The call itself compiles nothing."""
    import threading

    from triton.backends.nvidia.compiler import CUDABackend

    calls = []
    original = CUDABackend.make_cubin

    def counted(self, *args, **kwargs):
        calls.append(threading.current_thread().name)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(CUDABackend, "make_cubin", counted)
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "triton"))   # (nothing compiled yet)
    model, (x,) = _on(GPTBlock(64, 4), (torch.randn(2, 16, 64),))
    before = len(lamina.backend.reports())
    compiled = torch.compile(model, backend="lamina",
                             options={"strict": True, "target": "cuda", "compile_in_process": in_process})
    with torch.no_grad():
        torch.testing.assert_close(compiled(x), model(x), rtol=1e-4, atol=1e-5)
    record = lamina.backend.reports()[before:][0]
    assert "precompile_error" not in record, record
    assert record["precompile"]["programs"] >= 4, record["precompile"]
    assert record["precompile"]["in"] == ("threads" if in_process else "workers")
    main = threading.main_thread().name
    assert main not in calls, calls
    assert (len(calls) >= 4) if in_process else (calls == []), calls


@pytest.mark.parametrize("bias", [True, False], ids=["linear", "mm"])
def test_16bit_products_of_unaligned_rows_run_on_padded_copies(monkeypatch, bias):
    """bf16 products whose K or N is not a multiple of 8 run on zero-padded copies
    (aligned_blas: cuBLAS's tensor-core kernels need 16-byte aligned rows); the result, a
    view of the padded product, is read through its strides by the program after it.
    Forced at a small size here (PAD_MIN_MACS, at run time; the sizes are symbolic, so the
    launcher cannot know the product small); nn.Linear (addmm) and a plain mm + epilogue."""
    import lamina.codegen.cuda.aligned_blas as blas

    monkeypatch.setattr(blas, "PAD_MIN_MACS", 0)
    monkeypatch.setattr(blas, "PAD_MIN_ROWS", 0)
    padded = []
    real = blas._padded
    monkeypatch.setattr(blas, "_padded", lambda t, r, c: padded.append((tuple(t.shape), r, c)) or real(t, r, c))
    model = torch.nn.Sequential(torch.nn.Linear(13, 22, bias=bias), torch.nn.ReLU(),
                                torch.nn.Linear(22, 5, bias=bias)).to(torch.bfloat16)
    model, (x,) = _on(model, (torch.randn(9, 13),))
    x = x.to(torch.bfloat16)
    before = len(lamina.backend.reports())
    with torch.no_grad():
        got, want = _compiled(model, dynamic=True)(x), model(x)
    _assert_cuda_records(before)
    assert got.dtype == torch.bfloat16 and got.shape == (9, 5)
    torch.testing.assert_close(got.float(), want.float(), rtol=2e-2, atol=2e-2)
    # 13 -> 16 along K of the first product, 22 -> 24 and 5 -> 8 along the second's K and N
    assert (9, 16) in [(r, c) for _, r, c in padded] and (24, 8) in [(r, c) for _, r, c in padded], padded


def test_aligned_products_keep_their_operands():
    import lamina.codegen.cuda.aligned_blas as blas

    a = torch.randn(64, 32, dtype=torch.bfloat16)
    w = torch.randn(40, 32, dtype=torch.bfloat16)
    assert blas._padding(a, w.t()) is None   # K = 32, N = 40: rows 16-byte aligned
    assert blas._padding(a.float(), w.t().float()) is None   # fp32: cuBLAS reads any rows
    big = torch.empty(4096, 2001, dtype=torch.bfloat16)
    assert blas._padding(big, torch.empty(2001, 1000, dtype=torch.bfloat16)) == (4096, 2008, 1000)
    # a few rows against a large weight: copying the weight would cost more than it saves
    assert blas._padding(big[:16], torch.empty(2001, 9000, dtype=torch.bfloat16)) is None
    # A read by columns (a transposed view): its leading dimension M is padded too
    assert blas._padding(torch.empty(2001, 3001, dtype=torch.bfloat16).t(),
                         torch.empty(2001, 1000, dtype=torch.bfloat16)) == (3008, 2008, 1000)
    # the transposed view of a padded weight stays transposed: rows 16 bytes apart
    p = blas._padded(torch.randn(7, 13, dtype=torch.bfloat16).t(), 16, 8)
    assert p.shape == (16, 8) and p.stride() == (1, 16)
    # the padded product's [M, N] view equals the product, with either operand order
    x, w = torch.randn(21, 13, dtype=torch.bfloat16), torch.randn(11, 13, dtype=torch.bfloat16)
    bias = torch.randn(11, dtype=torch.bfloat16)
    for a in (x, x.t().contiguous().t()):
        got = blas._result(torch.mm(blas._padded(a, 24, 16), blas._padded(w.t(), 16, 16)), 21, 11, None)
        assert got.shape == (21, 11)
        torch.testing.assert_close(got, torch.mm(a, w.t()))
    out = torch.empty(21, 11, dtype=torch.bfloat16)
    ref = torch.addmm(bias, x, w.t())
    import unittest.mock as mock
    with mock.patch.object(blas, "PAD_MIN_MACS", 0), mock.patch.object(blas, "PAD_MIN_ROWS", 0):
        assert blas._padding(x, w.t()) == (21, 16, 16)
        assert blas.aligned_addmm(bias, x, w.t(), out=out) is out
        torch.testing.assert_close(out, ref)
        torch.testing.assert_close(blas.aligned_mm(x.t().contiguous().t(), w.t()), torch.mm(x, w.t()))


def test_16bit_batched_products_of_unaligned_rows_run_on_padded_copies(monkeypatch):
    """torch.bmm through aligned_blas too: a batch of bf16 products with K = 13, N = 7."""
    import lamina.codegen.cuda.aligned_blas as blas

    monkeypatch.setattr(blas, "PAD_MIN_MACS", 0)
    monkeypatch.setattr(blas, "PAD_MIN_ROWS", 0)
    padded = []
    real = blas._padded
    monkeypatch.setattr(blas, "_padded", lambda t, r, c: padded.append((tuple(t.shape), r, c)) or real(t, r, c))

    def f(x, y):
        return torch.relu(torch.bmm(x, y)) * 2.0

    x, y = (torch.randn(3, 10, 13, device=DEVICE).to(torch.bfloat16),
            torch.randn(3, 13, 7, device=DEVICE).to(torch.bfloat16))
    before = len(lamina.backend.reports())
    got = _compiled(f, dynamic=True)(x, y)
    _assert_cuda_records(before)
    torch.testing.assert_close(got.float(), f(x, y).float(), rtol=2e-2, atol=2e-2)
    # every run of the product pads both operands (on a GPU, the graph's warm-up pass on fake
    # tensors before its first call runs the launcher too)
    pairs = [(r, c) for _, r, c in padded]
    assert pairs and pairs == [(10, 16), (16, 8)] * (len(pairs) // 2), padded
