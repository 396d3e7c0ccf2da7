"""Errors and warnings the backend shows users."""
from __future__ import annotations


class LaminaError(RuntimeError):
    """Base class of lamina's user-facing errors."""


class LaminaUnsupportedError(LaminaError):
    """Strict mode: the graph holds ATen ops lamina cannot compile."""


class LaminaCompileError(LaminaError):
    """Strict mode: compiling a supported graph failed."""


class LaminaFallbackWarning(UserWarning):
    """Part of a graph runs in eager PyTorch instead of lamina kernels."""


class LaminaInputError(LaminaError, ValueError):
    """options={"check_inputs": True}: a call's tensor differs from what the graph was
    compiled for (shape, stride, dtype or device)."""
