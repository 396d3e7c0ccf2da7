"""LAMINA_FAULT: make compilation fail on purpose at one pipeline stage, to test that the
user's program survives it.

    LAMINA_FAULT=abort@linalg      abort() when stage linalg starts (SIGABRT, as an MLIR assertion)
    LAMINA_FAULT=segv@target       a segmentation fault (SIGSEGV)
    LAMINA_FAULT=exit@graph        the process exits with status 3 (os._exit)
    LAMINA_FAULT=hang@load         sleep for an hour (a compile that never ends: worker timeout)
    LAMINA_FAULT=raise@fuse        a Python exception (an ordinary compile failure)

Stages are those of lamina.pipeline.STAGES (the report's stage_s keys). Several faults may
be given, separated by commas. The knob acts wherever the stage runs: in a compile worker
by default, in the user's process with options={"compile_in_process": True} (where it
kills that process: that is what the worker protects against).
"""
from __future__ import annotations

import ctypes
import os
import time

KINDS = ("abort", "segv", "exit", "hang", "raise")


class InjectedFault(RuntimeError):
    """The `raise` fault."""


def parse(text: str | None) -> dict[str, str]:
    """{stage: kind} of a LAMINA_FAULT value; unknown kinds or stages raise ValueError."""
    from ..pipeline import STAGES

    faults = {}
    for item in (text or "").split(","):
        item = item.strip()
        if not item:
            continue
        kind, sep, stage = item.partition("@")
        if not sep or kind not in KINDS or stage not in STAGES:
            raise ValueError(f"LAMINA_FAULT={text!r}: expected <kind>@<stage>[,...] with kind in "
                             f"{', '.join(KINDS)} and stage in {', '.join(STAGES)}")
        faults[stage] = kind
    return faults


def inject(stage: str) -> None:
    """Fail now if LAMINA_FAULT names `stage`."""
    text = os.environ.get("LAMINA_FAULT")
    if not text:
        return
    kind = parse(text).get(stage)
    if kind is None:
        return
    if kind == "abort":
        os.abort()
    if kind == "segv":
        ctypes.string_at(0)   # reads address 0
    if kind == "exit":
        os._exit(3)
    if kind == "hang":
        time.sleep(3600)
    raise InjectedFault(f"LAMINA_FAULT: injected failure at stage {stage!r}")
