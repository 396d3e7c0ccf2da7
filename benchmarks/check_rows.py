"""What the GPU check scripts (gpu_session40_check.py, gpu_session41_check.py) share: the
device they run on, a compile with fresh reports, and one OK/BAD line a row (a row with a
fallback op is BAD), summed up at the end.

    CHECK_DEVICE=cpu python3 benchmarks/gpu_session41_check.py     (a dry run on the CPU)
"""
import os
import warnings

import torch

import lamina.backend as lb

warnings.filterwarnings("ignore")
DEV = os.environ.get("CHECK_DEVICE", "cuda")
ROWS = []


def row(name, ok, detail="", width=40):
    fb = sorted({str(o) for r in lb.reports() for o in r["fallback_ops"]})
    ROWS.append((name, ok and not fb))
    print(f"{name:{width}s} {'OK ' if ok and not fb else 'BAD'} {detail} fb={fb}", flush=True)


def compiled(fn, **kw):
    torch._dynamo.reset()
    lb.clear_reports()
    return torch.compile(fn, backend="lamina", **kw)


def device_line() -> str:
    return f"{torch.cuda.get_device_name() if DEV == 'cuda' else DEV} {torch.__version__}"


def summary() -> str:
    bad = [n for n, ok in ROWS if not ok]
    return f"{len(ROWS) - len(bad)} of {len(ROWS)} rows OK" + (f"; BAD: {bad}" if bad else "")
