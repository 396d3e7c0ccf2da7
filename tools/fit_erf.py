"""Refit vector_math.ERF_Q: erf(x) ~ Q(x - ERF_Q_CENTER) on [1, ERF_ONE_FROM], degree 14.

Weighted least squares on Chebyshev nodes, the weights iterated towards minimax (Lawson),
then the coefficients rounded to f32 from the top down, each rounding refitting the lower
ones. Prints the coefficients and the max absolute error with them (exact arithmetic);
the f32 evaluation is checked by test/python/lowering/test_vector_math.py.

    python tools/fit_erf.py
"""
import math

import numpy as np

from lamina.lowering.vector_math import ERF_ONE_FROM, ERF_Q_CENTER

LO, DEGREE, NODES = 1.0, 14, 6000


def main() -> None:
    u = -np.cos(np.pi * (np.arange(NODES) + 0.5) / NODES)
    t = LO - ERF_Q_CENTER + (u + 1) / 2 * (ERF_ONE_FROM - LO)
    g = np.array([math.erf(v + ERF_Q_CENTER) for v in t])
    V = np.vander(t, DEGREE + 1, increasing=True)
    w = np.ones(NODES)
    for _ in range(60):
        c, *_ = np.linalg.lstsq(V * w[:, None], g * w, rcond=None)
        err = V @ c - g
        w = w * (np.abs(err) / np.abs(err).max() + 1e-3) ** 0.5
        w /= w.mean()
    fixed: dict[int, float] = {}
    for j in range(DEGREE, -1, -1):
        free = [i for i in range(DEGREE + 1) if i not in fixed]
        rhs = g - sum(fixed[i] * t ** i for i in fixed)
        cc, *_ = np.linalg.lstsq(V[:, free] * w[:, None], rhs * w, rcond=None)
        fixed[j] = float(np.float32(cc[free.index(j)]))
    coeffs = [fixed[i] for i in range(DEGREE + 1)]
    print("ERF_Q =", tuple(coeffs))
    print("max abs error:", np.abs(V @ np.array(coeffs) - g).max())


if __name__ == "__main__":
    main()
