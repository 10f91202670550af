"""kubectl's connection flags and kubeconfig rules -> a ready Transport.

kubeconfig.py resolves the kubeconfig and the flags into one context's settings; without
a kubeconfig or --server, a pod's service account serves (CI jobs in pods). The
credential is credentials.py's (--token, a token, a token file, an exec plugin, the
in-cluster token), or the kubernetes client's for what it alone knows (auth providers,
basic auth), loaded again as credentials.py renews it. This is the one module that
imports the kubernetes client, and only for those two.
"""

from __future__ import annotations

import dataclasses
import os
import ssl
from functools import partial
from pathlib import Path

from ..errors import ConfigError
from ..net.connections import Connections, Endpoint
from ..options import ConnectionOptions
from . import kubeconfig
from .credentials import REREAD, Credential, PluginCredential, Renewed, bearer, token_file, user_credential
from .kubeconfig import Resolved, context_names
from .pem_files import pem_files
from .proxies import proxy_for
from .transport import Transport

__all__ = ["ConnectionOptions", "connect", "context_names"]

PLUGIN_KEYS = ("exec", "tokenFile")  # credentials.py runs or reads these, never the kubernetes client


def connect(options: ConnectionOptions) -> Transport:
    """Build the Transport; raise ConfigError with one readable line when it cannot."""
    found = kubeconfig.resolve(options, kubeconfig.files(options))
    if found is None:
        found, credential = _in_cluster(options)
        cert = key = None
    else:
        credential, cert, key = _credential(options, found)
    if cert:  # from the exec plugin, which runs only when the user and the flags give no certificate
        found = dataclasses.replace(found, cert_file=None, cert_data=cert, key_file=None, key_data=key)
    endpoint = Endpoint(
        found.server, _tls_context(found), found.tls_server_name, proxy_for(found.server, found.proxy_url)
    )
    connections = Connections(endpoint)
    if cert and isinstance(credential, PluginCredential):
        credential.on_certificate = partial(_present, found, connections)
    return _transport(options, connections, credential, found.namespace, found.context)


def _present(found: Resolved, connections: Connections, cert: bytes, key: bytes) -> None:
    """The exec plugin's renewed client certificate: the connections opened from now on present it."""
    connections.renew_tls(_tls_context(dataclasses.replace(found, cert_data=cert, key_data=key)))


def _credential(options: ConnectionOptions, found: Resolved) -> tuple[Credential, bytes | None, bytes | None]:
    """The credential of the resolved user, and the client certificate and key an exec
    plugin gave: the one place a kubeconfig user's credential is chosen, with client-go's
    precedence (credentials.user_credential; the flags count as the user's).
    credentials.py's (--token, token, tokenFile, exec plugin) or the kubernetes client's
    (auth providers, basic auth), loaded again as credentials.py renews it."""
    if (found.cert_file or found.cert_data) and not (found.key_file or found.key_data):
        raise ConfigError(
            f"client-key-data or client-key must be specified for {found.user_name or 'the user'}"
            " to use the clientCert authentication method."
        )
    certificate = bool(found.cert_file or found.cert_data)  # and its key: client-go's HasCertAuth
    warn = options.warn or _warning
    given = user_credential(
        found.user_name, found.user, found.base, found.cluster, options.token, certificate, warn=warn
    )
    if given is not None:
        return given
    provider = found.user.get("auth-provider")
    name = provider.get("name") if isinstance(provider, dict) and not found.user.get("username") else None
    whose = f'of kubeconfig user "{found.user_name}"' if found.user_name else ""
    first = [found]

    def fetch() -> tuple[str | None, float | None]:
        if first:
            return _client_header(first.pop(), "invalid cluster configuration"), None
        again = kubeconfig.resolve(options, kubeconfig.files(options))
        if again is None:
            raise ConfigError("cannot load the kubeconfig again: it is gone")
        return _client_header(again, "cannot load the kubeconfig again"), None

    how = f"auth provider {name}" if name else "username and password"
    credential = Renewed(fetch, whose, how, period=REREAD)
    credential.current()  # loaded afresh now and then, and after a 401: the client refreshes what expired
    return credential, None, None


def _client_header(found: Resolved, failing: str) -> str | None:
    """The Authorization header the kubernetes client makes for the resolved user (an
    auth provider's token, refreshed when expired; basic auth), handed to it as a
    one-context kubeconfig with that user alone: no cluster, no file, no exec plugin."""
    from kubernetes.client.configuration import Configuration
    from kubernetes.config.config_exception import ConfigException
    from kubernetes.config.kube_config import KubeConfigLoader

    dropped = (*PLUGIN_KEYS, "auth-provider") if found.user.get("username") else PLUGIN_KEYS  # basic auth first
    user = {key: value for key, value in found.user.items() if key not in dropped}
    one = {
        "current-context": "user",
        "contexts": [{"name": "user", "context": {"cluster": "none", "user": "user"}}],
        "clusters": [{"name": "none", "cluster": {}}],
        "users": [{"name": "user", "user": user}],
    }
    config = Configuration()
    try:
        KubeConfigLoader(config_dict=one, config_base_path=found.base).load_and_set(config)
    except (ConfigException, OSError, ValueError) as exc:
        raise ConfigError(f"{failing}: {exc}") from exc
    settings = config.auth_settings().get("BearerToken")
    return settings["value"] if settings else None


def _transport(
    options: ConnectionOptions,
    connections: Connections,
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
        connections.endpoint.url,
        connections,
        credential,
        impersonate,
        options.request_timeout,
        namespace,
        context,
        log=options.log,
        verbosity=options.verbosity,
    )


def _in_cluster(options: ConnectionOptions) -> tuple[Resolved, Credential]:
    """A pod's service account: the host and CA through the kubernetes client; the token
    is credentials.py's, read again every minute and after a 401 (the kubelet rotates it)."""
    from kubernetes.client.configuration import Configuration
    from kubernetes.config.config_exception import ConfigException
    from kubernetes.config.incluster_config import (
        SERVICE_CERT_FILENAME,
        SERVICE_TOKEN_FILENAME,
        InClusterConfigLoader,
    )

    if not os.environ.get("KUBERNETES_SERVICE_HOST"):
        raise ConfigError(
            "no cluster configuration: no kubeconfig (set KUBECONFIG or --kubeconfig) and not running inside a cluster"
        )
    config = Configuration()
    ns_file = Path(SERVICE_TOKEN_FILENAME).with_name("namespace")
    try:
        InClusterConfigLoader(SERVICE_TOKEN_FILENAME, SERVICE_CERT_FILENAME).load_and_set(config)
        namespace = ns_file.read_text().strip() if ns_file.exists() else "default"
    except ConfigException as exc:
        raise ConfigError(f"invalid cluster configuration: {exc}") from exc
    except OSError as exc:
        raise ConfigError(f"cannot read cluster configuration: {exc}") from exc
    found = Resolved(server=config.host, namespace=namespace, context="in-cluster", ca_file=config.ssl_ca_cert)
    if options.token:
        credential = Credential(bearer(options.token), "", "token from --token")
    else:
        credential = token_file(
            SERVICE_TOKEN_FILENAME, "", f"in-cluster service-account token {SERVICE_TOKEN_FILENAME}"
        )
    return kubeconfig.with_flags(found, options), credential


def _tls_context(found: Resolved) -> ssl.SSLContext:
    """The TLS settings as an SSLContext. A file that is missing, or a CA or client
    certificate that is not one, fails here, in one line, instead of as a TLS error on the
    first request."""
    for path in (found.ca_file, found.cert_file, found.key_file):
        if path and not os.path.exists(path):
            raise ConfigError(f"file not found: {path}")
    try:
        context = ssl.create_default_context(
            cafile=found.ca_file, cadata=found.ca_data.decode() if found.ca_data else None
        )
    except (ssl.SSLError, ValueError, UnicodeDecodeError) as exc:
        raise ConfigError(f"invalid certificate authority {found.ca_file or '(kubeconfig data)'}: {exc}") from exc
    except OSError as exc:
        raise ConfigError(f"cannot read {found.ca_file}: {exc.strerror or exc}") from exc
    if found.insecure:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    if found.cert_file or found.cert_data:
        with pem_files(found.cert_file, found.cert_data, found.key_file, found.key_data) as (cert, key):
            try:
                context.load_cert_chain(cert, key)
            except ssl.SSLError as exc:
                where = found.cert_file or "(kubeconfig data)"
                raise ConfigError(f"invalid client certificate or key {where}: {exc.reason or exc}") from exc
            except OSError as exc:
                raise ConfigError(f"cannot read {found.cert_file}: {exc.strerror or exc}") from exc
    return context


def _warning(text: str) -> None:
    """A warning about the configuration where the caller gave no place for it (the
    Python API without ConnectionOptions.warn): Python's, which callers filter or see."""
    import warnings

    warnings.warn(text, RuntimeWarning, stacklevel=4)
