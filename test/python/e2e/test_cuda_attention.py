"""Attention chains on the cuda target: matmul -> score expression -> softmax -> matmul is one
kernel (lamina-fuse attention=1) and one flash-attention program (codegen/cuda/attention.py)
that never stores the scores. Each case checks the numerics against eager (fp64 reference for
fp32 where rounding matters) and that the flash program was the one that ran. Without a GPU
the programs run under TRITON_INTERPRET=1 (conftest.py)."""
import math
import os

import pytest
import torch

pytest.importorskip("triton")

import lamina.backend  # noqa: E402,F401  (registers the backend)
from lamina.testing.models import CausalAttention, GPTBlock  # noqa: E402

DEVICE = "cpu" if os.environ.get("TRITON_INTERPRET") == "1" else "cuda"
if DEVICE == "cuda" and not torch.cuda.is_available():
    pytest.skip("no GPU and not interpreting", allow_module_level=True)


@pytest.fixture(autouse=True)
def fresh():
    torch._dynamo.reset()
    torch.manual_seed(0)


def _run(model, args, tmp_path, dynamic=False):
    f = torch.compile(model, backend="lamina", dynamic=dynamic,
                      options={"strict": True, "target": "cuda", "dump_ir": str(tmp_path)})
    out = f(*args)
    programs = "".join(p.read_text() for p in tmp_path.glob("*.cuda.py"))
    return out, programs


class Additive(torch.nn.Module):
    def forward(self, q, k, v, bias):
        return torch.softmax(torch.matmul(q, k.transpose(-1, -2)) * 0.125 + bias, -1) @ v


class Masked(torch.nn.Module):
    def forward(self, q, k, v, mask):
        return torch.softmax((q @ k.transpose(-1, -2)).masked_fill(mask, float("-inf")), -1) @ v


class Unbatched(torch.nn.Module):
    def forward(self, q, k, v):
        return torch.softmax(q @ k.t() / math.sqrt(q.shape[-1]), -1) @ v


def _qkv(*shape, dtype=torch.float32, dv=None):
    q, k = torch.randn(*shape, dtype=dtype), torch.randn(*shape, dtype=dtype)
    v = torch.randn(*shape[:-1], dv or shape[-1], dtype=dtype)
    return tuple(t.to(DEVICE) for t in (q, k, v))


@pytest.mark.parametrize("shape", [(2, 3, 40, 32), (2, 2, 70, 24), (1, 1, 130, 64), (1, 2, 1, 16)],
                         ids=["pow2-head", "odd-head", "several-key-blocks", "one-query"])
def test_causal_attention_is_one_flash_program(shape, tmp_path):
    q, k, v = _qkv(*shape)
    out, programs = _run(CausalAttention(), (q, k, v), tmp_path)
    if shape[-2] > 1:   # (one key: the graph passes fold the softmax of one element away)
        assert "_flash(" in programs and "torch.bmm" not in programs
    ref = CausalAttention()(*(t.double() for t in (q, k, v)))
    torch.testing.assert_close(out.double(), ref, rtol=1e-5, atol=1e-5)


def test_bf16_attention(tmp_path):
    q, k, v = _qkv(2, 4, 48, 64, dtype=torch.bfloat16)
    out, programs = _run(CausalAttention(), (q, k, v), tmp_path)
    assert "_flash(" in programs and out.dtype == torch.bfloat16
    ref = CausalAttention()(*(t.double() for t in (q, k, v)))
    torch.testing.assert_close(out.double(), ref, rtol=2e-2, atol=2e-2)


def test_additive_bias_and_a_value_head_of_another_size(tmp_path):
    q, k, v = _qkv(2, 2, 33, 16, dv=48)
    bias = torch.randn(33, 33, device=DEVICE) * 3
    out, programs = _run(Additive(), (q, k, v, bias), tmp_path)
    assert "_flash(" in programs
    torch.testing.assert_close(out, Additive()(q, k, v, bias), rtol=1e-5, atol=1e-5)


def test_fully_masked_rows_are_nan_like_eager(tmp_path):
    q, k, v = _qkv(1, 3, 20, 16)
    mask = torch.zeros(3, 20, 20, dtype=torch.bool)
    mask[1, 4] = True            # one query row sees no key: softmax over all -inf is NaN
    mask[2, :, 3:] = True        # the rest see only the first keys
    mask = mask.to(DEVICE)
    out, programs = _run(Masked(), (q, k, v, mask), tmp_path)
    assert "_flash(" in programs
    ref = Masked()(q, k, v, mask)
    assert torch.isnan(ref[0, 1, 4]).all()
    torch.testing.assert_close(out, ref, rtol=1e-5, atol=1e-5, equal_nan=True)


def test_large_scores_and_nan_inputs(tmp_path):
    q, k, v = _qkv(1, 2, 24, 32)
    q = q * 1e3                  # scores ~1e4: the online max must rescale exactly
    k[0, 1, 5, 0] = float("nan")  # a NaN key: every row of that head is NaN in eager
    out, _ = _run(CausalAttention(), (q, k, v), tmp_path)
    ref = CausalAttention()(q, k, v)
    torch.testing.assert_close(out, ref, rtol=1e-4, atol=1e-4, equal_nan=True)


def test_unbatched_attention(tmp_path):
    q, k, v = (torch.randn(37, 16, device=DEVICE), torch.randn(50, 16, device=DEVICE), torch.randn(50, 32, device=DEVICE))
    out, programs = _run(Unbatched(), (q, k, v), tmp_path)
    assert "_flash(" in programs
    torch.testing.assert_close(out, Unbatched()(q, k, v), rtol=1e-5, atol=1e-5)


def test_dynamic_shapes_use_one_program_for_every_length(tmp_path):
    m = CausalAttention()
    f = torch.compile(m, backend="lamina", dynamic=True,
                      options={"strict": True, "target": "cuda", "dump_ir": str(tmp_path)})
    for t in (17, 40):
        q, k, v = _qkv(2, 2, t, 32)
        torch.testing.assert_close(f(q, k, v), m(q, k, v), rtol=1e-5, atol=1e-5)
    assert "_flash(" in "".join(p.read_text() for p in tmp_path.glob("*.cuda.py"))


def test_non_contiguous_inputs_and_head_split_views(tmp_path):
    block = GPTBlock(64, 4).eval().to(DEVICE)
    x = torch.randn(2, 24, 64, device=DEVICE)
    with torch.no_grad():
        out, programs = _run(block, (x,), tmp_path)
        ref = block(x)
    assert "_flash(" in programs
    torch.testing.assert_close(out, ref, rtol=1e-4, atol=1e-4)
    q, k, v = (t.transpose(1, 2) for t in _qkv(2, 40, 3, 32))   # strided heads
    torch._dynamo.reset()
    out, _ = _run(CausalAttention(), (q, k, v), tmp_path / "strided")
    torch.testing.assert_close(out, CausalAttention()(q, k, v), rtol=1e-5, atol=1e-5)


def test_training_keeps_the_probabilities_and_uses_the_unfused_chain(tmp_path):
    q, k, v = (t.requires_grad_() for t in _qkv(1, 2, 24, 16))
    f = torch.compile(CausalAttention(), backend="lamina", options={"strict": True, "target": "cuda"})
    out = f(q, k, v)
    out.sum().backward()
    grads = [t.grad.clone() for t in (q, k, v)]
    for t in (q, k, v):
        t.grad = None
    CausalAttention()(q, k, v).sum().backward()
    for g, t in zip(grads, (q, k, v)):
        torch.testing.assert_close(g, t.grad, rtol=1e-4, atol=1e-5)


def _jit_functions(programs: str) -> list[str]:
    """The @triton.jit functions of the dumped kernel modules (their launchers left out)."""
    return [block.split("\ndef launch(")[0].split("\n\n\n")[0] for block in programs.split("@triton.jit")[1:]]


def test_the_flash_program_is_the_same_source_at_every_size(tmp_path):
    """Its name is its content's, not its graph's, and batch and sequence lengths are its
    arguments: a graph of the same structure at another size finds its compiled code in
    Triton's on-disk cache instead of compiling it again."""
    sources = []
    for i, shape in enumerate([(2, 3, 40, 32), (1, 4, 96, 32)]):
        torch._dynamo.reset()
        q, k, v = _qkv(*shape)
        out, programs = _run(CausalAttention(), (q, k, v), tmp_path / str(i))
        torch.testing.assert_close(out.double(), CausalAttention()(*(t.double() for t in (q, k, v))), rtol=1e-5, atol=1e-5)
        sources.append([f for f in _jit_functions(programs) if "_flash(" in f])
    assert len(sources[0]) == 1 and sources[0] == sources[1]


def test_repeated_layers_have_one_program_source(tmp_path):
    """The kernels of a model's repeated layers (the same code run again) get the same
    program source: they compile once."""
    def layers(x, w):
        for _ in range(3):
            x = torch.relu(x * 2 + 1) @ w
        return x

    x, w = torch.randn(32, 32, device=DEVICE), torch.randn(32, 32, device=DEVICE) / 8
    out, programs = _run(layers, (x, w), tmp_path)
    torch.testing.assert_close(out, layers(x, w), rtol=1e-4, atol=1e-4)
    functions = _jit_functions(programs)
    assert len(functions) >= 3 and len(set(functions)) < len(functions)


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("compute_lse", [False, True])
def test_memory_efficient_attention_op(causal, compute_lse):
    """aten._scaled_dot_product_efficient_attention, what a GPU's SDPA becomes in fp32
    (inference graphs ask for no logsumexp: an empty one, which failed to import and sent
    eval-mode SDPA to eager on a GPU); the op's graph traced on CPU fakes, compiled for the CPU
    and compared with SDPA's math and the logsumexp (padded to 32 queries)."""
    import torch.nn.functional as F
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.fx.experimental.proxy_tensor import make_fx

    from lamina.backend.compile_fx import compile_fx
    from lamina.backend.options import Options

    op = torch.ops.aten._scaled_dot_product_efficient_attention.default
    with FakeTensorMode():
        fakes = [torch.empty(2, 3, 9, 16) for _ in range(3)]
        gm = make_fx(lambda q, k, v: tuple(op(q, k, v, None, compute_lse, is_causal=causal)[:2]),
                     tracing_mode="real")(*fakes)
    q, k, v = (torch.randn(2, 3, 9, 16) for _ in range(3))
    out, lse = compile_fx(gm, [q, k, v], Options(strict=True, target="cpu"))(q, k, v)
    torch.testing.assert_close(out, F.scaled_dot_product_attention(q, k, v, is_causal=causal), rtol=1e-5, atol=1e-5)
    assert lse.shape == ((2, 3, 32) if compute_lse else (2, 3, 0))
    if compute_lse:
        s = q @ k.transpose(-1, -2) / 4
        if causal:
            s = s.masked_fill(torch.ones(9, 9, dtype=torch.bool).triu(1), float("-inf"))
        torch.testing.assert_close(lse[..., :9], torch.logsumexp(s, -1), rtol=1e-5, atol=1e-5)
        assert torch.all(lse[..., 9:] == 0)
