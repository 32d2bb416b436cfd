"""SGLang's log formats, read from a release wheel's source (issue 20 point 5).

Used by ``mine_sglang.py`` (stdlib only, like it), which stores the result under ``logging`` in
each release's catalogue file. Three things decide what a line of SGLang looks like:

* the *formats*: every Python-logging format string of the server's own code (not its tests,
  benchmarks or the separate diffusion server): ``configure_logger``'s
  ``[%(asctime)s{prefix}] %(message)s``, uvicorn's configuration
  (``[%(asctime)s] %(levelprefix)s ...``), the PD mini load balancer's, the n-gram cache's
  glog-like one, the weight cache daemon's ... each with the ``datefmt`` the same function gives
  (``%H:%M:%S`` in 0.2, ``%Y-%m-%d %H:%M:%S`` since), and whether it appends milliseconds;
* the *rank tags* a scheduler's ``prefix`` is built from, in the order the code appends them
  (`` DP{dp_rank}``, `` PP{pp_rank}``, `` TP{tp_rank}``, `` EP{moe_ep_rank}``);
* the environment switches of the format (``SGLANG_LOG_MS``: milliseconds after the time).

``knowledge.py`` renders each format with plausible values and checks that logphase's envelope
(``grammars/shared/envelope.lark``) peels it and reads the message behind it.
"""

from __future__ import annotations

import ast
import re
import zipfile
from pathlib import Path

# the server's own code: not its tests, benchmarks, examples or the diffusion server (another product)
_SKIP = re.compile(r"/(?:test|tests|benchmark|bench_\w+|examples|multimodal_gen)(?:/|\.py$)|/test_\w+\.py$|/bench_\w+\.py$|unit_test\.py$")
_FIELD = re.compile(r"%\((\w+)\)[-\d.]*[sd]")
_DATEFMT = re.compile(r"%[HMSmdYy]")
_LOG_ENV = re.compile(r"SGLANG_LOG_\w+")


def _text(node: ast.AST) -> str | None:
    """A string constant, or an f-string as a template (``{expr}`` for each value)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        out = []
        for part in node.values:
            if isinstance(part, ast.Constant) and isinstance(part.value, str):
                out.append(part.value)
            elif isinstance(part, ast.FormattedValue):
                out.append("{" + ast.unparse(part.value) + "}")
        return "".join(out)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):  # "a" "b" split over lines, or a + b
        left, right = _text(node.left), _text(node.right)
        return None if left is None or right is None else left + right
    return None


_TAGS = re.compile(r"^(?: ([A-Z][A-Z_]*)\{[^{}]*\})+$")
_ONE_TAG = re.compile(r" ([A-Z][A-Z_]*)\{")


def _scopes(tree: ast.Module) -> list[tuple[int, int, str]]:
    """(first line, last line, qualified name) of every function, the innermost last when nested."""
    out: list[tuple[int, int, str]] = []

    def walk(node: ast.AST, names: list[str]) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                qual = [*names, child.name]
                if not isinstance(child, ast.ClassDef):
                    out.append((child.lineno, child.end_lineno or child.lineno, ".".join(qual)))
                walk(child, qual)
            else:
                walk(child, names)

    walk(tree, [])
    return out


def _scope_of(scopes: list[tuple[int, int, str]], line: int) -> tuple[int, int, str]:
    inner = [s for s in scopes if s[0] <= line <= s[1]]
    return min(inner, key=lambda s: s[1] - s[0]) if inner else (0, 10**9, "<module>")


def _strings(tree: ast.Module) -> list[tuple[ast.AST, str]]:
    """Every string of the module (an f-string as one template, never its pieces)."""
    inside: set[int] = set()
    found: list[tuple[ast.AST, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            inside.update(id(n) for n in ast.walk(node) if n is not node)
    for node in ast.walk(tree):
        if id(node) in inside or not isinstance(node, (ast.Constant, ast.JoinedStr)):
            continue
        text = _text(node)
        if text is not None:
            found.append((node, text))
    return sorted(found, key=lambda e: (getattr(e[0], "lineno", 0), getattr(e[0], "col_offset", 0)))


def _module_formats(tree: ast.Module) -> list[dict]:
    scopes = _scopes(tree)
    strings = _strings(tree)
    datefmts = [(getattr(n, "lineno", 0), t) for n, t in strings if _DATEFMT.search(t) and "%(" not in t and len(t) < 40]
    out = []
    for node, text in strings:
        if "%(message)s" not in text and "%(asctime)s" not in text:
            continue
        line = getattr(node, "lineno", 0)
        first, last, function = _scope_of(scopes, line)
        near = [d for at, d in datefmts if first <= at <= last]
        out.append(
            {
                "format": text,
                "datefmt": near[0] if near else None,
                "function": function,
                "line": line,
                "fields": sorted(set(_FIELD.findall(text))),
            }
        )
    return out


def _tag_orders(tree: ast.Module) -> list[list[str]]:
    """The orders of the rank tags a scheduler's prefix is made of: a string of several tags
    (" DP{dp_rank} TP{tp_rank}"), or the single tags a function appends in turn."""
    scopes = _scopes(tree)
    by_scope: dict[str, list[str]] = {}
    orders: list[list[str]] = []
    for node, text in _strings(tree):
        if not isinstance(node, ast.JoinedStr) or not _TAGS.match(text):
            continue
        tags = _ONE_TAG.findall(text)
        if len(tags) > 1:
            orders.append(tags)
        else:
            scope = by_scope.setdefault(_scope_of(scopes, node.lineno)[2], [])
            scope.extend(t for t in tags if t not in scope)
    orders += [tags for tags in by_scope.values() if tags]
    return orders


def mine_logging(wheel: Path) -> dict:
    """The formats, rank-tag orders and format switches of a release (see the module's doc)."""
    formats: list[dict] = []
    tags: list[list[str]] = []
    envs: set[str] = set()
    with zipfile.ZipFile(wheel) as z:
        for name in sorted(z.namelist()):
            if not name.endswith(".py") or not name.startswith("sglang/") or _SKIP.search(name):
                continue
            source = z.read(name).decode("utf-8", "replace")
            if "%(message)s" not in source and "prefix" not in source and "SGLANG_LOG_" not in source:
                continue
            try:
                tree = ast.parse(source, filename=name)
            except SyntaxError:
                continue
            formats += [{"file": name, **f} for f in _module_formats(tree)]
            if name.rsplit("/", 1)[-1].startswith(("scheduler", "data_parallel")):
                tags += _tag_orders(tree)
            envs |= set(_LOG_ENV.findall(source))
    distinct_tags = [list(t) for t in sorted({tuple(t) for t in tags})]
    return {
        "formats": sorted(formats, key=lambda f: (f["file"], f["line"], f["format"])),
        "rank_tags": distinct_tags,
        "switches": sorted(e for e in envs if e in ("SGLANG_LOG_MS", "SGLANG_LOGGING_CONFIG_PATH")),
    }
