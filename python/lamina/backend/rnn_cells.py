"""The fused LSTM and GRU cells nn.LSTMCell / nn.GRUCell run on a GPU
(`_thnn_fused_lstm_cell`, `_thnn_fused_gru_cell` and their backwards: CUDA kernels that
torch's decomposition tables lack), as ATen's kernels compute them
(aten/src/ATen/native/cuda/RNN.cu): gates summed and activated in the accumulation type
(f32 for f16/bf16), the same workspace layout (the LSTM's activated gates [i, f, g, o];
the GRU's [r, i, n, hx, hn + b_hn]), so that a forward lamina compiles and a backward
either side runs agree."""
from __future__ import annotations

import torch

aten = torch.ops.aten


def _acc(t):
    return t.float() if t.dtype in (torch.float16, torch.bfloat16) else t


def _summed(input_gates, hidden_gates, input_bias, hidden_bias, acc):
    gates = acc(input_gates) + acc(hidden_gates)
    if input_bias is not None:
        gates = gates + acc(input_bias) + acc(hidden_bias)
    return gates


def fused_lstm_cell(input_gates, hidden_gates, cx, input_bias=None, hidden_bias=None):
    gates = _summed(input_gates, hidden_gates, input_bias, hidden_bias, _acc)
    i, f, g, o = gates.chunk(4, -1)
    i, f, g, o = torch.sigmoid(i), torch.sigmoid(f), torch.tanh(g), torch.sigmoid(o)
    cy = f * _acc(cx) + i * g
    hy = o * torch.tanh(cy)
    dt = input_gates.dtype
    return hy.to(dt), cy.to(dt), torch.cat([i, f, g, o], -1).to(dt)


def fused_lstm_cell_backward(grad_hy, grad_cy, cx, cy, workspace, has_bias):
    i, f, g, o = (_acc(t) for t in workspace.chunk(4, -1))
    go = _acc(grad_hy) if grad_hy is not None else torch.zeros_like(i)
    goc = _acc(grad_cy) if grad_cy is not None else torch.zeros_like(i)
    tanh_cy = torch.tanh(_acc(cy))
    gog = go * tanh_cy
    gcx = go * o * (1 - tanh_cy * tanh_cy) + goc
    gig = gcx * g * (1 - i) * i
    gfg = gcx * _acc(cx) * (1 - f) * f
    gcg = gcx * i * (1 - g * g)
    gog = gog * (1 - o) * o
    dt = workspace.dtype
    grad_gates = torch.cat([gig, gfg, gcg, gog], -1).to(dt)
    grad_bias = grad_gates.sum(0) if has_bias else None
    return grad_gates, (gcx * f).to(dt), grad_bias


def fused_gru_cell(input_gates, hidden_gates, hx, input_bias=None, hidden_bias=None):
    ir, ii, in_ = _acc(input_gates).chunk(3, -1)
    hr, hi, hn = _acc(hidden_gates).chunk(3, -1)
    if input_bias is not None:
        b1r, b1i, b1n = _acc(input_bias).chunk(3, -1)
        b2r, b2i, b2n = _acc(hidden_bias).chunk(3, -1)
        r, z = torch.sigmoid(ir + hr + b1r + b2r), torch.sigmoid(ii + hi + b1i + b2i)
        hn = hn + b2n
        n = torch.tanh(in_ + b1n + r * hn)
    else:
        r, z = torch.sigmoid(ir + hr), torch.sigmoid(ii + hi)
        n = torch.tanh(in_ + r * hn)
    hxa = _acc(hx)
    hy = n + z * (hxa - n)
    dt = input_gates.dtype
    return hy.to(dt), torch.cat([r, z, n, hxa, hn], -1).to(dt)


def fused_gru_cell_backward(grad_hy, workspace, has_bias):
    r, z, n, hx, hn = (_acc(t) for t in workspace.chunk(5, -1))
    go = _acc(grad_hy)
    gig = go * (hx - n) * (1 - z) * z
    ghx = go * z
    gin = go * (1 - z) * (1 - n * n)
    ghn = gin * r
    grg = gin * hn * (1 - r) * r
    dt = workspace.dtype
    grad_input_gates = torch.cat([grg, gig, gin], -1).to(dt)
    grad_hidden_gates = torch.cat([grg, gig, ghn], -1).to(dt)
    biases = (grad_input_gates.sum(0), grad_hidden_gates.sum(0)) if has_bias else (None, None)
    return grad_input_gates, grad_hidden_gates, ghx.to(dt), *biases


def rnn_cell_decompositions() -> dict:
    return {aten._thnn_fused_lstm_cell.default: fused_lstm_cell,
            aten._thnn_fused_lstm_cell_backward_impl.default: fused_lstm_cell_backward,
            aten._thnn_fused_gru_cell.default: fused_gru_cell,
            aten._thnn_fused_gru_cell_backward.default: fused_gru_cell_backward}
