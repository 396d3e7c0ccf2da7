"""The main job: compile a GPT-style transformer block with lamina on the CPU.

    python -m lamina.demo [--batch 4] [--seq 64] [--d-model 256] [--repeat 20]

Checks the compiled block against eager PyTorch, prints eager vs lamina time (medians),
and walks the stages the forward graph went through, with the IR dumped per stage.
"""
from __future__ import annotations

import argparse
import re
import tempfile
import time
from pathlib import Path

import torch

from lamina.backend import last_report
from lamina.testing.models import GPTBlock
from lamina.testing.timing import median_ms

STAGE_TITLES = {
    "import": "L1  FX graph imported as lamina ops",
    "graph": "L1  graph passes (canonicalize, fold, CSE, DCE)",
    "fuse": "L2  fusion decisions (lamina.kernel attrs)",
    "outline": "L2  kernels outlined into functions",
    "linalg": "L3  lowered to linalg on tensors",
    "abi": "L4  destination-passing kernels (memref ABI)",
    "schedule": "L4  matmul kernels tiled + vectorized (transform)",
    "target": "L5  LLVM dialect (OpenMP loops)",
    "load": "    JIT-compiled (ExecutionEngine)",
}


_OP_AT_LINE_START = re.compile(r'^\s*(?:%[^=]*=\s*)?"?([a-z_]+)\.[a-z_.]+"?[\s(<{]')


def _op_histogram(text: str) -> str:
    """Ops per dialect: each line's op name (`%x = "lamina.add"(...)`, `linalg.yield ...`)."""
    dialects: dict[str, int] = {}
    for line in text.splitlines():
        m = _OP_AT_LINE_START.match(line)
        if m and m.group(1) not in ("loc", "module"):
            dialects[m.group(1)] = dialects.get(m.group(1), 0) + 1
    return ", ".join(f"{d}: {c}" for d, c in sorted(dialects.items(), key=lambda kv: -kv[1]))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--batch", type=int, default=4)
    p.add_argument("--seq", type=int, default=64)
    p.add_argument("--d-model", type=int, default=256)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--repeat", type=int, default=20)
    p.add_argument("--dump-dir", default=None, help="where to write the IR of every stage (default: a temp dir)")
    args = p.parse_args(argv)

    torch.manual_seed(0)
    model = GPTBlock(args.d_model, args.heads).eval()
    x = torch.randn(args.batch, args.seq, args.d_model)
    dump_dir = args.dump_dir or tempfile.mkdtemp(prefix="lamina-demo-")
    n_params = sum(p.numel() for p in model.parameters())
    print(f"lamina demo: GPT-style block, d_model={args.d_model}, heads={args.heads}, "
          f"input {list(x.shape)}, {n_params / 1e6:.2f}M parameters, {torch.get_num_threads()} CPU threads")

    compiled = torch.compile(model, backend="lamina", options={"strict": True, "dump_ir": dump_dir})
    with torch.no_grad():
        t0 = time.perf_counter()
        out = compiled(x)
        first_call_s = time.perf_counter() - t0
        expected = model(x)
        max_err = (out - expected).abs().max().item()
        torch.testing.assert_close(out, expected, rtol=1e-4, atol=1e-5)
        report = last_report()
        print(f"\ncompiled in {report['compile_s']:.2f} s (first call incl. tracing: {first_call_s:.2f} s); "
              f"{report['ops_compiled']}/{report['ops_total']} ATen ops compiled, fallback ops: {report['fallback_ops']}, "
              f"{report['kernels']} kernels per call")
        print(f"matches eager: max |lamina - eager| = {max_err:.2e} (rtol 1e-4, atol 1e-5)")

        eager_ms = median_ms(lambda: model(x), args.repeat, warmup=3)
        lamina_ms = median_ms(lambda: compiled(x), args.repeat, warmup=3)
    print(f"\ntime per call (median of {args.repeat}): eager {eager_ms:.3f} ms, lamina {lamina_ms:.3f} ms, "
          f"lamina/eager = {lamina_ms / eager_ms:.2f}x "
          f"({'faster' if lamina_ms < eager_ms else 'slower'} than eager)")

    graph = report["graph"]
    print(f"\nstages of {graph} (IR after each stage in {dump_dir}):")
    files = sorted(Path(dump_dir).glob(f"{graph}.*.mlir"), key=lambda f: int(f.name.split(".")[1].split("-")[0]))
    for f in files:
        stage = f.name.split("-", 1)[1].removesuffix(".mlir")
        text = f.read_text()
        secs = report.get("stage_s", {}).get(stage)
        timing = f"{secs * 1e3:7.1f} ms" if secs is not None else "        "
        print(f"  {STAGE_TITLES.get(stage, stage):50s} {timing}  {len(text.splitlines()):6d} lines  [{_op_histogram(text)}]")
    outline = next((f for f in files if f.name.endswith("-outline.mlir")), None)
    if outline:
        kernels = re.findall(r'func\.func @(\S+)\(.*lamina\.kernel_kind = "(\w+)"', outline.read_text())
        print("\nkernels: " + ", ".join(f"{k} ({kind})" for k, kind in kernels))
    print("\nreplay any stage: lamina-opt <dump>.mlir --<pass> (lamina-opt --help lists them)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
