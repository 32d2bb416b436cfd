"""vLLM's envelope and detection (issue 21, points 1-3): process prefixes as rank tags, a prefixed
traceback as one record, Ray's ``[repeated Nx across cluster]``, a year for stamps that print none,
and which server (and version) each run is."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import date
from pathlib import Path

import pytest

from logphase import parse_bytes, parse_file
from logphase.engine.engine import Engine
from logphase.reading.clock import LogClock, YearHint
from logphase.reading.envelope import split_envelope
from logphase.reporting.report import Report
from logphase.vocabulary import events as ev
from logphase.vocabulary.phases import Phase
from tests.conftest import FIXTURES

# -- 1. process prefixes -> rank tags, per era ----------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "rank", "writer"),
    [
        # 0.5-0.10 V0 multiproc worker: known by its pid only (0.5-0.7 logger prefix without the bracket)
        ("(VllmWorkerProcess pid=232) INFO 08-23 08:25:25 worker.py:132] msg", "pid=232", "VllmWorkerProcess pid=232"),
        # Ray actor (V0 and V1): the pid and its node
        (
            "(RayWorkerWrapper pid=609874, ip=10.0.0.2) INFO 11-18 18:07:28 worker.py:1] msg",
            "pid=609874 ip=10.0.0.2",
            "RayWorkerWrapper pid=609874, ip=10.0.0.2",
        ),
        # 0.8-0.9 V1: the global rank
        ("(VllmWorker rank=1 pid=9) INFO 04-30 10:20:35 [monitor.py:33] msg", "TP1", "VllmWorker rank=1 pid=9"),
        # 0.10.0-0.10.1: tags as printed
        ("(VllmWorker TP1 pid=3) INFO 08-17 22:48:21 [default_loader.py:262] msg", "TP1", "VllmWorker TP1 pid=3"),
        ("(VllmWorker DP1 TP0 pid=3) INFO 08-17 22:48:21 [default_loader.py:262] msg", "DP1 TP0", "VllmWorker DP1 TP0 pid=3"),
        # 0.10.2+: Worker_<tags>
        ("(Worker_TP0 pid=34322) INFO 10-14 22:05:48 [gpu_worker.py:1] msg", "TP0", "Worker_TP0 pid=34322"),
        (
            "(Worker_DP1_PP0_TP2_EP3 pid=88) INFO 10-14 22:05:48 [gpu_worker.py:1] msg",
            "DP1 PP0 TP2 EP3",
            "Worker_DP1_PP0_TP2_EP3 pid=88",
        ),
        # the engine core and the front end are the server's own processes: no rank
        ("(EngineCore_DP0 pid=104) INFO 10-14 22:05:48 [core.py:1] msg", None, "EngineCore_DP0 pid=104"),
        ("(EngineCore_0 pid=104) INFO 08-17 22:48:21 [core.py:1] msg", None, "EngineCore_0 pid=104"),
        ("(APIServer pid=1) INFO 12-01 10:00:00 [api_server.py:1] msg", None, "APIServer pid=1"),
        # a child forked from a decorated parent: both prefixes, the child's decides
        (
            "(EngineCore_0 pid=3933741) (VllmWorker TP1 pid=3933749) INFO 08-17 22:48:21 [x.py:1] msg",
            "TP1",
            "VllmWorker TP1 pid=3933749",
        ),
    ],
)
def test_process_prefix_gives_rank_and_writer(line: str, rank: str | None, writer: str) -> None:
    env = split_envelope(line)
    assert (env.rank, env.writer, env.message) == (rank, writer, "msg")
    assert env.process == writer
    # vLLM's stamp (month and day, no year) is its own logger's: the server's clock, no wrapper's
    assert env.logger_stamp is not None and env.logger_stamp.year is None and env.outer is None


def test_empty_print_line_of_a_child_is_its_prefix_alone() -> None:
    env = split_envelope("(Worker_TP0 pid=34322)")
    assert (env.rank, env.message) == ("TP0", "")


def test_other_parentheses_are_not_vllm_processes() -> None:
    # a Ray actor of another program (SGLang's): a writer, no rank; Ray's dedup note is a message
    env = split_envelope("(SGLangEngine pid=720234, ip=11.251.213.106) [2025-05-23 18:02:29] Init torch distributed begin.")
    assert (env.rank, env.process, env.writer) == (None, None, "SGLangEngine pid=720234, ip=11.251.213.106")
    note = "(Ray deduplicates logs by default. Set RAY_DEDUP_LOGS=0 to disable log deduplication)"
    assert split_envelope(note).message == note
    # uvicorn's "INFO:     " is a message, not vLLM's logger prefix
    assert split_envelope("INFO:     Application startup complete.").message == "INFO:     Application startup complete."


def test_colour_codes_around_the_prefix_are_stripped() -> None:
    """Until 0.11 the process prefix is coloured even in files."""
    log = (
        "\x1b[1;36m(VllmWorker rank=1 pid=9)\x1b[0;0m ERROR 04-30 10:20:40 [multiproc_executor.py:470] Traceback (most recent call last):\n"
        '\x1b[1;36m(VllmWorker rank=1 pid=9)\x1b[0;0m ERROR 04-30 10:20:40 [multiproc_executor.py:470]   File "/v/w.py", line 3, in capture_model\n'
        "\x1b[1;36m(VllmWorker rank=1 pid=9)\x1b[0;0m ERROR 04-30 10:20:40 [multiproc_executor.py:470] torch.OutOfMemoryError: CUDA out of memory.\n"
    )
    failure = parse_bytes(log.encode()).failure
    assert failure is not None and (failure.rank, failure.line) == ("TP1", 1)


# -- 1. a prefixed traceback is one record -----------------------------------------------------------


def _events(log: str) -> tuple[list[ev.EventBase], Report]:
    engine = Engine(source="x")
    events = engine.feed(log.encode())
    events += engine.finish() or []
    return events, engine.report()


def test_logged_traceback_with_prefix_on_every_line_is_one_record() -> None:
    """V1's NewLineFormatter repeats the whole prefix on each line of a message, every line but the
    last ending in \\r; another process's line may come between them."""
    prefix = "(VllmWorker rank=1 pid=9) ERROR 04-30 10:20:40 [multiproc_executor.py:470] "
    log = (
        "(VllmWorker rank=1 pid=9) INFO 04-30 10:20:35 [gpu_model_runner.py:1] Model loading took 3 GiB and 4.1 seconds\n"
        f"{prefix}Traceback (most recent call last):\r\n"
        "(VllmWorker rank=0 pid=8) INFO 04-30 10:20:40 [x.py:1] another process's line\n"
        f'{prefix}  File "/v/gpu_model_runner.py", line 3, in capture_model\r\n'
        f"{prefix}    self.capture()\r\n"
        f"{prefix}torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.02 GiB.\n"
    )
    events, report = _events(log)
    tracebacks = [e for e in events if isinstance(e, ev.PythonException)]
    assert len(tracebacks) == 1
    assert (tracebacks[0].line, tracebacks[0].end_line, tracebacks[0].rank) == (2, 6, "TP1")
    assert report.failure is not None
    assert (report.failure.cause.value, report.failure.rank, report.failure.line) == ("cuda_oom", "TP1", 2)


def test_uncaught_traceback_of_a_child_with_its_process_prefix_is_one_record() -> None:
    """Until 0.11 a child's stderr is prefixed too: an uncaught traceback carries the process prefix only."""
    log = (
        "(VllmWorkerProcess pid=232) Process VllmWorkerProcess:\n"
        "(VllmWorkerProcess pid=232) Traceback (most recent call last):\n"
        "(EngineCore_DP0 pid=104) INFO 10-14 22:05:48 [core.py:1] something\n"
        '(VllmWorkerProcess pid=232)   File "/v/worker.py", line 9, in init_device\n'
        "(VllmWorkerProcess pid=232)     init()\n"
        "(VllmWorkerProcess pid=232) RuntimeError: NCCL error: unhandled system error\n"
    )
    events, report = _events(log)
    tracebacks = [e for e in events if isinstance(e, ev.PythonException)]
    assert [(t.line, t.end_line, t.rank) for t in tracebacks] == [(2, 6, "pid=232")]
    assert report.failure is not None and report.failure.rank == "pid=232"


# -- 1. Ray's [repeated Nx across cluster] ------------------------------------------------------------


def test_repeated_suffix_is_taken_off_the_message_and_counted() -> None:
    env = split_envelope(
        "(RayWorkerWrapper pid=7, ip=10.0.0.3) INFO 11-18 18:07:28 worker.py:1] Loading model weights took 3.7 GB [repeated 3x across cluster]"
    )
    assert (env.message, env.repeated, env.rank) == ("Loading model weights took 3.7 GB", 3, "pid=7 ip=10.0.0.3")
    assert split_envelope("a line [repeated]").repeated == 0


def test_repeated_line_reads_as_the_line_and_stands_for_more() -> None:
    """The folded line is recognised as its text without the suffix; the report counts the lines
    Ray folded into it (lines.repeated), beyond the input's own."""
    lines = [
        "(WorkerDict pid=1) [2025-05-23 18:02:29] Load weight begin. avail mem=89.40 GB",
        "(WorkerDict pid=2) [2025-05-23 18:02:30] Load weight begin. avail mem=89.40 GB [repeated 7x across cluster]",
    ]
    plain = parse_bytes((lines[0] + "\n" + lines[1].replace(" [repeated 7x across cluster]", "") + "\n").encode())
    folded = parse_bytes(("\n".join(lines) + "\n").encode())
    assert folded.phase is Phase.WEIGHT_LOADING
    assert (folded.phase, folded.lines.events, folded.lines.unrecognized) == (
        plain.phase,
        plain.lines.events,
        plain.lines.unrecognized,
    )
    assert (folded.lines.repeated, plain.lines.repeated) == (7, 0)
    assert folded.lines.total == plain.lines.total == 2


# -- 2. a year for stamps that print none --------------------------------------------------------------

_VLLM_LINE = (
    "INFO {md} 10:00:00 [api_server.py:1] vLLM API server version 0.6.4.post1\nINFO {md2} 00:00:05 [x.py:1] another line\n"
)


def _times(clock: LogClock, *lines: str) -> list[str | None]:
    return [clock.of(split_envelope(line)) for line in lines]


def test_without_a_source_the_year_stays_unknown() -> None:
    clock = LogClock()
    assert _times(clock, "INFO 12-31 10:00:00 [a.py:1] x") == ["0001-12-31T10:00:00"]
    assert clock.year_inferred is None
    assert parse_bytes(_VLLM_LINE.format(md="12-31", md2="01-01").encode()).year_inferred is None


def test_file_time_gives_the_year_and_new_year_is_crossed() -> None:
    """A file written on 5 Jan 2026: its Dec 31 lines are of 2025, its Jan 1 lines of 2026."""
    clock = LogClock(YearHint(date(2026, 1, 5), "file_time"))
    times = _times(clock, "INFO 12-31 23:59:58 [a.py:1] x", "(Worker_TP0 pid=5) INFO 01-01 00:00:05 [a.py:1] y")
    assert times == ["2025-12-31T23:59:58", "2026-01-01T00:00:05"]
    assert clock.year_inferred == (2025, "file_time")
    engine = Engine(source="x", year=YearHint(date(2026, 1, 5), "file_time"))
    engine.feed(_VLLM_LINE.format(md="12-31", md2="01-01").encode())
    engine.finish()
    report = engine.report()
    assert report.year_inferred is not None
    assert (report.year_inferred.year, report.year_inferred.source) == (2025, "file_time")


def test_journald_without_year_takes_the_hint_too() -> None:
    clock = LogClock(YearHint(date(2026, 12, 1), "current_year"))
    assert _times(clock, "Nov 30 12:00:00 host unit[42]: hello") == ["2026-11-30T12:00:00"]
    assert clock.year_inferred == (2026, "current_year")


def test_a_dated_wrapper_gives_the_year() -> None:
    log = "2024-03-02T10:00:00.123Z INFO 03-02 10:00:00 [api_server.py:1] vLLM API server version 0.8.5\n"
    report = parse_bytes(log.encode())
    assert report.year_inferred is not None
    assert (report.year_inferred.year, report.year_inferred.source) == (2024, "wrapper")


def test_sglang_stamps_carry_their_year_and_infer_none() -> None:
    report = parse_file(FIXTURES / "kv_cache_insufficient.log")
    assert report.year_inferred is None


def _read(log: str, year: YearHint | None) -> Report:
    engine = Engine(source="x", year=year)
    engine.feed(log.encode())
    engine.finish()
    return engine.report()


def test_a_year_printed_later_corrects_the_guess() -> None:
    """SGLang prints vLLM's platform line before its own first stamp: the year guessed for it (the
    file's, a year on) moves to the one SGLang prints, and no year is said to be inferred."""
    log = (
        "INFO 03-24 13:34:34 __init__.py:190] Automatically detected platform cuda.\n"
        "[2025-03-24 13:34:35] server_args=ServerArgs(model_path='m', tp_size=1)\n"
        "[2025-03-24 13:34:40 TP0] Init torch distributed begin.\n"
    )
    report = _read(log, YearHint(date(2026, 12, 2), "file_time"))
    assert report.year_inferred is None
    launch = report.phases[0]
    assert (launch.name, launch.start, launch.duration_s) == ("launch", "2025-03-24T13:34:34", 6.0)
    # the same lines wrapped by journald, which prints no year either: its times move as well
    journald = "".join(f"Mar 24 13:34:{34 + i} gpu-host sglang[42]: {line}\n" for i, line in enumerate(log.splitlines()))
    wrapped = _read(journald, YearHint(date(2026, 12, 2), "file_time"))
    assert wrapped.year_inferred is None
    assert wrapped.phases[0].start is not None and wrapped.phases[0].start.startswith("2025-03-24T13:34:3")


def test_a_clock_on_times_of_day_reads_a_month_and_day_as_a_time_of_day() -> None:
    """SGLang's stamps without a date (<= 0.3) put its lines on no date: vLLM's month and day on a
    line between them would move that line months away, so its time of day is taken alone."""
    clock = LogClock(YearHint(date(2026, 12, 2), "file_time"))
    lines = (
        "[23:59:30] server_args=ServerArgs()",
        "INFO 09-14 23:59:44 weight_utils.py:236] Using model weights format",
        "[00:00:05 TP0] x",
    )
    assert _times(clock, *lines) == ["0001-01-01T23:59:30", "0001-01-01T23:59:44", "0001-01-02T00:00:05"]
    assert clock.year_inferred is None


def test_a_year_guessed_stays_across_new_year() -> None:
    """The year of vLLM's stamps is guessed once, then follows its dates across New Year, whatever
    a wrapper that is no clock of the server's says (one stamp on every line, from March)."""
    wrapper = "2026-03-01T00:00:00.000000000Z "
    lines = (f"{wrapper}INFO 12-31 23:59:58 [a.py:1] x", f"{wrapper}INFO 01-01 00:00:05 [a.py:1] y")
    assert _times(LogClock(), *lines) == ["2026-12-31T23:59:58", "2027-01-01T00:00:05"]


def _cli(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-m", "logphase", *args], input=stdin, capture_output=True, timeout=60)


def test_cli_says_file_time_or_current_year(tmp_path: Path) -> None:
    path = tmp_path / "vllm.log"
    path.write_text(_VLLM_LINE.format(md="03-01", md2="03-01"))
    written = date(2023, 6, 1)
    stamp = float(__import__("datetime").datetime(2023, 6, 1, 12).timestamp())
    os.utime(path, (stamp, stamp))
    from_file = json.loads(_cli("parse", "--json", str(path)).stdout)
    assert from_file["year_inferred"] == {"year": written.year, "source": "file_time"}
    from_stdin = json.loads(_cli("parse", "--json", "-", stdin=path.read_bytes()).stdout)
    assert from_stdin["year_inferred"]["source"] == "current_year"
    assert from_stdin["year_inferred"]["year"] in (date.today().year, date.today().year - 1)


# -- 3. which server, and its version, per run ----------------------------------------------------------

_VLLM_V1 = (
    "(APIServer pid=7) INFO 09-25 16:02:31 [api_server.py:1896] vLLM API server version 0.10.2\n"
    "(APIServer pid=7) INFO 09-25 16:02:31 [utils.py:328] non-default args: {'model': 'Qwen/Qwen3-32B'}\n"
    "(EngineCore_DP0 pid=140) INFO 09-25 16:02:43 [core.py:76] Initializing a V1 LLM engine (v0.10.2) with config: model='Qwen/Qwen3-32B'\n"
)


def test_vllm_run_says_server_and_version() -> None:
    report = parse_bytes(_VLLM_V1.encode())
    assert (report.server, report.version, report.runs) == ("vllm", "0.10.2", 1)


def test_engine_init_alone_gives_the_version_v0() -> None:
    log = "INFO 11-18 18:07:28 llm_engine.py:249] Initializing an LLM engine (v0.6.4.post1) with config: model='m'\n"
    report = parse_bytes(log.encode())
    assert (report.server, report.version) == ("vllm", "0.6.4.post1")


def test_a_window_of_vllm_processes_is_vllm_without_a_version() -> None:
    log = "(Worker_TP0 pid=5) INFO 10-14 22:05:48 [gpu_worker.py:1] something\n"
    report = parse_bytes(log.encode())
    assert (report.server, report.version) == ("vllm", None)


def test_sglang_log_with_a_stray_vllm_line_stays_sglang() -> None:
    """SGLang imports vLLM's kernels: vLLM's platform line, with vLLM's logger prefix, is no vLLM run."""
    sglang = (FIXTURES / "kv_cache_insufficient.log").read_bytes()
    stray = b"INFO 04-06 14:51:04 [__init__.py:256] Automatically detected platform cuda.\n"
    alone, mixed = parse_bytes(sglang), parse_bytes(stray + sglang)
    assert (mixed.server, mixed.version, mixed.runs) == ("sglang", None, alone.runs)
    assert (mixed.outcome, mixed.phase, mixed.failure and mixed.failure.cause) == (
        alone.outcome,
        alone.phase,
        alone.failure and alone.failure.cause,
    )


def test_an_sglang_run_then_a_vllm_run_are_two_runs() -> None:
    sglang = (FIXTURES / "kv_cache_insufficient.log").read_bytes()
    data = sglang + _VLLM_V1.encode()
    engine = Engine(source="x")
    engine.feed(data)
    engine.finish()
    first, last = engine.report(run=1), engine.report()
    assert last.runs == 2
    assert (first.server, first.version, first.outcome) == ("sglang", None, "failed")
    assert (last.server, last.version) == ("vllm", "0.10.2")
    assert last.run_start_line == sglang.count(b"\n") + 1


def test_a_vllm_run_then_an_sglang_run_are_two_runs() -> None:
    sglang = (FIXTURES / "kv_cache_insufficient.log").read_bytes()
    engine = Engine(source="x")
    engine.feed(_VLLM_V1.encode() + sglang)
    engine.finish()
    assert [(engine.report(run=i).server, engine.report(run=i).version) for i in (1, 2)] == [("vllm", "0.10.2"), ("sglang", None)]


def test_a_vllm_relaunch_is_a_run_of_its_own() -> None:
    relaunch = _VLLM_V1.replace("0.10.2", "0.11.0")
    engine = Engine(source="x")
    engine.feed((_VLLM_V1 + relaunch).encode())
    engine.finish()
    report = engine.report()
    assert (report.runs, report.version, report.run_start_line) == (2, "0.11.0", 4)


def test_server_option_overrides_detection(tmp_path: Path) -> None:
    path = tmp_path / "v.log"
    path.write_text(_VLLM_V1)
    detected = json.loads(_cli("parse", "--json", str(path)).stdout)
    forced = json.loads(_cli("parse", "--json", "--server", "sglang", str(path)).stdout)
    assert (detected["server"], detected["version"]) == ("vllm", "0.10.2")
    assert (forced["server"], forced["version"], forced["runs"]) == ("sglang", None, 1)
    sglang = json.loads(_cli("parse", "--json", "--server", "vllm", str(FIXTURES / "kv_cache_insufficient.log")).stdout)
    assert sglang["server"] == "vllm"
    assert _cli("parse", "--server", "vllm", str(path), str(path)).returncode != 0  # one log at a time


def test_text_headline_names_server_and_version(tmp_path: Path) -> None:
    path = tmp_path / "v.log"
    path.write_text(_VLLM_V1)
    title = _cli("parse", str(path)).stdout.decode().splitlines()[0]
    assert title.startswith(f"{path} (vLLM 0.10.2): ")
    sglang = _cli("parse", str(FIXTURES / "kv_cache_insufficient.log")).stdout.decode().splitlines()[0]
    assert " (SGLang): FAILED" in sglang


def test_schema_documents_server_version_and_year() -> None:
    schema = json.loads(_cli("schema").stdout)["report"]
    props = schema["properties"]
    assert {"server", "version", "year_inferred"} <= set(props)
    assert "start lines" in json.dumps(props["server"])


def test_shared_envelope_peels_what_the_vllm_envelope_reads() -> None:
    """grammars/vllm/vllm_envelope.lark is the reference of vLLM's prefixes: the shared envelope
    leaves the same message (VLLM_LOGGING_PREFIX, free text before the level, aside)."""
    from tests.test_vllm_grammar import ENVELOPES

    checked = 0
    for line, expected, message in ENVELOPES:
        if "LOGGING_PREFIX" in expected:
            continue
        assert split_envelope(line).message == (message or ""), line
        checked += 1
    assert checked >= 15
