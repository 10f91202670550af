"""The API server's answers about objects it cannot read from storage, as kube-apiserver
v1.36.3 gave them with AllowUnsafeMalformedObjectDeletion on and off."""

import pytest
from test_transport import ScriptedPool, transport

from kubectl_unfinalize.errors import ApiError, CorruptObjects
from kubectl_unfinalize.kube.corrupt import named
from kubectl_unfinalize.model import ObjectRef, Resource

WIDGETS = Resource("example.com", "v1", "widgets", "Widget", True)
SECRETS = Resource("", "v1", "secrets", "Secret", True)
CLUSTER_THINGS = Resource("example.com", "v1", "things", "Thing", False)
ERR = "StorageError: corrupt object, Code: 7, Key: {key}, ResourceVersion: 0, AdditionalErrorMsg: object not decodable"

LIST_ANSWER = {
    "kind": "Status",
    "status": "Failure",
    "message": "failed to read one or more widgets.example.com from the storage",
    "reason": "StorageReadError",
    "details": {
        "name": "list",
        "group": "example.com",
        "kind": "widgets",
        "causes": [
            {
                "reason": "UnexpectedServerResponse",
                "message": ERR.format(key="/registry/example.com/widgets/t/a"),
                "field": "/registry/example.com/widgets/t/a",
            },
            {
                "reason": "UnexpectedServerResponse",
                "message": ERR.format(key="/registry/example.com/widgets/u/b"),
                "field": "/registry/example.com/widgets/u/b",
            },
        ],
    },
    "code": 500,
}
GET_ANSWER = {
    "kind": "Status",
    "status": "Failure",
    "message": "Internal error occurred: " + ERR.format(key="/secrets/t/s"),
    "reason": "InternalError",
    "details": {"causes": [{"message": ERR.format(key="/secrets/t/s")}]},
    "code": 500,
}
WITHOUT_GATE = {"kind": "Status", "status": "Failure", "message": "illegal base64 data at input byte 0", "code": 500}


def test_a_list_the_server_could_not_read_names_each_object_and_is_asked_once():
    pool = ScriptedPool(*[(500, {}, LIST_ANSWER)] * 3)
    with pytest.raises(CorruptObjects) as raised:
        transport(pool).request("GET", "/apis/example.com/v1/widgets")
    assert len(pool.requests) == 1
    assert named(raised.value, WIDGETS).refs == (ObjectRef(WIDGETS, "a", "t"), ObjectRef(WIDGETS, "b", "u"))
    assert not named(raised.value, WIDGETS).more


def test_a_read_of_one_corrupt_object_names_it_from_its_key():
    pool = ScriptedPool((500, {}, GET_ANSWER))
    with pytest.raises(CorruptObjects) as raised:
        transport(pool).request("GET", "/api/v1/namespaces/t/secrets/s")
    assert named(raised.value, SECRETS).refs == (ObjectRef(SECRETS, "s", "t"),)


def test_a_cluster_scoped_key_and_the_servers_limit_on_how_many_it_names():
    answer = {
        **LIST_ANSWER,
        "details": {
            "causes": [
                {"field": "/registry/example.com/things/one", "message": "x"},
                {"reason": "TooMany", "message": "too many errors, the list is truncated"},
            ]
        },
    }
    found = named(CorruptObjects(500, "StorageReadError", "m", details=answer["details"]), CLUSTER_THINGS)
    assert found.refs == (ObjectRef(CLUSTER_THINGS, "one"),)
    assert found.more


def test_without_the_feature_gate_a_500_is_an_ordinary_one_retried_a_few_times():
    pool = ScriptedPool(*[(500, {}, WITHOUT_GATE)] * 3)
    with pytest.raises(ApiError) as raised:
        transport(pool).request("GET", "/api/v1/secrets")
    assert not isinstance(raised.value, CorruptObjects)
    assert len(pool.requests) == 3


def test_what_the_server_said_of_each_object_is_kept_without_its_bookkeeping():
    exc = CorruptObjects(500, "StorageReadError", "m", details=LIST_ANSWER["details"])
    assert named(exc, WIDGETS).said[ObjectRef(WIDGETS, "a", "t")] == "object not decodable"
