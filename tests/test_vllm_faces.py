"""Every face on vLLM (issue 21 point 4): ``--server`` and the year of stamps that print none reach
follow, report, check/compare, several logs and ``--merge`` (not only a single ``parse``); in a merge
each log's server is its own; metrics and the schema; and the server decided in one place
(``recognising/detect.py``)."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from logphase.engine.whole import parse_file
from logphase.faces import cli
from logphase.faces.batch import read_many
from logphase.faces.inputs import read_input, read_startups
from logphase.faces.live.follow import Follower, FollowOptions, follow_file
from logphase.faces.live.metrics import ReportCollector
from logphase.faces.merged import merge_logs, read_merged, render_merged
from logphase.faces.text import render_text
from logphase.recognising import detect, messages
from logphase.reporting.report import Report
from tests.conftest import FIXTURES

VLLM_READY = FIXTURES / "vllm_v1_clean_compile_0_11.log"
VLLM_FAILED = FIXTURES / "vllm_kv_cache_no_room_v0_0_7.log"
SGLANG_READY = FIXTURES / "tp1_success.log"
# 2024-12-01: the year the file's time gives to vLLM's year-less stamps (the log's 10-06 is before it)
MTIME = 1733054400


@pytest.fixture
def vllm_log(tmp_path: Path) -> Path:
    """A vLLM log whose file time says 2024 (the fixture's own time is the checkout's)."""
    path = tmp_path / "vllm.log"
    path.write_bytes(VLLM_READY.read_bytes())
    os.utime(path, (MTIME, MTIME))
    return path


def _year(report: Report) -> tuple[int, str] | None:
    return None if report.year_inferred is None else (report.year_inferred.year, report.year_inferred.source)


# -- --server and the year reach every way a log is read ------------------------------------------------


def test_read_input_takes_the_server_and_the_files_year(vllm_log: Path) -> None:
    """check, compare and the library's loading read logs through read_input."""
    report = read_input(str(vllm_log))
    assert report.server == "vllm" and _year(report) == (2024, "file_time")
    assert report.phases[0].start is not None and report.phases[0].start.startswith("2024-")
    assert read_input(str(SGLANG_READY), server="vllm").server == "vllm"
    assert read_input(str(SGLANG_READY)).server == "sglang"


def test_read_startups_takes_them_too(vllm_log: Path) -> None:
    """check on one log."""
    (report,) = read_startups(str(vllm_log))
    assert _year(report) == (2024, "file_time")
    (forced,) = read_startups(str(SGLANG_READY), server="vllm")
    assert forced.server == "vllm"


def test_several_logs_take_them(vllm_log: Path) -> None:
    """parse and check on several logs (batch), in one process and in several."""
    for jobs in (1, 2):
        outcomes = list(read_many([str(vllm_log), str(SGLANG_READY)], None, {}, jobs, "vllm"))
        assert [o.report.server for o in outcomes if o.report is not None] == ["vllm", "vllm"]
        assert outcomes[0].report is not None and _year(outcomes[0].report) == (2024, "file_time")


def _follow_to_timeout(path: Path, options: FollowOptions) -> list[Follower]:
    """follow_file to its --timeout (``until="eof"`` never comes on a file by name), on a fake
    clock that each pause moves on: at once, where the real clock made it wait the timeout out."""
    clock = [0.0]

    def sleep(seconds: float) -> None:
        clock[0] += max(seconds, 0.01)

    followers: list[Follower] = []
    records = list(follow_file(str(path), options, clock=lambda: clock[0], sleep=sleep, on_follower=followers.append))
    assert records[-1].kind == "timeout"  # it ran to its --timeout, read all there was
    return followers


def test_follow_takes_them(vllm_log: Path) -> None:
    followers = _follow_to_timeout(vllm_log, FollowOptions(until="eof", timeout=60.0))
    report = followers[-1].engine.report()
    assert report.server == "vllm" and _year(report) == (2024, "file_time")
    forced = _follow_to_timeout(SGLANG_READY, FollowOptions(until="eof", timeout=60.0, server="vllm"))
    assert forced[-1].engine.report().server == "vllm"


@pytest.mark.parametrize("command", ["parse", "report", "check", "compare", "follow"])
def test_every_command_takes_server(command: str) -> None:
    parser, _ = cli._build_parser()
    files = ["a.log", "b.log"] if command in ("parse", "compare") else ["a.log"]
    args = parser.parse_known_args([command, *files, "--server", "vllm"])[0]
    assert args.server == "vllm"


def test_parse_of_several_logs_with_server(vllm_log: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Refused before: '--server applies to one log at a time'."""
    cli.main(["parse", "--json", "--server", "vllm", "-j", "1", str(vllm_log), str(SGLANG_READY)])
    reports = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith("{")]
    assert [r["server"] for r in reports] == ["vllm", "vllm"]


def test_the_text_says_where_the_year_came_from(vllm_log: Path) -> None:
    text = render_text(read_input(str(vllm_log)))
    assert "year 2024 from the file's time (the stamps print none)" in text
    assert "year " not in render_text(read_input(str(SGLANG_READY)))  # SGLang's stamps carry theirs


# -- --merge: each log's server is its own -----------------------------------------------------------


def _sglang_window(tmp_path: Path) -> Path:
    """An SGLang log without its arguments dump (a window): it does not say which launch it is."""
    lines = SGLANG_READY.read_text().splitlines(keepends=True)
    path = tmp_path / "sglang_window.log"
    path.write_text("".join(line for line in lines if "server_args=" not in line))
    return path


def test_merge_keeps_each_logs_server(vllm_log: Path, tmp_path: Path) -> None:
    window = _sglang_window(tmp_path)
    merged = read_merged([str(vllm_log), str(window)], None, {}, 1)
    assert [s.report.server for s in merged.servers] == ["vllm", "sglang"]
    assert [r.server for r in merged.nodes] == ["vllm", "sglang"]
    # the other order: the first log's server is not the deployment's
    merged = read_merged([str(window), str(vllm_log)], None, {}, 1)
    assert [s.report.server for s in merged.servers] == ["sglang", "vllm"]


def test_merged_nodes_of_one_vllm_server_keep_server_version_and_year(vllm_log: Path, tmp_path: Path) -> None:
    other = tmp_path / "vllm_node1.log"
    other.write_bytes(vllm_log.read_bytes())
    os.utime(other, (MTIME, MTIME))
    merged = read_merged([str(vllm_log), str(other)], None, {}, 1)
    (server,) = merged.servers
    assert (server.report.server, server.report.version) == ("vllm", "0.11.0")
    assert _year(server.report) == (2024, "file_time")
    assert "(vLLM 0.11.0)" in render_merged(merged, color=False)


def test_merge_with_server_forces_every_log(vllm_log: Path, tmp_path: Path) -> None:
    merged = read_merged([str(vllm_log), str(_sglang_window(tmp_path))], None, {}, 1, "vllm")
    assert {s.report.server for s in merged.servers} == {"vllm"}


def test_merge_logs_of_saved_reports_groups_by_server() -> None:
    """merge works on reports alone: two windows of two servers are two servers."""
    vllm = parse_file(VLLM_READY)
    sglang = parse_file(SGLANG_READY).model_copy(update={"config": {}})  # as a window without its dump
    merged = merge_logs(["a", "b"], [vllm, sglang])
    assert [s.report.server for s in merged.servers] == ["vllm", "sglang"]


# -- metrics and the schema ----------------------------------------------------------------------------


def _collected(report: Report) -> dict[str, list[tuple[dict[str, str], float]]]:
    out: dict[str, list[tuple[dict[str, str], float]]] = {}
    for family in ReportCollector(lambda: (report, None), "test").collect():
        out[family.name] = [(dict(sample.labels), sample.value) for sample in family.samples]
    return out


def test_metrics_of_a_vllm_failure() -> None:
    report = parse_file(VLLM_FAILED)
    assert report.failure is not None
    got = _collected(report)
    phase = [labels["phase"] for labels, value in got["logphase_phase"] if value == 1.0]
    assert phase == [report.phase.value if report.phase is not None else ""]
    assert [labels["outcome"] for labels, value in got["logphase_outcome"] if value == 1.0] == ["failed"]
    assert [labels["cause"] for labels, _ in got["logphase_failure"]] == [report.failure.cause.value]
    durations = {labels["phase"] for labels, _ in got["logphase_phase_duration_seconds"]}
    assert durations == {p.name.value for p in report.phases if p.duration_s is not None}


def test_metrics_of_a_vllm_start() -> None:
    report = parse_file(VLLM_READY)
    got = _collected(report)
    assert [labels["outcome"] for labels, value in got["logphase_outcome"] if value == 1.0] == ["ready"]
    assert got["logphase_startup_seconds"][0][1] == report.total_startup_s


def test_the_schema_documents_server_and_version() -> None:
    fields = Report.model_json_schema()["properties"]
    assert "vLLM" in fields["server"]["description"] and "--server" in fields["server"]["description"]
    assert "version" in fields["version"]["description"]
    assert {"sglang", "vllm"} <= set(re.findall(r"\w+", json.dumps(fields["server"])))
    assert "year_inferred" in fields


# -- the server is decided in one place -----------------------------------------------------------------


def test_the_server_is_decided_in_detect_only() -> None:
    assert not hasattr(messages, "SERVER_OF_RULE")
    assert detect.server_of_rule("api_server_version") == "vllm" and detect.server_of_rule("platform_detected") is None
    # --server, else what the lines showed, else the stamped prefix's server (the bulk path's lines)
    assert detect.run_server("sglang", "vllm", True) == "vllm"
    assert detect.run_server("vllm", None, True) == "vllm"
    assert detect.run_server(None, None, True) == detect.STAMPED_SERVER
    assert detect.run_server(None, None, False) is None


def test_the_bulk_path_and_the_long_way_name_the_same_server() -> None:
    """feed_plain's server is the stamped prefix's, as note_start's for the same lines: an SGLang
    log read in bulk (collect_events=False) and line by line says the same server, forced or not."""
    from logphase.engine.engine import Engine

    data = SGLANG_READY.read_bytes()
    for forced in (None, "vllm"):
        bulk = Engine(collect_events=False, server=forced)  # type: ignore[arg-type]
        bulk.feed(data)
        bulk.finish()
        slow = Engine(collect_events=True, server=forced)  # type: ignore[arg-type]
        slow.feed(data)
        slow.finish()
        assert bulk.report().server == slow.report().server == (forced or "sglang")


def test_the_library_takes_server() -> None:
    from logphase import parse_bytes, parse_text

    assert parse_file(SGLANG_READY, server="vllm").server == "vllm"
    assert parse_bytes(SGLANG_READY.read_bytes(), server="vllm").server == "vllm"
    assert parse_text(SGLANG_READY.read_text(), server="vllm").server == "vllm"
    assert parse_file(SGLANG_READY).server == "sglang"
