"""What people read: the text summary, its headline and wording, and how bad input is told."""

from __future__ import annotations

import json
from pathlib import Path

from logphase import parse_text
from logphase.faces.text import render_text
from logphase.faces.timeline import render_html
from tests.conftest import FIXTURES
from tests.logs import kv_failure, logphase_cli, stamp, tp2_startup

run = logphase_cli  # in this process: no interpreter start-up per call


def with_gap(seconds: int) -> str:
    """The tp2 start-up with ``seconds`` of silence between capture and the HTTP server."""
    text = tp2_startup()
    lines = text.splitlines()
    shifted = []
    for line in lines:
        if line.startswith(f"[{stamp(32)}") or line.startswith(f"[{stamp(33)}") or line.startswith(f"[{stamp(34)}"):
            second = int(line[18:20])
            line = f"[2026-05-09 09:{21 + (second + seconds - 60) // 60:02d}:{(second + seconds) % 60:02d}" + line[20:]
        shifted.append(line)
    return "\n".join(shifted) + "\n"


def test_time_between_phases_is_shown_with_its_lines() -> None:
    report = parse_text(with_gap(200))
    gaps = report.unaccounted
    # capture ends at :30, the HTTP server starts at :32 (+ the shift): no phase in between
    assert [(g.after.value, g.before.value, g.duration_s) for g in gaps] == [("cuda_graph_capture", "warmup", 202.0)]
    phases_total = sum(p.duration_s or 0 for p in report.phases)
    assert report.total_startup_s is not None and phases_total + gaps[0].duration_s <= report.total_startup_s + 1
    text = render_text(report)
    assert "(between phases)" in text and f"lines {gaps[0].first_line}-{gaps[0].last_line}" in text
    page = render_html(report)
    assert 'class="lp-gap"' in page and "between phases" in page


def test_time_after_the_last_phase_ended_is_shown_while_starting() -> None:
    """The 400B incident: weights loaded, then minutes of silence. The report must not hide
    them inside the last phase's duration: they are time in no phase, up to the last time printed."""
    lines = with_gap(200).splitlines()
    # cut the log after capture's end and keep one later stamped line (a heartbeat of the main process)
    capture_end = max(i for i, line in enumerate(lines) if "Capture cuda graph end" in line)
    text = "\n".join([*lines[: capture_end + 1], "[2026-05-09 09:24:52] still here"]) + "\n"
    report = parse_text(text)
    assert report.outcome == "starting"
    trailing = report.unaccounted[-1]
    assert trailing.after.value == "cuda_graph_capture" and trailing.before is None
    assert trailing.end == "2026-05-09T09:24:52" and trailing.duration_s > 60
    assert "(no phase since)" in render_text(report)
    assert "no phase since" in render_html(report)


def test_no_gap_row_when_phases_follow_each_other() -> None:
    report = parse_text(kv_failure())  # each phase starts in the second the one before ends
    assert report.unaccounted == [] and "(between phases)" not in render_text(report)


def test_headline_says_which_duration_is_which() -> None:
    text = tp2_startup(ready=False)
    report = parse_text(text[: text.index(f"[{stamp(20)} TP0] Load weight end")])
    assert report.phase is not None and report.phase.value == "weight_loading"
    first = render_text(report).splitlines()[0]
    assert "STARTING: in weight_loading for 0.0 s (3.0 s since launch)" in first


def test_slowest_rank_is_same_on_all_when_ranks_tie() -> None:
    text = render_text(parse_text(tp2_startup()))
    dist = next(line for line in text.splitlines() if line.strip().startswith("distributed_init"))
    assert dist.rstrip().endswith("same on all")
    weights = next(line for line in text.splitlines() if line.strip().startswith("weight_loading"))
    assert weights.rstrip().endswith("TP1 18 s")  # TP1 finished a second after TP0


def test_long_errors_end_with_an_ellipsis_and_counts_agree_in_number() -> None:
    long_error = kv_failure().replace("Current value: mem_fraction_static=0.85", "x" * 400)
    text = render_text(parse_text(long_error))
    error = next(line for line in text.splitlines() if line.strip().startswith("error"))
    assert error.endswith("…")
    assert "1 other lines" not in text and "1 other line follows from it (line 12)" in text


def test_warnings_do_not_repeat_the_logging_call_site() -> None:
    line = (
        f"[{stamp(1)}] WARNING server_args.py:1833: DeepEP MoE is enabled. The expert parallel size is adjusted "
        "to be the same as the tensor parallel size[16]."
    )
    report = parse_text(tp2_startup().replace("\n", "\n" + line + "\n", 1))
    warning = next(w for w in report.warnings if w.kind == "ignored_parameter")
    assert "server_args.py" not in warning.message and "DeepEP MoE is enabled" in warning.message


def test_colour_only_on_request_or_a_terminal(tmp_path: Path) -> None:
    log = tmp_path / "x.log"
    log.write_text(kv_failure())
    plain = run("parse", str(log)).stdout
    coloured = run("parse", str(log), "--color", "always").stdout
    assert b"\x1b[" not in plain and b"\x1b[1;31mFAILED" in coloured
    assert b"\x1b[" not in run("parse", str(log), env={"NO_COLOR": "1"}).stdout


# -- input that is not a log -------------------------------------------------------------------------


def test_text_that_is_no_log_says_nothing_was_recognised(tmp_path: Path) -> None:
    junk = tmp_path / "junk.txt"
    junk.write_bytes(b"dear diary\n\x00\xff garbage\nnothing of a server here\n" * 20)
    result = run("parse", str(junk))
    assert result.returncode == 3
    assert b"no SGLang output recognised in" in result.stdout
    report = json.loads(run("parse", str(junk), "--json").stdout)
    assert "no_sglang_output" in [w["kind"] for w in report["warnings"]]
    binary = tmp_path / "junk.bin"
    binary.write_bytes(bytes(range(256)) * 20 + b"\n\x00\xff garbage\n")
    refused = run("parse", str(binary))  # binary is no log text at all (issue 18): one line, exit 2
    assert refused.returncode == 2 and b"binary data" in refused.stderr and not refused.stdout


def test_a_saved_report_is_read_back_by_parse_and_report(tmp_path: Path) -> None:
    saved = tmp_path / "saved.json"
    saved.write_bytes(run("parse", str(FIXTURES / "kv_cache_insufficient.log"), "--json").stdout)
    again = run("parse", str(saved))
    assert again.returncode == 1 and b"FAILED in memory_pool" in again.stdout
    assert json.loads(run("parse", str(saved), "--json").stdout) == json.loads(saved.read_text())
    page = tmp_path / "page.html"
    drawn = run("report", str(saved), "-o", str(page))
    assert drawn.returncode == 1 and "kv_cache_insufficient_memory" in page.read_text()
    refused = run("parse", str(saved), "--events")
    assert refused.returncode == 2 and refused.stderr.count(b"\n") == 1 and b"saved report" in refused.stderr


def test_since_after_the_whole_log_says_nothing_since() -> None:
    result = run("parse", str(FIXTURES / "tp1_success.log"), "--since", "2099-01-01 00:00:00")
    assert result.returncode == 3 and b"nothing since 2099-01-01 00:00:00" in result.stdout
