"""Vision models written with torch.nn for lamina's model tests (random weights, reduced
widths so they run in seconds on a CPU; the layer structure is the published one):

    resnet18(width)          BasicBlock x [2, 2, 2, 2], 7x7/2 stem, 3x3/2 max pool, adaptive avg pool
    mobilenet_v2(width)      inverted residuals (1x1 expand, 3x3 depthwise, 1x1 project), ReLU6
    efficientnet_b0(width)   MBConv with squeeze-and-excitation, SiLU, stochastic depth off
    vit(...)                 patch embedding (a strided conv), class token, pre-norm encoder, GELU
"""
from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F


def _c(channels: float) -> int:
    return max(8, int(round(channels / 8)) * 8)


# ---- ResNet-18 -------------------------------------------------------------------------------

class BasicBlock(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.down = None
        if stride != 1 or cin != cout:
            self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        y = F.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        return F.relu(y + (x if self.down is None else self.down(x)))


class ResNet18(nn.Module):
    def __init__(self, width: int = 64, classes: int = 10):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, width, 7, 2, 3, bias=False), nn.BatchNorm2d(width), nn.ReLU(),
                                  nn.MaxPool2d(3, 2, 1))
        layers, cin = [], width
        for i, stride in enumerate((1, 2, 2, 2)):
            cout = width * 2 ** i
            layers += [BasicBlock(cin, cout, stride), BasicBlock(cout, cout, 1)]
            cin = cout
        self.layers = nn.Sequential(*layers)
        self.fc = nn.Linear(cin, classes)

    def forward(self, x):
        x = self.layers(self.stem(x))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


# ---- MobileNetV2 -----------------------------------------------------------------------------

def _conv_bn(cin, cout, k, stride, groups=1, act=nn.ReLU6):
    layers = [nn.Conv2d(cin, cout, k, stride, k // 2, groups=groups, bias=False), nn.BatchNorm2d(cout)]
    return nn.Sequential(*layers, act()) if act is not None else nn.Sequential(*layers)


class InvertedResidual(nn.Module):
    def __init__(self, cin, cout, stride, expand):
        super().__init__()
        hidden = cin * expand
        layers = [] if expand == 1 else [_conv_bn(cin, hidden, 1, 1)]
        layers += [_conv_bn(hidden, hidden, 3, stride, groups=hidden), _conv_bn(hidden, cout, 1, 1, act=None)]
        self.block = nn.Sequential(*layers)
        self.residual = stride == 1 and cin == cout

    def forward(self, x):
        return x + self.block(x) if self.residual else self.block(x)


class MobileNetV2(nn.Module):
    # (expansion, channels, repeats, stride) of the paper
    SETTINGS = [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1), (6, 160, 3, 2), (6, 320, 1, 1)]

    def __init__(self, width: float = 1.0, classes: int = 10):
        super().__init__()
        cin = _c(32 * width)
        layers = [_conv_bn(3, cin, 3, 2)]
        for t, c, n, s in self.SETTINGS:
            cout = _c(c * width)
            for i in range(n):
                layers.append(InvertedResidual(cin, cout, s if i == 0 else 1, t))
                cin = cout
        last = _c(1280 * width)
        layers.append(_conv_bn(cin, last, 1, 1))
        self.features = nn.Sequential(*layers)
        self.classifier = nn.Sequential(nn.Dropout(0.0), nn.Linear(last, classes))

    def forward(self, x):
        return self.classifier(torch.flatten(F.adaptive_avg_pool2d(self.features(x), 1), 1))


# ---- EfficientNet-B0 -------------------------------------------------------------------------

class SqueezeExcite(nn.Module):
    def __init__(self, c, squeezed):
        super().__init__()
        self.reduce = nn.Conv2d(c, squeezed, 1)
        self.expand = nn.Conv2d(squeezed, c, 1)

    def forward(self, x):
        s = F.adaptive_avg_pool2d(x, 1)
        return x * torch.sigmoid(self.expand(F.silu(self.reduce(s))))


class MBConv(nn.Module):
    def __init__(self, cin, cout, k, stride, expand):
        super().__init__()
        hidden = cin * expand
        layers = [] if expand == 1 else [_conv_bn(cin, hidden, 1, 1, act=nn.SiLU)]
        layers += [_conv_bn(hidden, hidden, k, stride, groups=hidden, act=nn.SiLU),
                   SqueezeExcite(hidden, max(1, cin // 4)), _conv_bn(hidden, cout, 1, 1, act=None)]
        self.block = nn.Sequential(*layers)
        self.residual = stride == 1 and cin == cout

    def forward(self, x):
        return x + self.block(x) if self.residual else self.block(x)


class EfficientNetB0(nn.Module):
    # (expansion, kernel, stride, channels, repeats) of the paper
    SETTINGS = [(1, 3, 1, 16, 1), (6, 3, 2, 24, 2), (6, 5, 2, 40, 2), (6, 3, 2, 80, 3), (6, 5, 1, 112, 3),
                (6, 5, 2, 192, 4), (6, 3, 1, 320, 1)]

    def __init__(self, width: float = 1.0, classes: int = 10):
        super().__init__()
        cin = _c(32 * width)
        layers = [_conv_bn(3, cin, 3, 2, act=nn.SiLU)]
        for t, k, s, c, n in self.SETTINGS:
            cout = _c(c * width)
            for i in range(n):
                layers.append(MBConv(cin, cout, k, s if i == 0 else 1, t))
                cin = cout
        last = _c(1280 * width)
        layers.append(_conv_bn(cin, last, 1, 1, act=nn.SiLU))
        self.features = nn.Sequential(*layers)
        self.classifier = nn.Linear(last, classes)

    def forward(self, x):
        return self.classifier(torch.flatten(F.adaptive_avg_pool2d(self.features(x), 1), 1))


# ---- ViT -------------------------------------------------------------------------------------

class EncoderBlock(nn.Module):
    def __init__(self, dim, heads, mlp):
        super().__init__()
        self.ln1 = nn.LayerNorm(dim)
        self.attn = nn.MultiheadAttention(dim, heads, batch_first=True)
        self.ln2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, mlp), nn.GELU(), nn.Linear(mlp, dim))

    def forward(self, x):
        h = self.ln1(x)
        x = x + self.attn(h, h, h, need_weights=False)[0]
        return x + self.mlp(self.ln2(x))


class ViT(nn.Module):
    def __init__(self, image=32, patch=8, dim=64, depth=2, heads=4, mlp=128, classes=10):
        super().__init__()
        self.embed = nn.Conv2d(3, dim, patch, patch)
        n = (image // patch) ** 2
        self.cls = nn.Parameter(torch.randn(1, 1, dim) * 0.02)
        self.pos = nn.Parameter(torch.randn(1, n + 1, dim) * 0.02)
        self.blocks = nn.Sequential(*[EncoderBlock(dim, heads, mlp) for _ in range(depth)])
        self.ln = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, classes)

    def forward(self, x):
        x = self.embed(x).flatten(2).transpose(1, 2)
        x = torch.cat([self.cls.expand(x.shape[0], -1, -1), x], dim=1) + self.pos
        return self.head(self.ln(self.blocks(x))[:, 0])


CNN_MODELS = {
    "resnet18": lambda: ResNet18(width=16),
    "mobilenet_v2": lambda: MobileNetV2(width=0.25),
    "efficientnet_b0": lambda: EfficientNetB0(width=0.25),
    "vit": lambda: ViT(),
}
