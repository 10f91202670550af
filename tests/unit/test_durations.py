import pytest

from kubectl_unfinalize.durations import parse_duration
from kubectl_unfinalize.errors import InputError


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("90s", 90), ("2m", 120), ("1h30m", 5400), ("500ms", 0.5), ("1m30s", 90), ("15", 15), ("0", 0)],
)
def test_kubectl_durations(text, seconds):
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["", "abc", "5 minutes", "2x", "s", "1h-3m", "m5"])
def test_invalid_durations_are_input_errors(text):
    with pytest.raises(InputError, match="invalid duration"):
        parse_duration(text)
