"""What the unit tests share: both ways a remove-every-finalizer patch can go."""

from __future__ import annotations

import pytest


@pytest.fixture(params=[False, True], ids=["verbs", "bulk"])
def bulk(request) -> bool:
    """Both ways a remove-every-finalizer patch can go: through the verbs on a worker
    thread, or to the cluster's bulk sender."""
    return request.param
