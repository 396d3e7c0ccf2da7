"""Copies the declarative assets (dialects/, passes/) into the wheel as lamina/_assets.

Everything else is in pyproject.toml. Editable installs read the repository's files
directly (lamina/_assets.py looks in both places).
"""
import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent


class BuildPyWithAssets(build_py):
    def run(self):
        super().run()
        if self.editable_mode:
            return
        target = Path(self.build_lib) / "lamina" / "_assets"
        for folder in ("dialects", "passes"):
            shutil.copytree(ROOT / folder, target / folder, dirs_exist_ok=True)


setup(cmdclass={"build_py": BuildPyWithAssets})
