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
import importlib.util
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from logphase.packs import kept_regex
from logphase.packs.derived import cache_dir, cached, digest, forget_others, writing
from logphase.packs.registry import grammars_root, pack_folders

if TYPE_CHECKING:  # Lark is imported when a line needs a parse, not to read the grammars' terminals
    from lark import Lark, Token, Transformer

def grammar_dir() -> Path:
    """The folder of the registry's packs (``registry.grammars_root``)."""
    return grammars_root()


@functools.cache
def grammar_sources() -> tuple[str, ...]:
    """Every grammar of every pack that reads lines (it has a ``start`` rule; ``common.lark`` only
    lends terminals), by name (its file's stem), in the packs' order."""
    return tuple(
        path.stem
        for folder in pack_folders()
        for path in sorted(folder.glob("*.lark"))
        if _START_RULE.search(path.read_text(encoding="utf-8"))
    )


_START_RULE = re.compile(r"^start\s*:", re.M)


@functools.cache
def grammar_path(source: str) -> Path:
    """The file of the grammar named ``source``, in whichever pack's folder holds it."""
    found = [path for folder in pack_folders() for path in [folder / f"{source}.lark"] if path.is_file()]
    if len(found) != 1:
        raise FileNotFoundError(f"grammar {source!r}: {len(found)} files named {source}.lark in the packs' folders")
    return found[0]


@functools.cache
def parser(source: str) -> Lark:
    """The LALR parser for one source; compiled once per process, its tables kept on disk."""
    return open_parser(source)


def open_parser(source: str, transformer: Transformer[Any, Any] | None = None) -> Lark:
    """A new LALR parser for one source (its tables kept on disk, kept_regex its scanners);
    ``transformer``: built into the parse, so that no tree is built (Lark's ``transformer=``)."""
    from lark import Lark

    def build(cache: bool | str) -> Lark:
        return Lark.open(
            str(grammar_path(source)),
            parser="lalr",
            lexer="contextual",
            cache=cache,
            maybe_placeholders=False,
            import_paths=pack_dirs(),
            transformer=transformer,
        )

    lark = _with_kept_tables(source, build)
    _keep_scanners(lark)
    return lark


def _with_kept_tables(source: str, build: Callable[[bool | str], Lark]) -> Lark:
    """``build(cache)`` with Lark's cache of the parse tables in the cache folder (derived.py),
    never Lark's default, the shared temporary folder, where another user could leave a pickle
    under the name Lark would read. Loading the tables is 5-10x faster than building them (the
    parsers of a 50-line parse: 0.03 s against 0.13-0.18 s).

    Lark reads its file only when the file's first line, a hash of the grammar's text, the options
    (the file's path and the import folders among them) and Lark's and Python's versions, is this
    parser's, and the grammars it imports are unchanged; else it builds the parser and writes the
    file (as when the file is missing). The file's name says all that too (``_lark_key``): a file
    of that name is this parser's, and one that would fail Lark's check (the folder moved, Lark
    upgraded) has another name. So the file is handed to Lark only when it is there or this process
    keeps the cache, and a library that was not asked writes nothing (a damaged file aside: Lark
    builds the parser and writes it again)."""
    folder = cache_dir()
    if folder is None:
        return build(False)
    path = folder / f"lark-{source}-{_lark_key(folder)}.pickle"
    if writing():
        if not path.is_file():
            forget_others(path, f"lark-{source}", ".pickle")
        return build(str(path))
    return build(str(path) if path.is_file() else False)


@functools.cache
def _lark_key(folder: Path) -> str:
    """What Lark's check of its cache file covers besides the grammar's text: the grammars it
    imports and Lark's version (both in _grammars_key), the options above, the file's path (the
    folder) and the import folders (options too), and Python's version (its pickles)."""
    options = "lalr contextual maybe_placeholders=False"
    return digest([_grammars_key(), str(sys.version_info[:2]), options, str(folder), *pack_dirs()])


def _keep_scanners(lark: Lark) -> None:
    """Lark's contextual lexer compiles a scanner per parser state on first use (~100 of them on the
    real logs, each an alternation of terminals): give its lexers kept_regex in place of ``re`` so
    that those are compiled once per machine. Lark reads the module from each lexer's ``re``
    attribute; a Lark whose lexers look otherwise keeps ``re``."""
    lexer = getattr(lark.parser, "lexer", None)
    lexers = [*getattr(lexer, "lexers", {}).values(), getattr(lexer, "root_lexer", None)]
    for basic in lexers:
        if basic is not None and getattr(basic, "re", None) is re:
            basic.re = kept_regex.RE_MODULE


@functools.cache
def pack_dirs() -> list[str]:
    """Every pack's folder, the shared one first: a grammar imports any other by its stem
    (``%import common (INT)``, ``%import sglang_errors (SIGQUIT)``)."""
    return [str(folder) for folder in pack_folders()]


# an example line of the rule defined below it: '//: Load weight begin. avail mem=78.50 GB'
_EXAMPLE = re.compile(r"^//: (?P<line>.*)$")
# a message's row written beside its rule: '//@ weight_loading evidence'
_ROW_NOTE = re.compile(r"^//@ (?P<line>.*)$")
_RULE_DEFINITION = re.compile(r"^[?!]?(?P<rule>[a-z_][a-z_0-9]*)(?:\.-?\d+)?\s*:")


@functools.cache
def examples(source: str) -> dict[str, tuple[str, ...]]:
    """The example lines a grammar gives its rules: ``//: <line>`` comments just above a rule's
    definition (other comments may come between). Messages and failure phrases are written in the
    grammars only, and so are the lines that show them."""
    return _comments_above(source, _EXAMPLE)


@functools.cache
def row_notes(source: str) -> dict[str, str]:
    """The rows a grammar writes beside its rules: a ``//@ <evidence>`` comment just above a rule's
    definition (``//@ weight_loading evidence``: see ``rows.annotated``) makes the rule a message of
    its pack, built as the pack builds its annotated messages (``Pack.annotated_row``)."""
    return {rule: lines[-1] for rule, lines in _comments_above(source, _ROW_NOTE).items()}


def _comments_above(source: str, marker: re.Pattern[str]) -> dict[str, tuple[str, ...]]:
    """What the ``marker`` comments just above each rule's definition say (other comments may come
    between), by rule."""
    found: dict[str, tuple[str, ...]] = {}
    pending: list[str] = []
    for line in grammar_path(source).read_text(encoding="utf-8").splitlines():
        said = marker.match(line)
        if said is not None:
            pending.append(said.group("line"))
            continue
        if line.startswith("//"):
            continue
        definition = _RULE_DEFINITION.match(line)
        if definition is not None and pending:
            found[definition.group("rule")] = found.get(definition.group("rule"), ()) + tuple(pending)
        pending = []
    return found


class Symbol(NamedTuple):
    """One symbol of a rule's expansion: a terminal (``TERMINAL``) or a rule (``rule``)."""

    name: str
    terminal: bool


class GrammarFacts(NamedTuple):
    """What the per-line tests built from a grammar read of it, without its parser: each terminal's
    regular expression (and its text when it is a string), and each rule's expansions in Lark's
    order (``rules``: (rule, its symbols), one pair per expansion)."""

    patterns: dict[str, str]
    literals: dict[str, str]
    rules: tuple[tuple[str, tuple[Symbol, ...]], ...]


@functools.cache
def _grammars_key() -> str:
    """A hash of every grammar file of every pack (a grammar imports others by name), of Lark (its
    version decides the patterns and the rules' order) and of logphase's version: their package
    files that say it, read rather than imported (Lark is imported when a line needs a parse)."""
    files = [path for folder in pack_folders() for path in sorted(folder.glob("*.lark"))]
    lark_spec = importlib.util.find_spec("lark")
    lark_init = Path(lark_spec.origin) if lark_spec is not None and lark_spec.origin else None
    logphase_init = Path(__file__).resolve().parent.parent / "__init__.py"
    parts: list[bytes | str] = [logphase_init.read_bytes(), lark_init.read_bytes() if lark_init is not None else b""]
    for path in files:
        parts += [path.parent.name + "/" + path.name, path.read_bytes()]
    return digest(parts)


def grammars_key() -> str:
    """The hash :func:`facts` keeps its data under (the grammar files, Lark's and logphase's
    versions), for what else is derived from the grammars and kept on disk."""
    return _grammars_key()


def _facts_of_parser(source: str) -> dict[str, object]:
    from lark.grammar import Terminal

    grammar = parser(source)
    return {
        "patterns": {t.name: str(t.pattern.to_regexp()) for t in grammar.terminals},
        "literals": {t.name: str(t.pattern.value) for t in grammar.terminals if t.pattern.type == "str"},
        "rules": [
            [str(r.origin.name), [[str(s.name), isinstance(s, Terminal)] for s in r.expansion]] for r in grammar.rules
        ],
    }


def _facts_from_data(data: object) -> GrammarFacts:
    if not isinstance(data, dict):
        raise TypeError("grammar facts: not an object")
    patterns, literals = dict(data["patterns"]), dict(data["literals"])
    if not all(isinstance(v, str) for v in (*patterns.values(), *literals.values())):
        raise TypeError("grammar facts: a pattern that is not text")
    rules = tuple(
        (str(origin), tuple(Symbol(str(name), bool(terminal)) for name, terminal in expansion))
        for origin, expansion in data["rules"]
    )
    return GrammarFacts(patterns, literals, rules)


@functools.cache
def facts(source: str) -> GrammarFacts:
    """The terminals and rules of a grammar: kept on disk (derived.py) with the grammars' hash, so
    that a start builds no parser for them; the parser is built when a line needs a parse."""
    return cached(f"grammar-{source}", _grammars_key(), lambda: _facts_of_parser(source), _facts_from_data)


def terminal_pattern(source: str, name: str) -> str:
    """The regular expression a grammar gives a terminal, for per-line tests built from it."""
    return facts(source).patterns[name]


def rules(source: str) -> tuple[tuple[str, tuple[Symbol, ...]], ...]:
    """Each expansion of each rule of a grammar, as (rule, its symbols), in the parser's order."""
    return facts(source).rules


def message_rules(source: str) -> list[str]:
    """The messages of a grammar: the alternatives of its ``start`` rule, in order."""
    seen: list[str] = []
    for origin, expansion in rules(source):
        if origin == "start":
            for symbol in expansion:
                if not symbol.terminal and symbol.name not in seen:
                    seen.append(symbol.name)
    return seen


def defined_rules(source: str) -> set[str]:
    """Every rule a grammar defines (inlined ``_rules`` included)."""
    return {origin for origin, _ in rules(source)}


def used_rules(source: str) -> set[str]:
    """Every rule reachable from ``start``."""
    by_origin = _expansions(source)
    reached, todo = {"start"}, ["start"]
    while todo:
        for expansion in by_origin.get(todo.pop(), []):
            for symbol in expansion:
                if not symbol.terminal and symbol.name not in reached:
                    reached.add(symbol.name)
                    todo.append(symbol.name)
    return reached


@functools.cache
def _expansions(source: str) -> dict[str, list[tuple[Symbol, ...]]]:
    """Each rule's expansions, by rule name (built once per grammar: the dispatch asks per rule)."""
    by_origin: dict[str, list[tuple[Symbol, ...]]] = {}
    for origin, expansion in rules(source):
        by_origin.setdefault(origin, []).append(expansion)
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
            if first.terminal:
                if first.name not in found:
                    found.append(first.name)
            else:
                walk(first.name)

    walk(rule)
    return found


def first_literal(source: str, rule: str) -> str:
    """The text a rule starts with when its first terminal is a string (``"server_args="``)."""
    name = first_terminals(source, rule)[0]
    literal = facts(source).literals.get(name)
    if literal is None:
        raise ValueError(f"{source}.{rule} starts with a pattern, not a literal")
    return literal


class Parsed:
    """A grammar match flattened for the event layer: the rule that matched, its tokens by terminal
    name, its ``key=value`` fields, and the values of its named sub-rules (``requested: INT``).
    Read-only once built: one reading serves every line of the same text (recognisers.recognise)."""

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
        """The tokens of the named sub-rule ``name``, one by one (``missing: [INT ("," INT)*]``): a
        copy (a Parsed is shared by every line of the same text: recognisers.recognise)."""
        return list(self.values.get(name, ()))

    def child(self, rule: str) -> Parsed | None:
        return next((c for c in self.children if c.rule == rule), None)

    # -- building: a node's children are added in the order of its text -------------------------

    def add_token(self, terminal: str, text: str) -> None:
        self.tokens.setdefault(terminal, []).append(text)

    def adopt(self, child: Parsed) -> None:
        """A sub-rule's record: a ``field`` becomes a key=value; a sub-rule of tokens only is a
        value the builders read by its name; nested sub-rules' values are kept by name too."""
        if child.rule == "field":
            key = child.first("FIELD_KEY")
            value = child.first("FIELD_VALUE")
            if key is not None and value is not None:
                self.fields.setdefault(key.strip(), value.strip())
            return
        if not child.children and not child.fields and child.tokens:
            self.values.setdefault(child.rule, [t for ts in child.tokens.values() for t in ts])
        for name, tokens in child.values.items():
            self.values.setdefault(name, tokens)
        self.children.append(child)


def flatten_node(data: str, children: list[object]) -> Parsed:
    """One node of a Lark parse, as a :class:`Parsed` record, from its children (tokens, records
    already flattened). The compiled recognisers build the same records from their matches
    (recognisers._reader)."""
    node = Parsed(str(data))
    for child in children:
        if isinstance(child, Parsed):
            node.adopt(child)
        elif isinstance(child, str) and hasattr(child, "type"):  # a Lark token (a str with its terminal's name)
            node.add_token(child.type, str(child))
    return node


@functools.cache
def _flattener() -> Transformer[Token, Parsed]:
    """Turns any parse tree into nested :class:`Parsed` records without knowing the grammar."""
    from lark import Token, Transformer

    class Flatten(Transformer[Token, Parsed]):
        def __default__(self, data: str, children: list[object], meta: object) -> Parsed:
            return flatten_node(data, children)

    return Flatten()


def parse(source: str, text: str) -> Parsed | None:
    """Parse ``text`` with the grammar of ``source``; None when the grammar does not accept it."""
    from lark import Tree
    from lark.exceptions import LarkError

    try:
        tree = parser(source).parse(text)
    except LarkError:
        return None
    result = _flattener().transform(tree) if isinstance(tree, Tree) else None
    if result is not None and result.rule == "start" and len(result.children) == 1:
        # `start` only wraps the alternative that matched; hoist it, keeping start's own tokens
        inner = result.children[0]
        for token_type, values in result.tokens.items():
            inner.tokens.setdefault(token_type, values)
        return inner
    return result
