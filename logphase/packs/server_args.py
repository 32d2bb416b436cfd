"""The ``server_args=`` dump: ``ServerArgs(k=v, ...)`` (<= 0.5.17) or a dict (>= 0.5.20)."""

from __future__ import annotations

import ast
import functools
import re
import warnings
from typing import TYPE_CHECKING, Any, Literal, cast

from lark import Token, Transformer
from lark.exceptions import LarkError

from logphase.packs.grammars import open_parser

if TYPE_CHECKING:
    from lark import Lark
from logphase.vocabulary.errors import LogphaseError
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


def _number(text: str) -> float | int:
    """A FLOAT token's value: an int when written as one (through float, as the grammar always did)."""
    value = float(text)
    return int(value) if value.is_integer() and "." not in text and "e" not in text.lower() else value


class _ToPython(Transformer[Token, Any]):
    def string(self, items: list[Token]) -> str:
        return unquote(str(items[0]))

    def number(self, items: list[Token]) -> float | int:
        return _number(str(items[0]))

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
    result = read_fast(text)
    if result is None and not _too_deep(text):  # values nested deeper would overflow redact_args's stack
        result = _read_lark(text)
    if result is None:
        return None
    fmt: ArgsFormat = "dict" if text[len("server_args=") :].startswith("{") else "call"
    return result, fmt


def _read_lark(text: str) -> dict[str, Any] | None:
    """The grammar's reading of a dump (None: it cannot read it): the reference for read_fast."""
    try:
        return cast(dict[str, Any], _values_parser().parse(text))
    except LarkError:
        return None


# The fast reading (issue 31: Lark took 4-5 ms CPU a real 11 KB dump, 70 ms one of 60 KB with a long
# list). A dump is nearly always a Python repr: Python's own parser (C) reads its shape, and a walk
# of the few node kinds a repr has gives the grammar's values. Every leaf is re-read from its
# source text with the grammar's own token patterns and conversions, so that what Python reads
# otherwise (1_000, 0x10, r'..', 'a' 'b', - 1, (1) without a comma, tabs, comments) never gets a
# value the grammar would not give: any text or node the walk does not know gives None, and the
# grammar reads the dump as before (enums <E.X: 1>, objects, non-ASCII text ...).
_FAST_LIMIT = 256 * 1024  # above it (never from the reader, whose lines stop at 64 KiB) the grammar
_MAX_DEPTH = 100  # nesting deeper than any real dump's: read for its key=value pairs (_too_deep)
_STRING = re.compile(r"'(?:[^'\\]|\\.)*'" + r'|"(?:[^"\\]|\\.)*"')  # server_args.lark's STRING
_FLOAT = re.compile(r"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?", re.ASCII)  # common.lark's FLOAT
_DOTTED = re.compile(r"[A-Za-z_][\w.]*", re.ASCII)
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# CONST outranks DOTTED and NAME in the grammar's lexer: inf(1) or X(nan=1) is not read there
_CONST_START = re.compile(r"(?:None|True|False|inf|nan)\b")
_HELD = "_held"
_HOLD = re.compile(_STRING.pattern + r"|\[(\d{1,15}(?:, \d{1,15})*)\]")
# What may stand outside strings: the grammar's punctuation, names, numbers and spaces. Not tabs,
# newlines, comments or backslashes (Python skips them, the grammar does not), nor <...>.
_SKELETON = re.compile(r"[\w.+\- ,:=()\[\]{}]*", re.ASCII)


_INNERMOST = re.compile(r"[(\[{][^()\[\]{}]*[)\]}]")


def _too_deep(text: str) -> bool:
    """Whether brackets (outside strings) nest deeper than _MAX_DEPTH: innermost pairs taken away
    round by round, in C (a dump the grammar reads that deep raised RecursionError in redact_args)."""
    rest = _STRING.sub("", text)
    for _ in range(_MAX_DEPTH):
        inner = _INNERMOST.sub("", rest)
        if inner == rest:
            return False
        rest = inner
    return _INNERMOST.search(rest) is not None


class _Unknown(LogphaseError):
    """A node or text the fast reading does not know: the grammar decides (never leaves read_fast)."""


def read_fast(text: str) -> dict[str, Any] | None:
    """The values the grammar gives for a dump (``server_args=...``, stripped), read with Python's
    parser; None when the text holds anything the walk does not know (then read with the grammar)."""
    prefix = "server_args="
    if not text.startswith(prefix) or len(text) > _FAST_LIMIT or not text.isascii():
        return None
    body = text[len(prefix) :].lstrip(" ")
    skeleton = _STRING.sub("", body)
    if not _SKELETON.fullmatch(skeleton) or _HELD in skeleton:
        return None
    # A long list of numbers costs Python's parser ~2 us an item (a node each): a list of plain
    # ints (outside strings) is read by split() and stands in the text as a name, _held<i>
    held: dict[str, list[int]] = {}

    def hold(m: re.Match[str]) -> str:
        if m.group(1) is None:
            return m.group(0)  # a string: kept as it is
        name = f"{_HELD}{len(held)}"
        held[name] = [int(item) for item in m.group(1).split(", ")]  # <= 15 digits: the grammar's float() is exact
        return name

    body = _HOLD.sub(hold, body)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # invalid escapes ('\d'): SyntaxWarning from 3.12
            tree = ast.parse(body, mode="eval").body
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return None
    walk = _Walk(body, held)
    try:
        result = walk.top(tree)
    except _Unknown:
        return None
    # every '(' outside strings is a tuple's or a call's: else one groups, as '(1)', a tuple to the grammar
    return result if skeleton.count("(") == walk.parens else None


class _Walk:
    """Python's tree of a dump's text to the grammar's values (server_args.lark, _ToPython)."""

    def __init__(self, source: str, held: dict[str, list[int]]) -> None:
        self.source = source  # ASCII: the nodes' offsets (UTF-8 bytes) are its indices
        self.held = held
        self.parens = 0

    def top(self, node: ast.expr) -> dict[str, Any]:
        if type(node) is ast.Dict and self.source.startswith("{"):
            return self.dict_value(node, 1)
        if (
            type(node) is ast.Call
            and type(node.func) is ast.Name
            and node.func.id == "ServerArgs"
            and self.source.startswith("ServerArgs(")
            and not node.args
        ):
            self.parens += 1
            return {self.kwarg_name(kw): self.value(kw.value, 1) for kw in node.keywords}
        raise _Unknown

    def text(self, node: ast.expr) -> str:
        return self.source[node.col_offset : cast(int, node.end_col_offset)]

    def kwarg_name(self, kw: ast.keyword) -> str:
        if kw.arg is None or not _NAME.fullmatch(kw.arg) or _CONST_START.match(kw.arg):
            raise _Unknown
        return kw.arg

    def value(self, node: ast.expr, depth: int) -> Any:
        if depth > _MAX_DEPTH:
            raise _Unknown
        kind = type(node)
        if kind is ast.Constant:
            return self.constant(cast(ast.Constant, node))
        if kind is ast.List or kind is ast.Set:
            return [self.value(e, depth + 1) for e in cast("ast.List | ast.Set", node).elts]
        if kind is ast.Tuple:
            self.parens += 1
            return [self.value(e, depth + 1) for e in cast(ast.Tuple, node).elts]
        if kind is ast.Dict:
            return self.dict_value(cast(ast.Dict, node), depth + 1)
        if kind is ast.Call:
            return self.call(cast(ast.Call, node), depth + 1)
        if kind is ast.Name:
            name = cast(ast.Name, node).id
            if name in ("inf", "nan"):
                return name  # the grammar's CONST, kept as text
            if name in self.held:
                return list(self.held[name])
        if kind is ast.UnaryOp and type(cast(ast.UnaryOp, node).op) is ast.USub:
            text = self.text(node)  # '-1', '-1.5', '-inf' are one token to the grammar: no space
            if text == "-inf":
                return text
            if _FLOAT.fullmatch(text):
                return _number(text)
        raise _Unknown

    def constant(self, node: ast.Constant) -> Any:
        value = node.value
        kind = type(value)
        if kind is str:
            text = self.text(node)  # one literal in '...' or "...": no prefix, triple quotes or 'a' 'b'
            if not _STRING.fullmatch(text):
                raise _Unknown
            return unquote(text) if "\\" in text else text[1:-1]
        if kind is int:
            text = self.text(node)
            if not text.isdigit():  # 0x10, 1_000
                raise _Unknown
            return value if len(text) < 16 else _number(text)  # the grammar's float() rounds past 2**53
        if kind is float:
            text = self.text(node)
            if not _FLOAT.fullmatch(text):  # 1., .5, 1_0.5
                raise _Unknown
            return _number(text)
        if value is None or value is True or value is False:
            return value
        raise _Unknown  # bytes, complex, Ellipsis

    def dict_value(self, node: ast.Dict, depth: int) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, value in zip(node.keys, node.values, strict=True):
            if key is None:  # {**x}
                raise _Unknown
            out[str(self.value(key, depth + 1))] = self.value(value, depth + 1)
        return out

    def call(self, node: ast.Call, depth: int) -> str:
        """PosixPath('/x'), Config(a=1): the grammar keeps the name only, but reads the arguments."""
        func = node.func
        name = self.text(func)
        end = cast(int, func.end_col_offset)
        if (
            type(func) not in (ast.Name, ast.Attribute)
            or not _DOTTED.fullmatch(name)
            or _CONST_START.match(name)
            or self.source[end : end + 1] != "("
            or (node.args and node.keywords)
            # P(Q()): after a call's '(' the grammar's lexer takes Q for a keyword's NAME, and fails
            or (node.args and type(node.args[0]) is ast.Call)
        ):
            raise _Unknown
        self.parens += 1
        for arg in node.args:
            self.value(arg, depth + 1)
        for kw in node.keywords:
            self.kwarg_name(kw)
            self.value(kw.value, depth + 1)
        return f"{name}(...)"


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
