"""Where lamina's declarative assets (dialects/, passes/) live.

The repository keeps them at the top level (dialects/lamina.irdl.mlir is the single
source of truth); an installed wheel carries copies under lamina/_assets/ (setup.py
copies them at build time). Editable installs read the repository's files directly.
"""
from __future__ import annotations

from pathlib import Path

_PACKAGE_DIR = Path(__file__).resolve().parent


def asset_path(*parts: str) -> Path:
    """Path of an asset such as asset_path("dialects", "lamina.irdl.mlir")."""
    for root in (_PACKAGE_DIR / "_assets", _PACKAGE_DIR.parent.parent):
        candidate = root.joinpath(*parts)
        if candidate.exists():
            return candidate
    raise FileNotFoundError(f"lamina asset {'/'.join(parts)} not found (broken install?)")
