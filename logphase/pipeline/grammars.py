"""The Lark grammars in ``grammars/``: one LALR parser per log source, built once, on demand.

The grammars are the one definition of message syntax. Besides parsing, this module hands out
their terminals (for the per-line tests compiled from them) and the terminals each message can
start with (for the dispatch that picks the grammar a line can belong to).

The grammars live in one folder per pack (``grammars/shared/`` for the vocabularies every server
reuses: PyTorch, NCCL, Gloo, tracebacks, tqdm, uvicorn, wrappers; ``grammars/sglang/`` for SGLang's
own). A grammar is named by its file's stem, unique across packs; a grammar imports another by
name, from any pack (``%import common (INT)``, ``%import sglang_errors (SIGQUIT)``). They travel inside the wheel as
``logphase/grammars/<pack>/*.lark``; in a source checkout they are read from the top-level
``grammars/`` folder.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

from lark import Lark, Token, Transformer, Tree
from lark.exceptions import LarkError
from lark.grammar import NonTerminal, Terminal

GRAMMAR_SOURCES = (
    "envelope", "sglang", "gloo", "nccl", "torch", "traceback", "tqdm", "http", "process", "server_args", "errors",
    "sglang_errors", "vllm", "vllm_errors",
)


SHARED_PACK = "shared"


def grammar_dir() -> Path:
    package = Path(__file__).resolve().parent.parent
    for candidate in (package / "grammars", package.parent / "grammars"):
        if (candidate / SHARED_PACK / "common.lark").is_file():
            return candidate
    raise FileNotFoundError("logphase grammars not found next to the package")


@functools.cache
def grammar_path(source: str) -> Path:
    """The file of the grammar named ``source``, in whichever pack's folder holds it."""
    found = sorted(grammar_dir().glob(f"*/{source}.lark"))
    if len(found) != 1:
        raise FileNotFoundError(f"grammar {source!r}: {len(found)} files named {source}.lark under {grammar_dir()}")
    return found[0]


@functools.cache
def parser(source: str) -> Lark:
    """The LALR parser for one source; compiled once per process and cached on disk by Lark."""
    return Lark.open(
        str(grammar_path(source)),
        parser="lalr",
        lexer="contextual",
        cache=True,
        maybe_placeholders=False,
        import_paths=pack_dirs(),
    )


@functools.cache
def pack_dirs() -> list[str]:
    """Every pack's grammar folder, the shared one first: a grammar imports any other by its stem
    (``%import common (INT)``, ``%import sglang_errors (SIGQUIT)``)."""
    folders = sorted(p for p in grammar_dir().iterdir() if p.is_dir() and any(p.glob("*.lark")))
    return [str(p) for p in sorted(folders, key=lambda p: p.name != SHARED_PACK)]


# an example line of the rule defined below it: '//: Load weight begin. avail mem=78.50 GB'
_EXAMPLE = re.compile(r"^//: (?P<line>.*)$")
_RULE_DEFINITION = re.compile(r"^[?!]?(?P<rule>[a-z_][a-z_0-9]*)(?:\.-?\d+)?\s*:")


@functools.cache
def examples(source: str) -> dict[str, tuple[str, ...]]:
    """The example lines a grammar gives its rules: ``//: <line>`` comments just above a rule's
    definition (other comments may come between). Messages and failure phrases are written in the
    grammars only, and so are the lines that show them."""
    found: dict[str, tuple[str, ...]] = {}
    pending: list[str] = []
    for line in grammar_path(source).read_text(encoding="utf-8").splitlines():
        example = _EXAMPLE.match(line)
        if example is not None:
            pending.append(example.group("line"))
            continue
        if line.startswith("//"):
            continue
        definition = _RULE_DEFINITION.match(line)
        if definition is not None and pending:
            found[definition.group("rule")] = found.get(definition.group("rule"), ()) + tuple(pending)
        pending = []
    return found


def terminal_pattern(source: str, name: str) -> str:
    """The regular expression a grammar gives a terminal, for per-line tests built from it."""
    return str(parser(source).get_terminal(name).pattern.to_regexp())


def message_rules(source: str) -> list[str]:
    """The messages of a grammar: the alternatives of its ``start`` rule, in order."""
    seen: list[str] = []
    for rule in parser(source).rules:
        if rule.origin.name == "start":
            for symbol in rule.expansion:
                if isinstance(symbol, NonTerminal) and symbol.name not in seen:
                    seen.append(str(symbol.name))
    return seen


def defined_rules(source: str) -> set[str]:
    """Every rule a grammar defines (inlined ``_rules`` included)."""
    return {str(rule.origin.name) for rule in parser(source).rules}


def used_rules(source: str) -> set[str]:
    """Every rule reachable from ``start``."""
    by_origin: dict[str, list[list[object]]] = {}
    for rule in parser(source).rules:
        by_origin.setdefault(str(rule.origin.name), []).append(list(rule.expansion))
    reached, todo = {"start"}, ["start"]
    while todo:
        for expansion in by_origin.get(todo.pop(), []):
            for symbol in expansion:
                if isinstance(symbol, NonTerminal) and str(symbol.name) not in reached:
                    reached.add(str(symbol.name))
                    todo.append(str(symbol.name))
    return reached


@functools.cache
def _expansions(source: str) -> dict[str, list[list[object]]]:
    """Each rule's expansions, by rule name (built once per grammar: the dispatch asks per rule)."""
    by_origin: dict[str, list[list[object]]] = {}
    for r in parser(source).rules:
        by_origin.setdefault(str(r.origin.name), []).append(list(r.expansion))
    return by_origin


def first_terminals(source: str, rule: str) -> list[str]:
    """Names of the terminals a rule's text can begin with (through sub-rules and options)."""
    by_origin = _expansions(source)
    found: list[str] = []
    seen: set[str] = set()

    def walk(name: str) -> None:
        if name in seen:
            return
        seen.add(name)
        for expansion in by_origin.get(name, []):
            if not expansion:
                continue
            first = expansion[0]
            if isinstance(first, Terminal):
                if first.name not in found:
                    found.append(str(first.name))
            elif isinstance(first, NonTerminal):
                walk(str(first.name))

    walk(rule)
    return found


def first_literal(source: str, rule: str) -> str:
    """The text a rule starts with when its first terminal is a string (``"server_args="``)."""
    name = first_terminals(source, rule)[0]
    terminal = parser(source).get_terminal(name)
    if terminal.pattern.type != "str":
        raise ValueError(f"{source}.{rule} starts with a pattern, not a literal")
    return str(terminal.pattern.value)


class Parsed:
    """A grammar match flattened for the event layer: the rule that matched, its tokens by terminal
    name, its ``key=value`` fields, and the values of its named sub-rules (``requested: INT``)."""

    __slots__ = ("children", "fields", "rule", "tokens", "values")

    def __init__(self, rule: str) -> None:
        self.rule = rule
        self.tokens: dict[str, list[str]] = {}
        self.fields: dict[str, str] = {}
        self.values: dict[str, list[str]] = {}
        self.children: list[Parsed] = []

    def first(self, token_type: str, default: str | None = None) -> str | None:
        values = self.tokens.get(token_type)
        return values[0] if values else default

    def value(self, name: str) -> str | None:
        """The text of the named sub-rule ``name`` (its tokens joined), or None when absent."""
        parts = self.values.get(name)
        return "".join(parts) if parts else None

    def items(self, name: str) -> list[str]:
        """The tokens of the named sub-rule ``name``, one by one (``missing: [INT ("," INT)*]``)."""
        return self.values.get(name, [])

    def child(self, rule: str) -> Parsed | None:
        return next((c for c in self.children if c.rule == rule), None)


class _Flatten(Transformer[Token, Parsed]):
    """Turns any parse tree into nested :class:`Parsed` records without knowing the grammar."""

    def __default__(self, data: str, children: list[object], meta: object) -> Parsed:
        node = Parsed(str(data))
        for child in children:
            if isinstance(child, Token):
                node.tokens.setdefault(child.type, []).append(str(child))
            elif isinstance(child, Parsed):
                if child.rule == "field":
                    key = child.first("FIELD_KEY")
                    value = child.first("FIELD_VALUE")
                    if key is not None and value is not None:
                        node.fields.setdefault(key.strip(), value.strip())
                    continue
                if not child.children and not child.fields and child.tokens:
                    # a named sub-rule of tokens only: a value the builders read by its name
                    node.values.setdefault(child.rule, [t for ts in child.tokens.values() for t in ts])
                for name, tokens in child.values.items():
                    node.values.setdefault(name, tokens)  # values of nested sub-rules, by name too
                node.children.append(child)
        return node


_FLATTEN = _Flatten()


def parse(source: str, text: str) -> Parsed | None:
    """Parse ``text`` with the grammar of ``source``; None when the grammar does not accept it."""
    try:
        tree = parser(source).parse(text)
    except LarkError:
        return None
    result = _FLATTEN.transform(tree) if isinstance(tree, Tree) else None
    if result is not None and result.rule == "start" and len(result.children) == 1:
        # `start` only wraps the alternative that matched; hoist it, keeping start's own tokens
        inner = result.children[0]
        for token_type, values in result.tokens.items():
            inner.tokens.setdefault(token_type, values)
        return inner
    return result
