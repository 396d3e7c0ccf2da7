"""Sweep KernelBench-style programs (a module with `Model`, `get_inputs()` and
`get_init_inputs()`, sizes as module-level constants) through lamina on the CPU: each
program shrunk to CPU-test sizes, run eagerly and compiled, outputs compared, and the ops
that fell back listed (LAMINA_REPORT). One line a program: OK / BAD / ERR / SKIP.

    python tools/kernelbench_sweep.py KERNELBENCH_DIR/level1 [name-substring,...] [--train]

Shrinking rewrites the module's int constants before it runs, so that sizes derived from
them (`bias_shape = (out_channels, 1, 1)`) stay consistent: the batch becomes 2 and other
sizes above 64 are halved until they are not (odd stays odd); kernel sizes, strides,
paddings, dilations, groups and layer counts are left as they are. A program that eager
cannot run at those sizes is retried with only the batch shrunk. Each program runs in a
child process with a time limit. `--train` runs the module in train mode and also
compares the parameters' gradients (what AOTAutograd's backward compiles).

This is a proxy of the held-out collections (same kinds of programs), not a test: fix what
it finds in lamina's general mechanisms, never for one program."""
import ast
import json
import os
import subprocess
import sys
import tempfile

KEEP = ("kernel", "stride", "pad", "dilation", "group", "layer", "head", "scale", "dim_k", "eps",
        "num_classes", "depth_multiplier", "expand", "ratio", "window", "patch")


def shrink_source(src: str, mode: str, halvings: int = 64) -> str:
    """`src` with its module-level int constants shrunk: mode "all" (the batch to 2, other
    sizes halved until at most 64, or `halvings` times), "batch" (only the batch), or
    "sizes" (sizes halved `halvings` times, not below 64, the batch not below 2)."""
    tree = ast.parse(src)

    def small(v: int, name: str) -> int:
        if "batch" in name and mode != "sizes":
            return min(v, 2)
        if mode == "batch" or any(k in name for k in KEEP):
            return v
        floor = 2 if "batch" in name else 64
        for _ in range(halvings):
            if v <= floor:
                break
            v = v // 2 | (v & 1)
        return v

    def visit(node, name):
        if isinstance(node, ast.Constant) and type(node.value) is int and node.value > 2:
            node.value = small(node.value, name)
        elif isinstance(node, (ast.List, ast.Tuple)):
            for e in node.elts:
                visit(e, name)
        elif isinstance(node, ast.BinOp):   # M = 16384 * 4
            visit(node.left, name)
            visit(node.right, name)

    for stmt in tree.body:
        if isinstance(stmt, ast.Assign):
            names = " ".join(t.id.lower() for t in stmt.targets if isinstance(t, ast.Name))
            if names:
                visit(stmt.value, names)
    return ast.unparse(tree)


CHILD = r'''
import json, os, sys, copy, warnings, time
warnings.filterwarnings("ignore")
import torch
import lamina.backend  # noqa: F401
src, train, report = sys.argv[1], sys.argv[2] == "1", sys.argv[3]
g = {"__name__": "kb_program"}
exec(compile(open(src).read(), src, "exec"), g)
torch.manual_seed(0)
m = g["Model"](*g["get_init_inputs"]()).train(train)
xs = [x for x in g["get_inputs"]()]
torch.manual_seed(1)
m2 = copy.deepcopy(m)
def prep(xs):
    return [x.clone().requires_grad_(train and x.is_floating_point()) if torch.is_tensor(x) else x for x in xs]
xe, xc = prep(xs), prep(xs)
torch.manual_seed(2)
out_e = m(*xe)
os.environ["LAMINA_REPORT"] = report
t = time.time()
c = torch.compile(m2, backend="lamina")
torch.manual_seed(2)
out_c = c(*xc)
first = time.time() - t
flat = lambda o: [o] if torch.is_tensor(o) else [t for x in o for t in flat(x)] if isinstance(o, (tuple, list)) else []
worst, ok = 0.0, True
for a, b in zip(flat(out_e), flat(out_c)):
    if a.shape != b.shape or a.dtype != b.dtype:
        ok = False; worst = float("inf"); continue
    if a.numel() == 0: continue
    a64, b64 = a.detach().double(), b.detach().double()
    if not torch.allclose(b64, a64, rtol=1e-3, atol=1e-4, equal_nan=True):
        ok = False
    d = (b64 - a64).abs().nan_to_num(0.0)
    worst = max(worst, d.max().item())
if train:
    outs = [(a, b) for a, b in zip(flat(out_e), flat(out_c)) if a.requires_grad and a.is_floating_point()]
    if outs:
        torch.manual_seed(3)
        gs = [torch.randn_like(a) for a, _ in outs]
        torch.autograd.backward([a for a, _ in outs], gs)
        torch.autograd.backward([b for _, b in outs], gs)
        for (n, p), (_, q) in zip(m.named_parameters(), m2.named_parameters()):
            if p.grad is None: continue
            if q.grad is None or not torch.allclose(q.grad.double(), p.grad.double(), rtol=1e-2, atol=1e-3):
                ok = False
                worst = max(worst, float("inf") if q.grad is None else (q.grad - p.grad).abs().max().item())
print(json.dumps({"ok": ok, "worst": worst, "first_call_s": round(first, 2)}))
'''


def run_one(path: str, train: bool, timeout: int) -> str:
    src = open(path).read()
    last = None
    for mode in ("all", "batch"):
        with tempfile.TemporaryDirectory() as d:
            prog, report = os.path.join(d, "prog.py"), os.path.join(d, "report.jsonl")
            open(prog, "w").write(shrink_source(src, mode))
            try:
                p = subprocess.run([sys.executable, "-c", CHILD, prog, "1" if train else "0", report],
                                   capture_output=True, text=True, timeout=timeout)
            except subprocess.TimeoutExpired:
                return f"TIMEOUT ({timeout} s, sizes {mode})"
            result = next((line for line in p.stdout.splitlines() if line.startswith("{")), None)
            fallbacks, reasons = set(), []
            if os.path.exists(report):
                for line in open(report):
                    r = json.loads(line)
                    fallbacks |= set(map(str, r.get("fallback_ops", [])))
                    if r.get("fallback_reason"):
                        reasons.append(r["fallback_reason"].splitlines()[0][:200])
            if result is None:
                last = p.stderr.strip().splitlines()[-1:] if p.stderr.strip() else [f"exit {p.returncode}"]
                if not os.path.exists(report):   # eager failed at these sizes: try the next
                    continue
                return f"ERR {last[0][:300]}"
            r = json.loads(result)
            status = "OK " if r["ok"] and not fallbacks else "BAD" if not r["ok"] else "FB "
            tail = f" fb={sorted(fallbacks)}" if fallbacks else ""
            tail += f" reasons={reasons[:2]}" if reasons else ""
            return f"{status} worst={r['worst']:.2e} first_call={r['first_call_s']}s sizes={mode}{tail}"
    return f"SKIP eager failed: {last[0][:200] if last else ''}"


def main() -> None:
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    train = "--train" in sys.argv
    folder, select = args[0], args[1].split(",") if len(args) > 1 and args[1] else None
    timeout = int(os.environ.get("SWEEP_TIMEOUT", "600"))
    names = sorted((f for f in os.listdir(folder) if f.endswith(".py")), key=lambda f: (int(f.split("_")[0]) if f.split("_")[0].isdigit() else 0, f))
    for f in names:
        if select and not any(s in f for s in select):
            continue
        print(f"{f[:60]:60s} {run_one(os.path.join(folder, f), train, timeout)}", flush=True)


if __name__ == "__main__":
    main()
