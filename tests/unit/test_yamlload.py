"""yaml imported without compiling its reader's pattern of non-printable characters."""

import subprocess
import sys
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src"

CHECK = """
import re, sys
sys.path.insert(0, sys.argv[1])
from kubectl_unfinalize import yamlload
yaml = yamlload.module()
stand_in = yaml.reader.Reader.NON_PRINTABLE
assert type(stand_in).__name__ == "_OnFirstUse", type(stand_in)  # the trick still applies
assert yaml.load("a: [1, two]", Loader=yamlload.safe_loader()) == {"a": [1, "two"]}
assert stand_in._compiled is None  # the C loader never used it
try:
    yaml.load("a: \\x01", Loader=yaml.SafeLoader)  # the pure-Python reader does
except yaml.reader.ReaderError as exc:
    assert "special characters are not allowed" in str(exc), exc
else:
    raise AssertionError("a control character was accepted")
assert stand_in.search("ok\\x07").start() == 2
assert re.compile(yamlload.NOT_PRINTABLE) is stand_in._compiled  # cached in its place
print("ok")
"""


def test_yaml_reads_without_its_reader_pattern_and_the_pattern_still_works():
    # A fresh interpreter: yaml must not have been imported by another test before.
    result = subprocess.run([sys.executable, "-c", CHECK, str(SRC)], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"
