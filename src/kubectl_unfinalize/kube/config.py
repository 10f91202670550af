"""kubectl's connection flags and kubeconfig rules -> a ready Transport.

Precedence follows kubectl: --kubeconfig, else every path in KUBECONFIG merged, else
~/.kube/config, else in-cluster service-account config (CI jobs in pods). Flags such as
--server or --token override what the kubeconfig says; every flag is honoured.
"""

from __future__ import annotations

import os
import ssl
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..errors import ConfigError, yaml_problem
from ..net.connections import Connections, Endpoint
from ..options import ConnectionOptions
from . import kubeconfig
from .kubeconfig import StaticConfig, static_config
from .pem_files import pem_files
from .proxies import proxy_for
from .transport import Transport

__all__ = ["ConnectionOptions", "connect", "kubeconfig_paths"]

OVERRIDE_CONTEXT = "kubectl-unfinalize-flags"


def connect(options: ConnectionOptions) -> Transport:
    """Build the Transport; raise ConfigError with one readable line when it cannot.
    Static credentials are loaded directly; anything else through the kubernetes client."""
    paths = kubeconfig_paths(options)
    static = static_config(options, paths) if paths else None
    if static is not None:
        return _direct(options, static)
    return _through_client(options)


def _direct(options: ConnectionOptions, static: StaticConfig) -> Transport:
    proxy = proxy_for(static.server, static.proxy_url)
    try:
        context = ssl.create_default_context(
            cafile=static.ca_file, cadata=static.ca_data.decode() if static.ca_data else None
        )
    except (ssl.SSLError, ValueError, UnicodeDecodeError) as exc:
        raise ConfigError(f"invalid certificate authority {static.ca_file or '(kubeconfig data)'}: {exc}") from exc
    except OSError as exc:
        raise ConfigError(f"file not found: {static.ca_file}") from exc
    if static.insecure:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    if static.cert_file or static.cert_data:
        with pem_files(static.cert_file, static.cert_data, static.key_file, static.key_data) as (cert, key):
            try:
                context.load_cert_chain(cert, key)
            except ssl.SSLError as exc:
                where = static.cert_file or "(kubeconfig data)"
                raise ConfigError(f"invalid client certificate or key {where}: {exc.reason or exc}") from exc
            except OSError as exc:
                raise ConfigError(f"file not found: {exc.filename}") from exc
    token = f"Bearer {static.token}" if static.token else None
    endpoint = Endpoint(static.server, context, static.tls_server_name, proxy)
    return _transport(options, endpoint, token, static.namespace, static.context)


def _transport(
    options: ConnectionOptions,
    endpoint: Endpoint,
    auth: Callable[[], str | None] | str | None,
    namespace: str,
    context: str,
) -> Transport:
    impersonate = []
    if options.as_user:
        impersonate.append(("Impersonate-User", options.as_user))
    impersonate += [("Impersonate-Group", group) for group in options.as_groups]
    if options.as_uid:
        impersonate.append(("Impersonate-Uid", options.as_uid))
    return Transport(
        endpoint.url,
        Connections(endpoint),
        auth,
        impersonate,
        options.request_timeout,
        namespace,
        context,
        log=options.log,
        verbosity=options.verbosity,
    )


def _through_client(options: ConnectionOptions) -> Transport:
    import yaml
    from kubernetes.client.configuration import Configuration
    from kubernetes.config.config_exception import ConfigException

    config = Configuration()
    config.proxy = None  # the client may have read the environment: after loading, only a proxy-url sets it
    try:
        namespace, context = _load(options, config)
    except ConfigException as exc:
        raise ConfigError(f"invalid cluster configuration: {exc}") from exc
    except OSError as exc:
        raise ConfigError(f"cannot read cluster configuration: {exc}") from exc
    except yaml.YAMLError as exc:
        where, problem = yaml_problem(exc)
        raise ConfigError(f"invalid kubeconfig: {where}: {problem}") from exc
    except ValueError as exc:
        raise ConfigError(f"invalid kubeconfig: {exc}") from exc
    _apply_flags(options, config)
    for path in (config.ssl_ca_cert, config.cert_file, config.key_file):
        if path and not os.path.exists(path):
            raise ConfigError(f"file not found: {path}")
    proxy = proxy_for(config.host, config.proxy or None)
    endpoint = Endpoint(config.host, _tls_context(config), config.tls_server_name or None, proxy)

    def auth() -> str | None:
        settings = config.auth_settings().get("BearerToken")
        return settings["value"] if settings else None

    return _transport(options, endpoint, auth, namespace, context)


def context_names(options: ConnectionOptions) -> list[str]:
    """The contexts of the kubeconfig `options` name (or KUBECONFIG's, or the default one)."""
    return kubeconfig.context_names(kubeconfig_paths(options))


def kubeconfig_paths(options: ConnectionOptions) -> list[str]:
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


def _load(options: ConnectionOptions, config: Any) -> tuple[str, str]:
    """Fill `config` from kubeconfig or in-cluster; return (default namespace, context name)."""
    from kubernetes.config.kube_config import KubeConfigLoader, KubeConfigMerger

    paths = kubeconfig_paths(options)
    if not paths:
        for flag, value in (("context", options.context), ("cluster", options.cluster), ("user", options.user)):
            if value:
                raise ConfigError(f"--{flag} {value!r} needs a kubeconfig to look it up in, and there is none")
        if options.server:
            config.host = options.server
            return "default", ""
        return _load_in_cluster(options, config)
    merger = KubeConfigMerger(os.pathsep.join(paths))
    merged = merger.config
    if merged is None:
        raise ConfigError(f"kubeconfig is empty: {', '.join(paths)}")
    raw = merged.value
    contexts = {_plain(c).get("name"): _plain(c).get("context") or {} for c in raw.get("contexts") or []}
    name = options.context or _current_context(merger) or ""
    if options.context and name not in contexts:
        available = ", ".join(sorted(k for k in contexts if k)) or "none"
        raise ConfigError(f"context {name!r} not found in kubeconfig (available: {available})")
    if not name and not options.server:
        raise ConfigError("no current context in kubeconfig; pass --context or --server")
    context = dict(contexts.get(name) or {})
    for flag, key, section in (("cluster", "cluster", "clusters"), ("user", "user", "users")):
        value = getattr(options, flag)
        if value:
            known = [_plain(item).get("name") for item in raw.get(section) or []]
            if value not in known:
                raise ConfigError(f"{flag} {value!r} not found in kubeconfig (available: {', '.join(known) or 'none'})")
            context[key] = value
    if options.server and "cluster" not in context:  # --server alone names the cluster; the user still counts
        raw.setdefault("clusters", []).append({"name": OVERRIDE_CONTEXT, "cluster": {"server": options.server}})
        context["cluster"] = OVERRIDE_CONTEXT
    raw.setdefault("users", [])
    if "user" not in context:
        raw["users"].append({"name": OVERRIDE_CONTEXT, "user": {}})
        context["user"] = OVERRIDE_CONTEXT
    raw.setdefault("contexts", []).append({"name": OVERRIDE_CONTEXT, "context": context})
    # config_base_path None: a relative path is relative to the file that names it, as kubectl reads it
    KubeConfigLoader(config_dict=merged, active_context=OVERRIDE_CONTEXT, config_base_path=None).load_and_set(config)
    return context.get("namespace") or "default", name


def _plain(node: Any) -> Any:
    """The merger wraps list entries in ConfigNode; read them as plain dicts."""
    return getattr(node, "value", node)


def _current_context(merger: Any) -> str | None:
    """kubectl takes current-context from the first file that sets it (the merger keeps
    the last one), so read it from the files the merger has already parsed."""
    for path in merger.paths:
        data = merger.config_files.get(path)
        if isinstance(data, dict) and data.get("current-context"):
            return str(data["current-context"])
    return None


def _load_in_cluster(options: ConnectionOptions, config: Any) -> tuple[str, str]:
    from kubernetes.config.incluster_config import (
        SERVICE_CERT_FILENAME,
        SERVICE_TOKEN_FILENAME,
        InClusterConfigLoader,
    )

    if not os.environ.get("KUBERNETES_SERVICE_HOST"):
        raise ConfigError(
            "no cluster configuration: no kubeconfig (set KUBECONFIG or --kubeconfig) and not running inside a cluster"
        )
    InClusterConfigLoader(SERVICE_TOKEN_FILENAME, SERVICE_CERT_FILENAME).load_and_set(config)
    ns_file = Path(SERVICE_TOKEN_FILENAME).with_name("namespace")
    namespace = ns_file.read_text().strip() if ns_file.exists() else "default"
    return namespace, "in-cluster"


def _tls_context(config: Any) -> ssl.SSLContext:
    """The kubernetes client's TLS settings as an SSLContext. A CA or client certificate
    that is not one fails here, in one line, instead of as a TLS error on the first request."""
    try:
        context = ssl.create_default_context(cafile=config.ssl_ca_cert) if config.ssl_ca_cert else None
    except ssl.SSLError as exc:
        raise ConfigError(f"invalid certificate authority {config.ssl_ca_cert}: {exc.reason or exc}") from exc
    context = context or ssl.create_default_context()
    if not config.verify_ssl:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    if config.cert_file:
        try:
            context.load_cert_chain(config.cert_file, config.key_file)
        except ssl.SSLError as exc:
            raise ConfigError(f"invalid client certificate or key {config.cert_file}: {exc.reason or exc}") from exc
    return context


def _apply_flags(options: ConnectionOptions, config: Any) -> None:
    if options.server:
        config.host = options.server
    if options.token:
        config.api_key = {"BearerToken": f"Bearer {options.token}"}
        config.refresh_api_key_hook = None
    if options.certificate_authority:
        config.ssl_ca_cert = options.certificate_authority
    if options.client_certificate:
        config.cert_file = options.client_certificate
    if options.client_key:
        config.key_file = options.client_key
    if options.insecure_skip_tls_verify:
        config.verify_ssl = False
    if options.tls_server_name:
        config.tls_server_name = options.tls_server_name
