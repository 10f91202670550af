"""kubectl's preferences file (kuberc), read for the one thing the tool takes from it: which
exec credential plugins may run. A user who told kubectl never to run a plugin, or only
some, has said it for a command that looks like kubectl's too.

Facts relied on, from kubectl 1.36's pkg/kuberc and pkg/config and client-go's exec
authenticator (plugin/pkg/client/auth/exec):
- The file is $KUBERC, else $HOME/.kube/kuberc; KUBERC=off means none. A $KUBERC that
  cannot be read, or holds no usable preferences, is an error; the default file missing is
  no policy, unreadable or unusable a warning and no policy.
- Its YAML documents are tried in turn; the first that is a `Preference` of
  kubectl.config.k8s.io (v1beta1, or v1alpha1, which has no policy fields) with values of
  the right types is used. Unknown fields are a warning ("strict decoding error"): a
  policy written in a v1alpha1 document is such a field, and kubectl runs the plugin.
- `credentialPluginPolicy`: empty or AllowAll, DenyAll, Allowlist (the case matters), with
  `credentialPluginAllowlist` entries of `command` or its deprecated spelling `name`,
  checked as kubectl checks them (an error ends the run before anything is sent; the
  aliases are checked too: kubectl runs nothing with a bad one).
- A plugin may run when its command as the kubeconfig gives it (a path with a separator
  made absolute against the kubeconfig's directory, then cleaned) or as PATH resolves it
  is an entry verbatim, or an entry with the same base name resolves to the same path (a
  bare name through PATH, a path when it is an executable file). Symbolic links are not
  followed. The check is made before every run of the plugin.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..errors import ConfigError

GROUP = "kubectl.config.k8s.io"
ALLOW_ALL, DENY_ALL, ALLOWLIST = "AllowAll", "DenyAll", "Allowlist"
_ALIAS = re.compile(r"^[a-zA-Z]+$")
_FLAGS: list[Any] = [{"name": str, "default": str}]
_V1ALPHA1: dict[str, Any] = {
    "apiVersion": str,
    "kind": str,
    "overrides": [{"command": str, "flags": _FLAGS}],
    "aliases": [{"name": str, "command": str, "prependArgs": [str], "appendArgs": [str], "flags": _FLAGS}],
}
_V1BETA1: dict[str, Any] = {
    **_V1ALPHA1,
    "credentialPluginPolicy": str,
    "credentialPluginAllowlist": [{"name": str, "command": str}],
}
SCHEMAS = {f"{GROUP}/v1beta1": _V1BETA1, f"{GROUP}/v1alpha1": _V1ALPHA1}


@dataclass(frozen=True)
class PluginPolicy:
    """The policy of one kuberc file; `allowlist` holds the entries' commands."""

    kind: str
    allowlist: tuple[str, ...]
    source: str

    def check(self, command: str) -> str:
        """The path to run for `command` (as kubectl takes it from the kubeconfig), or
        ConfigError in kubectl's words, naming the policy and this file."""
        where = f" (credentialPluginPolicy in kuberc {self.source})"
        if self.kind == ALLOW_ALL:
            return command
        if self.kind == DENY_ALL:
            raise ConfigError(f'getting credentials: plugin "{command}" not allowed: policy set to "DenyAll"{where}')
        allowed = set(self.allowlist)
        path, error = look_path(command) if os.sep not in command else (command, "")
        path = path or command
        if command in allowed or path in allowed:
            return path
        if path == command:
            path, error = look_path(command)
            path = path or command
        if error:
            raise ConfigError(
                f'getting credentials: plugin path "{path}" cannot be resolved for credential plugin allowlist'
                f" check: {error}{where}"
            )
        name = os.path.basename(path)
        for entry in self.allowlist:
            if os.path.basename(entry) == name:
                resolved, failed = look_path(entry)
                if resolved and not failed:
                    allowed.add(resolved)
        if path in allowed:
            return path
        raise ConfigError(
            f'getting credentials: plugin path "{path}" is not permitted by the credential plugin allowlist{where}'
        )


def load(warn: Callable[[str], None]) -> PluginPolicy | None:
    """The policy the kuberc sets, None when there is none (no file, KUBERC=off, no policy
    in it). Warnings (kubectl's) go to `warn`: the connection's (ConnectionOptions.warn)."""
    value = os.environ.get("KUBERC", "")
    if value == "off":
        return None
    explicit = bool(value)
    path = value or os.path.join(os.environ.get("HOME", ""), ".kube", "kuberc")
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError as exc:
        problem = f"open {path}: {(exc.strerror or str(exc)).lower()}"
        if explicit:
            raise ConfigError(f"kuberc: {problem}") from None
        if not isinstance(exc, FileNotFoundError):
            warn(f"kuberc: no preferences loaded from {path}: {problem}")
        return None
    try:
        preference, strict = _decode(data.decode("utf-8", errors="replace"), path)
    except ValueError as exc:
        if explicit:
            raise ConfigError(f"kuberc: {exc}") from None
        warn(f"kuberc: no preferences loaded from {path}: {exc}")
        return None
    if preference is None:
        return None
    if strict:
        warn(f"kuberc: ignoring strict decoding error in {path}: strict decoding error: {', '.join(strict)}")
    policy = _validated(preference, path)
    return None if policy.kind == ALLOW_ALL else policy


def _decode(text: str, path: str) -> tuple[dict[str, Any] | None, list[str]]:
    """The first usable Preference document and its unknown fields; (None, []) for a file
    with no documents. ValueError when none of its documents is usable."""
    from ..yamlload import module, safe_loader

    yaml = module()
    tried: list[str] = []
    for number, document in enumerate(_documents(text), 1):
        if not document.strip():
            continue
        try:
            doc = yaml.load(document, Loader=safe_loader())
        except yaml.YAMLError as exc:
            tried.append(f"document {number}: not YAML ({' '.join(str(exc).split())})")
            continue
        unknown: list[str] = []
        problem = _unusable(doc, unknown)
        if problem:
            tried.append(f"document {number}: {problem}")
            continue
        known = SCHEMAS[doc["apiVersion"]]  # a field its version lacks is not read, as in kubectl
        return {key: value for key, value in doc.items() if key in known}, unknown
    if tried:
        raise ValueError(f"no valid preferences found in {path} ({'; '.join(tried)})")
    return None, []


def _documents(text: str) -> list[str]:
    """The file's YAML documents, split as kubectl splits them: at lines that begin with ---."""
    documents: list[str] = []
    lines: list[str] = []
    for line in text.splitlines(keepends=True):
        if line.startswith("---"):
            rest = line[3:].strip()
            if rest and not rest.startswith("#"):
                raise ValueError(f"invalid Yaml document separator: {rest}")
            documents.append("".join(lines))
            lines = []
        else:
            lines.append(line)
    return [*documents, "".join(lines)]


def _unusable(doc: Any, unknown: list[str]) -> str:
    """Why `doc` is not a Preference kubectl would use ("" when it is); its unknown fields
    go to `unknown`."""
    if not isinstance(doc, dict):
        return "not a mapping"
    version, kind = doc.get("apiVersion"), doc.get("kind")
    schema = SCHEMAS.get(str(version)) if kind == "Preference" else None
    if schema is None:
        return f"not a {GROUP} Preference (apiVersion {version or '(none)'}, kind {kind or '(none)'})"
    problem = _fit(doc, schema, "", unknown)
    if problem:
        return problem
    for entry in _entries(doc, "credentialPluginAllowlist"):
        name, command = entry.get("name") or "", entry.get("command") or ""
        if name and command and name != command:
            return (
                "both `Name` and `Command` were supplied with different values."
                " `Name` is deprecated, use `Command` instead"
            )
    return ""


def _fit(value: Any, spec: Any, where: str, unknown: list[str]) -> str:
    """Whether `value` decodes into `spec` (str, [item spec], {field: spec}); null fits
    anything, as in JSON."""
    if value is None:
        return ""
    if spec is str:
        return "" if isinstance(value, str) else f"{where}: not a string"
    if isinstance(spec, list):
        if not isinstance(value, list):
            return f"{where}: not a list"
        return next((p for i, item in enumerate(value) if (p := _fit(item, spec[0], f"{where}[{i}]", unknown))), "")
    if not isinstance(value, dict):
        return f"{where}: not a mapping"
    for key, item in value.items():
        field = f"{where}.{key}" if where else str(key)
        if key not in spec:
            unknown.append(f'unknown field "{field}"')
        elif problem := _fit(item, spec[key], field, unknown):
            return problem
    return ""


def _validated(doc: dict[str, Any], path: str) -> PluginPolicy:
    """The policy, after kubectl's checks of the whole file (aliases, flags, policy)."""
    seen: set[str] = set()
    for alias in _entries(doc, "aliases"):
        name = alias.get("name") or ""
        if not _ALIAS.match(name):
            raise ConfigError(f"kuberc {path}: invalid alias name, can only include alphabetical characters")
        _flag_names(alias, path)
        if name in seen:
            raise ConfigError(f"kuberc {path}: duplicate alias name {name}")
        seen.add(name)
    for override in _entries(doc, "overrides"):
        _flag_names(override, path)
    kind = doc.get("credentialPluginPolicy") or ""
    listed = doc.get("credentialPluginAllowlist")
    entries = [
        str(entry.get("command") or entry.get("name") or "") for entry in _entries(doc, "credentialPluginAllowlist")
    ]
    problem = _policy_problem(kind, listed is not None, entries)
    if problem:
        raise ConfigError(f"kuberc {path}: {problem}")
    return PluginPolicy(kind or ALLOW_ALL, tuple(entries), path)


def _flag_names(entry: dict[str, Any], path: str) -> None:
    for flag in _entries(entry, "flags"):
        if str(flag.get("name") or "").startswith("-"):
            raise ConfigError(f"kuberc {path}: flag name {flag['name']} should be in long form without dashes")


def _entries(doc: dict[str, Any], key: str) -> list[dict[str, Any]]:
    """A list of mappings (checked by _fit); a null entry is an empty one, as in JSON."""
    return [entry or {} for entry in doc.get(key) or []]


def _policy_problem(kind: str, listed: bool, entries: list[str]) -> str:
    """client-go's ValidatePluginPolicy, in its words."""
    if kind in ("", ALLOW_ALL, DENY_ALL):
        if listed:
            return f'misconfigured credential plugin allowlist: plugin policy is "{kind}" but allowlist is non-nil'
        return ""
    if kind != ALLOWLIST:
        return f'unknown plugin policy: "{kind}"'
    if not listed:
        return 'credential plugin policy set to "Allowlist", but allowlist is unspecified'
    if not entries:
        return 'credential plugin policy set to "Allowlist", but allowlist is empty; use "DenyAll" policy instead'
    for number, entry in enumerate(entries, 1):
        if not entry:
            return f"misconfigured credential plugin allowlist: empty allowlist entry #{number}"
        if clean(entry) != entry:
            return f'non-normalized file path: "{entry}" vs "{clean(entry)}"'
    return ""


def clean(path: str) -> str:
    """Go's filepath.Clean: normpath, and one leading slash where POSIX allows two."""
    cleaned = os.path.normpath(path)
    return "/" + cleaned.lstrip("/") if cleaned.startswith("//") else cleaned


def look_path(name: str) -> tuple[str, str]:
    """Go's exec.LookPath: (the path, "") or (what was found, the error in Go's words). A
    name with a separator is itself when it is an executable file; a bare name is looked up
    in PATH, and one found relative to the current directory is an error."""
    if os.sep in name:
        problem = _not_executable(name)
        return (name, "") if not problem else ("", f'exec: "{name}": {problem}')
    path = os.environ.get("PATH", "")
    for directory in path.split(os.pathsep) if path else []:
        candidate = clean(os.path.join(directory or ".", name))
        if not _not_executable(candidate):
            if not os.path.isabs(candidate):
                return candidate, f'exec: "{name}": cannot run executable found relative to current directory'
            return candidate, ""
    return "", f'exec: "{name}": executable file not found in $PATH'


def _not_executable(path: str) -> str:
    try:
        mode = os.stat(path).st_mode
    except OSError as exc:
        return f"stat {path}: {(exc.strerror or str(exc)).lower()}"
    if stat.S_ISDIR(mode):
        return "is a directory"
    return "" if os.access(path, os.X_OK) else "permission denied"
