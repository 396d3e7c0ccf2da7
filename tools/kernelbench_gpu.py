"""Time KernelBench-style programs on a GPU: eager, Inductor and lamina (the cuda target) in
one process, on the same inputs, CUDA-event medians after an L2 flush
(`triton.testing.do_bench`), each program's sizes halved until its largest input has at
most `--max-elems` elements (tools/kernelbench_sweep.shrink_source). lamina's output is
compared with eager's; the ops that fell back are listed (LAMINA_REPORT). One JSON line a
program in OUT; a driver restarts the runner past a program that kills it.

    python tools/kernelbench_gpu.py OUT.jsonl KERNELBENCH_DIR/level1 [--range 0:50]
        [--only 19,35] [--dtype bfloat16] [--max-elems 16777216] [--no-inductor]

Summarize with `python tools/kernelbench_gpu.py --summary OUT.jsonl [--kernels]` (--kernels:
each program's costliest kernels per backend, from the profiler)."""
import importlib
import json
import math
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))
from kernelbench_sweep import shrink_source  # noqa: E402


def programs(folder: str) -> list[str]:
    def order(f):
        head = f.split("_")[0]
        return (int(head) if head.isdigit() else 0, f)
    return [os.path.join(folder, f) for f in sorted((f for f in os.listdir(folder) if f.endswith(".py")), key=order)]


def _load(src: str, name: str) -> dict:
    g = {"__name__": "kb_" + name}
    exec(compile(src, name, "exec"), g)
    return g


def sized_source(path: str, max_elems: int) -> tuple[str, int]:
    """The program's source at the fewest halvings that bring every input under max_elems."""
    import torch
    src = open(path).read()
    for k in range(0, 12):
        s = shrink_source(src, "sizes", k)
        with torch.device("meta"):
            xs = _load(s, os.path.basename(path))["get_inputs"]()
        if max((x.numel() for x in xs if torch.is_tensor(x)), default=0) <= max_elems:
            return s, k
    return s, k


def run_program(path: str, dtype, max_elems: int, inductor: bool) -> dict:
    import torch
    importlib.import_module("lamina.backend")   # registers the backend
    rec = {"program": os.path.basename(path)}
    src, rec["halvings"] = sized_source(path, max_elems)
    g = _load(src, rec["program"])
    torch.manual_seed(0)
    device = "cuda" if torch.cuda.is_available() else "cpu"   # (cpu: to try this script anywhere)
    with torch.device(device):
        model = g["Model"](*g["get_init_inputs"]()).to(device, dtype).eval()
        xs = [x.to(device, dtype) if torch.is_tensor(x) and x.is_floating_point() else
              x.to(device) if torch.is_tensor(x) else x for x in g["get_inputs"]()]
    rec["shapes"] = [list(x.shape) for x in xs if torch.is_tensor(x)]
    flat = lambda o: [o] if torch.is_tensor(o) else [t for x in o for t in flat(x)] if isinstance(o, (tuple, list)) else []

    def kernel_ms(fn, name):
        """The GPU's own time per call: the kernels' durations summed (torch.profiler), without
        the gaps a slow host leaves between them (do_bench's events include those). The
        costliest kernels go to rec[name + "_kernels"] ([name, ms per call, launches per call])."""
        if device != "cuda":
            return None
        from torch.profiler import ProfilerActivity, profile
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(5):
                fn(*xs)
            torch.cuda.synchronize()
        kernels = [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
        per: dict = {}
        for e in kernels:
            entry = per.setdefault(e.name[:90], [0.0, 0])
            entry[0] += e.time_range.elapsed_us() / 5 / 1e3
            entry[1] += 1
        rec[name + "_kernels"] = [[k, round(ms, 5), n // 5] for k, (ms, n) in
                                  sorted(per.items(), key=lambda kv: -kv[1][0])[:8]]
        return sum(e.time_range.elapsed_us() for e in kernels) / 5 / 1e3

    def bench(fn):
        if device == "cuda":
            import triton.testing
            return triton.testing.do_bench(lambda: fn(*xs), warmup=25, rep=100, return_mode="median")
        times = []
        for _ in range(10):
            t = time.perf_counter()
            fn(*xs)
            times.append((time.perf_counter() - t) * 1e3)
        return sorted(times)[5]

    with torch.no_grad():
        ref = flat(model(*xs))
        rec["eager_ms"] = bench(model)
        rec["eager_kernel_ms"] = kernel_ms(model, "eager")
        backends = [("lamina", "lamina")] + ([("inductor", "inductor")] if inductor else [])
        for name, backend in backends:
            torch._dynamo.reset()
            report = tempfile.mktemp(suffix=".jsonl")
            os.environ["LAMINA_REPORT"] = report
            t = time.time()
            fn = torch.compile(model, backend=backend)
            out = flat(fn(*xs))
            torch.cuda.synchronize() if device == "cuda" else None
            rec[f"{name}_compile_s"] = round(time.time() - t, 2)
            rec[f"{name}_ms"] = bench(fn)
            rec[f"{name}_kernel_ms"] = kernel_ms(fn, name)
            if name == "lamina":
                tol = 1e-2 if dtype == torch.float32 else 5e-2
                ok, worst = True, 0.0
                for a, b in zip(ref, out):
                    if a.shape != b.shape:
                        ok, worst = False, float("inf")
                        continue
                    d = (a.double() - b.double()).abs()
                    bad = (d > tol + tol * a.double().abs()) & ~(a.isnan() & b.isnan())
                    ok = ok and not bool(bad.any())
                    worst = max(worst, float(d.nan_to_num(0).max()) if d.numel() else 0.0)
                rec["ok"], rec["worst"] = ok, worst
                fb = set()
                if os.path.exists(report):
                    for line in open(report):
                        fb |= set(map(str, json.loads(line).get("fallback_ops", [])))
                    os.remove(report)
                rec["fallback_ops"] = sorted(fb)
            del fn
    return rec


def runner(out: str, paths: list[str], dtype_name: str, max_elems: int, inductor: bool) -> None:
    import torch
    dtype = getattr(torch, dtype_name)
    for path in paths:
        try:
            rec = run_program(path, dtype, max_elems, inductor)
        except Exception as e:   # the program's own failure (or eager's): recorded, go on
            rec = {"program": os.path.basename(path), "error": f"{type(e).__name__}: {str(e)[:300]}"}
        rec["dtype"] = dtype_name
        with open(out, "a") as f:
            f.write(json.dumps(rec) + "\n")
        torch._dynamo.reset()
        torch.cuda.empty_cache() if torch.cuda.is_available() else None


def summary(out: str, kernels: bool = False) -> None:
    """The table of OUT's programs; with `kernels`, each row followed by the costliest kernels
    of each backend (ms per call, launches per call)."""
    rows = [json.loads(line) for line in open(out)]
    print("| program | dtype | shapes | eager ms | Inductor ms | lamina ms | eager/ind | eager/lam | lam vs ind | "
          "kernel ms e/I/l | fallback | ok |")
    print("|---|---|---|---:|---:|---:|---:|---:|---:|---|---|---|")
    ri, rl, rv = [], [], []
    for r in rows:
        if "error" in r:
            print(f"| {r['program']} | {r.get('dtype')} | | | | | | | | | {r['error'][:80]} |")
            continue
        e, i, l = r["eager_ms"], r.get("inductor_ms"), r["lamina_ms"]
        rl.append(e / l)
        if i:
            ri.append(e / i)
            rv.append(i / l)
        print(f"| {r['program'][:40]} | {r['dtype']} | {r['shapes'][0] if r['shapes'] else ''} | {e:.4g} | "
              f"{i and f'{i:.4g}'} | {l:.4g} | {i and f'{e / i:.2f}x'} | {e / l:.2f}x | {i and f'{i / l:.2f}x'} | "
              f"{'/'.join('%.4g' % r[k] if r.get(k) is not None else '-' for k in ('eager_kernel_ms', 'inductor_kernel_ms', 'lamina_kernel_ms'))} | "
              f"{','.join(r['fallback_ops'])} | {'ok' if r['ok'] else 'BAD %.2g' % r['worst']} |")
        for backend in ("eager", "inductor", "lamina") if kernels else ():
            for k, ms, n in r.get(backend + "_kernels", []):
                print(f"|   {backend} | {ms:.4g} ms x{n} | {k} |")
    gm = lambda v: math.exp(sum(map(math.log, v)) / len(v)) if v else float("nan")
    print(f"\ngeomean: eager/inductor {gm(ri):.3f}x ({len(ri)}), eager/lamina {gm(rl):.3f}x ({len(rl)}), "
          f"lamina vs inductor {gm(rv):.3f}x; lamina rows below 0.9x eager: "
          f"{[r['program'] for r in rows if 'eager_ms' in r and r['eager_ms'] / r['lamina_ms'] < 0.9]}")


def main() -> None:
    if sys.argv[1] == "--summary":
        return summary(sys.argv[2], "--kernels" in sys.argv)
    if sys.argv[1] == "--runner":
        cfg = json.loads(sys.argv[2])
        return runner(cfg["out"], cfg["paths"], cfg["dtype"], cfg["max_elems"], cfg["inductor"])
    out, folder = sys.argv[1], sys.argv[2]
    opt = lambda name, default: sys.argv[sys.argv.index(name) + 1] if name in sys.argv else default
    lo, hi = (int(v) if v else None for v in opt("--range", ":").split(":"))
    paths = programs(folder)[lo:hi]
    if "--only" in sys.argv:   # program numbers: --only 19,35
        only = set(opt("--only", "").split(","))
        paths = [p for p in paths if os.path.basename(p).split("_")[0] in only]
    cfg = {"out": out, "dtype": opt("--dtype", "float32"), "max_elems": int(opt("--max-elems", 1 << 24)),
           "inductor": "--no-inductor" not in sys.argv}
    done = {json.loads(line)["program"] for line in open(out)} if os.path.exists(out) else set()
    paths = [p for p in paths if os.path.basename(p) not in done]   # (a second call resumes)
    while paths:   # the runner records every program it finishes; one that kills it is skipped
        subprocess.run([sys.executable, __file__, "--runner", json.dumps({**cfg, "paths": paths})])
        finished = {json.loads(line)["program"] for line in open(out)} if os.path.exists(out) else set()
        rest = [p for p in paths if os.path.basename(p) not in finished]
        if rest:
            with open(out, "a") as f:
                f.write(json.dumps({"program": os.path.basename(rest[0]), "dtype": cfg["dtype"], "error": "runner died"}) + "\n")
        paths = rest[1:]

if __name__ == "__main__":
    main()
