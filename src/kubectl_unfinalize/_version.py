"""The one source of the version: pyproject reads it, --version prints it."""

__version__ = "0.1.0"

# The API servers the tool is tested against (CI: the integration core on the oldest
# minor's newest patch, everything on the newest); --version and README name the range.
KUBERNETES_RANGE = ("1.29", "1.36")
