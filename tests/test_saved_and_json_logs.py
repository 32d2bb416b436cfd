"""Issue 18, point 13 (two of its parts). A file that starts with "{" is a saved report only when
its head says so (docker's json-file logs and other JSON lines are logs, read as they stream, never
held whole); docker's json-file lines are an envelope like the other wrappers. A saved report that
is not valid JSON or holds values no log gives is refused in one line, exit 2, by every command."""

from __future__ import annotations

import functools
import io
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

from logphase.engine.whole import parse_bytes, parse_file
from logphase.faces.loading import NotAReport, looks_like_report, report_from_json, saved_report
from tests.conftest import FIXTURES

DOCKER_JSON = FIXTURES / "docker_json_file.log"


def logphase(*args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-m", "logphase", *args], capture_output=True, timeout=120, check=False)


def unwrapped(path: Path) -> bytes:
    """The docker json-file log as the container wrote it: the log fields, back to back."""
    return "".join(json.loads(line)["log"] for line in path.read_text().splitlines()).encode()


def test_docker_json_file_reads_like_the_log_it_carries() -> None:
    wrapped, plain = parse_file(DOCKER_JSON), parse_bytes(unwrapped(DOCKER_JSON))
    assert wrapped.outcome == plain.outcome == "failed"
    assert wrapped.failure is not None and plain.failure is not None
    assert (wrapped.failure.cause, wrapped.failure.phase, wrapped.failure.ts) == (plain.failure.cause, plain.failure.phase, plain.failure.ts)
    assert [(p.name, p.start, p.duration_s) for p in wrapped.phases] == [(p.name, p.start, p.duration_s) for p in plain.phases]
    # its one line no grammar reads ('Attention backend not set. ...') is a start-up note (recognising/notes.py)
    assert wrapped.lines.unrecognized == plain.lines.unrecognized == 0


def test_docker_json_lines_take_dockers_time_and_stream() -> None:
    from logphase.reading.envelope import split_envelope

    env = split_envelope('{"log":"[Gloo] Rank 0 is connected\\n","stream":"stdout","time":"2026-06-15T10:02:19.6Z"}')
    assert env.message == "[Gloo] Rank 0 is connected" and env.writer == "stdout"
    assert env.outer is not None and env.outer.time == "10:02:19.600000"
    # a record cut short (the end of a file being written) carries its text so far: a traceback's
    # header cut inside its JSON still opens the traceback, as in a plain log
    cut = split_envelope('{"log":"[Gloo] Rank 0 is conn')
    assert cut.message == "[Gloo] Rank 0 is conn" and cut.writer is None and cut.outer is None
    header = split_envelope('{"log":"[2026-06-15 10:02:29] Scheduler hit an exception: Traceback (most recent call last):\\')
    assert header.message == "Scheduler hit an exception: Traceback (most recent call last):" and header.stamp is not None
    assert split_envelope('{"log":"caf\\u00').message == "caf"  # an escape cut in two is left out
    whole_string = split_envelope('{"log":"Load weight end\\n","stre')
    assert whole_string.message == "Load weight end"


def test_json_lines_are_a_log_judged_from_the_head() -> None:
    assert not looks_like_report(b'{"log":"x\\n","stream":"stderr","time":"2026-06-15T10:02:19Z"}\n{"log":')
    assert not looks_like_report(b'{"level":"info","msg":"started"}\n')
    assert looks_like_report(b'{\n  "schema_version": 2,\n  "source": "x"')
    assert looks_like_report(b'{"schema_version":2,"source":"x"}')
    assert looks_like_report(b'{\n  "source": "x",\n  "schema_version": 2')

    class Unread(io.BytesIO):
        def read(self, size: int | None = -1) -> bytes:
            raise AssertionError("a JSON-lines log is not read whole to try it as a report")

    head = DOCKER_JSON.read_bytes()[:4096]
    report, rest = saved_report(Unread(), head, "x")  # type: ignore[arg-type]
    assert report is None and rest is head


@pytest.fixture(scope="module")
def saved() -> dict[str, Any]:
    value: dict[str, Any] = orjson.loads(logphase("parse", "--json", str(FIXTURES / "kv_cache_insufficient.log")).stdout)
    return value


def test_saved_report_reads_back(saved: dict[str, Any]) -> None:
    assert report_from_json(orjson.dumps(saved), "x") is not None
    assert report_from_json(orjson.dumps(saved, option=orjson.OPT_INDENT_2), "x") is not None


def _changed(saved: dict[str, Any], change: str) -> bytes:
    value = json.loads(json.dumps(saved))
    if change == "negative":
        value["phases"][0]["duration_s"] = -7.0
    elif change == "huge":
        value["memory"]["weights_gb"] = 1e308
    elif change == "reversed":
        value["phases"] = value["phases"][::-1]
    elif change == "ends-before":
        value["phases"][1]["end"] = "2000-01-01T00:00:00"
    elif change == "not-a-time":
        value["phases"][1]["start"] = "2026-84-18T13:17:24"
    return json.dumps(value, indent=2).encode()


BROKEN = {
    "cut": lambda s: json.dumps(s, indent=2).encode()[:700],
    "nan": lambda s: json.dumps(s, indent=2).encode().replace(b'"duration_s": 7.0', b'"duration_s": NaN', 1),
    "infinity": lambda s: json.dumps(s, indent=2).encode().replace(b'"duration_s": 7.0', b'"duration_s": Infinity', 1),
    "deep": lambda s: b'{"schema_version": 2, "x": ' + b"[" * 5000 + b"]" * 5000 + b"}",
    **{c: functools.partial(_changed, change=c) for c in ("negative", "huge", "reversed", "ends-before", "not-a-time")},
}


@pytest.mark.parametrize("kind", BROKEN)
def test_broken_or_absurd_saved_report_is_refused(kind: str, saved: dict[str, Any]) -> None:
    with pytest.raises(NotAReport):
        report_from_json(BROKEN[kind](saved), "x")


def test_every_command_refuses_a_broken_saved_report(saved: dict[str, Any], tmp_path: Path) -> None:
    cut = tmp_path / "cut.json"
    cut.write_bytes(BROKEN["cut"](saved))
    negative = tmp_path / "negative.json"
    negative.write_bytes(BROKEN["negative"](saved))
    good = tmp_path / "good.json"
    good.write_bytes(json.dumps(saved).encode())
    for args in (
        ["parse", str(cut)],
        ["check", str(negative), "--outcome", "failed"],
        ["compare", str(good), str(cut)],
        ["compare", str(negative), str(good)],
        ["report", str(cut), "-o", str(tmp_path / "p.html")],
    ):
        done = logphase(*args)
        assert done.returncode == 2, (args, done.stdout, done.stderr)
        assert done.stderr.count(b"\n") == 1 and b"Traceback" not in done.stderr
    assert logphase("compare", str(good), str(good)).returncode == 0


# Issue 30, point 5: what a reviewer found read as a log, or accepted. Each is refused in one line
# that says what the input is, exit 2, by parse (every command reads saved reports the same way).
LOOKALIKES = {
    # a list of reports (a script saving several): the head starts like a report, the whole is a list
    "list": (lambda s: json.dumps([s, s], indent=2).encode(), b"a JSON list of 2 values"),
    "list-one-line": (lambda s: json.dumps([s]).encode(), b"a JSON list of 1 value"),
    # nested 100,000 levels: its schema_version (if any) is past any head, and no parser reads it
    "deep-object": (lambda s: b'{"x": ' + b'{"a": ' * 100_000 + b"1" + b"}" * 100_000 + b', "schema_version": 2}', b"nested deeper"),
    "deep-list": (lambda s: b"[" * 100_000 + b"]" * 100_000, b"nested deeper"),
    # true == 1 in Python: a bool is no version number
    "version-true": (lambda s: json.dumps({**s, "schema_version": True}).encode(), b"schema_version true"),
    # parse --json of several logs writes JSON lines: one report a line
    "json-lines-of-reports": (lambda s: (json.dumps(s) + "\n") .encode() * 2, b"more than one JSON document"),
}


@pytest.mark.parametrize("kind", LOOKALIKES)
def test_what_only_looks_like_a_saved_report_is_refused_in_one_line(kind: str, saved: dict[str, Any], tmp_path: Path) -> None:
    make, says = LOOKALIKES[kind]
    data = make(saved)
    assert looks_like_report(data[:1 << 20])  # never handed to the engine as a log
    with pytest.raises(NotAReport):
        report_from_json(data, "x")
    path = tmp_path / f"{kind}.json"
    path.write_bytes(data)
    done = logphase("parse", str(path))
    assert done.returncode == 2, (done.stdout[:300], done.stderr)
    assert done.stderr.count(b"\n") == 1 and says in done.stderr and b"Traceback" not in done.stderr


def test_a_log_whose_lines_start_with_a_bracket_is_still_a_log() -> None:
    # SGLang's own lines start with "[": only a JSON list of reports is taken for one
    assert not looks_like_report(b"[2026-05-12 18:20:05] server_args=ServerArgs(model_path='m')\n")
    assert not looks_like_report(b'["a", "b"]\n["c"]\n')
    assert not looks_like_report(b"[1, 2]\n")
