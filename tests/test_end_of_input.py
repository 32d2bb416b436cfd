"""Issue 18, point 3: the end of a file ends its last line. A last line without its newline (logs
copied out of notebooks, CI pages and chats) is read as a line; ``truncated_input`` only when it is
visibly cut: inside a traceback not yet at its exception line, a progress bar's redraw that is not
a whole bar, a half-written prefix or traceback header. ``follow`` waits for the rest of a partial
line while its input is open and reads it at the end of the input."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from logphase import Engine
from logphase.engine.whole import parse_bytes
from logphase.reporting.report import Report
from tests.conftest import fixture_logs
from tests.logs import fed_in_chunks, kv_failure, tp2_startup

FIXTURES = fixture_logs()
FIXTURE_BYTES = {p.name: p.read_bytes() for p in FIXTURES}
ids = [p.stem for p in FIXTURES]

READY_LINE = "[2026-05-09 09:20:34] The server is fired up and ready to roll!"


def truncated(r: Report) -> bool:
    flagged = any(w.kind == "truncated_input" for w in r.warnings)
    assert flagged == (r.lines.truncated == 1)
    return flagged


def test_ready_line_without_newline_is_ready() -> None:
    log = tp2_startup().rstrip("\n").encode()
    assert log.endswith(READY_LINE.encode())
    for r in (parse_bytes(log), fed_in_chunks(Engine(), log, list(range(len(log) - 60, len(log))))):
        assert r.outcome == "ready" and not truncated(r)
        assert r.model_dump(exclude={"source"}) == parse_bytes(log + b"\n").model_dump(exclude={"source"})


VISIBLY_CUT = {
    "half a stamp": "[2026-05-09 09:2",
    "stamp and half the tags": "[2026-05-09 09:20:35 TP",
    "half a wrapper stamp": "2026-05-09T09:20:3",
    "a prefix without its message": "[2026-05-09 09:20:35 TP0] ",
    "half a traceback header": "[2026-05-09 09:20:35 TP0] Scheduler hit an exception: Traceba",
    "half a bar": "Capturing batches (bs=16 avail_mem=6.90 GB):  40%|████      | 2/5 [00:0",
}


@pytest.mark.parametrize("tail", VISIBLY_CUT.values(), ids=VISIBLY_CUT.keys())
def test_visibly_cut_last_line_is_truncated(tail: str) -> None:
    log = (tp2_startup(ready=False) + tail).encode()
    r = parse_bytes(log)
    assert truncated(r)
    assert [w.line for w in r.warnings if w.kind == "truncated_input"] == [log.count(b"\n") + 1]


def test_last_line_inside_a_traceback_is_truncated() -> None:
    text = kv_failure()
    cut = text[: text.index("RuntimeError: Not enough")]
    frame = cut.rstrip("\n").rsplit("\n", 1)[-1]
    assert frame.startswith("  ")
    r = parse_bytes(cut.rstrip("\n")[:-3].encode())  # the last frame's statement, cut
    assert r.outcome == "failed" and truncated(r)


def test_whole_bar_redraw_at_the_end_is_no_cut() -> None:
    """tqdm writes its newline only when the bar is done: a live bar's last redraw is whole."""
    bar = "Capturing batches (bs=16 avail_mem=6.90 GB):  40%|████      | 2/5 [00:01<00:01,  2.50it/s]"
    r = parse_bytes((tp2_startup(ready=False) + bar).encode())
    assert not truncated(r)


# a quarter of the profile's examples a fixture (at least 3): 45 fixtures, each example two parses
@pytest.mark.parametrize("name", FIXTURE_BYTES, ids=ids)
@settings(max_examples=max(3, settings.default.max_examples // 4))
@given(data=st.data())
def test_a_cut_is_a_line_unless_visibly_cut(name: str, data: st.DataObject) -> None:
    """For every cut: the report is that of the same bytes with the newline added, or it says the
    last line was visibly cut (truncated_input, one truncated line)."""
    log = FIXTURE_BYTES[name]
    cut = data.draw(st.integers(1, len(log)))
    head = log[:cut]
    r = parse_bytes(head, source="x")
    if head.endswith((b"\n", b"\r")):
        return
    if not truncated(r):
        assert r == parse_bytes(head + b"\n", source="x")


def test_commands_read_the_last_line(tmp_path: Path) -> None:
    log = tmp_path / "ready.log"
    log.write_text(tp2_startup().rstrip("\n"))
    for args in (["parse", str(log)], ["check", str(log), "--outcome", "ready"], ["report", str(log), "-o", str(tmp_path / "p.html")]):
        done = subprocess.run([sys.executable, "-m", "logphase", *args], capture_output=True, text=True, timeout=120, check=False)
        assert done.returncode == 0, (args, done.stdout, done.stderr)
        assert "truncated" not in done.stdout


def test_follow_waits_for_the_rest_of_a_partial_line_and_reads_it_at_the_end() -> None:
    """The ready line arrives in two writes, the second without a newline, then the pipe closes."""
    text = tp2_startup().rstrip("\n")
    first, rest = text[: -len(READY_LINE) + 20], text[-len(READY_LINE) + 20 :]
    follow = subprocess.Popen(
        [sys.executable, "-m", "logphase", "follow", "--json", "-"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert follow.stdin is not None
    follow.stdin.write(first.encode())
    follow.stdin.flush()
    follow.stdin.write(rest.encode())
    follow.stdin.close()
    follow.stdin = None  # closed: communicate() only reads
    out, err = follow.communicate(timeout=120)
    assert follow.returncode == 0, err
    assert b'"outcome": "ready"' in out or b'"outcome":"ready"' in out
    assert b"truncated_input" not in out


def test_a_window_that_ends_inside_its_first_frame_line_names_no_phase_from_it() -> None:
    """The input ends in the frame line that starts a window's traceback: its function's name may
    be cut ('initialize_model' of 'initialize_model_parallel', a weight-loading function's name),
    so it is no evidence of a phase (a property's example: the cut window said weight_loading where
    the whole log says distributed_init)."""
    line = b'  File "/sgl-workspace/sglang/python/sglang/srt/distributed/parallel_state.py", line 1660, in initialize_model'
    cut = parse_bytes(line)
    assert cut.outcome == "failed" and cut.phase is not None and cut.phase.value == "launch"
    assert cut.lines.truncated == 1
    whole = parse_bytes(line + b"\n")  # the same line with its newline is whole: its function counts
    assert whole.phase is not None and whole.phase.value == "weight_loading"
