"""The one source of the version: pyproject reads it, --version prints it."""

__version__ = "0.1.0"
