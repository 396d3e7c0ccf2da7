"""A CI-sized sample of tools/fuzz_lamina_opt.py: mutated lit inputs through lamina-opt end
in a located diagnostic or success, never a traceback, a signal or a hang (the full run,
1000 mutants: `python tools/fuzz_lamina_opt.py`)."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def test_a_sample_of_mutated_lit_inputs_never_crashes_lamina_opt():
    seed = int(os.environ.get("LAMINA_FUZZ_SEED", "2026"))   # fixed: a CI failure reproduces
    proc = subprocess.run([sys.executable, str(ROOT / "tools" / "fuzz_lamina_opt.py"), "-n", "24", "--seed",
                           str(seed), "--jobs", "2"], capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert "failures 0" in proc.stdout
