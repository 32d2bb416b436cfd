"""The block pre-filter: which lines of a block can carry an event at all.

Every line that a grammar can turn into an event contains one of a set of literals, read off the
grammars themselves: for each dispatch head, each SGLang head that is searched anywhere in a line,
and each opener of a multi-line record, the literal strings one of which any match must contain
(``Load weight begin.``, `` is reset to ``, ``Traceback (most recent call last):`` ...). A block is
searched for all of them at once (Hyperscan where it is installed, a dependency where its binary
wheel exists, else an anchored search in ``re``: the same lines); lines without any are counted in
bulk. The few heads too short to have a useful literal (an NCCL host name, a glog level
letter) are checked at the start of each line by the run regex instead (``weak_heads``). Nothing is
listed by hand: a new grammar rule brings its own literals, and tests/test_prefilter.py checks that
every head yields some.

This module is the analysis of patterns and the search; which heads and openers it is given is
the bulk path's wiring (bulk.event_literals), so that classify and records can use it without
a loop back to them.
"""

from __future__ import annotations

import base64
import binascii
import itertools
import os
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

from logphase.packs import kept_regex

try:  # Python 3.11+: the parser re itself uses (sre_parse warns there)
    import re._parser as _sre  # type: ignore[import-not-found,unused-ignore]
except ImportError:  # pragma: no cover - Python 3.10
    import sre_parse as _sre  # type: ignore[no-redef,unused-ignore]

# A literal shorter than this matches too often to be worth searching for: its head is weak.
MIN_LITERAL = 3


def literal_factors(pattern: str) -> frozenset[str] | None:
    """Strings one of which every match of ``pattern`` contains (the longest such choice found),
    or None when the pattern has none of at least MIN_LITERAL characters."""
    found = _factors(list(_sre.parse(pattern)))
    if found is None or min(map(len, found)) < MIN_LITERAL:
        return None
    return frozenset(found)


def _factors(items: Sequence[Any]) -> set[str] | None:
    best: set[str] | None = None
    run = ""

    def consider(candidate: set[str] | None) -> None:
        nonlocal best
        if candidate and (best is None or min(map(len, candidate)) > min(map(len, best))):
            best = candidate

    for op, av in items:
        if op is _sre.LITERAL:
            run += chr(av)
            continue
        consider({run} if run else None)
        run = ""
        if op is _sre.SUBPATTERN:
            consider(_factors(list(av[-1])))
        elif op is _sre.ASSERT and av[0] == 1:  # a lookahead: what follows must be there too
            consider(_factors(list(av[1])))
        elif op is _sre.BRANCH:
            branches = [_factors(list(b)) for b in av[1]]
            if all(branches):
                consider(set().union(*(b for b in branches if b)))
        elif op in (_sre.MAX_REPEAT, _sre.MIN_REPEAT) and av[0] >= 1:
            consider(_factors(list(av[2])))
    consider({run} if run else None)
    return best


def folds_case(pattern: str) -> bool:
    """Whether some part of ``pattern`` matches without regard to case (``(?i)``, ``(?i:...)``): its
    literals then say nothing about the text's own."""
    parsed = _sre.parse(pattern)
    return bool(parsed.state.flags & re.IGNORECASE) or _folds(list(parsed))


def _folds(items: Sequence[Any]) -> bool:
    for op, av in items:
        if op is _sre.SUBPATTERN and av[1] & re.IGNORECASE:
            return True
        if any(_folds(list(inner)) for inner in _subpatterns(av)):
            return True
    return False


def _subpatterns(value: Any) -> Iterator[Any]:
    """The parsed sub-patterns an item holds (a group's, each branch's, a repeat's body ...)."""
    if isinstance(value, _sre.SubPattern):
        yield value
    elif isinstance(value, (list, tuple)):
        for inner in value:
            yield from _subpatterns(inner)


def leading_literals(pattern: str) -> frozenset[str] | None:
    """Strings one of which every match of ``pattern`` starts with, or None when some match may
    start otherwise (a class, a repeat): for keeping lines that start with a head out of a run."""
    found = _leads(list(_sre.parse(pattern)))
    return frozenset(found) if found and all(found) else None


def _leads(items: Sequence[Any]) -> set[str] | None:
    run = ""
    for op, av in items:
        if op is _sre.LITERAL:
            run += chr(av)
            continue
        if run:
            return {run}
        if op is _sre.SUBPATTERN:
            return _leads(list(av[-1]))
        if op is _sre.BRANCH:
            branches = [_leads(list(b)) for b in av[1]]
            return set().union(*branches) if all(branches) else None  # type: ignore[arg-type]
        return None
    return {run} if run else None


_Trie = dict[str, "_Trie"]  # a character -> what follows it; "" -> {} where a word ends


def prefix_alternation(words: Iterable[str]) -> str:
    """A pattern that matches where one of ``words`` starts (the shortest such word), factored by
    common prefixes: ``(?:Ab(?:c|d)|X)`` for abc, abd, X. Python's regex engine tries the options of
    an alternation in turn, skipping at one test each those whose first character differs; a flat
    alternation of ~260 head starts tested each one at every line (15 ms a MB of quiet lines),
    the factored one a few. For lookaheads and searches: which word matched is not kept."""
    trie: _Trie = {}
    for word in words:
        if not word:
            return ""  # the empty word matches everywhere
        node = trie
        for char in word:
            node = node.setdefault(char, {})
        node[""] = {}

    def emit(node: _Trie) -> str:
        if "" in node:
            return ""  # a word ends here: longer ones add nothing to where a match starts
        options = [re.escape(char) + emit(below) for char, below in sorted(node.items())]
        return options[0] if len(options) == 1 else "(?:" + "|".join(options) + ")"

    return emit(trie) if trie else "(?!)"


def first_chars(pattern: str) -> str | None:
    """A character class (its body, for ``[...]``) holding every character a match of
    ``pattern`` can start with, or None when that is not known (a negated class, any character,
    an empty match, case folding). The classes ``\\d``, ``\\w``, ``\\s`` stay as such: they mean
    what they mean in the pattern (str or bytes)."""
    parsed = _sre.parse(pattern)
    if parsed.state.flags & re.IGNORECASE:
        return None
    found = _firsts(list(parsed))
    if found is None or found[1]:
        return None
    return "".join(sorted(found[0]))


def start_chars(pattern: str, most: int = 256) -> frozenset[str] | None:
    """Every character a match of ``pattern`` can start with, one by one, or None when that is not
    known or is more than ``most`` characters (a category such as ``\\w``, and what
    ``first_chars`` does not know): for sorting heads by the first character of a line."""
    body = first_chars(pattern)
    if body is None:
        return None
    chars: set[str] = set()
    [(op, av)] = list(_sre.parse(f"[{body}]"))  # a class of one character is parsed as that character
    for kind, value in av if op is _sre.IN else [(op, av)]:
        if kind is _sre.LITERAL:
            chars.add(chr(value))
        elif kind is _sre.RANGE and value[1] - value[0] < most:
            chars.update(map(chr, range(value[0], value[1] + 1)))
        else:
            return None  # a category, a negation (not made by first_chars), a range too wide
    return frozenset(chars) if len(chars) <= most else None


def alternatives(pattern: str) -> list[str]:
    """The top-level alternatives of ``pattern`` (through a group ``(?:...)`` around all of it), in
    order: ``A|(?:B|C)`` is ``["A", "B", "C"]``. Their alternation, in this order, matches what the
    pattern matches, and each may start with fewer characters than the whole."""
    bars, closes_at_end = _top_level(pattern)
    if not bars and pattern.startswith("(?:") and closes_at_end:
        return alternatives(pattern[3:-1])
    if not bars:
        return [pattern]
    edges = [-1, *bars, len(pattern)]
    return [inner for a, b in itertools.pairwise(edges) for inner in alternatives(pattern[a + 1 : b])]


def _top_level(pattern: str) -> tuple[list[int], bool]:
    """(where ``|`` separates top-level alternatives, whether the group opened first closes at the
    very end), reading escapes and character classes (``[)|]`` holds no group and no bar)."""
    bars: list[int] = []
    depth, i, class_start, first_closed = 0, 0, -1, -1
    while i < len(pattern):
        char = pattern[i]
        if char == "\\":
            i += 2
            continue
        if class_start >= 0:
            # a ']' right after '[' or '[^' is a member, not the end
            if char == "]" and i > class_start + 1 and pattern[class_start + 1 : i] != "^":
                class_start = -1
        elif char == "[":
            class_start = i
        elif char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
            if depth == 0 and first_closed < 0:
                first_closed = i
        elif char == "|" and depth == 0:
            bars.append(i)
        i += 1
    return bars, first_closed == len(pattern) - 1


_CATEGORIES = {
    _sre.CATEGORY_DIGIT: r"\d",
    _sre.CATEGORY_WORD: r"\w",
    _sre.CATEGORY_SPACE: r"\s",
}


def _firsts(items: Sequence[Any]) -> tuple[set[str], bool] | None:
    """(what a match of the sequence ``items`` can start with, whether it can be empty)."""
    parts: set[str] = set()
    for op, av in items:
        if op in (_sre.AT, _sre.ASSERT, _sre.ASSERT_NOT):
            continue  # zero-width: the match starts with what follows (an assertion only narrows it)
        inner = _item_firsts(op, av)
        if inner is None:
            return None
        parts |= inner[0]
        if not inner[1]:
            return parts, False
    return parts, True


def _item_firsts(op: Any, av: Any) -> tuple[set[str], bool] | None:
    """``_firsts`` of one item of a parsed pattern (not a zero-width one)."""
    if op is _sre.LITERAL:
        return {re.escape(chr(av))}, False
    if op is _sre.IN:
        found = _class_firsts(av)
        return None if found is None else (found, False)
    if op is _sre.SUBPATTERN:
        return None if av[1] & re.IGNORECASE else _firsts(list(av[-1]))
    if op is _sre.BRANCH:
        branches = [_firsts(list(b)) for b in av[1]]
        if any(b is None for b in branches):
            return None
        return set().union(*(b[0] for b in branches if b)), any(b[1] for b in branches if b)
    if op in (_sre.MAX_REPEAT, _sre.MIN_REPEAT):
        body = _firsts(list(av[2]))
        return None if body is None else (body[0], body[1] or av[0] == 0)
    return None  # any character, a group reference ...


def _class_firsts(items: Sequence[Any]) -> set[str] | None:
    """The parts of a character class ``[...]``, or None for a negated class or category."""
    parts: set[str] = set()
    for kind, value in items:
        if kind is _sre.LITERAL:
            parts.add(re.escape(chr(value)))
        elif kind is _sre.RANGE:
            parts.add(f"{re.escape(chr(value[0]))}-{re.escape(chr(value[1]))}")
        elif kind is _sre.CATEGORY and value in _CATEGORIES:
            parts.add(_CATEGORIES[value])
        else:
            return None
    return parts


class LiteralFinder:
    """Finds where any of a set of literals occurs in a block of bytes: Hyperscan (gigabytes a
    second) when installed, else an anchored search with ``re`` (_AnchoredSearch: the same lines)."""

    def __init__(self, literals: Iterable[str], use_hyperscan: bool = True, name: str = "literals") -> None:
        """``name``: what the database is kept on disk as (each finder of a run its own name, or
        one would replace the other's file on every start)."""
        self.literals = sorted(set(literals), key=lambda s: (-len(s), s))
        encoded = [s.encode() for s in self.literals]
        self._search: _AnchoredSearch | None = None
        self._db: Any = _hyperscan_database(encoded, name) if use_hyperscan else None
        if self._db is None:
            self._search = _AnchoredSearch(encoded, name)

    @property
    def engine(self) -> str:
        return "hyperscan" if self._db is not None else "re"

    def line_hits(self, data: bytes) -> list[int]:
        """Offsets (in ``data``) in order, some perhaps repeated, one or more on each line that holds
        a literal and none elsewhere: where occurrences end (Hyperscan), a point of the line (re)."""
        if self._search is not None:
            return self._search.line_hits(data)
        found: list[int] = []

        def on_match(_id: int, _from: int, to: int, _flags: int, _ctx: object) -> None:
            found.append(to)

        self._db.scan(data, match_event_handler=on_match)
        found.sort()
        return found


# Printable bytes of log text from the most to the least frequent (their share of the bytes of
# fixtures/logs, each log weighing the same, measured 2026-12-02; a byte not listed counts as rarer
# than all): where the re search anchors each literal. Only its speed depends on this order.
_BYTE_ORDER = b" eat0sirnol1dp2c_:.m/gu,-h^=3468kb57y][f9v'T\"FCPw(GB)N|xIRLOEz<%MqDSAV#UWK*HQZ>?~{}Jj\\`+Y!;X"
_RANK = {byte: rank for rank, byte in enumerate(_BYTE_ORDER)}
# the weight of a byte in choosing anchors: each rank down the order ~10 % rarer
_RARER = 0.9
# what every anchor byte becomes in the translated block (and the byte itself, where it occurs)
_MARK = 0x01


def _weight(byte: int) -> float:
    return _RARER ** _RANK.get(byte, len(_BYTE_ORDER))


def anchor_bytes(literals: Sequence[bytes], weight: Callable[[int], float] = _weight) -> frozenset[int]:
    """A set of bytes that every literal holds one of, chosen rare by ``weight`` (how common a byte
    is; greedy weighted set cover: the byte that covers the most literals left per weight, in turn)."""
    holders: dict[int, int] = {}  # byte -> the literals holding it, as a bit set
    for i, literal in enumerate(literals):
        for byte in set(literal):
            holders[byte] = holders.get(byte, 0) | 1 << i
    left, chosen = (1 << len(literals)) - 1, set()
    while left:
        best = max(sorted(holders), key=lambda b: (holders[b] & left).bit_count() / weight(b))
        chosen.add(best)
        left &= ~holders[best]
    return frozenset(chosen)


class _AnchoredSearch:
    """The literals' search in ``re``, one pass at C speed over a block. A search for many
    alternatives tests each position of the block against the set of their first bytes (~15 ns a
    byte) and tries them where one is: the plain alternation took ~1 s a MB of debug output. Here
    each literal is anchored at one of a few rare bytes (anchor_bytes); the block is translated
    (``bytes.translate``, ~1 ms a MB) so that each anchor byte reads as one mark, which ``re`` finds
    as it finds a literal (~1 ms a MB), and tries the literals' translated rest there. A translated
    match is only a candidate (another anchor byte may stand in the literal's); its line is kept if
    the literals' own alternation finds one in it. Literals made of anchor bytes only are searched
    for one by one (``bytes.find``: they are rare).

    What is rare depends on the log (hashes are full of ``c`` and ``f``): once ADAPT_AFTER bytes were
    searched, if the marks were more than ADAPT_ABOVE of them, the anchors are chosen again by the
    bytes of the block at hand (the same lines are found whatever the anchors: only speed changes)."""

    def __init__(self, literals: Sequence[bytes], name: str) -> None:
        if not literals or any(b"\n" in literal for literal in literals):
            raise ValueError("the literals' search needs literals, none holding a newline")
        self._literals, self._name = literals, name
        self._searched, self._marks = 0, 0  # until adapted: bytes searched, marks among them
        self._use(_weight, f"prefilter-re-{name}")

    def _use(self, weight: Callable[[int], float], kept_as: str) -> None:
        """Anchor by ``weight``; the patterns (~0.15 s to build and compile) kept on disk (derived.py)
        by the literals and their anchors."""
        from logphase.packs.derived import cached, digest

        literals = self._literals
        anchors = anchor_bytes(literals, weight)
        at = [_anchor_at(literal, anchors, weight) for literal in literals]
        key = digest([str(_SEARCH_FORMAT), *literals, "", bytes(sorted(anchors)), ",".join(map(str, at))])
        parts = cached(kept_as, key, lambda: _search_patterns(literals, anchors, at), _latin1_parts)
        self._table, self._alone = parts[0], parts[1]
        self._coarse = kept_regex.compile(parts[2]) if parts[2] else None
        self._exact = kept_regex.compile(parts[3])

    def line_hits(self, data: bytes) -> list[int]:
        hits = self._candidates(data) if self._coarse is not None else []
        for literal in self._alone:
            at = data.find(literal)
            while at >= 0:
                hits.append(at + len(literal))
                at = data.find(literal, at + 1)
        if self._alone:
            hits.sort()
        return hits

    def _candidates(self, data: bytes) -> list[int]:
        """Points of the lines where a translated match is and one of the literals too."""
        assert self._coarse is not None
        translated = data.translate(self._table)
        if self._searched >= 0 and self._adapt(data, translated):
            translated = data.translate(self._table)
        hits: list[int] = []
        line_end = -1  # the end of the line last checked
        exact = self._exact.search
        for match in self._coarse.finditer(translated):
            point = match.end()
            if point <= line_end:
                continue  # a line already checked
            start = data.rfind(b"\n", 0, point - 1) + 1
            line_end = data.find(b"\n", point - 1)
            if line_end < 0:
                line_end = len(data)
            if exact(data, start, line_end) is not None:
                hits.append(point)
        return hits

    def _adapt(self, data: bytes, translated: bytes) -> bool:
        """Counts the marks; after ADAPT_AFTER bytes, anchors by this block's bytes where the marks
        were many. Whether the anchors changed (``translated`` is then the old ones')."""
        self._searched += len(data)
        self._marks += translated.count(_MARK)
        if self._searched < ADAPT_AFTER:
            return False
        many = self._marks > ADAPT_ABOVE * self._searched
        self._searched = -1  # adapted (or no need): counted no more
        if many:
            sample = data[:ADAPT_SAMPLE]
            counts = {byte: sample.count(byte) for byte in {byte for literal in self._literals for byte in literal}}
            self._use(lambda byte: (counts.get(byte, 0) + 1) / (len(sample) + 1), f"prefilter-re-{self._name}-adapted")
        return many


# bytes searched with the anchors of _BYTE_ORDER before they are chosen again by the log's own bytes
# (building the new patterns costs ~0.15 s, once per log shape: kept on disk), when more than
# ADAPT_ABOVE of those bytes were anchors; how much of a block is counted to choose them
ADAPT_AFTER = 4 << 20
ADAPT_ABOVE = 0.04
ADAPT_SAMPLE = 256 << 10

# bumped when the patterns below are built otherwise (what is kept on disk is named by it)
_SEARCH_FORMAT = 2


def _search_patterns(literals: Sequence[bytes], anchors: frozenset[int], at: Sequence[int]) -> list[Any]:
    """[translation table, literals searched alone, translated pattern, exact pattern], as latin-1
    text (JSON for derived.cached)."""
    table = bytearray(range(256))
    for byte in (*anchors, _MARK):
        table[byte] = _MARK
    translated = [literal.translate(table) for literal in literals]
    # a literal of one or two anchor bytes would make every mark (or pair) a candidate
    alone = [len(tr) <= 2 and tr.count(_MARK) == len(tr) for tr in translated]
    coarse = [(tr, i) for tr, i, lone in zip(translated, at, alone, strict=True) if not lone]
    return [
        table.decode("latin-1"),
        [literal.decode("latin-1") for literal, lone in zip(literals, alone, strict=True) if lone],
        _anchored_alternation(coarse).decode("latin-1") if coarse else "",
        # the check of a candidate's line: the literals themselves, anchored the same way
        _anchored_alternation(list(zip(literals, at, strict=True))).decode("latin-1"),
    ]


def _latin1_parts(data: object) -> tuple[bytes, list[bytes], bytes, bytes]:
    if not isinstance(data, list) or len(data) != 4 or not isinstance(data[1], list):
        raise TypeError("the re search's patterns: not four parts")
    table, alone, coarse, exact = data
    if not all(isinstance(part, str) for part in (table, *alone, coarse, exact)) or len(table) != 256:
        raise TypeError("the re search's patterns: not text")
    return table.encode("latin-1"), [lit.encode("latin-1") for lit in alone], coarse.encode("latin-1"), exact.encode("latin-1")


def _anchor_at(literal: bytes, anchors: frozenset[int], weight: Callable[[int], float]) -> int:
    """Where in ``literal`` its rarest anchor byte first is, before its last byte where one is: a
    literal anchored at its end is checked (a lookbehind) at every mark, the others only where the
    byte after the mark is theirs."""
    last = len(literal) - 1
    return min((i for i, byte in enumerate(literal) if byte in anchors), key=lambda i: (i == last, weight(literal[i]), i))


def _anchored_alternation(marked: Sequence[tuple[bytes, int]]) -> bytes:
    """A trie of each literal from its anchor on; where one ends, a lookbehind checks the whole of
    it. ``re`` finds where the pattern may start by its leading bytes (one, the mark: as fast as
    a literal) and rejects most places at the byte after the anchor."""
    trie: dict[int, Any] = {}
    for literal, at in marked:
        node = trie
        for byte in literal[at:]:
            node = node.setdefault(byte, {})
        # what is left to check before the anchor (a literal anchored at its first byte: nothing)
        node.setdefault(-1, set()).add(literal if at else b"")

    def emit(node: dict[int, Any]) -> bytes:
        options = []
        for whole in sorted(node.get(-1, ()), key=len):
            options.append(b"(?<=" + re.escape(whole) + b")" if whole else b"")
            if not whole:
                break  # matched already: nothing else to check
        for byte, below in sorted((k, v) for k, v in node.items() if k >= 0):
            options.append(re.escape(bytes([byte])) + emit(below))
        return options[0] if len(options) == 1 else b"(?:" + b"|".join(options) + b")"

    return emit(trie)


def _hyperscan_database(encoded: list[bytes], name: str) -> Any:
    """A Hyperscan block database of the literals, or None when Hyperscan is not installed. Kept on
    disk (derived.py, serialized by Hyperscan) by the literals, Hyperscan's version and the machine:
    compiling it costs ~0.15 s, loading it well under a millisecond."""
    try:
        import hyperscan
    except ImportError:
        return None
    import platform

    from logphase.packs.derived import cached, digest

    key = digest([str(getattr(hyperscan, "__version__", "")), platform.machine(), *encoded])

    def build() -> str:
        return base64.b64encode(hyperscan.dumpb(_compiled_database(hyperscan, encoded))).decode("ascii")

    def load(data: object) -> Any:
        try:
            db = hyperscan.loadb(base64.b64decode(str(data), validate=True), hyperscan.HS_MODE_BLOCK)
            db.scratch = hyperscan.Scratch(db)
        except (hyperscan.error, binascii.Error) as exc:
            raise ValueError(f"a kept Hyperscan database that does not load: {exc}") from exc
        return db

    return cached(f"prefilter-hyperscan-{name}", key, build, load)


def _compiled_database(hyperscan: Any, encoded: list[bytes]) -> Any:
    db = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
    db.compile(
        expressions=[re.escape(s) for s in encoded],
        ids=list(range(len(encoded))),
        elements=len(encoded),
        flags=[0] * len(encoded),
    )
    return db


# Set to ``re`` to run the pre-filter's search with re even where Hyperscan is installed: the
# benchmark's without-Hyperscan figures, and the tests that check both paths give the same reports.
PREFILTER_ENV = "LOGPHASE_PREFILTER"


def hyperscan_wanted() -> bool:
    """Whether the pre-filter may use Hyperscan (a dependency where its wheel exists) if installed."""
    return os.environ.get(PREFILTER_ENV, "").strip().lower() != "re"


__all__ = [
    "PREFILTER_ENV",
    "LiteralFinder",
    "alternatives",
    "anchor_bytes",
    "first_chars",
    "folds_case",
    "hyperscan_wanted",
    "leading_literals",
    "literal_factors",
    "start_chars",
]
