"""A real kopf operator for the tests: parents create owned children; delete handlers,
a timer and a daemon make kopf put its finalizer on every object it handles."""

import asyncio
import os

import kopf
from kubernetes import client, config

GROUP = os.environ["OPERATOR_GROUP"]
VERSION = "v1"


@kopf.on.startup()
def configure(settings: kopf.OperatorSettings, **_):
    config.load_kube_config()
    settings.posting.enabled = False
    settings.watching.server_timeout = 30


@kopf.on.create(GROUP, VERSION, "parents")
def create_child(name, namespace, body, **_):
    child = {"apiVersion": f"{GROUP}/{VERSION}", "kind": "Child", "metadata": {"name": f"{name}-child"}, "spec": {}}
    kopf.adopt(child, owner=body)
    client.CustomObjectsApi().create_namespaced_custom_object(GROUP, VERSION, namespace, "children", child)


@kopf.on.delete(GROUP, VERSION, "parents")
def parent_deleted(**_):
    pass


@kopf.timer(GROUP, VERSION, "parents", interval=2.0)
def parent_tick(patch, **_):
    patch.status["ticks"] = "seen"


@kopf.daemon(GROUP, VERSION, "children")
async def child_daemon(stopped, **_):
    while not stopped:
        await asyncio.sleep(0.5)


@kopf.on.delete(GROUP, VERSION, "sidecars")
def sidecar_deleted(**_):
    pass
