"""Loading the Lark grammars in ``grammars/``: one parser per log source, built once, on demand.

The grammars travel inside the wheel as ``logphase/grammars/*.lark``; in a source checkout they
are read from the top-level ``grammars/`` folder.
"""

from __future__ import annotations

import functools
from pathlib import Path

from lark import Lark, Token, Transformer, Tree
from lark.exceptions import LarkError

GRAMMAR_SOURCES = ("prefix", "sglang", "gloo", "nccl", "torch", "traceback", "tqdm", "http", "server_args")


def grammar_dir() -> Path:
    package = Path(__file__).resolve().parent.parent
    for candidate in (package / "grammars", package.parent / "grammars"):
        if (candidate / "common.lark").is_file():
            return candidate
    raise FileNotFoundError("logphase grammars not found next to the package")


@functools.cache
def parser(source: str) -> Lark:
    """The LALR parser for one source; compiled once per process and cached on disk by Lark."""
    return Lark.open(
        str(grammar_dir() / f"{source}.lark"),
        parser="lalr",
        lexer="contextual",
        cache=True,
        maybe_placeholders=False,
    )


def terminal_pattern(source: str, name: str) -> str:
    """The regular expression a grammar gives a terminal, for hot-path tests built from it."""
    return parser(source).get_terminal(name).pattern.to_regexp()


class Parsed:
    """A grammar match flattened for the event layer: the rule that matched, its tokens and fields."""

    __slots__ = ("children", "fields", "rule", "tokens")

    def __init__(self, rule: str) -> None:
        self.rule = rule
        self.tokens: dict[str, list[str]] = {}
        self.fields: dict[str, str] = {}
        self.children: list[Parsed] = []

    def first(self, token_type: str, default: str | None = None) -> str | None:
        values = self.tokens.get(token_type)
        return values[0] if values else default

    def all(self, token_type: str) -> list[str]:
        return self.tokens.get(token_type, [])


class _Flatten(Transformer[Token, Parsed]):
    """Turns any parse tree into nested :class:`Parsed` records without knowing the grammar."""

    def __default__(self, data: str, children: list[object], meta: object) -> Parsed:
        node = Parsed(data)
        for child in children:
            if isinstance(child, Token):
                node.tokens.setdefault(child.type, []).append(str(child))
            elif isinstance(child, Parsed):
                if child.rule == "field":
                    key = child.first("FIELD_KEY")
                    value = child.first("FIELD_VALUE")
                    if key is not None and value is not None:
                        node.fields.setdefault(key.strip(), value.strip())
                else:
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
