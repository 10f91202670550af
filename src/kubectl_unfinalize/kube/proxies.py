"""Which proxy, if any, to reach an API server through: kubectl's rules, for every kubeconfig.

client-go takes the kubeconfig cluster's `proxy-url` for every request when it is set
(loopback included, NO_PROXY not consulted). Otherwise it asks the environment the way
Go's golang.org/x/net/http/httpproxy does, with NO_PROXY's CIDRs honoured: HTTPS_PROXY for
an https server, HTTP_PROXY for an http one, the uppercase name first and an empty value
as unset; `localhost` and loopback addresses never go through it. These functions answer
the same question from the same inputs, so static, exec-plugin, auth-provider and
in-cluster configurations all behave like kubectl.

Two decisions differ from Go on purpose, both so that a proxy is never bypassed silently:
a proxy value that cannot be parsed is an error here (Go ignores it and goes direct), and
a proxy this tool cannot speak to (socks5, https, anything but a plain http CONNECT) is
refused with the variable's or field's name instead of being tried in plaintext.
"""

from __future__ import annotations

import ipaddress
import os
from collections.abc import Mapping
from urllib.parse import urlsplit

from ..errors import ConfigError

__all__ = ["PROXY_URL_FIELD", "excluded", "proxy_for"]

PROXY_URL_FIELD = "the kubeconfig's proxy-url"
_DEFAULT_PORTS = {"http": "80", "https": "443"}
_Address = ipaddress.IPv4Address | ipaddress.IPv6Address
_Network = ipaddress.IPv4Network | ipaddress.IPv6Network


def proxy_for(server: str, proxy_url: str | None = None, environ: Mapping[str, str] | None = None) -> str | None:
    """The http:// proxy URL (credentials kept, percent-encoded) to tunnel to `server`
    through, or None to connect directly. `proxy_url` is the kubeconfig cluster's field.
    Raises ConfigError, before anything is sent, for a proxy that cannot be used."""
    if proxy_url:
        return _usable(proxy_url, PROXY_URL_FIELD, assume_http=False)
    env = os.environ if environ is None else environ
    plain = server.lower().startswith("http://")
    names = ("HTTP_PROXY", "http_proxy") if plain else ("HTTPS_PROXY", "https_proxy")
    name = next((n for n in names if env.get(n)), None)
    if name is None:
        return None
    if plain and env.get("REQUEST_METHOD"):  # as Go: in a CGI handler, a client may have set HTTP_PROXY
        raise ConfigError(f"refusing to use {name} when REQUEST_METHOD is set (a CGI environment)")
    if excluded(server, _first(env, "NO_PROXY", "no_proxy")):
        return None
    return _usable(env[name], name, assume_http=True)


def excluded(server: str, no_proxy: str) -> bool:
    """Whether the environment's proxy is skipped for `server`: a loopback address or
    `localhost` (always), or a NO_PROXY entry: `*`, an IP address or CIDR, a domain name
    (`example.com` matches it and its subdomains, `.example.com` and `*.example.com` only
    the subdomains), an address or name with `:port` matching that port only."""
    try:
        host, port = _host_port(server)
    except ValueError:
        return False  # not a URL: connecting will say so
    if host == "localhost":  # exactly: Go compares before lowercasing
        return True
    ip = _ip(host)
    if ip is not None and ip.is_loopback:
        return True
    host = host.strip().lower()
    for entry in no_proxy.split(","):
        entry = entry.strip().lower()
        if entry == "*":
            return True
        if entry and (_matches_ip(entry, ip, port) if ip is not None else _matches_name(entry, host, port)):
            return True
    return False


def _first(env: Mapping[str, str], *names: str) -> str:
    return next((env[n] for n in names if env.get(n)), "")


def _host_port(url: str) -> tuple[str, str]:
    """The URL's host as written (case kept, brackets and zone dropped) and its port."""
    parts = urlsplit(url)
    netloc = parts.netloc.rpartition("@")[2]
    if netloc.startswith("["):
        host, _, rest = netloc[1:].partition("]")
        port = rest[1:] if rest.startswith(":") else ""
    else:
        host, colon, port = netloc.rpartition(":")
        if not colon or not port.isdigit():
            host, port = netloc.rstrip(":"), ""
    host = host.partition("%")[0]
    if not host.isascii():
        try:
            host = host.encode("idna").decode("ascii")
        except UnicodeError:
            pass
    return host, port or _DEFAULT_PORTS.get(parts.scheme.lower(), "443")


def _ip(text: str) -> _Address | None:
    try:
        ip = ipaddress.ip_address(text)
    except ValueError:
        return None
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        return ip.ipv4_mapped  # Go compares ::ffff:a.b.c.d as a.b.c.d
    return ip


def _split_port(entry: str) -> tuple[str, str]:
    """`host:port` or `[v6]:port` -> (host, port); anything else is all host."""
    if entry.startswith("[") and "]:" in entry:
        host, _, port = entry[1:].partition("]:")
        return host, port
    host, colon, port = entry.rpartition(":")
    return (host, port) if colon and ":" not in host else (entry, "")


def _matches_ip(entry: str, ip: _Address, port: str) -> bool:
    if "/" in entry:
        network = _network(entry)
        return network is not None and ip in network  # a CIDR matches every port
    host, wanted = _split_port(entry)
    return _ip(host) == ip and wanted in ("", port)


def _network(entry: str) -> _Network | None:
    bits = entry.partition("/")[2]
    if not bits.isdigit():
        return None  # Go takes no netmask form
    try:
        return ipaddress.ip_network(entry, strict=False)
    except ValueError:
        return None


def _matches_name(entry: str, host: str, port: str) -> bool:
    if "/" in entry and _network(entry) is not None:
        return False
    name, wanted = _split_port(entry)
    if not name or _ip(name) is not None or wanted not in ("", port):
        return False
    if name.startswith("*."):
        name = name[1:]
    if not name.isascii():
        try:
            name = name.encode("idna").decode("ascii")
        except UnicodeError:
            pass
    if name.startswith("."):
        return host.endswith(name)
    return host == name or host.endswith("." + name)


def _usable(value: str, source: str, *, assume_http: bool) -> str:
    """`value` as an http:// URL, or ConfigError naming `source` (never its credentials)."""
    url = value.strip()
    try:
        parts = urlsplit(url)
        if assume_http and (not parts.scheme or not parts.netloc):
            url = "http://" + url  # Go's reading of a bare host[:port]
            parts = urlsplit(url)
    except ValueError as exc:
        raise ConfigError(f"{source}: invalid proxy URL: {exc}") from None
    shown = _without_password(url)
    scheme = parts.scheme.lower()
    if scheme != "http":
        what = f"{scheme}:// proxies are" if scheme else "a proxy without a scheme is"
        raise ConfigError(f"{source} {shown}: {what} not supported, only http:// proxies are")
    try:
        parts.port  # noqa: B018 - raises on a port that is not a number in range
    except ValueError:
        raise ConfigError(f"{source} {shown}: invalid port") from None
    if not parts.hostname:
        raise ConfigError(f"{source} {shown}: no proxy host")
    return f"http://{parts.netloc}"


def _without_password(url: str) -> str:
    """`url` fit for a message: its user and password (a token, for some proxies) masked."""
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url
    return parts._replace(netloc="***@" + parts.netloc.rpartition("@")[2]).geturl()
