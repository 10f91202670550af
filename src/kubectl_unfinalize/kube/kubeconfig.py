"""Every kubeconfig, resolved as kubectl resolves it, into one context's settings.

kubectl's rules, in one place: the files are --kubeconfig, else every path in KUBECONFIG
that exists, else ~/.kube/config; they merge with the first file winning for each
cluster, user and context name and for current-context; --context, --cluster and --user
pick by name, and a name that is not there is an error listing those that are; a
relative path is relative to the file that names it; --server, --certificate-authority
and the other connection flags override the kubeconfig. Only PyYAML is imported: the
kubernetes client (pydantic, requests, oauthlib, ...) costs more time per run than a
small teardown's whole work, and config.py asks it only to authenticate a user no one
else can (an auth provider, basic auth).
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import ConfigError, yaml_problem
from ..options import ConnectionOptions

_Entries = dict[str, tuple[dict[str, Any], str]]  # name -> (its entry, the file that defines it)


@dataclass(frozen=True)
class Resolved:
    """One context's connection settings with the flags applied, all known before the
    first request. The user's entry is kept as written: credentials.user_credential
    chooses from it (exec plugin, token file, token, or none of its own)."""

    server: str
    namespace: str = "default"
    context: str = ""
    user_name: str = ""
    user: dict[str, Any] = field(default_factory=dict)  # its kubeconfig entry
    base: str = ""  # the directory of the user's file: its exec command and tokenFile are relative to it
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


def files(options: ConnectionOptions) -> list[str]:
    """The kubeconfig files to merge, in order; none when there is no kubeconfig."""
    if options.kubeconfig:
        path = os.path.expanduser(options.kubeconfig)
        if not os.path.exists(path):
            raise ConfigError(f"kubeconfig not found: {options.kubeconfig}")
        return [path]
    env = os.environ.get("KUBECONFIG")
    if env:
        return [os.path.expanduser(p) for p in env.split(os.pathsep) if p and os.path.exists(os.path.expanduser(p))]
    default = Path("~/.kube/config").expanduser()
    return [str(default)] if default.exists() else []


def context_names(options: ConnectionOptions) -> list[str]:
    """Every context the kubeconfig defines, in kubectl's merge order."""
    paths = files(options)
    return list(_merged([(path, _read(path)) for path in paths], "contexts", "context"))


def resolve(options: ConnectionOptions, paths: list[str]) -> Resolved | None:
    """The settings `options` select from the kubeconfig files `paths`, or from the flags
    alone without a kubeconfig; None without either (a pod's service account may serve).
    Raises ConfigError, in one line, for what kubectl would refuse."""
    if not paths:
        for flag, value in (("context", options.context), ("cluster", options.cluster), ("user", options.user)):
            if value:
                raise ConfigError(f"--{flag} {value!r} needs a kubeconfig to look it up in, and there is none")
        return with_flags(Resolved(server=options.server), options) if options.server else None
    docs = [(path, _read(path)) for path in paths]
    contexts = _merged(docs, "contexts", "context")
    name = options.context or next((str(d["current-context"]) for _, d in docs if d.get("current-context")), "")
    if options.context and name not in contexts:
        raise ConfigError(f"context {name!r} not found in kubeconfig (available: {_listed(sorted(contexts))})")
    if not name and not options.server:
        raise ConfigError("no current context in kubeconfig; pass --context or --server")
    context = dict(contexts.get(name, ({}, ""))[0])
    clusters, users = _merged(docs, "clusters", "cluster"), _merged(docs, "users", "user")
    for flag, known in (("cluster", clusters), ("user", users)):
        value = getattr(options, flag)
        if value:
            if value not in known:
                raise ConfigError(f"{flag} {value!r} not found in kubeconfig (available: {_listed(known)})")
            context[flag] = value
    cluster, cluster_file = _cluster(options, name, context, contexts, clusters)
    user_name = str(context.get("user") or "")
    user, user_file = users.get(user_name, ({}, "")) if user_name else ({}, "")
    found = Resolved(
        server=str(cluster.get("server") or ""),
        namespace=str(context.get("namespace") or "default"),
        context=name,
        user_name=user_name,
        user=user,
        base=os.path.dirname(user_file),
        cluster=cluster,
        ca_file=_path(cluster, "certificate-authority", cluster_file),
        ca_data=_data(cluster, "certificate-authority-data", cluster_file),
        cert_file=_path(user, "client-certificate", user_file),
        cert_data=_data(user, "client-certificate-data", user_file),
        key_file=_path(user, "client-key", user_file),
        key_data=_data(user, "client-key-data", user_file),
        insecure=bool(cluster.get("insecure-skip-tls-verify")),
        tls_server_name=str(cluster["tls-server-name"]) if cluster.get("tls-server-name") else None,
        proxy_url=str(cluster["proxy-url"]) if cluster.get("proxy-url") else None,
    )
    return with_flags(found, options)


def with_flags(found: Resolved, options: ConnectionOptions) -> Resolved:
    """kubectl's connection flags over what the kubeconfig (or the pod) says: a file
    named by a flag replaces the kubeconfig's file and data for that field."""
    return dataclasses.replace(
        found,
        server=options.server or found.server,
        ca_file=options.certificate_authority or found.ca_file,
        ca_data=None if options.certificate_authority else found.ca_data,
        cert_file=options.client_certificate or found.cert_file,
        cert_data=None if options.client_certificate else found.cert_data,
        key_file=options.client_key or found.key_file,
        key_data=None if options.client_key else found.key_data,
        insecure=options.insecure_skip_tls_verify or found.insecure,
        tls_server_name=options.tls_server_name or found.tls_server_name,
    )


def _cluster(
    options: ConnectionOptions, name: str, context: dict[str, Any], contexts: _Entries, clusters: _Entries
) -> tuple[dict[str, Any], str]:
    """The context's cluster entry and its file. --server alone stands for a cluster
    when the context names none (the context's user still counts)."""
    cluster_name = str(context.get("cluster") or "")
    if not cluster_name:
        if options.server:
            return {"server": options.server}, ""
        if name not in contexts:
            raise ConfigError(f"context {name!r} not found in kubeconfig (available: {_listed(sorted(contexts))})")
        raise ConfigError(f"context {name!r} names no cluster; pass --cluster or --server")
    if cluster_name not in clusters:
        raise ConfigError(
            f"cluster {cluster_name!r} of context {name!r} not found in kubeconfig (available: {_listed(clusters)})"
        )
    cluster, where = clusters[cluster_name]
    if not cluster.get("server") and not options.server:
        raise ConfigError(f"cluster {cluster_name!r} has no server in kubeconfig {where}; pass --server")
    return cluster, where


def _read(path: str) -> dict[str, Any]:
    from ..yamlload import module, safe_loader

    yaml = module()
    try:
        with open(path, encoding="utf-8") as handle:
            data = yaml.load(handle, Loader=safe_loader())
    except yaml.YAMLError as exc:
        where, problem = yaml_problem(exc, path)
        raise ConfigError(f"invalid kubeconfig: {where}: {problem}") from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read kubeconfig {path}: {getattr(exc, 'strerror', None) or exc}") from exc
    if data is None:
        raise ConfigError(f"invalid kubeconfig: {path}: the file is empty")
    if not isinstance(data, dict):
        raise ConfigError(f"invalid kubeconfig: {path}: not a kubeconfig")
    return data


def _merged(docs: list[tuple[str, dict[str, Any]]], section: str, key: str) -> _Entries:
    """Each entry of `section` by name, the first file's winning, with that file."""
    merged: _Entries = {}
    for path, doc in docs:
        entries = doc.get(section) or []
        for entry in entries if isinstance(entries, list) else [entries]:
            value = entry.get(key) or {} if isinstance(entry, dict) else None
            if not isinstance(entry, dict) or "name" not in entry or not isinstance(value, dict):
                raise ConfigError(f"invalid kubeconfig: {path}: each of {section} needs a name and a {key} mapping")
            merged.setdefault(str(entry["name"]), (dict(value), path))
    return merged


def _listed(names: Any) -> str:
    return ", ".join(str(name) for name in names if name) or "none"


def _path(entry: dict[str, Any], key: str, where: str) -> str | None:
    """A file the kubeconfig names, relative to the kubeconfig file that names it."""
    value = entry.get(key)
    if not value:
        return None
    return os.path.join(os.path.abspath(os.path.dirname(where)), str(value))


def _data(entry: dict[str, Any], key: str, where: str) -> bytes | None:
    value = entry.get(key)
    if not value:
        return None
    try:
        return base64.b64decode(str(value))  # as the kubernetes client reads it: characters not base64 are skipped
    except binascii.Error as exc:
        raise ConfigError(f"invalid kubeconfig: {where}: {key}: {exc}") from exc
