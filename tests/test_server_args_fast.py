"""The fast reading of ``server_args=`` dumps (Python's parser, packs/server_args.py read_fast) gives
the grammar's values exactly, or passes the dump to the grammar: never other values."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from logphase.packs.server_args import _read_dump, _read_lark, parse_server_args, read_fast

FIXTURES = Path(__file__).parents[1] / "fixtures" / "logs"

# The grammar's value shapes (server_args.lark), written as text, with what Python reads otherwise
_SP = st.sampled_from(["", " ", "  "])
_NAMES = st.sampled_from(["a", "tp_size", "inf", "nan", "None_x", "True_", "Infinity", "_held0", "x1"])
_STRINGS = st.one_of(
    st.text(st.sampled_from(list("ab '\"()[]{}#,:=\\<>x\t")), max_size=8).map(repr),
    st.from_regex(r"'(?:[^'\\\n]|\\.){0,6}'", fullmatch=True),
    st.from_regex(r'"(?:[^"\\\n]|\\[nt\\"dx0u]){0,6}"', fullmatch=True),
    st.sampled_from(["'a' 'b'", "r'x'", "b'x'", "'''x'''", "u'x'", "'\\N{DASH}'", "'\\x4'", "f'x'"]),
)
_NUMBERS = st.one_of(
    st.from_regex(r"-?[0-9]{1,20}(\.[0-9]{1,3})?([eE][-+]?[0-9]{1,3})?", fullmatch=True),
    st.integers(-(2**70), 2**70).map(str),
    st.floats(allow_nan=False, allow_infinity=False).map(repr),
    st.sampled_from(["1_000", "0x10", "0o7", "0b1", "2j", "1.", ".5", "- 1", "--1", "+1", "-(1)", "(1)", "007", "1e500", "-0", "-0.0", "..."]),
)
_CONSTS = st.sampled_from(["None", "True", "False", "inf", "-inf", "nan", "- inf", "-nan", "Nonex", "x", "<Enum.X: 'x'>", "<object at 0x7f>"])
_DOTTED = st.sampled_from(["PosixPath", "a.b.C", "inf", "True_x", "nan.x", "X ", "a. b", "None"])


def _values(children: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    seq = st.lists(children, max_size=4)

    def join(items: list[str], sp: str, comma: bool) -> str:
        return (", " if sp else ",").join(items) + ("," if comma and items else "")

    kwargs = st.lists(st.tuples(_NAMES, _SP, children), min_size=1, max_size=3).map(lambda kv: ", ".join(f"{k}={s}{v}" for k, s, v in kv))
    return st.one_of(
        st.builds(lambda xs, sp, c: f"[{join(xs, sp, c)}]", seq, _SP, st.booleans()),
        st.builds(lambda xs, sp, c: f"({join(xs, sp, c)})", seq, _SP, st.booleans()),
        st.builds(lambda xs, sp, c: "{" + join(xs, sp, c) + "}", st.lists(children, min_size=1, max_size=4), _SP, st.booleans()),
        st.builds(lambda kv, sp: "{" + ", ".join(f"{k}:{sp}{v}" for k, v in kv) + "}", st.lists(st.tuples(children, children), max_size=3), _SP),
        st.builds(lambda d, xs, sp, c: f"{d}({join(xs, sp, c)})", _DOTTED, seq, _SP, st.booleans()),
        st.builds(lambda d, kw: f"{d}({kw})", _DOTTED, kwargs),
        st.lists(st.sampled_from(["1", "22", "007", "-1", "1.5"]), min_size=1, max_size=20).map(lambda xs: "[" + ", ".join(xs) + "]"),
    )


VALUES = st.recursive(st.one_of(_STRINGS, _NUMBERS, _CONSTS), _values, max_leaves=12)


@st.composite
def dumps(draw: st.DrawFn) -> str:
    if draw(st.booleans()):
        pairs = draw(st.lists(st.tuples(_NAMES, _SP, VALUES), max_size=5))
        body = "ServerArgs(" + ", ".join(f"{k}={s}{v}" for k, s, v in pairs) + draw(st.sampled_from(["", ",", " "])) + ")"
    else:
        pairs2 = draw(st.lists(st.tuples(VALUES, _SP, VALUES), max_size=5))
        body = "{" + ", ".join(f"{k}:{s}{v}" for k, s, v in pairs2) + "}"
    text = "server_args=" + draw(_SP) + body
    if draw(st.integers(0, 9)) == 0:  # noise Python skips and the grammar does not: a tab, a comment ...
        at = draw(st.integers(0, len(text)))
        text = text[:at] + draw(st.sampled_from(["\t", "#", "(", ")", " ", "\\", "é", ";", "\f"])) + text[at:]
    return text.strip()


def _same(text: str) -> None:
    fast = read_fast(text)
    if fast is not None:
        assert repr(fast) == repr(_read_lark(text)), text


@given(dumps())
@example("server_args=ServerArgs(a='', a=PosixPath(PosixPath()))")  # the grammar cannot read P(Q())
@example("server_args={'a': P(a.b(), 1), 'b': P(1, Q()), 'c': [Q()]}")
def test_the_fast_reading_gives_the_grammars_values_or_none(text: str) -> None:
    _same(text)


# Python's repr of a configuration's values: what SGLang prints, read fast and read as the grammar does
_PLAIN = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-(2**80), 2**80), st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=10)),
    lambda c: st.one_of(st.lists(c, max_size=4), st.tuples(c, c), st.dictionaries(st.text(max_size=4), c, max_size=3)),
    max_leaves=10,
)


@given(st.dictionaries(st.from_regex(r"[a-z_][a-z0-9_]{0,10}", fullmatch=True), _PLAIN, max_size=6), st.booleans())
def test_a_reprs_dump_is_read_fast(config: dict[str, object], as_dict: bool) -> None:
    body = repr(config) if as_dict else "ServerArgs(" + ", ".join(f"{k}={v!r}" for k, v in config.items()) + ")"
    text = "server_args=" + body
    if not text.isascii() or any(k in ("inf", "nan", "None", "True", "False") or k.startswith(("None", "True", "False", "inf", "nan")) for k in config):
        _same(text)
        return
    fast = read_fast(text)
    assert fast is not None, text
    assert repr(fast) == repr(_read_lark(text))


@pytest.mark.parametrize("log", sorted(FIXTURES.glob("*.log")), ids=lambda p: p.name)
def test_every_fixture_dump_is_read_alike(log: Path) -> None:
    for raw in log.read_bytes().splitlines():
        line = raw.decode("utf-8", "replace")
        at = line.find("server_args=")
        if at >= 0:
            _same(line[at:].strip())


def test_the_fixtures_dumps_are_read_fast() -> None:
    """The fixtures' dumps are of the shapes the fast reading knows: it is what they take."""
    texts = [line[line.find("server_args=") :].strip() for log in FIXTURES.glob("*.log") for line in log.read_text("utf-8", "replace").splitlines() if "server_args=ServerArgs(" in line]
    assert len(texts) > 5
    assert all(read_fast(t) is not None for t in texts if t.endswith(")") and t.isascii() and "<" not in t)


def test_a_long_list_of_ints_is_read_fast_and_alike() -> None:
    items = ", ".join(str(i) for i in range(5000))
    text = f"server_args=ServerArgs(model_path='/m', cuda_graph_bs=[{items}], note='[1, 2]', nested=[[1, 2], (3,)], zeros=[007])"
    fast = read_fast(text)
    assert fast is not None and fast["cuda_graph_bs"] == list(range(5000)) and fast["note"] == "[1, 2]" and fast["zeros"] == [7]
    assert repr(fast) == repr(_read_lark(text))


@pytest.mark.parametrize(
    "text",
    [
        "server_args=ServerArgs(a=" + "[" * 5000 + "]" * 5000 + ")",
        "server_args=ServerArgs(a=" + "(" * 150 + ")" * 150 + ")",
        "server_args=ServerArgs(a=" + "-" * 100000 + "1)",
        "server_args={'a': " + "{'b': " * 120 + "1" + "}" * 120 + "}",
        "server_args=ServerArgs(a='" + "x" * 300_000 + "')",
    ],
    ids=["brackets", "parens", "minus", "dicts", "huge"],
)
def test_pathological_dumps_raise_nothing(text: str) -> None:
    _read_dump.cache_clear()
    assert read_fast(text) is None
    args, fmt = parse_server_args(text)  # the grammar, or the key=value fallback: no traceback
    assert fmt in ("call", "dict", "unparsed") and isinstance(args, dict)


def test_a_dump_nested_past_the_limit_is_read_as_pairs() -> None:
    """The grammar would read it, but what reads its values next (redact_args) would overflow."""
    text = "server_args=ServerArgs(a=" + "[" * 3000 + "]" * 3000 + ", b=1, c='[[[[')"
    _read_dump.cache_clear()
    assert _read_dump(text) is None
    args, fmt = parse_server_args(text)
    assert fmt == "unparsed" and args["b"] == 1 and args["c"] == "[[[[" and isinstance(args["a"], str)
    shallow = "server_args=ServerArgs(a=" + "[" * 90 + "]" * 90 + ", b='((((((')"
    assert parse_server_args(shallow)[1] == "call"
