"""The ``server_args=`` dump: ``ServerArgs(k=v, ...)`` (<= 0.5.17) or a dict (>= 0.5.20)."""

from __future__ import annotations

import ast
import re
from typing import Any, Literal

from lark import Token, Transformer
from lark.exceptions import LarkError

from logphase.grammars import parser

ArgsFormat = Literal["call", "dict", "unparsed"]


class _ToPython(Transformer[Token, Any]):
    def string(self, items: list[Token]) -> str:
        try:
            return str(ast.literal_eval(str(items[0])))
        except (ValueError, SyntaxError):
            return str(items[0])[1:-1]

    def number(self, items: list[Token]) -> float | int:
        text = str(items[0])
        value = float(text)
        return int(value) if value.is_integer() and "." not in text and "e" not in text.lower() else value

    def const(self, items: list[Token]) -> Any:
        return {"None": None, "True": True, "False": False}.get(str(items[0]), str(items[0]))

    def opaque(self, items: list[Any]) -> str:
        return str(items[0])

    def list(self, items: list[Any]) -> list[Any]:
        return list(items)

    def tuple(self, items: list[Any]) -> list[Any]:
        return list(items)

    def pair(self, items: list[Any]) -> tuple[Any, Any]:
        return (items[0], items[1])

    def dict(self, items: list[Any]) -> dict[str, Any]:
        return {str(k): v for k, v in items}

    def kwarg(self, items: list[Any]) -> tuple[str, Any]:
        return (str(items[0]), items[1])

    def call(self, items: list[Any]) -> str:
        return f"{items[0]}(...)"

    def server_args_call(self, items: list[Any]) -> dict[str, Any]:
        return dict(items)

    def server_args_dict(self, items: list[Any]) -> dict[str, Any]:
        return items[0] if items else {}


_KEY_VALUE = re.compile(r"[{ ,(]'?(\w+)'?[=:] ?('[^']*'|[^,)}]*)")


def parse_server_args(text: str) -> tuple[dict[str, Any], ArgsFormat]:
    text = text.strip()
    try:
        tree = parser("server_args").parse(text)
        result = _ToPython().transform(tree)
        fmt: ArgsFormat = "dict" if text.startswith("{") else "call"
        return result, fmt
    except LarkError:
        pass
    # A dump cut short or holding a value the grammar does not know: keep what can be read.
    args: dict[str, Any] = {}
    for key, raw in _KEY_VALUE.findall(text):
        try:
            args.setdefault(key, ast.literal_eval(raw.strip()))
        except (ValueError, SyntaxError):
            args.setdefault(key, raw.strip())
    return args, "unparsed"
