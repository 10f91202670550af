"""A kopf operator for scan's tests: it puts its finalizer on every object of one kind
(OPERATOR_PLURAL in OPERATOR_GROUP); with OPERATOR_DELETE=fail its delete handler keeps
failing and kopf retries it every 2 s, writing its progress each time (the evidence of a
controller at work)."""

import os

import kopf
from kubernetes import config

GROUP = os.environ["OPERATOR_GROUP"]
PLURAL = os.environ["OPERATOR_PLURAL"]


@kopf.on.startup()
def configure(settings: kopf.OperatorSettings, **_):
    config.load_kube_config()
    settings.posting.enabled = False
    settings.watching.server_timeout = 30
    settings.batching.worker_limit = 32


@kopf.on.create(GROUP, "v1", PLURAL)
def created(**_):
    pass


@kopf.on.delete(GROUP, "v1", PLURAL)
def deleted(**_):
    if os.environ.get("OPERATOR_DELETE") == "fail":
        raise kopf.TemporaryError("still cleaning up outside the cluster", delay=2)
