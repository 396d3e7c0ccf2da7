"""lamina's compile times: in process vs compile workers (cold cache) vs a second process
(warm cache), over the benchmark cases (benchmarks/cases.py), each mode in a fresh process.

    python benchmarks/compile_times.py                       # every case, small size, CPU
    python benchmarks/compile_times.py --cases softmax,mlp --device cuda --sizes gpu
    python benchmarks/compile_times.py --json out.json

For each mode a new Python process compiles every case once (torch.compile, first call,
timed like benchmarks/run.py: dynamo + AOTAutograd + lamina) and reports, per case, the
wall time of the first call and lamina's own compile seconds (the report's compile_s,
summed over the case's graphs) and the cache status:

    in_process   options compile_in_process (MLIR and LLVM in the user's process; no cache)
    worker_cold  compile workers, an empty cache directory
    worker_warm  compile workers, a second process on the cache worker_cold filled

The modes run in this order, in separate processes, on the same machine; the table's
ratios are worker_cold / in_process (above 1: the workers cost time) and the warm column's
milliseconds per graph (the cache's budget is 100 ms per graph).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

CHILD = r"""
import json, sys, time, warnings
sys.path.insert(0, {bench_dir!r})
import torch
import lamina.backend as lb
import cases as C
device = torch.device({device!r})
rows = []
for name in {names!r}:
    inst = C.CASES[name].build({size!r}, device)
    torch._dynamo.reset()
    n = len(lb.reports())
    ns = {{"fn": inst.fn}}
    exec(compile("def run_" + name + "(*args):\n    return fn(*args)\n", "<entry>", "exec"), ns)
    fn = torch.compile(ns["run_" + name], backend="lamina")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with torch.no_grad():
            t0 = time.perf_counter()
            fn(*inst.inputs)
            if device.type == "cuda":
                torch.cuda.synchronize()
            wall = time.perf_counter() - t0
    reps = lb.reports()[n:]
    rows.append({{"case": name, "first_call_s": round(wall, 4), "graphs": len(reps),
                 "lamina_compile_s": round(sum(r["compile_s"] for r in reps), 4),
                 "cache": sorted({{r.get("cache", "?") for r in reps}}),
                 "fallback": sorted({{op for r in reps for op in r["fallback_ops"]}})}})
print(json.dumps(rows))
"""


def run_mode(names, size, device, env_extra) -> list[dict]:
    bench_dir = str(Path(__file__).resolve().parent)
    code = CHILD.format(bench_dir=bench_dir, device=device, names=names, size=size)
    env = dict(os.environ, **env_extra)
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=3600)
    if proc.returncode != 0:
        raise SystemExit(f"child failed ({env_extra}):\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--cases", default=None)
    p.add_argument("--sizes", default="small")
    p.add_argument("--device", default="cpu", choices=("cpu", "cuda"))
    p.add_argument("--json", metavar="FILE")
    args = p.parse_args(argv)
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import cases as C

    names = args.cases.split(",") if args.cases else list(C.CASES)
    results = {}
    with tempfile.TemporaryDirectory(prefix="lamina-compile-times-") as cache_dir:
        base = {"LAMINA_CACHE_DIR": cache_dir}
        for size in args.sizes.split(","):
            results[size] = {
                "in_process": run_mode(names, size, args.device, {**base, "LAMINA_COMPILE_IN_PROCESS": "1"}),
                "worker_cold": run_mode(names, size, args.device, base),
                "worker_warm": run_mode(names, size, args.device, base),
            }
    print(f"{'case':22s} {'size':6s} {'graphs':>6s} | first call s: {'in-proc':>8s} {'cold':>8s} {'warm':>8s} | "
          f"lamina s: {'in-proc':>8s} {'cold':>8s} {'warm':>8s} {'cold/in':>8s} {'warm ms/graph':>14s} cache(warm)")
    warm_per_graph, ratios = [], []
    for size, modes in results.items():
        for a, b, c in zip(modes["in_process"], modes["worker_cold"], modes["worker_warm"]):
            per_graph = 1000 * c["lamina_compile_s"] / max(c["graphs"], 1)
            warm_per_graph.append(per_graph)
            ratio = b["lamina_compile_s"] / max(a["lamina_compile_s"], 1e-9)
            ratios.append(ratio)
            print(f"{a['case']:22s} {size:6s} {a['graphs']:6d} | {'':14s}{a['first_call_s']:8.3f} {b['first_call_s']:8.3f} "
                  f"{c['first_call_s']:8.3f} | {'':10s}{a['lamina_compile_s']:8.3f} {b['lamina_compile_s']:8.3f} "
                  f"{c['lamina_compile_s']:8.3f} {ratio:8.2f} {per_graph:14.1f} {','.join(c['cache'])}")
    total = {m: sum(r["lamina_compile_s"] for modes in results.values() for r in modes[m]) for m in
             ("in_process", "worker_cold", "worker_warm")}
    print(f"total lamina compile s: in-process {total['in_process']:.3f}, workers cold {total['worker_cold']:.3f}, "
          f"warm {total['worker_warm']:.3f}; warm ms/graph max {max(warm_per_graph):.1f}, "
          f"median {sorted(warm_per_graph)[len(warm_per_graph) // 2]:.1f}")
    if args.json:
        Path(args.json).write_text(json.dumps({"results": results, "total": total}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
