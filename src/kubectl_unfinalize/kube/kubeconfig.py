"""The common kubeconfig, read without the kubernetes client: static credentials only.

Importing the kubernetes client (pydantic, requests, oauthlib, ...) costs more time per
run than a small teardown's whole work. Most kubeconfigs
(kind, minikube, CI service accounts, client certificates) need none of it: a server,
a CA, a client certificate or a token, perhaps a proxy-url; an exec plugin or a token
file is credentials.py's to run or read. This module resolves those, merging files as
kubectl does (first file wins for each name and for current-context). Anything else
(auth providers, basic auth, relative paths, or any error) is answered None, and
config.py lets the kubernetes client load it, errors included.
"""

from __future__ import annotations

import base64
import os
from dataclasses import dataclass, field
from typing import Any

from ..options import ConnectionOptions

_DYNAMIC_USER_KEYS = ("auth-provider", "username", "password")


@dataclass(frozen=True)
class StaticConfig:
    """One context's connection settings, all known before the first request."""

    server: str
    namespace: str
    context: str
    user_name: str = ""
    user: dict[str, Any] = field(default_factory=dict)  # its kubeconfig entry: credentials.user_credential reads it
    base: str = ""  # the directory of the file that defines the user (an exec command is relative to it)
    cluster: dict[str, Any] = field(default_factory=dict)  # its kubeconfig entry (an exec plugin may be given it)
    ca_file: str | None = None
    ca_data: bytes | None = None
    cert_file: str | None = None
    cert_data: bytes | None = None
    key_file: str | None = None
    key_data: bytes | None = None
    insecure: bool = False
    tls_server_name: str | None = None
    proxy_url: str | None = None  # the cluster's proxy-url; proxies.proxy_for decides what it means


def static_config(options: ConnectionOptions, paths: list[str]) -> StaticConfig | None:
    """The settings for `options` from the kubeconfig files `paths`, or None."""
    try:
        return _resolve(options, paths, [_read(path) for path in paths])
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return None  # the kubernetes client's loader will say what is wrong


def context_names(paths: list[str]) -> list[str]:
    """Every context the kubeconfig files define, in kubectl's merge order (the first
    file that names one defines it)."""
    return list(_merged([(path, _read(path)) for path in paths], "contexts", "context"))


def _read(path: str) -> dict[str, Any]:
    from ..yamlload import module, safe_loader

    yaml = module()
    try:
        with open(path, encoding="utf-8") as handle:
            data = yaml.load(handle, Loader=safe_loader())
    except yaml.YAMLError as exc:
        raise ValueError(str(exc)) from exc
    if not isinstance(data, dict):
        raise ValueError(f"{path}: not a kubeconfig")
    return data


def _merged(docs: list[tuple[str, dict[str, Any]]], section: str, key: str) -> dict[str, tuple[dict[str, Any], str]]:
    """Each entry of `section` by name, the first file's winning, with that file's directory."""
    merged: dict[str, tuple[dict[str, Any], str]] = {}
    for path, doc in docs:
        for entry in doc.get(section) or []:
            merged.setdefault(str(entry["name"]), (dict(entry.get(key) or {}), os.path.dirname(path)))
    return merged


def _resolve(options: ConnectionOptions, paths: list[str], parsed: list[dict[str, Any]]) -> StaticConfig | None:
    docs = list(zip(paths, parsed, strict=True))
    contexts = _merged(docs, "contexts", "context")
    clusters = _merged(docs, "clusters", "cluster")
    users = _merged(docs, "users", "user")
    name = options.context or next((str(d["current-context"]) for _, d in docs if d.get("current-context")), "")
    if name not in contexts:
        return None
    context = dict(contexts[name][0])
    for flag, key, known in (("cluster", "cluster", clusters), ("user", "user", users)):
        value = getattr(options, flag)
        if value:
            if value not in known:
                return None
            context[key] = value
    cluster = clusters.get(str(context.get("cluster") or ""), (None, ""))[0]
    user, base = users.get(str(context.get("user") or ""), ({}, "")) if context.get("user") else ({}, "")
    if cluster is None or context.get("user") and str(context["user"]) not in users:
        return None
    if any(key in user for key in _DYNAMIC_USER_KEYS):
        return None
    files = [cluster.get("certificate-authority"), user.get("client-certificate"), user.get("client-key")]
    files.append(user.get("tokenFile"))
    if any(path and not os.path.isabs(str(path)) for path in files):
        return None  # relative to their kubeconfig file: leave that rule to the client
    return StaticConfig(
        server=str(options.server or cluster["server"]),
        namespace=str(context.get("namespace") or "default"),
        context=name,
        user_name=str(context.get("user") or ""),
        user=user,
        base=base,
        cluster=cluster,
        ca_file=options.certificate_authority or cluster.get("certificate-authority"),
        ca_data=None if options.certificate_authority else _data(cluster.get("certificate-authority-data")),
        cert_file=options.client_certificate or user.get("client-certificate"),
        cert_data=None if options.client_certificate else _data(user.get("client-certificate-data")),
        key_file=options.client_key or user.get("client-key"),
        key_data=None if options.client_key else _data(user.get("client-key-data")),
        insecure=bool(options.insecure_skip_tls_verify or cluster.get("insecure-skip-tls-verify")),
        tls_server_name=options.tls_server_name or cluster.get("tls-server-name"),
        proxy_url=str(cluster["proxy-url"]) if cluster.get("proxy-url") else None,
    )


def _data(value: Any) -> bytes | None:
    return base64.b64decode(str(value), validate=True) if value else None
