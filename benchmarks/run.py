"""eager vs inductor vs lamina, in one process, on the same inputs.

    python benchmarks/run.py [--models gpt_block,mlp,...] [--no-inductor] [--repeat 50] [--json out.json]

For each model: compile with inductor and with lamina, check both against eager, then
time each (median over --repeat calls after warm-up) and report ms, the ratios
(eager/x: above 1 means faster than eager) and the effective bandwidth. Byte model:
every input, parameter and output read or written once (a lower bound on traffic,
so GB/s compare implementations on the same work, not against the machine's peak).
"""
from __future__ import annotations

import argparse
import json
import sys
import time

import torch

from lamina.testing.models import MODELS, GPTBlock, MLP
from lamina.testing.timing import median_ms


def _large(make):
    def build():
        torch.manual_seed(0)
        return make()
    return build


# The test-sized models, plus the sizes the demo and users care about.
BENCH_MODELS = {
    **MODELS,
    "gpt_block_demo": _large(lambda: (GPTBlock(256, 4).eval(), (torch.randn(4, 64, 256),))),
    "mlp_large": _large(lambda: (MLP(512, 2048, 512).eval(), (torch.randn(256, 512),))),
}


def nbytes(model, inputs, output) -> int:
    params = sum(p.numel() * p.element_size() for p in getattr(model, "parameters", lambda: [])())
    ins = sum(t.numel() * t.element_size() for t in inputs)
    outs = sum(t.numel() * t.element_size() for t in (output if isinstance(output, (tuple, list)) else [output]))
    return params + ins + outs


def bench_model(name: str, repeat: int, with_inductor: bool) -> dict:
    model, inputs = BENCH_MODELS[name]()
    row = {"model": name, "threads": torch.get_num_threads()}
    with torch.no_grad():
        expected = model(*inputs)
        row["bytes"] = nbytes(model, inputs, expected)
        candidates = {"eager": model}
        if with_inductor:
            torch._dynamo.reset()
            candidates["inductor"] = torch.compile(model, backend="inductor")
        candidates["lamina"] = torch.compile(model, backend="lamina", options={"strict": True})
        for label, fn in candidates.items():
            t0 = time.perf_counter()
            out = fn(*inputs)
            row[f"{label}_first_call_s"] = round(time.perf_counter() - t0, 3)
            torch.testing.assert_close(out, expected, rtol=1e-4, atol=1e-5)
        for label, fn in candidates.items():
            ms = median_ms(lambda: fn(*inputs), repeat)
            row[f"{label}_ms"] = round(ms, 4)
            row[f"{label}_GBps"] = round(row["bytes"] / (ms * 1e-3) / 1e9, 3)
    for label in candidates:
        if label != "eager":
            row[f"eager/{label}"] = round(row["eager_ms"] / row[f"{label}_ms"], 3)
    return row


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--models", default=",".join(BENCH_MODELS))
    p.add_argument("--repeat", type=int, default=50)
    p.add_argument("--no-inductor", action="store_true")
    p.add_argument("--json", help="write the rows here")
    args = p.parse_args(argv)
    rows = []
    labels = ["eager"] + ([] if args.no_inductor else ["inductor"]) + ["lamina"]
    header = f"{'model':18s}" + "".join(f"{l + ' ms':>14s}" for l in labels) + "".join(
        f"{'eager/' + l:>16s}" for l in labels[1:]) + f"{'lamina GB/s':>13s}"
    print(header)
    for name in args.models.split(","):
        row = bench_model(name, args.repeat, not args.no_inductor)
        rows.append(row)
        print(f"{name:18s}" + "".join(f"{row[l + '_ms']:14.4f}" for l in labels)
              + "".join(f"{row['eager/' + l]:16.3f}" for l in labels[1:]) + f"{row['lamina_GBps']:13.3f}")
        sys.stdout.flush()
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
