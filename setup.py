"""setuptools hook: write the man page (packaging/build-man.py) before the wheel collects
its data files, so `pip install .` installs share/man/man1/kubectl-unfinalize.1.
Everything else is in pyproject.toml."""

import runpy
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent


class BuildPyWithManPage(build_py):
    def run(self):
        runpy.run_path(str(HERE / "packaging" / "build-man.py"))["main"]([str(HERE / "build/man/kubectl-unfinalize.1")])
        super().run()


setup(cmdclass={"build_py": BuildPyWithManPage})
