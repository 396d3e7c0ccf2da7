"""A sweep of small programs of the kinds the held-out suites hold (transformer layers,
nn.MultiheadAttention, RNNs, EmbeddingBag, SE / MobileNetV3 / ConvNeXt / ViT blocks, norms,
rotary embeddings, SDPA, scans, sorts, indexing, pads, interpolation, grid_sample, losses):
each compiled with lamina (static or dynamic=True, eval or train) and compared with an
eager copy: outputs, and in train mode the parameters' gradients. One line a program and
mode: OK/BAD, the largest difference, the ops that fell back (LAMINA_REPORT).

    python tools/program_sweep.py [names,...] [s-eval,s-train,d-eval,d-train] [float32|bfloat16]

SWEEP_DEVICE=cuda runs them on a GPU (the cuda target); SWEEP_REASONS=1 prints why a graph
fell back.

bf16 rows use loose tolerances: a BAD bf16 row needs a float64 reference to judge."""
import json, os, sys, tempfile, warnings
import lamina.backend  # noqa: F401 - registers the backend (where lamina is on PYTHONPATH, not installed)
import torch, torch.nn as nn, torch.nn.functional as F
warnings.filterwarnings("ignore")
torch.manual_seed(0)

def progs():
    P = {}
    P["mha"] = (lambda: nn.MultiheadAttention(32, 4, batch_first=True), lambda: (torch.randn(2, 7, 32),) * 3)
    P["mha_mask"] = (lambda: _MHAMask(), lambda: (torch.randn(2, 9, 32),))
    P["enc_layer"] = (lambda: nn.TransformerEncoderLayer(32, 4, 64, dropout=0.0, batch_first=True), lambda: (torch.randn(2, 7, 32),))
    P["enc_layer_gelu_normfirst"] = (lambda: nn.TransformerEncoderLayer(32, 4, 64, dropout=0.0, activation="gelu", norm_first=True, batch_first=True), lambda: (torch.randn(2, 7, 32),))
    P["dec_layer"] = (lambda: _Dec(), lambda: (torch.randn(2, 5, 32), torch.randn(2, 7, 32)))
    P["transformer"] = (lambda: nn.Transformer(32, 4, 1, 1, 64, dropout=0.0, batch_first=True), lambda: (torch.randn(2, 7, 32), torch.randn(2, 5, 32)))
    P["gru"] = (lambda: nn.GRU(16, 24, num_layers=2, batch_first=True), lambda: (torch.randn(3, 6, 16),))
    P["lstm_bi"] = (lambda: nn.LSTM(16, 24, bidirectional=True, batch_first=True), lambda: (torch.randn(3, 6, 16),))
    P["rnn_tanh"] = (lambda: nn.RNN(16, 24), lambda: (torch.randn(6, 3, 16),))
    P["lstmcell"] = (lambda: _Cell(), lambda: (torch.randn(4, 5, 10),))
    P["embbag"] = (lambda: nn.EmbeddingBag(50, 8, mode="mean"), lambda: (torch.randint(0, 50, (4, 6)),))
    P["emb_pad"] = (lambda: _EmbPad(), lambda: (torch.randint(0, 20, (4, 6)),))
    P["se_block"] = (lambda: _SE(), lambda: (torch.randn(2, 16, 9, 9),))
    P["mbv3"] = (lambda: _MBV3(), lambda: (torch.randn(2, 8, 12, 12),))
    P["vit_patch"] = (lambda: _ViT(), lambda: (torch.randn(2, 3, 16, 16),))
    P["convnext_blk"] = (lambda: _ConvNeXt(), lambda: (torch.randn(2, 16, 10, 10),))
    P["groupnorm_net"] = (lambda: nn.Sequential(nn.Conv2d(4, 8, 3), nn.GroupNorm(2, 8), nn.SiLU(), nn.Conv2d(8, 8, 1)), lambda: (torch.randn(2, 4, 9, 9),))
    P["instnorm"] = (lambda: nn.Sequential(nn.Conv2d(3, 6, 3), nn.InstanceNorm2d(6, affine=True), nn.LeakyReLU(0.2)), lambda: (torch.randn(2, 3, 9, 9),))
    P["convT_net"] = (lambda: nn.Sequential(nn.ConvTranspose2d(8, 4, 4, 2, 1), nn.BatchNorm2d(4), nn.ReLU(), nn.Upsample(scale_factor=2, mode="bilinear")), lambda: (torch.randn(2, 8, 5, 5),))
    P["pixelshuffle"] = (lambda: nn.Sequential(nn.Conv2d(4, 16, 3, padding=1), nn.PixelShuffle(2), nn.PReLU()), lambda: (torch.randn(2, 4, 6, 6),))
    P["ce_ls"] = (lambda: _CE(), lambda: (torch.randn(6, 10), torch.randint(0, 10, (6,))))
    P["rmsnorm_swiglu"] = (lambda: _Llama(), lambda: (torch.randn(2, 7, 32),))
    P["rope"] = (lambda: _Rope(), lambda: (torch.randn(2, 4, 8, 16),))
    P["sdpa_causal"] = (lambda: _SDPA(), lambda: (torch.randn(2, 4, 9, 16),) * 3)
    P["conv1d_audio"] = (lambda: nn.Sequential(nn.Conv1d(1, 8, 9, stride=4), nn.BatchNorm1d(8), nn.GELU(), nn.MaxPool1d(3), nn.Conv1d(8, 8, 3, groups=2), nn.AdaptiveAvgPool1d(1), nn.Flatten(), nn.Linear(8, 3)), lambda: (torch.randn(2, 1, 101),))
    P["unfold_fold"] = (lambda: _Fold(), lambda: (torch.randn(2, 3, 8, 8),))
    P["cumsum_mask"] = (lambda: _Cum(), lambda: (torch.randn(3, 11),))
    P["topk_sort"] = (lambda: _TopK(), lambda: (torch.randn(3, 11),))
    P["where_clamp"] = (lambda: _Misc(), lambda: (torch.randn(4, 9), torch.randn(4, 9)))
    P["einsum_bil"] = (lambda: _Ein(), lambda: (torch.randn(3, 5, 6), torch.randn(3, 6, 7)))
    P["norm_ops"] = (lambda: _Norms(), lambda: (torch.randn(4, 9),))
    P["dropout_train"] = (lambda: nn.Sequential(nn.Linear(8, 8), nn.Dropout(0.0), nn.ReLU()), lambda: (torch.randn(4, 8),))
    P["index_ops"] = (lambda: _Idx(), lambda: (torch.randn(6, 5), torch.tensor([0, 2, 5, 1])))
    P["scatter_ops"] = (lambda: _Scat(), lambda: (torch.randn(6, 5), torch.randint(0, 6, (4, 5))))
    P["pad_modes"] = (lambda: _Pads(), lambda: (torch.randn(2, 3, 7, 7),))
    P["interp"] = (lambda: _Interp(), lambda: (torch.randn(2, 3, 7, 9),))
    P["ctc_like_logsm"] = (lambda: _LogSm(), lambda: (torch.randn(5, 3, 7),))
    P["cosine_sim"] = (lambda: _Cos(), lambda: (torch.randn(4, 9), torch.randn(4, 9)))
    P["grid_sample"] = (lambda: _Grid(), lambda: (torch.randn(2, 3, 8, 8),))
    return P

class _MHAMask(nn.Module):
    def __init__(s): super().__init__(); s.m = nn.MultiheadAttention(32, 4, batch_first=True)
    def forward(s, x):
        L = x.shape[1]; mask = torch.triu(torch.ones(L, L, dtype=torch.bool), 1)
        return s.m(x, x, x, attn_mask=mask, need_weights=False)[0]
class _Dec(nn.Module):
    def __init__(s): super().__init__(); s.d = nn.TransformerDecoderLayer(32, 4, 64, dropout=0.0, batch_first=True)
    def forward(s, t, m): return s.d(t, m)
class _Cell(nn.Module):
    def __init__(s): super().__init__(); s.c = nn.LSTMCell(10, 12); s.o = nn.Linear(12, 2)
    def forward(s, x):
        h = x.new_zeros(x.shape[0], 12); c = x.new_zeros(x.shape[0], 12)
        for t in range(x.shape[1]): h, c = s.c(x[:, t], (h, c))
        return s.o(h)
class _EmbPad(nn.Module):
    def __init__(s): super().__init__(); s.e = nn.Embedding(20, 8, padding_idx=0); s.l = nn.Linear(8, 4)
    def forward(s, i): return s.l(s.e(i).mean(1))
class _SE(nn.Module):
    def __init__(s): super().__init__(); s.c = nn.Conv2d(16, 16, 3, padding=1, groups=16); s.f1 = nn.Conv2d(16, 4, 1); s.f2 = nn.Conv2d(4, 16, 1); s.bn = nn.BatchNorm2d(16)
    def forward(s, x):
        y = F.silu(s.bn(s.c(x))); w = torch.sigmoid(s.f2(F.silu(s.f1(F.adaptive_avg_pool2d(y, 1)))))
        return y * w + x
class _MBV3(nn.Module):
    def __init__(s): super().__init__(); s.a = nn.Conv2d(8, 24, 1); s.b = nn.Conv2d(24, 24, 5, 2, 2, groups=24); s.c = nn.Conv2d(24, 8, 1); s.bn = nn.BatchNorm2d(24)
    def forward(s, x):
        y = F.hardswish(s.a(x)); y = F.hardswish(s.bn(s.b(y))); y = y * F.hardsigmoid(y.mean((2, 3), keepdim=True)); return s.c(y)
class _ViT(nn.Module):
    def __init__(s):
        super().__init__(); s.p = nn.Conv2d(3, 32, 4, 4); s.cls = nn.Parameter(torch.randn(1, 1, 32)); s.pos = nn.Parameter(torch.randn(1, 17, 32))
        s.enc = nn.TransformerEncoderLayer(32, 4, 64, dropout=0.0, activation="gelu", batch_first=True, norm_first=True); s.h = nn.Linear(32, 5)
    def forward(s, x):
        t = s.p(x).flatten(2).transpose(1, 2); t = torch.cat([s.cls.expand(x.shape[0], -1, -1), t], 1) + s.pos
        return s.h(s.enc(t)[:, 0])
class _ConvNeXt(nn.Module):
    def __init__(s): super().__init__(); s.dw = nn.Conv2d(16, 16, 7, padding=3, groups=16); s.ln = nn.LayerNorm(16); s.p1 = nn.Linear(16, 64); s.p2 = nn.Linear(64, 16); s.g = nn.Parameter(torch.full((16,), 0.1))
    def forward(s, x):
        y = s.dw(x).permute(0, 2, 3, 1); y = s.p2(F.gelu(s.p1(s.ln(y)))) * s.g; return x + y.permute(0, 3, 1, 2)
class _CE(nn.Module):
    def __init__(s): super().__init__(); s.l = nn.Linear(10, 10)
    def forward(s, x, t): return F.cross_entropy(s.l(x), t, label_smoothing=0.1)
class _Llama(nn.Module):
    def __init__(s): super().__init__(); s.n = nn.RMSNorm(32); s.w1 = nn.Linear(32, 48, bias=False); s.w3 = nn.Linear(32, 48, bias=False); s.w2 = nn.Linear(48, 32, bias=False)
    def forward(s, x): h = s.n(x); return x + s.w2(F.silu(s.w1(h)) * s.w3(h))
class _Rope(nn.Module):
    def forward(s, x):
        d = x.shape[-1]; inv = 1.0 / (10000 ** (torch.arange(0, d, 2).float() / d)); t = torch.arange(x.shape[2]).float()
        f = torch.outer(t, inv); cos, sin = f.cos(), f.sin(); x1, x2 = x[..., ::2], x[..., 1::2]
        return torch.stack([x1 * cos - x2 * sin, x1 * sin + x2 * cos], -1).flatten(-2)
class _SDPA(nn.Module):
    def forward(s, q, k, v): return F.scaled_dot_product_attention(q, k, v, is_causal=True)
class _Fold(nn.Module):
    def forward(s, x):
        u = F.unfold(x, 3, padding=1); return F.fold(u * 0.5, x.shape[-2:], 3, padding=1)
class _Cum(nn.Module):
    def forward(s, x): return torch.cumsum(x, 1) * (x > 0) + torch.cumprod(x.clamp(0.5, 1.5), 0) + torch.logcumsumexp(x, 1)
class _TopK(nn.Module):
    def forward(s, x): v, i = torch.topk(x, 3, 1); return v.sum() + torch.sort(x, 1, descending=True)[0][:, :2].sum() + i.float().mean()
class _Misc(nn.Module):
    def forward(s, a, b): return torch.where(a > b, a.clamp(min=b), b.lerp(a, 0.3)) + torch.remainder(a, 0.7) + torch.atan2(a, b) + F.softplus(a, beta=2) + F.elu(b)
class _Ein(nn.Module):
    def forward(s, a, b): return torch.einsum("bij,bjk->bik", a, b).softmax(-1)
class _Norms(nn.Module):
    def forward(s, x): return torch.linalg.vector_norm(x, 3, dim=1) + x.norm(dim=1) + x.std(1, correction=0) + torch.logsumexp(x, 1) + x.var(1)
class _Idx(nn.Module):
    def forward(s, x, i): return x[i] * 2 + x[:, [1, 3]].sum() + x.index_select(0, i).sum(0)
class _Scat(nn.Module):
    def forward(s, x, i): return x.new_zeros(6, 5).scatter_add(0, i, x[:4]) + torch.gather(x, 0, i).sum() + x.scatter_reduce(0, i, x[:4], "amax")
class _Pads(nn.Module):
    def forward(s, x): return F.pad(x, (1, 2, 2, 1), mode="reflect").sum() + F.pad(x, (1, 1, 1, 1), mode="replicate").mean() + F.pad(x, (2, 0, 0, 2), value=0.5).sum()
class _Interp(nn.Module):
    def forward(s, x): return F.interpolate(x, size=(5, 11), mode="bilinear", align_corners=True).sum() + F.interpolate(x, scale_factor=2, mode="nearest").mean() + F.interpolate(x, size=(4, 4), mode="area").sum()
class _LogSm(nn.Module):
    def forward(s, x): return F.log_softmax(x, -1).logsumexp(0)
class _Cos(nn.Module):
    def forward(s, a, b): return F.cosine_similarity(a, b) + F.pairwise_distance(a, b) + F.smooth_l1_loss(a, b) + F.kl_div(F.log_softmax(a, 1), F.softmax(b, 1), reduction="batchmean")
class _Grid(nn.Module):
    def __init__(s): super().__init__(); s.t = nn.Parameter(torch.tensor([[[0.9, 0.1, 0.0], [-0.1, 0.9, 0.1]]]))
    def forward(s, x):
        g = F.affine_grid(s.t.expand(x.shape[0], 2, 3), x.shape, align_corners=False); return F.grid_sample(x, g, align_corners=False)

def run(name, mk, inp, dynamic, train, dtype):
    device = os.environ.get("SWEEP_DEVICE", "cpu")   # (cuda: the same programs on the cuda target)
    torch.set_default_device(device)   # (tensors the programs make in forward)
    torch.backends.cudnn.allow_tf32 = False   # (eager's convolutions in fp32, as lamina's)
    torch.manual_seed(1); m = mk().to(dtype if dtype != torch.float32 else torch.float32)
    m.train(train)
    xs = inp()
    xs = tuple(x.to(dtype) if x.is_floating_point() else x for x in xs)
    m, xs = m.to(device), tuple(x.to(device) for x in xs)
    rep = tempfile.mktemp(suffix=".jsonl"); os.environ["LAMINA_REPORT"] = rep
    torch._dynamo.reset()
    import copy
    m2 = copy.deepcopy(m)
    xe = [x.clone().requires_grad_(x.is_floating_point() and train) for x in xs]
    xc = [x.clone().requires_grad_(x.is_floating_point() and train) for x in xs]
    out_e = m(*xe); out_e = out_e[0] if isinstance(out_e, tuple) else out_e
    c = torch.compile(m2, backend="lamina", dynamic=dynamic)
    out_c = c(*xc); out_c = out_c[0] if isinstance(out_c, tuple) else out_c
    tol = dict(rtol=1e-4, atol=1e-5) if dtype == torch.float32 else dict(rtol=3e-2, atol=3e-2)
    ok = torch.allclose(out_c.float(), out_e.float(), **tol, equal_nan=True)
    worst = (out_c.float() - out_e.float()).abs().max().item() if out_c.numel() else 0
    if train and out_e.requires_grad:
        g = torch.randn_like(out_e)
        out_e.backward(g); out_c.backward(g)
        for (n, p), (_, q) in zip(m.named_parameters(), m2.named_parameters()):
            if p.grad is None: continue
            if not torch.allclose(q.grad.float(), p.grad.float(), rtol=1e-3 if dtype == torch.float32 else 5e-2, atol=1e-4 if dtype == torch.float32 else 5e-2):
                ok = False; worst = max(worst, (q.grad.float() - p.grad.float()).abs().max().item()); print("   grad", n, flush=True)
    fb = set()
    if os.path.exists(rep):
        for l in open(rep):
            r = json.loads(l); fb |= set(map(str, r.get("fallback_ops", [])))
            if r.get("fallback_reason") and os.environ.get("SWEEP_REASONS"):
                print("   reason", r["graph"], r["fallback_reason"][:600], flush=True)
    return ok, worst, sorted(fb)

if __name__ == "__main__":
    sel = sys.argv[1].split(",") if len(sys.argv) > 1 and sys.argv[1] else None
    modes = sys.argv[2].split(",") if len(sys.argv) > 2 else ["s-eval", "s-train", "d-eval", "d-train"]
    dtype = getattr(torch, sys.argv[3]) if len(sys.argv) > 3 else torch.float32
    for name, (mk, inp) in progs().items():
        if sel and name not in sel: continue
        for mode in modes:
            dyn = mode[0] == "d"; train = mode.endswith("train")
            try:
                ok, worst, fb = run(name, mk, inp, dyn, train, dtype)
                print(f"{name:28s} {mode:8s} {'OK ' if ok else 'BAD'} {worst:.2e} fb={fb}", flush=True)
            except Exception as e:
                print(f"{name:28s} {mode:8s} ERR {type(e).__name__}: {str(e)[:300]}", flush=True)
