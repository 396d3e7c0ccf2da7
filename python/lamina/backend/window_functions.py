"""The window factories (hann, hamming, blackman, bartlett, kaiser) as ATen builds them
(aten/src/ATen/native/TensorFactories.cpp): an arange in the window's dtype, scaled and
shaped by the same operations in the same order, so that a compiled window is eager's (an
stft's window is usually made in the same graph). torch's decomposition tables lack most
of them (hann_window joined only in torch 2.13)."""
from __future__ import annotations

import math

import torch


def _factory(window_length, dtype, device):
    dtype = dtype or torch.get_default_dtype()
    if window_length == 0:
        return torch.empty(0, dtype=dtype, device=device), None
    if window_length == 1:
        return torch.ones(1, dtype=dtype, device=device), None
    return None, dtype


def _periodic(window, periodic: bool):
    return window[:-1] if periodic else window


def hamming_window(window_length, periodic=True, alpha=0.54, beta=0.46, *, dtype=None, layout=None, device=None,
                   pin_memory=False):
    done, dtype = _factory(window_length, dtype, device)
    if done is not None:
        return done
    n = window_length + 1 if periodic else window_length
    window = torch.arange(n, dtype=dtype, device=device) * (math.pi * 2.0 / (n - 1))
    return _periodic(torch.cos(window) * -beta + alpha, periodic)


def hann_window(window_length, periodic=True, *, dtype=None, layout=None, device=None, pin_memory=False):
    return hamming_window(window_length, periodic, 0.5, 0.5, dtype=dtype, device=device)


def blackman_window(window_length, periodic=True, *, dtype=None, layout=None, device=None, pin_memory=False):
    done, dtype = _factory(window_length, dtype, device)
    if done is not None:
        return done
    n = window_length + 1 if periodic else window_length
    window = torch.arange(n, dtype=dtype, device=device) * (math.pi / (n - 1))
    return _periodic(torch.cos(window * 4) * 0.08 - torch.cos(window * 2) * 0.5 + 0.42, periodic)


def bartlett_window(window_length, periodic=True, *, dtype=None, layout=None, device=None, pin_memory=False):
    done, dtype = _factory(window_length, dtype, device)
    if done is not None:
        return done
    n = window_length + 1 if periodic else window_length
    window = torch.arange(n, dtype=dtype, device=device) * (2.0 / (n - 1))
    first_half = ((n - 1) >> 1) + 1
    window = torch.cat([window[:first_half], window[first_half:] * -1 + 2])
    return _periodic(window, periodic)


def kaiser_window(window_length, periodic=True, beta=12.0, *, dtype=None, layout=None, device=None,
                  pin_memory=False):
    """ATen's kernel computes in the dtype's opmath type (f32 for f16/bf16, else the dtype):
    i0(beta * sqrt(|1 - ((k - alpha) / alpha)^2|)) / i0(beta), alpha = (n - 1) / 2."""
    done, dtype = _factory(window_length, dtype, device)
    if done is not None:
        return done
    n = window_length + 1 if periodic else window_length
    opmath = torch.float32 if dtype in (torch.float16, torch.bfloat16) else dtype
    alpha = (n - 1) / 2.0
    k = torch.arange(n, dtype=dtype, device=device).to(opmath)
    ratio = (k - alpha) / alpha
    window = torch.special.i0(beta * torch.sqrt(torch.abs(1 - ratio * ratio))) / torch.special.i0(
        torch.full([], beta, dtype=opmath, device=device))
    return _periodic(window.to(dtype), periodic)


def window_decompositions() -> dict:
    aten = torch.ops.aten
    table = {}
    for fn, overloads in [(hann_window, ("default", "periodic")),
                          (hamming_window, ("default", "periodic", "periodic_alpha", "periodic_alpha_beta")),
                          (blackman_window, ("default", "periodic")), (bartlett_window, ("default", "periodic")),
                          (kaiser_window, ("default", "periodic", "beta"))]:
        packet = getattr(aten, fn.__name__)
        for name in overloads:
            table[getattr(packet, name)] = fn
    return table
