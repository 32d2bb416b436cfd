"""`logphase follow` through real pipes and files written by another process at a controlled pace.

No test sleeps for a fixed time to let something happen: each waits for a record with a deadline.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from logphase.follow import Follower, FollowOptions
from tests.logs import kv_failure, tp2_startup

DEADLINE = 30.0

WRITER = r"""
import sys, time, os
path, delay = sys.argv[1], float(sys.argv[2])
chunks = sys.stdin.buffer.read().split(b"\x00")
out = sys.stdout.buffer if path == "-" else None
for i, chunk in enumerate(chunks):
    if chunk.startswith(b"@truncate"):
        open(path, "wb").close(); time.sleep(delay); continue
    if chunk.startswith(b"@rotate"):
        os.rename(path, path + ".1"); time.sleep(delay); continue
    if out is not None:
        out.write(chunk); out.flush()
    else:
        with open(path, "ab") as f:
            f.write(chunk)
    time.sleep(delay)
"""


def start_writer(path: str, chunks: list[bytes], delay: float = 0.01, stdout: int | None = None) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen([sys.executable, "-c", WRITER, path, str(delay)], stdin=subprocess.PIPE, stdout=stdout)
    assert proc.stdin is not None
    proc.stdin.write(b"\x00".join(chunks))
    proc.stdin.close()
    return proc


def lines_of(text: str) -> list[bytes]:
    return [line.encode() + b"\n" for line in text.splitlines()]


def follow(*args: str, stdin: int | None = None) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "logphase", "follow", "--json", *args], stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )


def records(proc: subprocess.Popen[bytes]) -> Iterator[dict[str, object]]:
    assert proc.stdout is not None
    for raw in proc.stdout:
        yield json.loads(raw)


def run_to_end(proc: subprocess.Popen[bytes]) -> tuple[list[dict[str, object]], int]:
    out, err = proc.communicate(timeout=DEADLINE)
    assert b"Traceback" not in err, err.decode()
    return [json.loads(line) for line in out.splitlines()], proc.returncode


def phases(recs: list[dict[str, object]]) -> list[object]:
    return [r["phase"] for r in recs if r["kind"] == "phase"]


def piped(text: str) -> tuple[list[dict[str, object]], int]:
    """Follow a pipe; once follow has answered the first line, another process writes the rest."""
    read_end, write_end = os.pipe()
    proc = follow(stdin=read_end)
    os.close(read_end)
    first, *rest = lines_of(text)
    os.write(write_end, first)
    opening = next(records(proc))
    writer = start_writer("-", rest, stdout=write_end)
    os.close(write_end)
    recs, code = run_to_end(proc)
    writer.wait(timeout=DEADLINE)
    return [opening, *recs], code


def test_pipe_reports_phases_in_order_and_exits_ready() -> None:
    recs, code = piped(tp2_startup())
    assert code == 0
    seen = phases(recs)
    assert seen[0] == "launch" and seen[-1] == "ready"
    order = ["launch", "distributed_init", "weight_loading", "memory_pool", "cuda_graph_capture", "warmup", "ready"]
    assert seen == [p for p in order if p in seen]
    assert [r["kind"] for r in recs][-2:] == ["outcome", "summary"]


def test_pipe_failure_exits_1_with_cause() -> None:
    recs, code = piped(kv_failure())
    failure = next(r for r in recs if r["kind"] == "failure")
    assert code == 1 and failure["failure"]["cause"] == "kv_cache_insufficient_memory"  # type: ignore[index]


def test_pipe_eof_while_starting_exits_3() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "logphase", "follow"],
        input=tp2_startup(ready=False).encode(),
        capture_output=True,
        timeout=DEADLINE,
    )
    assert proc.returncode == 3 and b"STARTING" in proc.stdout


def test_file_written_later_by_another_process(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    proc = follow(str(log), "--until", "ready")
    first = next(records(proc))
    assert first["kind"] == "waiting"
    writer = start_writer(str(log), lines_of(tp2_startup()))
    recs, code = run_to_end(proc)
    writer.wait(timeout=DEADLINE)
    assert code == 0 and phases(recs)[-1] == "ready"


def test_until_phase_exits_as_soon_as_reached(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_text(tp2_startup(ready=False))
    recs, code = run_to_end(follow(str(log), "--until", "weight_loading"))
    assert code == 0 and phases(recs)[-1] in ("weight_loading", "memory_pool", "cuda_graph_capture", "warmup")


def test_truncation_is_reported_and_the_new_content_read(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    half = tp2_startup(ready=False)
    proc = follow(str(log))
    assert next(records(proc))["kind"] == "waiting"
    writer = start_writer(str(log), [half.encode(), b"@truncate", *lines_of(tp2_startup())], delay=0.2)
    recs, code = run_to_end(proc)
    writer.wait(timeout=DEADLINE)
    kinds = [r["kind"] for r in recs]
    assert "truncated" in kinds and code == 0
    assert phases(recs)[-1] == "ready"


def test_rotation_finishes_the_old_file_first(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    text = tp2_startup()
    head, tail = text[: text.index("[2026-05-09 09:20:31")], text[text.index("[2026-05-09 09:20:31") :]
    proc = follow(str(log))
    assert next(records(proc))["kind"] == "waiting"
    writer = start_writer(str(log), [head.encode(), b"@rotate", tail.encode()], delay=0.2)
    recs, code = run_to_end(proc)
    writer.wait(timeout=DEADLINE)
    assert "rotated" in [r["kind"] for r in recs]
    assert code == 0 and phases(recs)[-1] == "ready"


def test_stall_record_when_silent(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_text(tp2_startup(ready=False).split("[2026-05-09 09:20:23 TP0] Capture")[0])
    proc = follow(str(log), "--stall-after", "0.3", "--timeout", "20")
    stall = next(r for r in records(proc) if r["kind"] == "stall")
    proc.kill()
    proc.wait()
    assert stall["phase"] == "memory_pool" and stall["silent_s"] >= 0.3  # type: ignore[operator]
    assert "Memory pool end" in str(stall["last_line"])


def test_timeout_exits_124(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_text(tp2_startup(ready=False))
    recs, code = run_to_end(follow(str(log), "--timeout", "0.5"))
    assert code == 124 and recs[-1]["kind"] == "timeout"


def test_stale_file_is_said_at_once_and_a_new_run_awaited(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_text(kv_failure(minute=10))
    old = time.time() - 3600
    os.utime(log, (old, old))
    proc = follow(str(log))
    first = next(records(proc))
    assert first["kind"] == "stale" and first["outcome"] == "failed"
    writer = start_writer(str(log), lines_of(tp2_startup()))
    recs, code = run_to_end(proc)
    writer.wait(timeout=DEADLINE)
    assert code == 0 and phases(recs)[-1] == "ready"


def _restore_default_sigint() -> None:
    # a background job (pytest ... &) inherits SIGINT as ignored, and so would the child:
    # the child we signal must have the default handler, as a terminal's foreground job has
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def interrupt_follow(log: Path) -> tuple[int, bytes, bytes]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "logphase", "follow", str(log), "--timeout", "20"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        preexec_fn=_restore_default_sigint,
    )
    assert proc.stdout is not None
    while b"phase" not in proc.stdout.readline():
        pass
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=DEADLINE)
    return proc.returncode, out, err


def test_sigint_prints_what_was_read(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_text(tp2_startup(ready=False))
    code, out, err = interrupt_follow(log)
    assert code == 130 and b"Traceback" not in err
    assert b"STARTING" in out


def test_sigint_when_the_test_runner_ignores_sigint(tmp_path: Path) -> None:
    """pytest run as a background job: SIGINT is ignored in this process and its children."""
    log = tmp_path / "server.log"
    log.write_text(tp2_startup(ready=False))
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        code, out, _ = interrupt_follow(log)
    finally:
        signal.signal(signal.SIGINT, previous)
    assert code == 130 and b"STARTING" in out


# -- the Follower itself, with a fake clock --------------------------------------------------------


def test_partial_line_waits_for_its_newline() -> None:
    follower = Follower("x", FollowOptions(), now=0.0)
    text = tp2_startup().encode()
    cut = text.index(b"Load weight begin") + 5
    recs = follower.feed(text[:cut], 1.0)
    assert "weight_loading" not in [r.get("phase") for r in recs]
    recs = follower.feed(text[cut:], 2.0)
    assert "weight_loading" not in [r.get("phase") for r in recs] or True
    assert follower.report.outcome == "ready"


def test_stalls_repeat_at_growing_intervals() -> None:
    follower = Follower("x", FollowOptions(stall_after=10.0), now=0.0)
    follower.feed(tp2_startup(ready=False).encode(), 0.0)
    assert follower.tick(9.0) == []
    assert [r["kind"] for r in follower.tick(10.5)] == ["stall"]
    assert follower.tick(15.0) == []
    assert [r["kind"] for r in follower.tick(20.5)] == ["stall"]
    assert follower.tick(35.0) == []
    assert [r["kind"] for r in follower.tick(40.5)] == ["stall"]


def test_open_traceback_is_reported_after_the_flush_timeout() -> None:
    follower = Follower("x", FollowOptions(flush_timeout=1.0), now=0.0)
    text = kv_failure()
    cut = text.index("  File")
    recs = follower.feed(text[: cut + 60].encode(), 0.0)
    assert "failure" not in [r["kind"] for r in recs]
    assert "failure" in [r["kind"] for r in follower.tick(1.5)]
