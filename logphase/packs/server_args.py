"""The ``server_args=`` dump: ``ServerArgs(k=v, ...)`` (<= 0.5.17) or a dict (>= 0.5.20)."""

from __future__ import annotations

import functools
import re
from typing import TYPE_CHECKING, Any, Literal, cast

from lark import Token, Transformer
from lark.exceptions import LarkError

from logphase.packs.grammars import open_parser

if TYPE_CHECKING:
    from lark import Lark
from logphase.vocabulary.redact import redact_args

ArgsFormat = Literal["call", "dict", "unparsed"]


# Python's string escapes. Decoded by hand: ast.literal_eval would warn (SyntaxWarning from 3.12)
# about the invalid escapes that real dumps hold, such as regexes in '\\d+' or '\\]'.
_ESCAPE = re.compile(r"\\(x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8}|[0-7]{1,3}|.)", re.DOTALL)
_SIMPLE_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", "'": "'", '"': '"', "a": "\a", "b": "\b", "f": "\f", "v": "\v"}


def unquote(literal: str) -> str:
    """The value of a Python string literal ('...' or "..."); unknown escapes stay as written."""

    def one(m: re.Match[str]) -> str:
        code = m.group(1)
        if code in _SIMPLE_ESCAPES:
            return _SIMPLE_ESCAPES[code]
        if code[0] in "xuU" and len(code) > 1 and int(code[1:], 16) <= 0x10FFFF:
            return chr(int(code[1:], 16))
        if code[0] in "01234567":
            return chr(int(code, 8))
        if code == "\n":
            return ""  # a backslash before a newline continues the line
        return "\\" + code

    return _ESCAPE.sub(one, literal[1:-1])


class _ToPython(Transformer[Token, Any]):
    def string(self, items: list[Token]) -> str:
        return unquote(str(items[0]))

    def number(self, items: list[Token]) -> float | int:
        text = str(items[0])
        value = float(text)
        return int(value) if value.is_integer() and "." not in text and "e" not in text.lower() else value

    def const(self, items: list[Token]) -> Any:
        return {"None": None, "True": True, "False": False}.get(str(items[0]), str(items[0]))

    def opaque(self, items: list[Any]) -> str:
        return str(items[0])

    def list_value(self, items: list[Any]) -> list[Any]:
        return list(items)

    def tuple_value(self, items: list[Any]) -> list[Any]:
        return list(items)

    def set_value(self, items: list[Any]) -> list[Any]:
        return list(items)

    def pair(self, items: list[Any]) -> tuple[Any, Any]:
        return (items[0], items[1])

    def dict_value(self, items: list[Any]) -> dict[str, Any]:
        return {str(k): v for k, v in items}

    def kwarg(self, items: list[Any]) -> tuple[str, Any]:
        return (str(items[0]), items[1])

    def call(self, items: list[Any]) -> str:
        return f"{items[0]}(...)"

    def call_args(self, items: list[Any]) -> dict[str, Any]:
        return dict(items)

    def server_args(self, items: list[Any]) -> dict[str, Any]:
        return items[0] if items else {}

    def start(self, items: list[Any]) -> dict[str, Any]:
        return items[0] if items else {}


# Only for a dump the grammar cannot read whole (cut mid-line): the key=value pairs it still holds. A
# key is a name (not a number: '10:12:40' of the line's stamp, a list's items), so that the many
# commas of a long list are passed over at their first character
_KEY_VALUE = re.compile(r"[{ ,(]'?([A-Za-z_]\w*)'?[=:] ?('[^']*'|[^,)}]*)")


def parse_server_args(text: str) -> tuple[dict[str, Any], ArgsFormat]:
    """The values of a ``server_args=...`` line, and which form it has; a dump the grammar cannot
    read whole (cut short, or a value it does not know) gives what its ``key=value`` pairs say.
    Secrets (api_key, hf_token, a URL's password ...) come out as ``***``: vocabulary/redact.py."""
    args, fmt = _parse_server_args(text)
    # redact_args builds every dict and list anew (a dump's values are dicts, lists and scalars
    # only): what _read_dump keeps for the next line with this text is never handed out
    return redact_args(args), fmt


@functools.cache
def _values_parser() -> Lark:
    """server_args.lark's LALR parser with the values built as it reduces (Lark's ``transformer=``):
    no tree is built and walked again, ~30 % of a dump's reading."""
    return open_parser("server_args", _ToPython())


# A file of several runs often repeats one dump (a restart with the same arguments; every rank of
# some launchers): read once, copied out (by redact_args). A dump is ~10 kB of text and ~100 kB of
# values. A dump the grammar cannot read is remembered too (None): it would be tried again in vain.
@functools.lru_cache(maxsize=32)
def _read_dump(text: str) -> tuple[dict[str, Any], ArgsFormat] | None:
    try:
        result: dict[str, Any] = cast(dict[str, Any], _values_parser().parse(text))
    except LarkError:
        return None
    fmt: ArgsFormat = "dict" if text[len("server_args=") :].startswith("{") else "call"
    return result, fmt


def _parse_server_args(text: str) -> tuple[dict[str, Any], ArgsFormat]:
    text = text.strip()
    # a dump that does not end as one does was cut short (a line over the reader's limit, a last line
    # the input ends in): the grammar would read it to its end in vain, ~0.1 s for 64 KiB of values
    read = _read_dump(text) if text.endswith((")", "}")) else None
    if read is not None:
        return read
    # A dump cut short or holding a value the grammar does not know: keep what can be read.
    args: dict[str, Any] = {}
    for key, raw in _KEY_VALUE.findall(text):
        args.setdefault(key, _loose_value(raw.strip()))
    return args, "unparsed"


def _loose_value(raw: str) -> Any:
    """A value of a dump the grammar could not read: a string, number or constant, else the text."""
    if len(raw) >= 2 and raw[0] == raw[-1] and raw[0] in "'\"":
        return unquote(raw)
    if raw in ("None", "True", "False"):
        return {"None": None, "True": True, "False": False}[raw]
    try:
        value = float(raw)
    except ValueError:
        return raw
    return int(value) if value.is_integer() and re.fullmatch(r"-?\d+", raw) else value
