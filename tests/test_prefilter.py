"""The block pre-filter's literals (pipeline/prefilter.py), read off the grammars: every line that
becomes an event must hold one, or the bulk path would count it as unrecognized."""

from __future__ import annotations

from pathlib import Path

import pytest

from logphase.pipeline.engine import Engine
from logphase.pipeline.plain import bulk_runs
from logphase.pipeline.prefilter import event_literals, literal_factors
from tests.conftest import fixture_logs


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


@pytest.mark.parametrize("log", fixture_logs(), ids=lambda p: p.stem)
def test_every_quiet_looking_event_line_holds_a_literal(log: Path) -> None:
    """Each fixture line that the bulk path could take as quiet and that is (part of) an event
    holds one of the literals: the pre-filter never hides an event line."""
    literals = event_literals()[0]
    quiet = bulk_runs()
    events = Engine(source=log.name).feed(log.read_bytes())
    event_lines = {e.line for e in events}
    data = log.read_bytes().split(b"\n")
    for number in event_lines:
        raw = data[number - 1] + b"\n"
        m = quiet.match(raw)
        if m is None or m.lastgroup != "quiet" or not raw.isascii():
            continue
        text = raw.decode()
        assert any(lit in text for lit in literals), f"{log.name}:{number} would be hidden: {text[:120]}"
