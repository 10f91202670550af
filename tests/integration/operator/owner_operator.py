"""A real kopf operator for the tests, in OPERATOR_GROUP: an owner creates a child it owns;
delete handlers, a timer and a daemon make kopf put its finalizer on every object it
handles. OPERATOR_KINDS names the plurals (owner, owned, other) and the owned Kind:
test_operator.py runs parents, children and sidecars; the pytest plugin's suite
(plugin_suite.py) fleets, ships and buoys, kinds of its own, so that kubectl's short names
for the two suites' types stay unambiguous."""

import asyncio
import os

import kopf
from kubernetes import client, config

GROUP = os.environ["OPERATOR_GROUP"]
VERSION = "v1"
OWNER, OWNED, OWNED_KIND, OTHER = os.environ.get("OPERATOR_KINDS", "parents,children,Child,sidecars").split(",")


@kopf.on.startup()
def configure(settings: kopf.OperatorSettings, **_):
    config.load_kube_config()
    settings.posting.enabled = False
    settings.watching.server_timeout = 30


@kopf.on.create(GROUP, VERSION, OWNER)
def create_child(name, namespace, body, **_):
    child_name = f"{name}-{OWNED_KIND.lower()}"
    child = {"apiVersion": f"{GROUP}/{VERSION}", "kind": OWNED_KIND, "metadata": {"name": child_name}, "spec": {}}
    kopf.adopt(child, owner=body)
    client.CustomObjectsApi().create_namespaced_custom_object(GROUP, VERSION, namespace, OWNED, child)


@kopf.on.delete(GROUP, VERSION, OWNER)
def owner_deleted(**_):
    pass


@kopf.timer(GROUP, VERSION, OWNER, interval=2.0)
def owner_tick(patch, **_):
    patch.status["ticks"] = "seen"


@kopf.daemon(GROUP, VERSION, OWNED)
async def child_daemon(stopped, **_):
    while not stopped:
        await asyncio.sleep(0.5)


@kopf.on.delete(GROUP, VERSION, OTHER)
def other_deleted(**_):
    pass
