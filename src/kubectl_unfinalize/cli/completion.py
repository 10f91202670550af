"""Shell completion for `kubectl unfinalize`, in the protocol kubectl (>= 1.26) speaks.

kubectl runs ``kubectl_complete-unfinalize WORD... TO_COMPLETE`` with the words typed after
``kubectl unfinalize``; the last argument is the (possibly empty) word under the cursor.
The answer is one candidate per line (``candidate<TAB>description`` is allowed), then a
line ``:N`` where N is a cobra ShellCompDirective bit set: 1 error, 2 no space, 4 no file
completion, 8 filter file extensions, 16 directories only, 32 keep order; 0 lets the shell
complete file names.

Flags and their values come from flags.build_parser, so completion never drifts from the
parser. CRD and namespace names come from the cluster with one metadata-only list request
and a short timeout; resource types from aggregated discovery, as `kubectl api-resources
-o name` spells them, and the NAMEs of a TYPE from discovery and one metadata-only list
page. Any failure (no kubeconfig, unreachable server, forbidden) gives no candidates and
no output other than the directive line, and the exit code is always 0.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence

from ..options import ConnectionOptions
from .connection_flags import parse_bool, to_connection_options
from .flags import CRD_WORDS, NAMESPACE_WORDS, build_parser
from .scan_flags import SCAN_WORDS

DIRECTIVE_DEFAULT = 0  # the shell may complete file names
DIRECTIVE_NO_FILE = 4
CLUSTER_TIMEOUT = 2.0

# Options whose value is a path: let the shell complete file names.
FILE_OPTIONS = {"filename", "kubeconfig", "certificate_authority", "client_certificate", "client_key"}
# Options whose value the cluster (or kubeconfig) can list.
LISTED_OPTIONS = {"namespace": "namespaces", "context": "contexts", "category": "categories"}
BOOL_VALUES = ("true", "false")
TYPES, CATEGORIES, OBJECTS = "types", "categories", "objects:"
NAMES_LISTED = 500  # one page of a TYPE's names: enough to type the rest from
Lister = Callable[[str, dict[str, object]], list[str]]
"""lister(kind, connection_values) -> names; kind is "crds", "namespaces", "contexts",
"types", "categories", or "objects:TYPE" (the names of TYPE's objects in the namespace)."""


def complete(words: Sequence[str], to_complete: str, lister: Lister | None = None) -> tuple[list[str], int]:
    """Return (candidate lines, directive) for the words typed so far and the word being typed."""
    lister = lister or list_names
    parser = build_parser()
    options = {s: a for a in parser._actions for s in a.option_strings}
    state = _scan(list(words), options)
    if state.pending is not None and state.pending.nargs == "?" and to_complete.startswith("-"):
        state.pending = None  # an optional value was not given; a new flag is being typed
    if state.pending is not None:  # the word being typed is the value of the previous flag
        return _values(state.pending, to_complete, "", state, lister)
    if to_complete.startswith("-") and not state.after_dashdash:
        if "=" in to_complete and to_complete.startswith("--"):
            flag, _, value = to_complete.partition("=")
            action = options.get(flag)
            if action is None or action.nargs == 0:
                return [], DIRECTIVE_NO_FILE
            return _values(action, value, flag + "=", state, lister)
        short = to_complete[:2]
        if len(to_complete) > 2 and not to_complete.startswith("--") and short in options:
            if options[short].nargs != 0:
                return _values(options[short], to_complete[2:], short, state, lister)
        return _flags(parser, to_complete, state), DIRECTIVE_NO_FILE
    if state.values.get("filename"):
        return [], DIRECTIVE_NO_FILE  # -f selects everything; no positional words expected
    if all("/" in p for p in state.positionals) and "/" in to_complete:
        kind, _, name = to_complete.partition("/")  # TYPE/NAME, kubectl's other form
        taken = set(state.positionals)
        names = _safe_list(lister, OBJECTS + kind, state.values)
        return [f"{kind}/{n}" for n in names if n.startswith(name) and f"{kind}/{n}" not in taken], DIRECTIVE_NO_FILE
    if not state.positionals:
        words = (
            ["crd", "ns", "scan"]
            if not to_complete
            else [w for w in CRD_WORDS + NAMESPACE_WORDS + SCAN_WORDS if w.startswith(to_complete)]
        )
        types = [t for t in _safe_list(lister, TYPES, state.values) if t.startswith(to_complete.lower())]
        return words + [t for t in types if t not in words], DIRECTIVE_NO_FILE
    word = state.positionals[0].lower()
    if "/" in word or word in SCAN_WORDS:
        return [], DIRECTIVE_NO_FILE  # TYPE/NAME words take no bare NAME after them; scan takes none
    if word not in CRD_WORDS + NAMESPACE_WORDS:
        taken = set(state.positionals[1:])
        names = _safe_list(lister, OBJECTS + state.positionals[0], state.values)
        return [n for n in names if n.startswith(to_complete) and n not in taken], DIRECTIVE_NO_FILE
    taken = set(state.positionals[1:])
    names = _safe_list(lister, "crds" if word in CRD_WORDS else "namespaces", state.values)
    return [n for n in names if n.startswith(to_complete) and n not in taken], DIRECTIVE_NO_FILE


class _State:
    def __init__(self) -> None:
        self.positionals: list[str] = []
        self.values: dict[str, object] = {}
        self.seen: set[str] = set()
        self.pending: argparse.Action | None = None
        self.after_dashdash = False


def _scan(words: list[str], options: dict[str, argparse.Action]) -> _State:
    """Walk the finished words as argparse would: positionals, flag values, flags seen."""
    state = _State()
    i = 0
    while i < len(words):
        word = words[i]
        i += 1
        if state.after_dashdash or word == "-" or not word.startswith("-"):
            state.positionals.append(word)
            continue
        if word == "--":
            state.after_dashdash = True
            continue
        if word.startswith("--"):
            flag, eq, attached = word.partition("=")
            action = options.get(flag)
            if action is None:
                continue
            state.seen.add(action.dest)
            if eq:
                _store(state, action, attached)
                continue
        else:
            action, attached = _short(word, options, state)
            if action is None:
                continue
            if attached:
                _store(state, action, attached)
                continue
        if action.nargs == 0:
            _store(state, action, True)
        elif action.nargs == "?":
            if i < len(words) and not words[i].startswith("-"):
                _store(state, action, words[i])
                i += 1
            else:
                _store(state, action, action.const)
                if i == len(words):
                    state.pending = action  # may take the word being typed
        elif i < len(words):
            _store(state, action, words[i])
            i += 1
        else:
            state.pending = action
    return state


def _short(word: str, options: dict[str, argparse.Action], state: _State) -> tuple[argparse.Action | None, str]:
    """-o VALUE, -ojson, or a cluster of switches such as -qv or -qo VALUE: (last option, attached value)."""
    for index in range(1, len(word)):
        action = options.get("-" + word[index])
        if action is None:
            return None, ""
        state.seen.add(action.dest)
        rest = word[index + 1 :]
        if action.nargs != 0 or not rest:
            return action, rest
    return None, ""


def _store(state: _State, action: argparse.Action, value: object) -> None:
    if isinstance(action.default, list):
        listed = state.values.setdefault(action.dest, [])
        assert isinstance(listed, list)
        listed.append(value)
    else:
        state.values[action.dest] = value


def _values(action: argparse.Action, prefix: str, lead: str, state: _State, lister: Lister) -> tuple[list[str], int]:
    if action.dest in FILE_OPTIONS:
        return [], DIRECTIVE_DEFAULT
    if action.choices:
        choices = list(action.choices)
    elif action.type is parse_bool:
        choices = list(BOOL_VALUES)
    elif action.dest in LISTED_OPTIONS:
        choices = _safe_list(lister, LISTED_OPTIONS[action.dest], state.values)
    else:
        return [], DIRECTIVE_NO_FILE
    return [lead + c for c in choices if c.startswith(prefix)], DIRECTIVE_NO_FILE


def _flags(parser: argparse.ArgumentParser, prefix: str, state: _State) -> list[str]:
    lines = []
    for action in parser._actions:
        if not action.option_strings or action.help == argparse.SUPPRESS:
            continue
        repeatable = isinstance(action.default, list)
        if action.dest in state.seen and not repeatable:
            continue
        for name in action.option_strings:
            if name.startswith(prefix):
                lines.append(f"{name}\t{_summary(action.help or '')}")
    return lines


def _summary(text: str) -> str:
    text = " ".join(text.split()).split(";")[0].split(" (")[0]
    return text if len(text) <= 60 else text[:57] + "..."


def _safe_list(lister: Lister, kind: str, values: dict[str, object]) -> list[str]:
    try:
        return sorted(str(name) for name in lister(kind, values))
    except Exception:  # noqa: BLE001 - completion must stay silent whatever goes wrong
        return []


def list_names(kind: str, values: dict[str, object]) -> list[str]:
    """Names of CRDs, namespaces (one quick metadata-only list), kubeconfig contexts,
    resource types, their categories, or a type's objects ("objects:TYPE")."""
    import warnings

    warnings.simplefilter("ignore")  # e.g. InsecureRequestWarning must not reach the terminal
    from ..api import names

    if kind == "contexts":
        kubeconfig = values.get("kubeconfig")
        return names(kind, ConnectionOptions(kubeconfig=str(kubeconfig) if kubeconfig else None))
    options = to_connection_options(values, request_timeout=CLUSTER_TIMEOUT, verbosity=0)
    namespace = str(values["namespace"]) if values.get("namespace") else None
    return names(kind, options, namespace=namespace, limit=NAMES_LISTED)


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    words, to_complete = (args[:-1], args[-1]) if args else ([], "")
    try:
        candidates, directive = complete(words, to_complete)
    except Exception:  # noqa: BLE001 - never break the user's shell
        candidates, directive = [], DIRECTIVE_NO_FILE
    out = sys.stdout
    for line in candidates:
        out.write(line + "\n")
    out.write(f":{directive}\n")
    out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
