"""The report-building modules' own tables: the facts' handlers by event type, the scheduler's
settings as its event declares them, and the server's name in one place."""

from __future__ import annotations

import typing

import pytest

from logphase.folding import facts
from logphase.folding.runs import Run
from logphase.reporting import build_report
from logphase.reporting.report import LinesReport
from logphase.vocabulary import events as ev


@pytest.mark.parametrize("event_type", list(facts._HANDLERS), ids=lambda t: t.__name__)
def test_every_fact_handler_takes_the_event_type_it_is_filed_under(event_type: type[ev.EventBase]) -> None:
    # mypy cannot relate a row's key to its handler's parameter: this test does
    assert typing.get_type_hints(facts._HANDLERS[event_type])["event"] is event_type


def _scheduler_ready(**stated: object) -> ev.SchedulerReady:
    return ev.SchedulerReady(line=7, offset=0, raw="", **stated)


def test_the_scheduler_settings_are_the_fields_of_its_event() -> None:
    own = set(ev.SchedulerReady.model_fields) - set(ev.EventBase.model_fields)
    assert own == facts.SCHEDULER_KEYS and "max_total_num_tokens" in own
    assert build_report.SCHEDULER_KEYS is facts.SCHEDULER_KEYS  # one list, read by both
    run = Run(index=1, start_line=1)
    facts.note_facts(run, _scheduler_ready(**dict.fromkeys(own, 1)), "TP0")
    assert run.scheduler == dict.fromkeys(own, 1)


def test_the_scheduler_keeps_only_what_it_stated_and_only_its_first_word() -> None:
    run = Run(index=1, start_line=1)
    facts.note_facts(run, _scheduler_ready(context_len=4096), "TP0")
    facts.note_facts(run, _scheduler_ready(context_len=8192, max_running_requests=9), "TP1")
    assert run.scheduler == {"context_len": 4096}


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (1, "no SGLang output recognised in 1 line: is this a server log? (parse --unrecognized shows the lines)"),
        (3, "no SGLang output recognised in 3 lines: is this a server log? (parse --unrecognized shows the lines)"),
    ],
)
def test_no_server_output_names_the_server_once(content: int, expected: str, monkeypatch: pytest.MonkeyPatch) -> None:
    lines = LinesReport(total=content, events=0, unrecognized=content)
    [warning] = build_report._input_warnings(lines, None, build_report.speaking_of(None))
    assert (warning.kind, warning.message) == ("no_sglang_output", expected)
    [warning] = build_report._input_warnings(lines, None, build_report.speaking_of("vllm"))
    assert (warning.kind, warning.message) == ("no_sglang_output", expected.replace("SGLang", "vLLM"))
