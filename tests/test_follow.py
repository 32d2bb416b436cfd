"""`logphase follow` through real pipes and files written by another process at a controlled pace.

No test sleeps for a fixed time to let something happen: each waits for a record with a deadline.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from logphase.faces.live.follow import Follower, FollowOptions, follow_file
from logphase.faces.live.follow_records import FollowRecord, PhaseRecord, SummaryRecord, TimeoutRecord
from tests.logs import kv_failure, tp2_startup, written_long_ago

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


def rest_of_output(proc: subprocess.Popen[bytes]) -> tuple[bytes, bytes]:
    """What is left on stdout and stderr once the process ends. Not communicate(): it reads the
    pipes' file descriptors, and would miss what records() already buffered."""
    assert proc.stdout is not None and proc.stderr is not None
    timer = threading.Timer(DEADLINE, proc.kill)
    timer.start()
    try:
        out = proc.stdout.read()
        err = proc.stderr.read()
        proc.wait()
    finally:
        timer.cancel()
    return out, err


def run_to_end(proc: subprocess.Popen[bytes]) -> tuple[list[dict[str, object]], int]:
    out, err = rest_of_output(proc)
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
    assert [r["kind"] for r in recs][-3:] == ["outcome", "draining", "summary"]


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


def read_until(recs: Iterator[dict[str, object]], kind: str, phase: str | None = None) -> list[dict[str, object]]:
    """The records up to the first of this kind (and phase): proof that follow has read that far."""
    seen = []
    for record in recs:
        seen.append(record)
        if record["kind"] == kind and (phase is None or record.get("phase") == phase):
            return seen
    raise AssertionError(f"follow ended before a {kind} record: {seen}")


def test_truncation_is_reported_and_the_new_content_read(tmp_path: Path) -> None:
    """Each change waits for follow to have seen the one before (its record), not for a time: a
    truncation is only visible to a reader that had read further than the new size."""
    log = tmp_path / "server.log"
    proc = follow(str(log))
    recs = records(proc)
    assert next(recs)["kind"] == "waiting"
    log.write_text(tp2_startup(ready=False))
    seen = read_until(recs, "phase", "cuda_graph_capture")
    log.write_bytes(b"")  # truncated in place, as `> server.log` does
    seen += read_until(recs, "truncated")
    with log.open("a") as f:
        f.write(tp2_startup())
    rest, code = run_to_end(proc)
    seen += rest
    kinds = [r["kind"] for r in seen]
    assert "truncated" in kinds and code == 0
    assert phases(seen)[-1] == "ready"


def test_rotation_finishes_the_old_file_first(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    text = tp2_startup()
    head, tail = text[: text.index("[2026-05-09 09:20:31")], text[text.index("[2026-05-09 09:20:31") :]
    proc = follow(str(log))
    recs = records(proc)
    assert next(recs)["kind"] == "waiting"
    log.write_text(head)
    seen = read_until(recs, "phase", "cuda_graph_capture")  # follow holds the first file open
    log.rename(tmp_path / "server.log.1")
    log.write_text(tail)
    rest, code = run_to_end(proc)
    seen += rest
    assert "rotated" in [r["kind"] for r in seen]
    assert code == 0 and phases(seen)[-1] == "ready"


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
    written_long_ago(log)
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
    out, err = rest_of_output(proc)
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
    assert "weight_loading" not in [getattr(r, "phase", None) for r in recs]
    recs = follower.feed(text[cut:], 2.0)
    assert "weight_loading" in [getattr(r, "phase", None) for r in recs]
    assert follower.report.outcome == "ready"


def test_stalls_repeat_at_growing_intervals() -> None:
    follower = Follower("x", FollowOptions(stall_after=10.0), now=0.0)
    follower.feed(tp2_startup(ready=False).encode(), 0.0)
    assert follower.tick(9.0) == []
    assert [r.kind for r in follower.tick(10.5)] == ["stall"]
    assert follower.tick(15.0) == []
    assert [r.kind for r in follower.tick(20.5)] == ["stall"]
    assert follower.tick(35.0) == []
    assert [r.kind for r in follower.tick(40.5)] == ["stall"]


def test_open_traceback_is_reported_after_the_flush_timeout() -> None:
    follower = Follower("x", FollowOptions(flush_timeout=1.0), now=0.0)
    text = kv_failure()
    cut = text.index("  File")
    recs = follower.feed(text[: cut + 60].encode(), 0.0)
    assert "failure" not in [r.kind for r in recs]
    assert "failure" in [r.kind for r in follower.tick(1.5)]


# -- the README recipe: a pipe with tee must never lose the server's log ------------------------------

SERVING_WRITER = r"""
import os, sys, time
startup, flag, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
out = sys.stdout.buffer
out.write(open(startup, "rb").read())
out.flush()
deadline = time.time() + 30
while not os.path.exists(flag) and time.time() < deadline:  # until follow has said ready
    time.sleep(0.01)
for i in range(n):  # the server goes on serving after ready
    out.write(b"[2026-05-09 09:21:%02d TP0] Decode batch, #running-req: 1, #token: 9, gen throughput (token/s): 1.0\n" % (i % 60))
    out.flush()
"""


def test_tee_recipe_keeps_the_whole_log_after_ready(tmp_path: Path) -> None:
    """`server 2>&1 | tee server.log | logphase follow`: the verdict comes at ready, and the
    server's log is still written in full after it."""
    startup, flag, log = tmp_path / "startup.log", tmp_path / "ready.flag", tmp_path / "server.log"
    startup.write_text(tp2_startup())
    serving = 300
    script = (
        f"set -o pipefail; {sys.executable} -c {shlex_quote(SERVING_WRITER)} {startup} {flag} {serving} "
        f'| tee {log} | {sys.executable} -m logphase follow --json; echo "status ${{PIPESTATUS[*]}}" >&2'
    )
    proc = subprocess.Popen(["bash", "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None
    seen = []
    for raw in proc.stdout:
        record = json.loads(raw)
        seen.append(record["kind"])
        if record["kind"] == "outcome":
            assert record["outcome"] == "ready"
            flag.touch()  # the verdict came while the writer is still running
            break
    rest, err = rest_of_output(proc)
    kinds = seen + [json.loads(line)["kind"] for line in rest.splitlines()]
    assert kinds[-1] == "summary" and "draining" in kinds, kinds
    assert json.loads(rest.splitlines()[-1])["exit_code"] == 0
    assert b"status 0 0 0" in err, err
    assert log.read_text().count("\n") == tp2_startup().count("\n") + serving
    assert proc.returncode == 0


def test_exit_at_verdict_leaves_a_pipe_at_once() -> None:
    read_end, write_end = os.pipe()
    proc = follow("--exit-at-verdict", stdin=read_end)
    os.close(read_end)
    os.write(write_end, tp2_startup().encode())  # the pipe stays open: only the verdict ends follow
    recs, code = run_to_end(proc)
    os.close(write_end)
    assert code == 0 and [r["kind"] for r in recs][-2:] == ["outcome", "summary"]


def shlex_quote(text: str) -> str:
    import shlex

    return shlex.quote(text)


# -- --expect: unverified only once the run shows it -------------------------------------------------


def test_expect_is_not_unverified_before_server_args() -> None:
    launch_warnings = (
        "/opt/sglang/launch_server.py:12: UserWarning: 'python -m sglang.launch_server' is still supported\n"
        "  warnings.warn(\n"
        "[2026-05-09 09:19:59] Attention backend not specified. Use flashinfer backend by default.\n"
    )
    follower = Follower("x", FollowOptions(expect={"mem_fraction_static": "0.85", "max_running_requests": "64"}), now=0.0)
    recs = follower.feed(launch_warnings.encode(), 0.0)
    recs += follower.feed(tp2_startup().encode(), 1.0)
    assert [r for r in recs if r.kind == "warning"] == []
    assert follower.report.outcome == "ready"


def test_expect_unverified_once_ranks_work_without_server_args() -> None:
    follower = Follower("x", FollowOptions(expect={"mem_fraction_static": "0.85"}), now=0.0)
    no_dump = tp2_startup().split("\n", 1)[1]
    head = no_dump[: no_dump.index("Load weight begin")]
    recs = follower.feed(head.encode(), 0.0)
    kinds = [r.warning.kind for r in recs if r.kind == "warning"]  # type: ignore[union-attr]
    assert kinds == ["expect_unverified", "partial_log"]  # no server_args: the launch is not in the log


# -- a stale file: its run's records are not this run's ---------------------------------------------


def test_stale_file_reports_no_outcome_of_the_old_run(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_text(tp2_startup())
    written_long_ago(log)
    recs, code = run_to_end(follow(str(log), "--timeout", "1"))
    assert [r["kind"] for r in recs] == ["stale", "timeout"]
    assert recs[0]["outcome"] == "ready" and recs[1]["stale"] is True and code == 124


# -- every phase entered gets its record, whatever the reads -----------------------------------------


def follower_records(data: bytes, cuts: list[int]) -> list[object]:
    follower = Follower("x", FollowOptions(), now=0.0)
    out: list[object] = []
    last = 0
    for cut in [*sorted(set(cuts)), len(data)]:
        out.extend(follower.feed(data[last:cut], 1.0))
        last = cut
    out.extend(follower.finish())
    return out


def phase_records(records: list[object]) -> list[tuple[object, ...]]:
    """(phase, rank, line) of each phase record: what a record can know when it is printed (its
    time may come later, when the first phase's first lines carry none)."""
    return sorted((r.phase.value, r.rank, r.line) for r in records if getattr(r, "kind", "") == "phase")  # type: ignore[attr-defined]


def test_cat_into_follow_prints_every_phase() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "logphase", "follow", "--json"],
        input=tp2_startup().encode(),
        capture_output=True,
        timeout=DEADLINE,
    )
    recs = [json.loads(line) for line in proc.stdout.splitlines()]
    order = ["launch", "distributed_init", "weight_loading", "memory_pool", "cuda_graph_capture", "warmup", "ready"]
    assert phases(recs) == order and proc.returncode == 0


# -- a file by name, driven in-process: each poll's pause runs the next step of a script --------------


def follow_scripted(path: Path, steps: list[Callable[[], None]], until: str = "outcome") -> list[FollowRecord]:
    """follow_file with a fake clock; its n-th pause between polls runs ``steps[n]`` (nothing once
    they are done, and --timeout then ends it)."""
    clock = [0.0]
    pauses = iter(steps)

    def sleep(seconds: float) -> None:
        clock[0] += max(seconds, 0.01)
        step = next(pauses, None)
        if step is not None:
            step()

    options = FollowOptions(until=until, timeout=600.0)
    return list(follow_file(str(path), options, clock=lambda: clock[0], sleep=sleep))


def test_truncate_and_rewrite_longer_is_seen(tmp_path: Path) -> None:
    """The server restarts and its new run is already longer than what was read when we look:
    the file's first bytes changed, so it is a truncation, and the new run is read from its start."""
    log = tmp_path / "server.log"
    log.write_text("\n".join(tp2_startup(ready=False).splitlines()[:5]) + "\n")
    rewritten = tp2_startup().replace("2026-05-09 09:2", "2026-05-09 10:2")  # the new run's own stamps

    def rewrite() -> None:
        log.write_text(rewritten)  # truncate and write, between two polls

    recs = follow_scripted(log, [rewrite])
    kinds = [r.kind for r in recs]
    assert "truncated" in kinds
    after = recs[kinds.index("truncated") + 1 :]
    assert next(r.phase.value for r in after if isinstance(r, PhaseRecord)) == "launch"  # launch is not lost
    assert (
        isinstance(recs[-1], SummaryRecord)
        and recs[-1].exit_code == 0
        and str(recs[-1].report.phases[0].start).startswith("2026-05-09T10")
    )


def test_deleted_file_is_said_and_its_return_awaited(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_text(tp2_startup(ready=False))

    def nothing() -> None:
        pass

    def reappear() -> None:
        log.write_text(tp2_startup())

    recs = follow_scripted(log, [log.unlink, nothing, nothing, reappear])
    kinds = [r.kind for r in recs]
    assert kinds.count("deleted") == 1 and kinds.index("deleted") < kinds.index("rotated")
    assert isinstance(recs[-1], SummaryRecord) and recs[-1].exit_code == 0


def test_deleted_file_without_return_times_out_with_the_record(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_text(tp2_startup(ready=False))
    recs = follow_scripted(log, [log.unlink])
    kinds = [r.kind for r in recs]
    assert kinds.count("deleted") == 1 and kinds[-1] == "timeout"


def test_file_timeout_reads_the_partial_last_line(tmp_path: Path) -> None:
    """On a file by name the end of the input is the timeout: the last line without a newline is
    then read (not before: the server may still be writing it)."""
    log = tmp_path / "server.log"
    text = tp2_startup(ready=False).rstrip("\n")
    log.write_text(text)
    recs = follow_scripted(log, [], until="eof")
    timeout = recs[-1]
    assert isinstance(timeout, TimeoutRecord)
    assert timeout.report.lines.total == len(text.splitlines())


# -- a named pipe, and a reader that goes away ----------------------------------------------------------


def test_fifo_by_name_is_read_as_a_pipe(tmp_path: Path) -> None:
    fifo = tmp_path / "server.fifo"
    os.mkfifo(fifo)
    proc = follow(str(fifo))
    with open(fifo, "wb") as writer:  # opens once follow has opened it for reading
        writer.write(kv_failure().encode())
    recs, code = run_to_end(proc)
    assert code == 1 and recs[-1]["kind"] == "summary"
    assert "kv_cache_insufficient_memory" in [r["failure"]["cause"] for r in recs if r["kind"] == "failure"]  # type: ignore[index]


def test_fifo_without_writer_honours_the_timeout(tmp_path: Path) -> None:
    fifo = tmp_path / "server.fifo"
    os.mkfifo(fifo)
    recs, code = run_to_end(follow(str(fifo), "--timeout", "0.5"))
    assert code == 124 and recs[-1]["kind"] == "timeout"


def test_closed_stdout_never_exits_ready() -> None:
    """`logphase follow | head -1` on a log that fails: the exit code is 141 (output closed), never 0."""
    read_end, write_end = os.pipe()
    proc = follow(stdin=read_end)
    os.close(read_end)
    first, *rest = lines_of(kv_failure())
    os.write(write_end, first)
    assert proc.stdout is not None
    proc.stdout.readline()
    proc.stdout.close()  # what `| head -1` does
    for line in rest:
        os.write(write_end, line)
    os.close(write_end)
    proc.wait(timeout=DEADLINE)
    assert proc.stderr is not None
    err = proc.stderr.read()
    assert proc.returncode == 141 and b"Traceback" not in err


# -- one reader: follow reads as parse does -----------------------------------------------------------


def _served_log(lines: int) -> bytes:
    """A ready start-up, then a serving tail of batch statistics (what a day-old server's log is)."""
    tail = "".join(
        f"[2026-05-12 18:{21 + i // 3000:02d}:{(i // 60) % 60:02d} TP0] Decode batch. #running-req: 1, #token: {100 + i}, "
        "token usage: 0.01, gen throughput (token/s): 40.00, #queue-req: 0, \n"
        for i in range(lines)
    )
    return tp2_startup(ready=True).encode() + tail.encode()


def test_a_backlog_is_read_in_bulk_as_parse_reads_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """follow's engine takes runs of serving lines a block at a time, as parse's does: only the
    start-up's lines go the long way, and the records are those of the whole input."""
    from logphase.engine.engine import Engine
    from logphase.reading.lines import LogicalLine

    long_way: list[int] = []
    original = Engine._line

    def counted(self: Engine, line: LogicalLine) -> None:
        long_way.append(1)
        original(self, line)

    monkeypatch.setattr(Engine, "_line", counted)
    follower = Follower("<stdin>", FollowOptions(until="eof"), now=0.0)
    records = [*follower.feed(_served_log(20_000), 1.0), *follower.finish(2.0)]
    assert len(long_way) < 200, f"{len(long_way)} of 20,000+ lines went the long way"
    assert [r.kind for r in records if r.kind in ("phase", "outcome")][-1] == "outcome"
    assert isinstance(records[-1], SummaryRecord) and records[-1].report.outcome == "ready"


def test_a_pipe_s_backlog_is_read_in_blocks_not_in_the_pipe_s_buffer() -> None:
    """A pipe hands over at most its buffer a read (64 KiB by default): follow widens it to a block
    and takes what is there without waiting, so that it makes one report a block of backlog."""
    import fcntl

    from logphase.faces.live import follow as follow_module

    read_fd, write_fd = os.pipe()
    try:
        follow_module._widen_pipe(read_fd)
        assert fcntl.fcntl(read_fd, 1032) >= follow_module.READ_SIZE  # F_GETPIPE_SZ
        data = _served_log(12_000)[: follow_module.READ_SIZE]
        written = 0
        while written < len(data):  # fits the widened pipe: no reader needed
            written += os.write(write_fd, data[written:])
        first = os.read(read_fd, 1 << 16)  # a small first read, as a pipe's buffer would give
        assert follow_module._backlog(read_fd, first) == data
    finally:
        os.close(read_fd)
        os.close(write_fd)
