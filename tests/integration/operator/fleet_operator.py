"""A kopf operator for the pytest plugin's suite (plugin_suite.py), in OPERATOR_GROUP: a
fleet creates a ship it owns; fleets, ships and buoys get kopf's finalizer (delete
handlers, a timer, a daemon). Kinds of its own, so that kubectl's short names for the other
tests' operators (widget_operator.py's parents, children, sidecars) stay unambiguous."""

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


@kopf.on.create(GROUP, VERSION, "fleets")
def launch_ship(name, namespace, body, **_):
    ship = {"apiVersion": f"{GROUP}/{VERSION}", "kind": "Ship", "metadata": {"name": f"{name}-ship"}, "spec": {}}
    kopf.adopt(ship, owner=body)
    client.CustomObjectsApi().create_namespaced_custom_object(GROUP, VERSION, namespace, "ships", ship)


@kopf.on.delete(GROUP, VERSION, "fleets")
def fleet_deleted(**_):
    pass


@kopf.timer(GROUP, VERSION, "fleets", interval=2.0)
def fleet_tick(patch, **_):
    patch.status["ticks"] = "seen"


@kopf.daemon(GROUP, VERSION, "ships")
async def ship_daemon(stopped, **_):
    while not stopped:
        await asyncio.sleep(0.5)


@kopf.on.delete(GROUP, VERSION, "buoys")
def buoy_deleted(**_):
    pass
