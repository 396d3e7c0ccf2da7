"""One record per compiled FX graph: what ran compiled, what fell back, how long it took.

Records are kept in memory (`reports()`, `last_report()`) and, when the `report`
option / LAMINA_REPORT names a file, appended to it as JSON lines (`report=True`: to stderr).
"""
from __future__ import annotations

import json
import sys
import threading

_LOCK = threading.Lock()
_REPORTS: list[dict] = []


def record(entry: dict, path: str | bool | None) -> None:
    """Keep `entry` (and write it where `path` says; None: write() writes it later)."""
    with _LOCK:
        _REPORTS.append(entry)
    write(entry, path)


def write(entry: dict, path: str | bool | None) -> None:
    with _LOCK:
        if path is True:   # not open(True): that is file descriptor 1, closed afterwards
            print(json.dumps(entry, sort_keys=True), file=sys.stderr)
        elif path:
            with open(path, "a") as f:
                f.write(json.dumps(entry, sort_keys=True) + "\n")


def reports() -> list[dict]:
    """Every report of this process, oldest first."""
    return list(_REPORTS)


def last_report() -> dict | None:
    return _REPORTS[-1] if _REPORTS else None


def clear_reports() -> None:
    _REPORTS.clear()
