"""A second sweep of held-out-style programs (tools/program_sweep.py's runner): pieces of
the networks people compile: Swin, T5, LLaMA (complex RoPE), MoE gating, U-Net, DenseNet,
ShuffleNet, BERT, GPT-2, WaveNet, SqueezeNet, Inception, CLIP, MLP-Mixer, PointNet, GCN,
NeRF, DETR, YOLO heads, ALiBi, KV caches, ConvLSTM, StyleGAN's modulated convolution.

    python tools/network_sweep.py [names,...] [s-eval,s-train,d-eval,d-train] [float32|bfloat16]
"""
import math
import os
import sys
import warnings

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(__file__))
from program_sweep import run  # noqa: E402

warnings.filterwarnings("ignore")


class Swin(nn.Module):
    def __init__(s, dim=16, heads=2, win=4, shift=2):
        super().__init__()
        s.win, s.shift, s.heads = win, shift, heads
        s.norm1, s.norm2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        s.qkv, s.proj = nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)
        s.mlp = nn.Sequential(nn.Linear(dim, 2 * dim), nn.GELU(), nn.Linear(2 * dim, dim))
        s.table = nn.Parameter(torch.randn((2 * win - 1) ** 2, heads) * 0.02)
        c = torch.stack(torch.meshgrid(torch.arange(win), torch.arange(win), indexing="ij")).flatten(1)
        rel = (c[:, :, None] - c[:, None, :]).permute(1, 2, 0) + (win - 1)
        s.register_buffer("index", rel[..., 0] * (2 * win - 1) + rel[..., 1])

    def forward(s, x):   # x: B, H, W, C
        B, H, W, C = x.shape
        y = torch.roll(s.norm1(x), (-s.shift, -s.shift), (1, 2))
        w = s.win
        y = y.view(B, H // w, w, W // w, w, C).permute(0, 1, 3, 2, 4, 5).reshape(-1, w * w, C)
        q, k, v = s.qkv(y).reshape(y.shape[0], w * w, 3, s.heads, C // s.heads).permute(2, 0, 3, 1, 4)
        a = (q * (C // s.heads) ** -0.5) @ k.transpose(-2, -1)
        a = a + s.table[s.index.view(-1)].view(w * w, w * w, -1).permute(2, 0, 1)
        y = (a.softmax(-1) @ v).transpose(1, 2).reshape(-1, w * w, C)
        y = s.proj(y).view(B, H // w, W // w, w, w, C).permute(0, 1, 3, 2, 4, 5).reshape(B, H, W, C)
        x = x + torch.roll(y, (s.shift, s.shift), (1, 2))
        return x + s.mlp(s.norm2(x))


class T5RelBias(nn.Module):
    def __init__(s, heads=4, buckets=8, max_distance=16):
        super().__init__()
        s.emb, s.buckets, s.max_distance = nn.Embedding(buckets, heads), buckets, max_distance

    def forward(s, scores):   # B, heads, Q, K
        q, k = scores.shape[-2:]
        rel = torch.arange(k)[None, :] - torch.arange(q)[:, None]
        n = s.buckets // 2
        ret = (rel > 0).long() * n
        rel = rel.abs()
        exact = n // 2
        large = exact + (torch.log(rel.float() / exact) / math.log(s.max_distance / exact) * (n - exact)).long()
        large = torch.min(large, torch.full_like(large, n - 1))
        bucket = ret + torch.where(rel < exact, rel, large)
        return (scores + s.emb(bucket).permute(2, 0, 1)[None]).softmax(-1)


class LlamaRope(nn.Module):
    def __init__(s, dim=16, seq=32):
        super().__init__()
        freqs = 1.0 / (10000 ** (torch.arange(0, dim, 2)[: dim // 2].float() / dim))
        s.register_buffer("cis", torch.polar(torch.ones(seq, dim // 2), torch.outer(torch.arange(seq).float(), freqs)))
        s.wq = nn.Linear(dim, dim, bias=False)

    def forward(s, x):   # B, T, H, D
        x = s.wq(x)
        xc = torch.view_as_complex(x.float().reshape(*x.shape[:-1], -1, 2))
        out = torch.view_as_real(xc * s.cis[: x.shape[1]].view(1, x.shape[1], 1, -1)).flatten(3)
        return out.type_as(x)


class MoE(nn.Module):
    def __init__(s, dim=16, experts=4, k=2):
        super().__init__()
        s.router, s.k = nn.Linear(dim, experts), k
        s.w1 = nn.Parameter(torch.randn(experts, dim, 32) * 0.1)
        s.w2 = nn.Parameter(torch.randn(experts, 32, dim) * 0.1)

    def forward(s, x):   # N, dim
        probs = s.router(x).softmax(-1)
        top, idx = probs.topk(s.k, -1)
        gates = torch.zeros_like(probs).scatter(-1, idx, top / top.sum(-1, keepdim=True))
        h = F.silu(torch.einsum("nd,edh->neh", x, s.w1))
        y = torch.einsum("neh,ehd->ned", h, s.w2)
        aux = (probs.mean(0) * F.one_hot(idx[:, 0], probs.shape[-1]).float().mean(0)).sum()
        return (gates.unsqueeze(-1) * y).sum(1) + aux


class UNet(nn.Module):
    def __init__(s):
        super().__init__()
        s.d1 = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU())
        s.d2 = nn.Sequential(nn.MaxPool2d(2), nn.Conv2d(8, 16, 3, padding=1), nn.ReLU())
        s.up = nn.ConvTranspose2d(16, 8, 2, stride=2)
        s.out = nn.Conv2d(16, 2, 1)

    def forward(s, x):
        a = s.d1(x)
        return s.out(torch.cat([a, s.up(s.d2(a))], 1))


class Dense(nn.Module):
    def __init__(s, c=8, growth=4, layers=3):
        super().__init__()
        s.layers = nn.ModuleList(nn.Sequential(nn.BatchNorm2d(c + i * growth), nn.ReLU(),
                                               nn.Conv2d(c + i * growth, growth, 3, padding=1, bias=False))
                                 for i in range(layers))
        s.trans = nn.Sequential(nn.Conv2d(c + layers * growth, 8, 1), nn.AvgPool2d(2))

    def forward(s, x):
        feats = [x]
        for layer in s.layers:
            feats.append(layer(torch.cat(feats, 1)))
        return s.trans(torch.cat(feats, 1))


class Shuffle(nn.Module):
    def __init__(s, c=16):
        super().__init__()
        s.branch = nn.Sequential(nn.Conv2d(c // 2, c // 2, 1), nn.BatchNorm2d(c // 2), nn.ReLU(),
                                 nn.Conv2d(c // 2, c // 2, 3, padding=1, groups=c // 2), nn.BatchNorm2d(c // 2),
                                 nn.Conv2d(c // 2, c // 2, 1), nn.ReLU())

    def forward(s, x):
        a, b = x.chunk(2, 1)
        y = torch.cat([a, s.branch(b)], 1)
        B, C, H, W = y.shape
        return y.view(B, 2, C // 2, H, W).transpose(1, 2).reshape(B, C, H, W)


class Bert(nn.Module):
    def __init__(s, vocab=50, dim=32, heads=4):
        super().__init__()
        s.word, s.pos, s.typ = nn.Embedding(vocab, dim), nn.Embedding(64, dim), nn.Embedding(2, dim)
        s.ln, s.heads = nn.LayerNorm(dim, eps=1e-12), heads
        s.qkv, s.o = nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)
        s.register_buffer("position_ids", torch.arange(64).expand(1, -1))

    def forward(s, ids, mask):
        B, T = ids.shape
        x = s.ln(s.word(ids) + s.pos(s.position_ids[:, :T]) + s.typ(torch.zeros_like(ids)))
        ext = (1.0 - mask[:, None, None, :].to(x.dtype)) * torch.finfo(x.dtype).min
        q, k, v = s.qkv(x).view(B, T, 3, s.heads, -1).permute(2, 0, 3, 1, 4)
        a = (q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1]) + ext).softmax(-1)
        return s.o((a @ v).transpose(1, 2).reshape(B, T, -1)) + x


class GPT2(nn.Module):
    def __init__(s, dim=32, heads=4, ctx=16):
        super().__init__()
        s.ln1, s.ln2, s.heads = nn.LayerNorm(dim), nn.LayerNorm(dim), heads
        s.c_attn_w, s.c_attn_b = nn.Parameter(torch.randn(dim, 3 * dim) * 0.02), nn.Parameter(torch.zeros(3 * dim))
        s.c_fc, s.c_proj = nn.Linear(dim, 4 * dim), nn.Linear(4 * dim, dim)
        s.register_buffer("bias", torch.tril(torch.ones(ctx, ctx, dtype=torch.bool)).view(1, 1, ctx, ctx))

    def forward(s, x):
        B, T, C = x.shape
        qkv = torch.addmm(s.c_attn_b, s.ln1(x).view(-1, C), s.c_attn_w).view(B, T, 3 * C)
        q, k, v = qkv.split(C, 2)
        q, k, v = (t.view(B, T, s.heads, -1).transpose(1, 2) for t in (q, k, v))
        w = q @ k.transpose(-1, -2) / math.sqrt(v.shape[-1])
        w = torch.where(s.bias[:, :, :T, :T], w, torch.tensor(torch.finfo(w.dtype).min, dtype=w.dtype))
        x = x + (w.softmax(-1) @ v).transpose(1, 2).reshape(B, T, C)
        h = s.c_fc(s.ln2(x))
        h = 0.5 * h * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (h + 0.044715 * torch.pow(h, 3.0))))
        return x + s.c_proj(h)


class WaveNet(nn.Module):
    def __init__(s, c=8, dilations=(1, 2, 4)):
        super().__init__()
        s.dil = dilations
        s.filt = nn.ModuleList(nn.Conv1d(c, c, 2, dilation=d) for d in dilations)
        s.gate = nn.ModuleList(nn.Conv1d(c, c, 2, dilation=d) for d in dilations)
        s.res = nn.ModuleList(nn.Conv1d(c, c, 1) for _ in dilations)

    def forward(s, x):
        skip = 0
        for d, f, g, r in zip(s.dil, s.filt, s.gate, s.res):
            p = F.pad(x, (d, 0))
            z = torch.tanh(f(p)) * torch.sigmoid(g(p))
            skip = skip + z
            x = x + r(z)
        return F.relu(skip)


class Fire(nn.Module):
    def __init__(s):
        super().__init__()
        s.pool = nn.MaxPool2d(3, 2, ceil_mode=True)
        s.sq, s.e1, s.e3 = nn.Conv2d(8, 4, 1), nn.Conv2d(4, 8, 1), nn.Conv2d(4, 8, 3, padding=1)

    def forward(s, x):
        x = F.relu(s.sq(s.pool(x)))
        return torch.cat([F.relu(s.e1(x)), F.relu(s.e3(x))], 1)


class Inception(nn.Module):
    def __init__(s):
        super().__init__()
        s.b1 = nn.Conv2d(8, 4, 1)
        s.b2 = nn.Sequential(nn.Conv2d(8, 4, 1), nn.Conv2d(4, 4, (1, 3), padding=(0, 1)), nn.Conv2d(4, 4, (3, 1), padding=(1, 0)))
        s.b3 = nn.Sequential(nn.AvgPool2d(3, 1, 1, count_include_pad=False), nn.Conv2d(8, 4, 1))
        s.b4 = nn.Sequential(nn.MaxPool2d(3, 1, 1), nn.Conv2d(8, 4, 1))

    def forward(s, x):
        return F.relu(torch.cat([s.b1(x), s.b2(x), s.b3(x), s.b4(x)], 1))


class Clip(nn.Module):
    def __init__(s):
        super().__init__()
        s.img, s.txt = nn.Linear(24, 16), nn.Linear(12, 16)
        s.logit_scale = nn.Parameter(torch.tensor(math.log(1 / 0.07)))

    def forward(s, a, b):
        ia, tb = F.normalize(s.img(a), dim=-1), F.normalize(s.txt(b), dim=-1)
        logits = s.logit_scale.exp() * ia @ tb.t()
        labels = torch.arange(a.shape[0])
        return (F.cross_entropy(logits, labels) + F.cross_entropy(logits.t(), labels)) / 2


class Mixer(nn.Module):
    def __init__(s, tokens=9, dim=16):
        super().__init__()
        s.ln1, s.ln2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        s.tok = nn.Sequential(nn.Linear(tokens, 18), nn.GELU(), nn.Linear(18, tokens))
        s.ch = nn.Sequential(nn.Linear(dim, 32), nn.GELU(), nn.Linear(32, dim))

    def forward(s, x):
        x = x + s.tok(s.ln1(x).transpose(1, 2)).transpose(1, 2)
        return x + s.ch(s.ln2(x))


class PointNet(nn.Module):
    def __init__(s):
        super().__init__()
        s.t = nn.Sequential(nn.Conv1d(3, 16, 1), nn.BatchNorm1d(16), nn.ReLU())
        s.fc = nn.Linear(16, 9)
        s.feat = nn.Sequential(nn.Conv1d(3, 32, 1), nn.ReLU(), nn.Conv1d(32, 32, 1))

    def forward(s, pts):   # B, 3, N
        m = s.fc(torch.max(s.t(pts), 2)[0]).view(-1, 3, 3) + torch.eye(3)
        x = torch.bmm(pts.transpose(2, 1), m).transpose(2, 1)
        return torch.max(s.feat(x), 2, keepdim=True)[0].flatten(1)


class GCN(nn.Module):
    def __init__(s):
        super().__init__()
        s.l1, s.l2 = nn.Linear(8, 16), nn.Linear(16, 4)

    def forward(s, x, adj):
        a = adj + torch.eye(adj.shape[0])
        d = a.sum(1).pow(-0.5)
        d = torch.where(torch.isinf(d), torch.zeros_like(d), d)
        norm = d[:, None] * a * d[None, :]
        return F.log_softmax(norm @ s.l2(F.relu(norm @ s.l1(x))), -1)


class NeRF(nn.Module):
    def __init__(s, freqs=6):
        super().__init__()
        s.register_buffer("bands", 2.0 ** torch.arange(freqs) * math.pi)
        s.mlp = nn.Sequential(nn.Linear(3 + 3 * 2 * freqs, 32), nn.ReLU(), nn.Linear(32, 4))

    def forward(s, x):
        xb = (x[..., None] * s.bands).flatten(-2)
        out = s.mlp(torch.cat([x, torch.sin(xb), torch.cos(xb)], -1))
        return torch.cat([torch.sigmoid(out[..., :3]), F.softplus(out[..., 3:])], -1)


class DetrPos(nn.Module):
    def __init__(s, feats=8, temperature=10000):
        super().__init__()
        s.feats, s.t = feats, temperature
        s.proj = nn.Conv2d(2 * feats, 8, 1)

    def forward(s, mask):   # B, H, W bool: padded pixels
        notm = (~mask).float()
        y, x = notm.cumsum(1), notm.cumsum(2)
        y = y / (y[:, -1:, :] + 1e-6) * 2 * math.pi
        x = x / (x[:, :, -1:] + 1e-6) * 2 * math.pi
        dim_t = s.t ** (2 * (torch.arange(s.feats) // 2) / s.feats)
        px, py = x[..., None] / dim_t, y[..., None] / dim_t
        px = torch.stack((px[..., 0::2].sin(), px[..., 1::2].cos()), 4).flatten(3)
        py = torch.stack((py[..., 0::2].sin(), py[..., 1::2].cos()), 4).flatten(3)
        return s.proj(torch.cat((py, px), 3).permute(0, 3, 1, 2))


class Yolo(nn.Module):
    def __init__(s, anchors=3, classes=4):
        super().__init__()
        s.na, s.no = anchors, classes + 5
        s.conv = nn.Conv2d(8, anchors * (classes + 5), 1)
        s.register_buffer("anchor_wh", torch.tensor([[10.0, 13.0], [16.0, 30.0], [33.0, 23.0]]).view(1, 3, 1, 1, 2))

    def forward(s, x):
        B, _, H, W = x.shape
        p = s.conv(x).view(B, s.na, s.no, H, W).permute(0, 1, 3, 4, 2)
        gy, gx = torch.meshgrid(torch.arange(H), torch.arange(W), indexing="ij")
        grid = torch.stack((gx, gy), 2).view(1, 1, H, W, 2).float()
        xy = (p[..., :2].sigmoid() * 2 - 0.5 + grid) * 8
        wh = (p[..., 2:4].sigmoid() * 2) ** 2 * s.anchor_wh
        return torch.cat((xy, wh, p[..., 4:].sigmoid()), -1).view(B, -1, s.no)


class Alibi(nn.Module):
    def __init__(s, heads=4, dim=32):
        super().__init__()
        s.heads, s.qkv = heads, nn.Linear(dim, 3 * dim)
        s.register_buffer("slopes", torch.tensor([2 ** (-8 * (i + 1) / heads) for i in range(heads)]))

    def forward(s, x):
        B, T, C = x.shape
        q, k, v = s.qkv(x).view(B, T, 3, s.heads, -1).permute(2, 0, 3, 1, 4)
        pos = torch.arange(T)
        bias = (pos[None, :] - pos[:, None]).float()[None] * s.slopes[:, None, None]
        causal = torch.ones(T, T, dtype=torch.bool).triu(1)
        a = (q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1]) + bias).masked_fill(causal, float("-inf"))
        return (a.softmax(-1) @ v).transpose(1, 2).reshape(B, T, C)


class KVCache(nn.Module):
    """Decoding step: the new keys/values written into cache buffers in place, attention over
    the filled prefix (a graph that mutates module buffers)."""
    def __init__(s, dim=16, heads=2, max_len=12, start=5):
        super().__init__()
        s.heads, s.start = heads, start
        s.qkv = nn.Linear(dim, 3 * dim)
        s.register_buffer("k_cache", torch.randn(2, heads, max_len, dim // heads))
        s.register_buffer("v_cache", torch.randn(2, heads, max_len, dim // heads))

    def forward(s, x):   # 2, T, dim
        B, T, C = x.shape
        q, k, v = s.qkv(x).view(B, T, 3, s.heads, -1).permute(2, 0, 3, 1, 4)
        with torch.no_grad():
            s.k_cache[:, :, s.start:s.start + T] = k
            s.v_cache.index_copy_(2, torch.arange(s.start, s.start + T), v)
        keys, vals = s.k_cache[:, :, :s.start + T], s.v_cache[:, :, :s.start + T]
        return F.scaled_dot_product_attention(q, keys, vals).transpose(1, 2).reshape(B, T, C)


class ConvLSTM(nn.Module):
    def __init__(s, c=4, hidden=8):
        super().__init__()
        s.hidden = hidden
        s.conv = nn.Conv2d(c + hidden, 4 * hidden, 3, padding=1)

    def forward(s, xs):   # B, T, C, H, W
        B, T, C, H, W = xs.shape
        h = c = xs.new_zeros(B, s.hidden, H, W)
        for t in range(T):
            i, f, o, g = s.conv(torch.cat([xs[:, t], h], 1)).chunk(4, 1)
            c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
            h = torch.sigmoid(o) * torch.tanh(c)
        return h


class ModConv(nn.Module):
    """StyleGAN2's modulated convolution: per-sample weights, demodulated, as one grouped
    convolution over the batch."""
    def __init__(s, cin=4, cout=6, style=8):
        super().__init__()
        s.weight = nn.Parameter(torch.randn(cout, cin, 3, 3))
        s.affine = nn.Linear(style, cin)

    def forward(s, x, w):
        B, C, H, W = x.shape
        st = s.affine(w) + 1
        wt = s.weight[None] * st[:, None, :, None, None]
        wt = wt * torch.rsqrt(wt.pow(2).sum([2, 3, 4], keepdim=True) + 1e-8)
        out = F.conv2d(x.reshape(1, B * C, H, W), wt.reshape(-1, C, 3, 3), padding=1, groups=B)
        return F.leaky_relu(out.view(B, -1, H, W), 0.2) * math.sqrt(2)


class Losses(nn.Module):
    def __init__(s):
        super().__init__()
        s.head = nn.Conv2d(3, 2, 1)

    def forward(s, x, target):
        logits = s.head(x)
        p = torch.sigmoid(logits)
        ce = F.binary_cross_entropy_with_logits(logits, target, reduction="none")
        pt = p * target + (1 - p) * (1 - target)
        focal = (ce * (1 - pt) ** 2 * (0.25 * target + 0.75 * (1 - target))).mean()
        inter = (p * target).sum((2, 3))
        dice = 1 - (2 * inter + 1) / (p.sum((2, 3)) + target.sum((2, 3)) + 1)
        return focal + dice.mean()


class Seq2SeqAttn(nn.Module):
    def __init__(s, dim=16):
        super().__init__()
        s.w = nn.Linear(dim, dim, bias=False)

    def forward(s, dec, enc, lengths):
        scores = torch.bmm(s.w(dec), enc.transpose(1, 2))
        valid = torch.arange(enc.shape[1])[None, :] < lengths[:, None]
        scores = scores.masked_fill(~valid[:, None, :], -1e9)
        return torch.bmm(scores.softmax(-1), enc)


def progs():
    r = torch.randn
    return {
        "swin_block": (lambda: Swin(), lambda: (r(2, 8, 8, 16),)),
        "t5_relbias": (lambda: T5RelBias(), lambda: (r(2, 4, 7, 9),)),
        "llama_rope_complex": (lambda: LlamaRope(), lambda: (r(2, 6, 2, 16),)),
        "moe_gating": (lambda: MoE(), lambda: (r(10, 16),)),
        "unet": (lambda: UNet(), lambda: (r(2, 3, 8, 8),)),
        "densenet_block": (lambda: Dense(), lambda: (r(2, 8, 6, 6),)),
        "shufflenet_unit": (lambda: Shuffle(), lambda: (r(2, 16, 6, 6),)),
        "bert_layer": (lambda: Bert(), lambda: (torch.randint(0, 50, (2, 7)), torch.tensor([[1] * 7, [1] * 4 + [0] * 3]))),
        "gpt2_block": (lambda: GPT2(), lambda: (r(2, 9, 32),)),
        "wavenet": (lambda: WaveNet(), lambda: (r(2, 8, 20),)),
        "squeezenet_fire": (lambda: Fire(), lambda: (r(2, 8, 10, 10),)),
        "inception": (lambda: Inception(), lambda: (r(2, 8, 7, 7),)),
        "clip_loss": (lambda: Clip(), lambda: (r(5, 24), r(5, 12))),
        "mlp_mixer": (lambda: Mixer(), lambda: (r(2, 9, 16),)),
        "pointnet": (lambda: PointNet(), lambda: (r(2, 3, 20),)),
        "gcn": (lambda: GCN(), lambda: (r(7, 8), (torch.rand(7, 7) > 0.6).float())),
        "nerf": (lambda: NeRF(), lambda: (r(10, 3),)),
        "detr_posenc": (lambda: DetrPos(), lambda: (torch.rand(2, 5, 6) > 0.7,)),
        "yolo_head": (lambda: Yolo(), lambda: (r(2, 8, 4, 5),)),
        "alibi": (lambda: Alibi(), lambda: (r(2, 7, 32),)),
        "kv_cache": (lambda: KVCache(), lambda: (r(2, 3, 16),)),
        "convlstm": (lambda: ConvLSTM(), lambda: (r(2, 3, 4, 6, 6),)),
        "stylegan_modconv": (lambda: ModConv(), lambda: (r(2, 4, 8, 8), r(2, 8))),
        "focal_dice": (lambda: Losses(), lambda: (r(2, 3, 6, 6), (torch.rand(2, 2, 6, 6) > 0.5).float())),
        "seq2seq_attn": (lambda: Seq2SeqAttn(), lambda: (r(3, 4, 16), r(3, 6, 16), torch.tensor([6, 3, 1]))),
    }


if __name__ == "__main__":
    sel = sys.argv[1].split(",") if len(sys.argv) > 1 and sys.argv[1] else None
    modes = sys.argv[2].split(",") if len(sys.argv) > 2 else ["s-eval", "s-train", "d-eval", "d-train"]
    dtype = getattr(torch, sys.argv[3]) if len(sys.argv) > 3 else torch.float32
    for name, (mk, inp) in progs().items():
        if sel and name not in sel:
            continue
        for mode in modes:
            dyn, train = mode[0] == "d", mode.endswith("train")
            try:
                ok, worst, fb = run(name, mk, inp, dyn, train, dtype)
                print(f"{name:24s} {mode:8s} {'OK ' if ok else 'BAD'} {worst:.2e} fb={fb}", flush=True)
            except Exception as e:  # noqa: BLE001
                print(f"{name:24s} {mode:8s} ERR {type(e).__name__}: {str(e)[:300]}", flush=True)
