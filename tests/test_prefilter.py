"""The block pre-filter's literals (recognising/prefilter.py), read off the grammars: every line that
becomes an event must hold one, or the bulk path would count it as unrecognized."""

from __future__ import annotations

import importlib.util
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from logphase.engine.engine import Engine
from logphase.engine.whole import parse_bytes
from logphase.recognising import bulk as bulk_module
from logphase.recognising import prefilter
from logphase.recognising.bulk import bulk_runs, event_finder, event_literals
from logphase.recognising.notes import NOTE_RULES
from logphase.recognising.overrides import OVERRIDE_RULE
from logphase.recognising.prefilter import PREFILTER_ENV, LiteralFinder, anchor_bytes, literal_factors, prefix_alternation
from tests.conftest import fixture_logs
from tests.test_fast_path import LINES, STARTUP, ts

# Hyperscan is a dependency where its wheel exists (and in the test extra on any Linux): its
# path is tested where it is installed and skipped, with the reason, where it is not; the re path,
# which every install has, is tested in both cases (forced with LOGPHASE_PREFILTER=re).
HAVE_HYPERSCAN = importlib.util.find_spec("hyperscan") is not None
ENGINES = [
    "re",
    pytest.param(
        "hyperscan",
        marks=pytest.mark.skipif(not HAVE_HYPERSCAN, reason="hyperscan not installed (pip install 'logphase[fast]')"),
    ),
]


@pytest.mark.parametrize(
    ("pattern", "expected"),
    [
        (r"Load\ weight\ begin\.", {"Load weight begin."}),
        (r"[\w-]+(?= KV [Cc]ache (?:is allocated|VA upper bound)\.)", {"is allocated", "VA upper bound"}),
        (r"(?:NCCL|RCCL|HCCL) warmup completed in ", {" warmup completed in "}),
        (r"(?:Decode|Prefill) batch", {"Decode", "Prefill"}),
        (r"[IWEF]\d{3,4} \d{2}:", None),
    ],
)
def test_literal_factors(pattern: str, expected: set[str] | None) -> None:
    found = literal_factors(pattern)
    assert (set(found) if found is not None else None) == expected


def test_weak_heads_are_few_and_short_of_literals() -> None:
    literals, weak = event_literals()
    assert len(literals) > 50 and len(weak) <= 5
    assert all(literal_factors(head) is None for head in weak)


@pytest.mark.parametrize(
    "message",
    [
        "[aiter] shape is M:16, N:32, K:6144 dtype='torch.bfloat16', will use default config!",
        "[transformers] `torch_dtype` is deprecated! Use `dtype` instead!",
        "[backbone] something no grammar knows",
    ],
)
def test_no_weak_head_takes_a_bare_bracketed_tag(message: str) -> None:
    """A tag such as vLLM's ``[backbone] `` is only a head with the message it tags: as a head by
    itself it sent every kernel library's ``[name] ...`` line the long way (a real log with 5,000
    ``[aiter]`` lines read 1.5x slower)."""
    import re

    _, weak = event_literals()
    assert not [head for head in weak if re.match(head, message)]


@pytest.mark.parametrize("log", fixture_logs(), ids=lambda p: p.stem)
def test_every_quiet_looking_event_line_holds_a_literal(log: Path) -> None:
    """Each fixture line that the bulk path could take as quiet and that is (part of) an event
    holds one of the literals: the pre-filter never hides an event line."""
    literals = event_literals()[0]
    quiet = bulk_runs()
    events = Engine(source=log.name).feed(log.read_bytes())
    # the start-up notes (recognising/notes.py) hold no literal: until the run is ready the engine reads
    # the quiet lines whose first word is a note's the long way (NoteBook.hits; tests/test_notes.py)
    # and so do the settings a server changed that no grammar reads (recognising/overrides.py)
    event_lines = {e.line for e in events if e.rule not in (*NOTE_RULES, OVERRIDE_RULE)}
    data = log.read_bytes().split(b"\n")
    for number in event_lines:
        raw = data[number - 1] + b"\n"
        m = quiet.match(b"\n" + raw)  # a run starts at the "\n" before its first line
        if m is None or m.lastgroup != "quiet" or not raw.isascii():
            continue
        text = raw.decode()
        assert any(lit in text for lit in literals), f"{log.name}:{number} would be hidden: {text[:120]}"


def _mixed_block() -> bytes:
    """Every line shape of the bulk path's tests, many times over, stamps moving."""
    return "".join(t.replace("{t}", ts(i)) + "\n" for i in range(40) for t in LINES).encode()


@pytest.mark.parametrize("engine", ENGINES)
def test_each_search_engine_finds_exactly_the_lines_holding_a_literal(engine: str) -> None:
    """Against the plain definition (a line holds one of the literals as a substring), for re
    always and for Hyperscan where installed: the same lines, so the same reports."""
    literals = event_literals()[0]
    data = _mixed_block()
    finder = LiteralFinder(literals, use_hyperscan=engine == "hyperscan")
    assert finder.engine == engine
    found = {data.count(b"\n", 0, hit - 1) for hit in finder.line_hits(data)}
    expected = {i for i, line in enumerate(data.split(b"\n")) if any(lit.encode() in line for lit in literals)}
    assert found == expected and len(expected) > 100


# a few letters, so that literals share bytes, anchors stand in for each other in the translated
# block and most candidates are false: the check of a candidate's line is what is tested
_FEW = "AaBb:%x \n"


@given(
    st.lists(st.text("AaBb:%x ", min_size=1, max_size=6), min_size=1, max_size=12),
    st.text(_FEW, max_size=300),
)
def test_the_re_search_finds_exactly_the_lines_holding_a_literal(literals: list[str], text: str) -> None:
    """The anchored search (no Hyperscan) against the plain definition, on literals and text of a
    few bytes: whatever the anchors, the same lines."""
    data = b"\n" + text.encode() + b"\n"
    finder = LiteralFinder(literals, use_hyperscan=False)
    hits = finder.line_hits(data)
    assert hits == sorted(hits)
    found = {data.count(b"\n", 0, hit - 1) for hit in hits}
    expected = {i for i, line in enumerate(data.split(b"\n")) if any(lit.encode() in line for lit in literals)}
    assert found == expected


@given(
    st.lists(st.text("AaBb:%x ", min_size=1, max_size=6), min_size=1, max_size=12),
    st.text(_FEW, max_size=300),
)
def test_the_re_search_anchored_by_the_texts_own_bytes_finds_the_same_lines(literals: list[str], text: str) -> None:
    """As above, with the anchors chosen again by the text's bytes before the first search (as a
    long log's are once its marks prove many)."""
    data = b"\n" + text.encode() + b"\n"
    saved = prefilter.ADAPT_AFTER, prefilter.ADAPT_ABOVE
    prefilter.ADAPT_AFTER, prefilter.ADAPT_ABOVE = 0, -1.0
    try:
        finder = LiteralFinder(literals, use_hyperscan=False, name="adapting")
        hits = finder.line_hits(data)
    finally:
        prefilter.ADAPT_AFTER, prefilter.ADAPT_ABOVE = saved
    found = {data.count(b"\n", 0, hit - 1) for hit in hits}
    expected = {i for i, line in enumerate(data.split(b"\n")) if any(lit.encode() in line for lit in literals)}
    assert found == expected


def test_anchors_are_rare_bytes_that_every_literal_holds() -> None:
    """Each literal holds an anchor, and none is among the commonest bytes of log text (each place
    one is costs the search a try)."""
    literals = [lit.encode() for lit in event_literals()[0]]
    anchors = anchor_bytes(literals)
    assert all(anchors & set(lit) for lit in literals)
    assert not anchors & set(b" eat0123456789")


@pytest.fixture
def forced_prefilter(monkeypatch: pytest.MonkeyPatch) -> Iterator[pytest.MonkeyPatch]:
    """LOGPHASE_PREFILTER set by the test; the cached finder is dropped before and after so that it
    is built again under the variable, and quiet runs are looked for from the first byte."""
    monkeypatch.setattr(bulk_module, "QUIET_RUNS_AFTER", 0)
    event_finder.cache_clear()
    yield monkeypatch
    event_finder.cache_clear()


def _reports(engine: str, logs: list[bytes], patch: pytest.MonkeyPatch) -> list[dict[str, object]]:
    patch.setenv(PREFILTER_ENV, engine if engine == "re" else "")
    event_finder.cache_clear()
    assert event_finder().engine == engine
    return [parse_bytes(data, source="x").model_dump(mode="json") for data in logs]


@pytest.mark.parametrize("engine", ENGINES)
def test_reports_are_the_same_whichever_engine_the_prefilter_runs_on(engine: str, forced_prefilter: pytest.MonkeyPatch) -> None:
    """Every fixture and a start-up drowned in quiet lines: the report through the engine under
    test equals the report of classifying every line (no pre-filter at all)."""
    logs = [log.read_bytes() for log in fixture_logs()] + [STARTUP + _mixed_block()]
    through_engine = _reports(engine, logs, forced_prefilter)
    every_line = []
    for data in logs:
        full = Engine(source="x", collect_events=True)  # collecting events takes every line the long way
        full.feed(data)
        full.finish()
        every_line.append(full.report().model_dump(mode="json"))
    assert through_engine == every_line


@pytest.mark.skipif(not HAVE_HYPERSCAN, reason="hyperscan not installed (pip install 'logphase[fast]')")
def test_each_finders_database_is_kept_apart(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two finders of a run (the bulk path's, classify's) keep their databases under their own
    names: under one name each start replaced the other's file and compiled both (~0.1 s)."""
    from logphase.packs import derived
    from logphase.recognising import prefilter

    monkeypatch.setenv(derived.CACHE_ENV, str(tmp_path))
    monkeypatch.setattr(derived, "_writing", True)
    LiteralFinder(["Load weight begin", "Capture cuda graph"], name="one")
    LiteralFinder(["NCCL WARN", "Traceback (most"], name="two")

    def no_compiling(*_: object) -> None:
        raise AssertionError("compiled again: not read back")

    monkeypatch.setattr(prefilter, "_compiled_database", no_compiling)
    again = LiteralFinder(["Load weight begin", "Capture cuda graph"], name="one")
    assert again.line_hits(b"x\nLoad weight begin\n") == [19]  # where the literal ends
    LiteralFinder(["NCCL WARN", "Traceback (most"], name="two")


@given(
    st.lists(st.text(alphabet="ab(.*c", min_size=0, max_size=5), max_size=8),
    st.text(alphabet="ab(.*cd", max_size=8),
)
def test_prefix_alternation_matches_where_a_word_starts(words: list[str], text: str) -> None:
    """The factored alternation of the head starts matches a text exactly when one of the words
    starts it (regex metacharacters escaped; an empty word matches everything, no word nothing)."""
    pattern = re.compile(prefix_alternation(words))
    assert (pattern.match(text) is not None) == any(text.startswith(word) for word in words)
