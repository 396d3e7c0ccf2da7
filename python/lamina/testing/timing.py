"""Wall-clock medians for the demo and benchmarks/ (never for unit tests)."""
from __future__ import annotations

import statistics
import time


def median_ms(fn, repeat: int, warmup: int = 5) -> float:
    """Median milliseconds of `fn()` over `repeat` calls, after `warmup` untimed calls."""
    for _ in range(warmup):
        fn()
    samples = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(samples)
