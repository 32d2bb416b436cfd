"""The grammars compiled into regular expressions (recognising/recognisers.py) read every line as Lark
does: on every ``//:`` example line of every message rule and on every line of every fixture, the
compiled recogniser and Lark's parser give the same match (rule, tokens, fields, values, children)
and so the same event; the events, built without validation, are what validation would make of them.
A line is read by the same recogniser wherever it comes in a process, and the derivation a start
reads back from disk is the one derived afresh."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from logphase.packs.grammars import Parsed, examples, parse
from logphase.reading.envelope import split_envelope
from logphase.recognising import classify, recognisers, records
from logphase.recognising.classify import DISPATCHED
from logphase.recognising.messages import MESSAGES
from logphase.recognising.recognisers import Derivation, derivation, derive, recognise, recogniser
from logphase.vocabulary.events import LineInfo

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures" / "logs"
# every grammar a line is recognised with: the dispatched ones and the traceback lines' (records.py)
GRAMMARS = (*DISPATCHED, "traceback")
AT = LineInfo(line=1, offset=0, raw="", ts=None, ts_inherited=False, rank=None)


def shape(p: Parsed | None) -> object:
    """Everything a Parsed holds, nested, for comparing."""
    if p is None:
        return None
    return (p.rule, p.tokens, p.fields, p.values, [shape(c) for c in p.children])


def same_as_lark(grammar: str, text: str) -> bool:
    """The compiled expressions' reading of ``text`` is Lark's, and so is the event built from it,
    whenever they decide (recognise then returns their reading; else it asks Lark); a complete
    grammar always decides. Returns whether they decided."""
    compiled, decided = recogniser(grammar).read(text)
    lark = parse(grammar, text)
    if not decided:
        assert not recogniser(grammar).complete, (grammar, text)
        return False
    assert shape(compiled) == shape(lark), (grammar, text)
    if lark is not None and lark.rule in MESSAGES and MESSAGES[lark.rule].build is not None and compiled is not None:
        build = MESSAGES[lark.rule].build
        assert build is not None
        assert build(compiled, text, AT).model_dump() == build(lark, text, AT).model_dump()
    return True


def example_lines() -> Iterator[tuple[str, str, str]]:
    for grammar in GRAMMARS:
        for rule, lines in examples(grammar).items():
            for line in lines:
                yield grammar, rule, line


@pytest.mark.parametrize(("grammar", "rule", "line"), list(example_lines()))
def test_every_example_line_reads_as_lark_reads_it(grammar: str, rule: str, line: str) -> None:
    """... and the example of a message that compiled is read by its own expression (Lark is not asked)."""
    decided = same_as_lark(grammar, line)
    if rule in recogniser(grammar).rules:
        found, _ = recogniser(grammar).read(line)
        assert decided and found is not None and found.rule == rule, (grammar, rule, line)


def test_the_messages_compile() -> None:
    """Most messages are regular: every grammar's messages compile but the configuration dump's,
    and most grammars are complete (what their expressions refuse, Lark refuses: it is not asked)."""
    compiled = {g: recogniser(g) for g in GRAMMARS}
    assert all(not r.irregular for g, r in compiled.items() if g != "server_args"), {
        g: r.irregular for g, r in compiled.items() if r.irregular
    }
    assert compiled["server_args"].irregular  # ?value and aliases: Lark's
    complete = {g for g, r in compiled.items() if r.complete}
    assert {"sglang", "vllm", "http", "nccl", "tqdm", "traceback"} <= complete


def test_a_shared_prefix_sees_the_other_messages_terminals() -> None:
    """uvicorn's level starts every http message: after it, the lexer tries every message's next
    terminal in its own order, and the expression does too (a line is not read as a message whose
    terminal the lexer would not pick)."""
    for line in ("INFO:     Started server process [4242]", "INFO:     something else entirely", "WARNING:  x"):
        assert same_as_lark("http", line)


def asked_about(log: Path, monkeypatch: pytest.MonkeyPatch, check: bool = False) -> list[tuple[str, str]]:
    """Every (grammar, text) the classifier and the record reader ask about on the lines of ``log``
    (each checked against Lark when ``check``)."""
    asked: list[tuple[str, str]] = []

    def noted(grammar: str, text: str) -> Parsed | None:
        asked.append((grammar, text))
        if check:
            same_as_lark(grammar, text)
        return recognise(grammar, text)

    with monkeypatch.context() as patched:
        patched.setattr(classify, "recognise", noted)
        patched.setattr(records, "recognise", noted)
        for number, raw in enumerate(log.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
            for line in raw.split("\r"):
                env = split_envelope(line)
                at = LineInfo(line=number, offset=0, raw=line, ts=None, ts_inherited=False, rank=env.rank)
                event = classify.classify(env, at)
                if event is not None and check:  # built without validation (LineInfo.event): valid as it is
                    json_text = event.model_dump_json()
                    assert type(event).model_validate_json(json_text).model_dump_json() == json_text, line
                records.line_shape(env.message)
    return asked


@pytest.mark.parametrize("log", sorted(FIXTURES.glob("*.log")), ids=lambda p: p.name)
def test_every_fixture_line_reads_as_lark_reads_it(log: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every (grammar, text) the classifier and the record reader ask about, on every line of a
    fixture, is read the same by the compiled recogniser and by Lark."""
    assert asked_about(log, monkeypatch, check=True)  # the fixture's lines were read


def test_a_text_is_read_the_same_way_wherever_it_comes(monkeypatch: pytest.MonkeyPatch) -> None:
    """Which recogniser reads a text (the compiled expressions, or Lark when their refusal is not
    final) depends on the grammar and the text, not on how many lines the process read before: the
    texts of the fixtures read first to last and last to first, each time in a process that has read
    nothing, give the same readings and send the same texts to Lark."""
    texts = [pair for log in sorted(FIXTURES.glob("*.log")) for pair in asked_about(log, monkeypatch)]
    assert len(set(texts)) > 1000

    def read_all(order: list[tuple[str, str]]) -> tuple[dict[tuple[str, str], object], set[tuple[str, str]]]:
        recognisers._READ.clear()
        recogniser.cache_clear()
        to_lark: set[tuple[str, str]] = set()

        def lark(grammar: str, text: str) -> Parsed | None:
            to_lark.add((grammar, text))
            return parse(grammar, text)

        with monkeypatch.context() as patched:
            patched.setattr(recognisers, "parse", lark)
            readings = {(g, t): shape(recognise(g, t)) for g, t in order}
        return readings, to_lark

    forward, forward_lark = read_all(texts)
    backward, backward_lark = read_all(texts[::-1])
    assert forward == backward
    assert forward_lark == backward_lark
    # Lark reads what only it can: the configuration dump's and the inexact grammars' refusals
    assert {g for g, _ in forward_lark} <= {g for g in GRAMMARS if not recogniser(g).complete}


def test_a_repeated_text_is_read_once_and_its_reading_cannot_be_changed_by_a_user() -> None:
    text = "[Gloo] Rank 3 is NOT connected to: [0, 1]"
    first = recognise("gloo", text)
    assert first is not None and first.items("missing") == ["0", "1"]
    first.items("missing").append("7")  # a copy: the shared reading stays as parsed
    again = recognise("gloo", text)
    assert again is first and again.items("missing") == ["0", "1"]


@pytest.mark.parametrize("grammar", GRAMMARS)
def test_the_kept_derivation_is_the_one_derived_afresh(grammar: str) -> None:
    """What a start reads back from disk (JSON) is what the derivation gives, field for field."""
    fresh = derive(grammar)
    assert recognisers._derivation_from_data(json.loads(json.dumps(fresh.data()))) == fresh
    assert derivation(grammar) == fresh  # kept by an earlier test or derived now: the same


def test_the_derivation_does_not_depend_on_the_process_that_derived_it() -> None:
    """A derivation kept by one process is read by every later one: derived under two other hash
    seeds (set and dict orders differ), it is the same data, to the byte."""
    code = (
        "import json, sys; from logphase.recognising.recognisers import derive; "
        "print(json.dumps({g: derive(g).data() for g in sys.argv[1:]}, sort_keys=True))"
    )
    outputs = [
        subprocess.run(
            [sys.executable, "-c", code, *GRAMMARS],
            cwd=ROOT,
            env={**os.environ, "PYTHONHASHSEED": seed},
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        for seed in ("1", "2")
    ]
    assert outputs[0] == outputs[1]
    assert json.loads(outputs[0]) == {g: derive(g).data() for g in GRAMMARS}


def test_a_kept_derivation_of_another_shape_is_derived_again() -> None:
    """A damaged or foreign file is refused (and derived again by derived.cached), never used."""
    good = derive("gloo").data()
    for broken in (
        {**good, "scan": 3},
        {**good, "plans": {"x": ["t", "g", "NAME", True, [1], None]}},
        {**good, "plans": {"x": ["q"]}},
        {**good, "exact": {"x": "yes"}},
        {k: v for k, v in good.items() if k != "by_first"},
        {**good, "plans": {}},  # expressions whose reading back is not there
        {**good, "by_first": {"X": ["no_such_message"]}},
        [],
    ):
        with pytest.raises(TypeError):
            recognisers._derivation_from_data(broken)
    assert isinstance(recognisers._derivation_from_data(good), Derivation)
