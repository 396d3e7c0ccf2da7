#!/usr/bin/env python3
"""Fuzz lamina-opt with mutations of the lit tests' inputs: every run must end with exit
status 0 or 1 (a located diagnostic), never a Python traceback, a signal or a hang.

    python tools/fuzz_lamina_opt.py                 # 1000 mutants, all cores
    python tools/fuzz_lamina_opt.py -n 30 --seed 7  # a sample (CI runs one)
    python tools/fuzz_lamina_opt.py --keep DIR      # also keep every failing input in DIR

Each mutant takes one lit test file (test/**/*.mlir) with the passes of one of its RUN
lines (`lamina-opt %s <passes> | FileCheck ...`), and applies 1-3 random mutations:
delete, duplicate or swap lines, truncate the file, replace a number, a type, an op or
attribute name with another one from the corpus, flip or insert bytes. The summary counts
outcomes; a failure prints the command and the first lines of its stderr. Exit status 1
if anything failed.
"""
from __future__ import annotations

import argparse
import os
import random
import re
import shlex
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RUN_LINE = re.compile(r"//\s*RUN:\s*(?:env\s+((?:\w+=\S+\s+)*))?lamina-opt\s+%s\s*(.*?)(?:\|.*)?$")
TOKEN_KINDS = {
    "number": re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?(?:e-?\d+)?"),
    "type": re.compile(r"\b(?:f16|bf16|f32|f64|i1|i8|i16|i32|i64|index)\b"),
    "op": re.compile(r'"?\b(?:lamina|linalg|arith|tensor|func|math|scf|memref)\.[a-z_]+\b"?'),
    "attr": re.compile(r"\b[a-z_]+(?= = )"),
    "shape": re.compile(r"\b\d+(?:x\d+)*x(?=[fi])"),
}


def lit_cases() -> list[tuple[Path, list[str], dict]]:
    """(input file, lamina-opt arguments, environment) of every RUN line."""
    cases = []
    for path in sorted((ROOT / "test").rglob("*.mlir")):
        if "Output" in path.parts:
            continue
        for line in path.read_text(errors="replace").splitlines():
            m = RUN_LINE.search(line)
            if not m:
                continue
            env = dict(item.split("=", 1) for item in (m.group(1) or "").split())
            args = [a for a in shlex.split(m.group(2).strip()) if a not in ("-verify-diagnostics",)]
            cases.append((path, args, env))
    return cases


def corpus_tokens(texts: list[str]) -> dict[str, list[str]]:
    return {kind: sorted({t for text in texts for t in pattern.findall(text)}) or ["0"]
            for kind, pattern in TOKEN_KINDS.items()}


def mutate(text: str, rng: random.Random, tokens: dict[str, list[str]]) -> str:
    lines = text.splitlines(keepends=True)
    choice = rng.choice(["delete", "duplicate", "swap", "truncate", "token", "token", "token", "bytes", "insert"])
    if choice in ("delete", "duplicate", "swap") and len(lines) > 1:
        i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
        if choice == "delete":
            del lines[i]
        elif choice == "duplicate":
            lines.insert(j, lines[i])
        else:
            lines[i], lines[j] = lines[j], lines[i]
        return "".join(lines)
    if choice == "truncate":
        return text[: rng.randrange(len(text) + 1)]
    if choice == "token":
        kind = rng.choice(list(TOKEN_KINDS))
        matches = list(TOKEN_KINDS[kind].finditer(text))
        if matches:
            m = rng.choice(matches)
            return text[: m.start()] + rng.choice(tokens[kind]) + text[m.end():]
    if choice == "insert":
        pos = rng.randrange(len(text) + 1)
        junk = rng.choice(['"', "{", "}", "(", ")", "<", ">", "%", "@", "#", ":", ",", "x", "?", "-1", "\x00", "é"])
        return text[:pos] + junk + text[pos:]
    data = bytearray(text.encode())
    for _ in range(rng.randint(1, 4)):
        if data:
            data[rng.randrange(len(data))] = rng.randrange(256)
    return data.decode(errors="replace")


def run_one(index: int, case, text: str, workdir: Path, timeout: float) -> tuple[str, str, Path]:
    path, args, env = case
    mutant = workdir / f"mutant-{index:05d}.mlir"
    mutant.write_text(text, errors="replace")
    cmd = [sys.executable, "-m", "lamina.tools.lamina_opt", str(mutant), *args]
    run_env = dict(os.environ, **env)
    run_env.pop("LAMINA_DEBUG", None)
    run_env.pop("LAMINA_FAULT", None)
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=run_env,
                              errors="replace")
    except subprocess.TimeoutExpired:
        return "hang", " ".join(cmd), mutant
    if proc.returncode < 0:
        return "signal", f"{' '.join(cmd)}\n(signal {-proc.returncode})\n{proc.stderr[-1500:]}", mutant
    if "Traceback (most recent call last)" in proc.stderr:
        return "traceback", f"{' '.join(cmd)}\n{proc.stderr[-2500:]}", mutant
    if proc.returncode not in (0, 1):
        return "bad-exit", f"{' '.join(cmd)}\n(exit {proc.returncode})\n{proc.stderr[-1500:]}", mutant
    if proc.returncode == 1 and not re.search(r":\d+:\d+: error: |: error: ", proc.stderr):
        return "no-diagnostic", f"{' '.join(cmd)}\n{proc.stderr[-1500:]}", mutant
    mutant.unlink()
    return ("ok" if proc.returncode == 0 else "diagnosed"), "", mutant


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("-n", type=int, default=1000, help="number of mutants (default 1000)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    p.add_argument("--timeout", type=float, default=120.0, help="seconds per run before it counts as a hang")
    p.add_argument("--keep", metavar="DIR", help="copy failing inputs here")
    args = p.parse_args(argv)
    rng = random.Random(args.seed)
    cases = lit_cases()
    texts = {case[0]: case[0].read_text(errors="replace") for case in cases}
    tokens = corpus_tokens(list(texts.values()))
    jobs = []
    for i in range(args.n):
        case = rng.choice(cases)
        text = texts[case[0]]
        for _ in range(rng.randint(1, 3)):
            text = mutate(text, rng, tokens)
        jobs.append((i, case, text))
    counts: dict[str, int] = {}
    failures = []
    with tempfile.TemporaryDirectory(prefix="lamina-fuzz-") as tmp, ThreadPoolExecutor(args.jobs) as pool:
        for outcome, detail, mutant in pool.map(lambda j: run_one(*j, Path(tmp), args.timeout), jobs):
            counts[outcome] = counts.get(outcome, 0) + 1
            if detail:
                failures.append((outcome, detail))
                if args.keep:
                    Path(args.keep).mkdir(parents=True, exist_ok=True)
                    (Path(args.keep) / mutant.name).write_bytes(mutant.read_bytes())
    for outcome, detail in failures[:20]:
        print(f"--- {outcome}\n{detail}\n")
    bad = sum(v for k, v in counts.items() if k not in ("ok", "diagnosed"))
    print(f"lamina-opt fuzz: {args.n} mutants of {len(texts)} lit inputs (seed {args.seed}): "
          + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())) + f"; failures {bad}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
