"""kubectl's connection flags: how they are declared, and the one mapping from them to
ConnectionOptions (for the parser and for shell completion's partial values). Imports
nothing heavy."""

from __future__ import annotations

import argparse
from collections.abc import Callable

from ..durations import parse_duration
from ..errors import InputError
from ..options import ConnectionOptions


def parse_bool(value: str) -> bool:
    lowered = value.lower()
    if lowered in ("true", "1", "yes"):
        return True
    if lowered in ("false", "0", "no"):
        return False
    raise argparse.ArgumentTypeError(f"invalid boolean {value!r} (use true or false)")


def duration(value: str) -> float:
    try:
        return parse_duration(value)
    except InputError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def add_bool_flag(group: argparse._ArgumentGroup, flag: str, default: bool | None, help: str) -> None:
    """kubectl's boolean flags: --flag, --flag=true or --flag=false."""
    group.add_argument(flag, type=parse_bool, nargs="?", const=True, default=default, metavar="BOOL", help=help)


def add_connection_flags(con: argparse._ArgumentGroup) -> None:
    con.add_argument("--kubeconfig", help="kubeconfig file (default: KUBECONFIG, then ~/.kube/config, then in-cluster)")
    con.add_argument(
        "--context",
        action="append",
        metavar="CONTEXT",
        help="kubeconfig context to use; repeated (scan, crd, ns, TYPE, -f): the same in each, on its own connection",
    )
    con.add_argument(
        "--all-contexts", action="store_true", help="as --context repeated for every context of the kubeconfig"
    )
    con.add_argument("--cluster", help="kubeconfig cluster to use")
    con.add_argument("--user", help="kubeconfig user to use")
    con.add_argument("-s", "--server", help="API server address")
    con.add_argument("--token", help="bearer token")
    con.add_argument("--certificate-authority", metavar="PATH", help="CA certificate file")
    con.add_argument("--client-certificate", metavar="PATH", help="client certificate file")
    con.add_argument("--client-key", metavar="PATH", help="client key file")
    add_bool_flag(con, "--insecure-skip-tls-verify", False, "do not verify the server's certificate")
    con.add_argument("--tls-server-name", help="server name for certificate validation (SNI)")
    con.add_argument("--as", dest="as_user", metavar="USER", help="impersonate this user")
    con.add_argument(
        "--as-group", action="append", default=[], metavar="GROUP", help="impersonate this group (repeatable)"
    )
    con.add_argument("--as-uid", metavar="UID", help="impersonate this UID")
    con.add_argument(
        "--request-timeout", type=duration, metavar="DURATION", help="give up on a single request after this long"
    )


def to_connection_options(
    values: argparse.Namespace | dict[str, object], log: Callable[[str], None] | None = None, **overrides: object
) -> ConnectionOptions:
    """From parsed flags, or from the partial values shell completion has scanned."""
    get = values.get if isinstance(values, dict) else lambda key, default=None: getattr(values, key, default)
    insecure = get("insecure_skip_tls_verify", False)
    if isinstance(insecure, str):
        insecure = parse_bool(insecure)
    context = get("context")
    if isinstance(context, list):  # --context is repeatable: one connection is the first's
        context = context[0] if context else None
    settings: dict[str, object] = {
        "kubeconfig": get("kubeconfig"),
        "context": context,
        "cluster": get("cluster"),
        "user": get("user"),
        "server": get("server"),
        "token": get("token"),
        "certificate_authority": get("certificate_authority"),
        "client_certificate": get("client_certificate"),
        "client_key": get("client_key"),
        "insecure_skip_tls_verify": bool(insecure),
        "tls_server_name": get("tls_server_name"),
        "as_user": get("as_user"),
        "as_groups": tuple(get("as_group") or ()),  # type: ignore[arg-type]
        "as_uid": get("as_uid"),
        "request_timeout": get("request_timeout"),
        "verbosity": get("verbose", 0) or 0,
        "log": log,
    }
    settings.update(overrides)
    return ConnectionOptions(**settings)  # type: ignore[arg-type]
