"""kubectl's connection flags and kubeconfig rules -> a ready Transport.

Precedence follows kubectl: --kubeconfig, else every path in KUBECONFIG merged, else
~/.kube/config, else in-cluster service-account config (CI jobs in pods). Flags such as
--server or --token override what the kubeconfig says; every flag is honoured. The
credential is credentials.py's (exec plugins, token files, the in-cluster token), or
the kubernetes client's for what it alone knows (auth providers, basic auth), loaded
again as credentials.py renews it.
"""

from __future__ import annotations

import dataclasses
import os
import ssl
from functools import partial
from pathlib import Path
from typing import Any

from ..errors import ConfigError, yaml_problem
from ..net.connections import Connections, Endpoint
from ..options import ConnectionOptions
from . import kubeconfig
from .credentials import REREAD, Credential, Renewed, bearer, token_file, user_credential
from .kubeconfig import StaticConfig, static_config
from .pem_files import pem_files
from .proxies import proxy_for
from .transport import Transport

__all__ = ["ConnectionOptions", "connect", "kubeconfig_paths"]

OVERRIDE_CONTEXT = "kubectl-unfinalize-flags"
PLUGIN_KEYS = ("exec", "tokenFile")  # credentials.py runs or reads these, never the kubernetes client


def connect(options: ConnectionOptions) -> Transport:
    """Build the Transport; raise ConfigError with one readable line when it cannot.
    Static credentials are loaded directly; anything else through the kubernetes client."""
    paths = kubeconfig_paths(options)
    static = static_config(options, paths) if paths else None
    if static is not None:
        return _direct(options, static)
    return _through_client(options)


def _direct(options: ConnectionOptions, static: StaticConfig) -> Transport:
    found = user_credential(static.user_name, static.user, static.base, static.cluster, options.token)
    assert found is not None  # static_config leaves auth providers and basic auth to the client
    credential, cert_data, key_data = found
    if cert_data and not options.client_certificate:  # from the exec plugin
        static = dataclasses.replace(static, cert_file=None, cert_data=cert_data, key_file=None, key_data=key_data)
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
    endpoint = Endpoint(static.server, context, static.tls_server_name, proxy)
    return _transport(options, endpoint, credential, static.namespace, static.context)


def _transport(
    options: ConnectionOptions,
    endpoint: Endpoint,
    credential: Credential,
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
        credential,
        impersonate,
        options.request_timeout,
        namespace,
        context,
        log=options.log,
        verbosity=options.verbosity,
    )


@dataclasses.dataclass
class _Loaded:
    """What _load found besides the client's Configuration."""

    namespace: str
    context: str
    credential: Credential | None = None  # None: the kubernetes client's (an auth provider, basic auth)
    whose: str = ""
    how: str = ""
    cert: bytes | None = None  # a client certificate and key from an exec plugin
    key: bytes | None = None


def _through_client(options: ConnectionOptions) -> Transport:
    import yaml
    from kubernetes.client.configuration import Configuration
    from kubernetes.config.config_exception import ConfigException

    config = Configuration()
    config.proxy = None  # the client may have read the environment: after loading, only a proxy-url sets it
    try:
        loaded = _load(options, config)
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
    endpoint = Endpoint(config.host, _tls_context(config, loaded), config.tls_server_name or None, proxy)
    credential = loaded.credential
    if credential is None:  # loaded afresh now and then, and after a 401: the client refreshes what expired
        credential = Renewed(partial(_client_header, options, [config]), loaded.whose, loaded.how, period=REREAD)
        credential.current()
    return _transport(options, endpoint, credential, loaded.namespace, loaded.context)


def _client_header(options: ConnectionOptions, first: list[Any]) -> tuple[str | None, float | None]:
    """The Authorization header the kubernetes client gives: the first Configuration's,
    then one from the kubeconfig loaded again (a token refreshed by another process may be
    in it now)."""
    from kubernetes.client.configuration import Configuration
    from kubernetes.config.config_exception import ConfigException

    if first:
        config = first.pop()
    else:
        config = Configuration()
        try:
            _load(options, config)
        except (ConfigException, OSError, ValueError) as exc:
            raise ConfigError(f"cannot load the kubeconfig again: {exc}") from exc
    settings = config.auth_settings().get("BearerToken")
    return (settings["value"] if settings else None), None


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


def _load(options: ConnectionOptions, config: Any) -> _Loaded:
    """Fill `config` from kubeconfig or in-cluster; the default namespace, context name
    and credential. The kubernetes client never sees an exec plugin or a token file."""
    from kubernetes.config.kube_config import ConfigNode, KubeConfigLoader, KubeConfigMerger

    paths = kubeconfig_paths(options)
    if not paths:
        for flag, value in (("context", options.context), ("cluster", options.cluster), ("user", options.user)):
            if value:
                raise ConfigError(f"--{flag} {value!r} needs a kubeconfig to look it up in, and there is none")
        if options.server:
            config.host = options.server
            how = "token from --token" if options.token else "no credentials"
            return _Loaded("default", "", Credential(bearer(options.token), "", how))
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
    user_name = str(context.get("user") or "")
    node = next((u for u in raw["users"] if _plain(u).get("name") == user_name), None) if user_name else None
    user = dict(_plain(node).get("user") or {}) if node is not None else {}
    where = getattr(node, "path", None) or paths[0]
    cluster = next(
        (
            _plain(c).get("cluster")
            for c in raw.get("clusters") or []
            if _plain(c).get("name") == context.get("cluster")
        ),
        None,
    )
    found = user_credential(user_name, user, os.path.dirname(where), dict(cluster or {}), options.token)
    stripped = {k: v for k, v in user.items() if k not in PLUGIN_KEYS}
    raw["users"].append(ConfigNode(f"{where}/users", {"name": OVERRIDE_CONTEXT, "user": stripped}, where))
    context["user"] = OVERRIDE_CONTEXT
    raw.setdefault("contexts", []).append({"name": OVERRIDE_CONTEXT, "context": context})
    # config_base_path None: a relative path is relative to the file that names it, as kubectl reads it
    KubeConfigLoader(config_dict=merged, active_context=OVERRIDE_CONTEXT, config_base_path=None).load_and_set(config)
    whose = f'of kubeconfig user "{user_name}"' if user_name else ""
    namespace = context.get("namespace") or "default"
    if found is None:
        provider = _plain(user.get("auth-provider") or {}).get("name")
        return _Loaded(
            namespace, name, None, whose, f"auth provider {provider}" if provider else "username and password"
        )
    credential, cert_pem, key_pem = found
    return _Loaded(namespace, name, credential, cert=cert_pem, key=key_pem)


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


def _load_in_cluster(options: ConnectionOptions, config: Any) -> _Loaded:
    """The host and CA through the client; the token is credentials.py's, read again
    every minute and after a 401 (the kubelet rotates it)."""
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
    if options.token:
        return _Loaded(namespace, "in-cluster", Credential(bearer(options.token), "", "token from --token"))
    how = f"in-cluster service-account token {SERVICE_TOKEN_FILENAME}"
    return _Loaded(namespace, "in-cluster", token_file(SERVICE_TOKEN_FILENAME, "", how))


def _tls_context(config: Any, loaded: _Loaded) -> ssl.SSLContext:
    """The kubernetes client's TLS settings as an SSLContext (with an exec plugin's client
    certificate). A CA or client certificate that is not one fails here, in one line,
    instead of as a TLS error on the first request."""
    try:
        context = ssl.create_default_context(cafile=config.ssl_ca_cert) if config.ssl_ca_cert else None
    except ssl.SSLError as exc:
        raise ConfigError(f"invalid certificate authority {config.ssl_ca_cert}: {exc.reason or exc}") from exc
    context = context or ssl.create_default_context()
    if not config.verify_ssl:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    if config.cert_file or loaded.cert:
        key_file = config.key_file if config.cert_file else None
        with pem_files(config.cert_file, loaded.cert, key_file, loaded.key) as (cert, key):
            try:
                context.load_cert_chain(cert, key)
            except ssl.SSLError as exc:
                where = config.cert_file or "(from the exec plugin)"
                raise ConfigError(f"invalid client certificate or key {where}: {exc.reason or exc}") from exc
    return context


def _apply_flags(options: ConnectionOptions, config: Any) -> None:
    if options.server:
        config.host = options.server
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
