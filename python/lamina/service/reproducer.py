"""Crash reproducers: when a compile worker dies, the lamina IR it was given and the
`lamina-opt` command that replays the stage it died in.

    LAMINA_REPRO_DIR   where they go (default <cache root>/repro, service/cache.py)

The file is the graph's lamina IR after import (with locations, and the
`lamina.layout = "strided"` marks of its view inputs), preceded by comment lines: what
happened, the command (`lamina-opt FILE --lamina-compile="target=T until=STAGE"`, which
runs the pipeline through that stage, with the LAMINA_* settings the compile had) and the
tail of the worker's stderr (an assertion message, when MLIR printed one).
"""
from __future__ import annotations

import os
import shlex
import time
from pathlib import Path

from .cache import cache_root


def repro_dir() -> Path:
    return Path(os.environ.get("LAMINA_REPRO_DIR") or cache_root() / "repro")


def replay_command(path: Path, target: str, stage: str | None, settings: dict) -> str:
    env = " ".join(f"{k}={shlex.quote(v)}" for k, v in sorted(settings.items())
                   if k not in ("LAMINA_REPORT", "LAMINA_CACHE_DIR", "LAMINA_REPRO_DIR"))
    until = f" until={stage}" if stage else ""
    command = f"lamina-opt {shlex.quote(str(path))} --lamina-compile=\"target={target}{until}\""
    return f"{env} {command}" if env else command


def write_reproducer(graph: str, ir_text: str, target: str, stage: str | None, how: str, settings: dict,
                     log_tail: str = "") -> tuple[Path, str]:
    """Write the reproducer; returns (its path, the replay command)."""
    directory = repro_dir()
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{graph}-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}.mlir"
    command = replay_command(path, target, stage, settings)
    header = [f"// lamina reproducer: the compile worker for {graph} {how}"
              + (f" in stage {stage!r}" if stage else "") + ".",
              "// Replay:",
              f"//   {command}"]
    if log_tail.strip():
        header.append("// Worker stderr (tail):")
        header += [f"//   {line}" for line in log_tail.strip().splitlines()[-40:]]
    path.write_text("\n".join(header) + "\n" + ir_text)
    return path, command
