"""The docs cannot rot: run the tutorial, check the pass reference is complete.

* docs/tutorial.md: every ```python block runs, in order, in one namespace, and every
  `lamina-opt` line of a ```sh block runs (exit status 0) in the same scratch directory,
  in document order (the Python blocks write the files the commands read).
* docs/passes.md names every pass of lamina.transforms.registry.all_passes().
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
FENCE = re.compile(r"^```([\w-]*)[^\n]*\n(.*?)^```[ \t]*$", re.S | re.M)


def code_blocks(path: Path) -> list[tuple[str, str, int]]:
    """(language, code, line number) of each fenced block of a markdown file."""
    text = path.read_text()
    return [(m.group(1), m.group(2), text.count("\n", 0, m.start()) + 1) for m in FENCE.finditer(text)]


def lamina_opt_dir() -> str:
    """A directory with a `lamina-opt` executable, for PATH."""
    venv_bin = Path(sys.executable).parent
    if (venv_bin / "lamina-opt").exists():
        return str(venv_bin)
    found = shutil.which("lamina-opt")
    return str(Path(found).parent) if found else str(ROOT / "tools")


def test_tutorial_runs(tmp_path, monkeypatch):
    blocks = [b for b in code_blocks(DOCS / "tutorial.md") if b[0] in ("python", "sh")]
    assert any(lang == "python" for lang, _, _ in blocks), "no python blocks in docs/tutorial.md"
    monkeypatch.chdir(tmp_path)
    saved_env = dict(os.environ)
    env = dict(os.environ, PATH=lamina_opt_dir() + os.pathsep + os.environ.get("PATH", ""))
    namespace = {"__name__": "__tutorial__"}
    try:
        for lang, code, line in blocks:
            if lang == "python":
                exec(compile(code, f"docs/tutorial.md:{line}", "exec"), namespace)
                continue
            for command in code.splitlines():
                if not command.startswith("lamina-opt"):
                    continue
                r = subprocess.run(command, shell=True, cwd=tmp_path, env=env,
                                   capture_output=True, text=True, timeout=120)
                assert r.returncode == 0, f"docs/tutorial.md:{line}: `{command}` failed:\n{r.stderr}"
    finally:
        os.environ.clear()
        os.environ.update(saved_env)


def test_passes_md_names_every_pass():
    from lamina.transforms.registry import all_passes

    text = (DOCS / "passes.md").read_text()
    missing = [p.name for p in all_passes() if f"`{p.name}`" not in text]
    assert not missing, f"docs/passes.md does not document: {', '.join(missing)}"


def test_passes_md_names_every_cpu_pipeline_pass():
    pipeline = "\n".join((ROOT / "passes" / name).read_text() for name in ("cpu.pipeline", "cpu-tiled.pipeline"))
    body = "\n".join(line.split("//", 1)[0] for line in pipeline.splitlines())
    body = re.sub(r"\{[^}]*\}", "", body)  # pass options
    names = {n for part in body.split("builtin.module(")[1:] for n in re.findall(r"[a-z][a-z0-9-]*(?=\s*[,()\n])", part)}
    names -= {"func.func", "func"}
    text = (DOCS / "passes.md").read_text()
    missing = sorted(n for n in names if f"`{n}`" not in text)
    assert not missing, f"docs/passes.md does not explain upstream passes of passes/cpu.pipeline: {missing}"


@pytest.mark.parametrize("doc", ["tutorial.md", "passes.md", "ir-levels.md"])
def test_relative_links_resolve(doc):
    text = (DOCS / doc).read_text()
    for target in re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", text):
        assert (DOCS / target).exists(), f"docs/{doc} links to missing {target}"
