"""Failures: what each event says about one (its severity, cause, phase, message and line).

What an error's text means is the cause table's (``causes.SIGNATURES`` read by
``signatures.read_error``); this module decides which text of an event is read (a traceback's
first exception that is not a wrapper, the ``what()`` of a C++ exception ...), and what an event
that states no error (a cut traceback, a stack dump, a child's exit) amounts to.
"""

from __future__ import annotations

import re
from enum import Enum
from typing import NamedTuple

from logphase.pipeline import events as ev
from logphase.pipeline.causes import Cause, Role
from logphase.pipeline.functions import call_phase, frame_floor, frame_phase
from logphase.pipeline.grammars import Parsed, parse
from logphase.pipeline.phases import Phase
from logphase.pipeline.signatures import Reading, read_error


class Severity(str, Enum):
    ROOT = "root"  # states an error: the root cause when it is the earliest
    UNSTATED = "unstated"  # a failure whose error the log does not show: a cut traceback, a crash dump
    ECHO = "echo"  # a consequence; the cause only when nothing else is found
    NOTE = "note"  # listed as a consequence when a failure exists, never a failure by itself


class Assessment(NamedTuple):
    severity: Severity
    cause: Cause
    phase: Phase | None  # the phase the evidence itself names (frames, message), if any
    message: str
    line: int | None = None  # the line to jump to, when not the event's first line
    hint: str | None = None  # advice for this error in particular
    # when the evidence names no phase: the earliest it can have been (a frame in a function that
    # runs several phases in turn, such as ModelRunner.initialize)
    floor: Phase | None = None


_HARNESS_FRAME = re.compile(r"unittest/|/sglang/test/|/_pytest/|pytest|/test_[^/]*\.py$|/tests?/")
_SERVER_FRAME = re.compile(r"sglang/srt|/torch/|/transformers/|/vllm/|launch_server")
# what SGLang's loggers print before the traceback of a process that dies from it
_FATAL_HEADER = re.compile(r"hit an exception|^Initialization failed")


def frames_phase(frames: list[ev.Frame]) -> Phase | None:
    """The phase of the innermost frame whose function the table of the server's functions knows
    (``functions.SERVER_FUNCTIONS``): the phase the traceback struck in, even without phase markers."""
    for frame in reversed(frames):
        phase = frame_phase(frame.function, frame.path)
        if phase is not None:
            return phase
    return None


def frames_floor(frames: list[ev.Frame]) -> Phase | None:
    """The earliest phase the innermost frame in a function that runs several phases allows."""
    for frame in reversed(frames):
        phase = frame_floor(frame.function, frame.path)
        if phase is not None:
            return phase
    return None


def statement_phase(statement: str | None) -> Phase | None:
    """The phase of the call a cut traceback was making: the last whole name its innermost frame's
    source line calls ('self.load_model()'). A name the input ends inside ('self.load_mo') is no
    evidence: five letters are a guess."""
    return call_phase(statement)


def _known_messages(text: str) -> list[Parsed]:
    """The SGLang messages (sglang.lark) the lines of an error's text are, e.g. the
    'Rank 1 scheduler died during initialization ...' a RuntimeError carries."""
    from logphase.pipeline.classify import per_grammar_match

    found: list[Parsed] = []
    for line in text.splitlines():
        body = line.strip()
        for prefix in (body, body.split(": ", 1)[-1]):  # 'ValueError: <message>'
            if prefix and len(prefix) < 4096 and per_grammar_match("sglang", prefix):
                parsed = parse("sglang", prefix)
                if parsed is not None:
                    found.append(parsed)
                    break
    return found


def named_rank(text: str) -> str | None:
    """The rank an error names: the main process says 'Rank 1 scheduler died ...' of TP1."""
    for parsed in _known_messages(text):
        if parsed.rule in ("scheduler_died", "scheduler_dead") and parsed.value("rank_index"):
            return f"TP{parsed.value('rank_index')}"
    return None


def minimum_mem_fraction(text: str) -> str | None:
    """The smallest --mem-fraction-static SGLang says would fit the KV cache (0.5.23+)."""
    for parsed in _known_messages(text):
        if parsed.rule == "kv_no_room":
            return parsed.value("minimum_fraction")
    return None


def is_harness_traceback(e: ev.PythonException) -> bool:
    """A test harness's own failure (unittest, pytest, sglang.test helpers), not the server's."""
    return any(_HARNESS_FRAME.search(f.path) for f in e.frames)


def assess(event: ev.EventBase, after_ready: bool) -> Assessment | None:
    """How an event bears on failure; None for events that say nothing about it."""
    if isinstance(event, ev.PythonException):
        return _assess_exception(event, after_ready)
    if isinstance(event, ev.FatalSignal):
        return _assess_dump(event)
    if isinstance(event, ev.ErrorLine):
        if event.error == "warmup_failed":
            return None  # PD warmup: the server stays up; reported as a warning
        return _from_text(event.message, Severity.ROOT, _ERROR_LINE_CAUSE.get(event.error, Cause.PYTHON_EXCEPTION))
    if isinstance(event, ev.ChildFailure):
        if event.what == "pg_not_destroyed":
            return Assessment(Severity.NOTE, Cause.UNKNOWN, None, event.message)
        fallback = Cause.KILLED if event.what == "killed" or event.exit_code in (-9, 137) else Cause.CHILD_PROCESS_FAILED
        return _from_text(event.message, Severity.ECHO, fallback)
    if isinstance(event, ev.DistributedError):
        if event.error == "socket_failure":  # retried until the store answers or times out
            return Assessment(Severity.NOTE, Cause.DISTRIBUTED_TIMEOUT, Phase.DISTRIBUTED_INIT, event.message)
        fallback = Cause.NCCL_ERROR if event.error == "nccl_abort" else Cause.DISTRIBUTED_TIMEOUT
        return _from_text(event.message, Severity.ROOT, fallback)
    if isinstance(event, ev.TorchLog):
        # c10's error lines ('[E130 ...] ProcessGroupGloo.cpp:143] Gloo connectFullMesh failed ...')
        # state a root cause when the table knows their text; other levels never do
        if event.level not in ("E", "F"):
            return None
        reading = read_error(event.message)
        return _assessment(reading, event.message, Severity.ROOT, None) if reading.signature else None
    if isinstance(event, ev.ProcessError):
        if event.source == "launcher":  # the exit of a process whose error, if any, came before
            fallback = Cause.KILLED if event.exit_code in (-9, 137) else Cause.CHILD_PROCESS_FAILED
            return _from_text(event.message, Severity.ECHO, fallback)
        if event.source == "shell":  # 'Segmentation fault (core dumped)': a crash, not why
            return _from_text(event.message, Severity.UNSTATED, Cause.PYTHON_EXCEPTION)
        return _from_text(event.message, Severity.ROOT, Cause.PYTHON_EXCEPTION)
    if isinstance(event, ev.PythonWarning):
        reading = read_error(event.message)
        if reading.role is Role.EXIT:
            # the process tree exited: after a serving stop that is normal
            return _assessment(reading, event.message, Severity.NOTE if after_ready else Severity.ECHO, None)
    return None


_ERROR_LINE_CAUSE = {
    "not_enough_memory": Cause.KV_CACHE_INSUFFICIENT_MEMORY,
    "port_in_use": Cause.PORT_IN_USE,
    "bind_failed": Cause.PORT_IN_USE,
    "watchdog_timeout": Cause.WATCHDOG_TIMEOUT,
    "init_failed": Cause.CHILD_PROCESS_FAILED,
}


def _from_text(text: str, severity: Severity, fallback: Cause) -> Assessment:
    """An event whose text is the error: the table decides, ``fallback`` when it knows nothing."""
    return _assessment(read_error(text), text, severity, fallback)


def _assessment(reading: Reading, message: str, severity: Severity, fallback: Cause | None) -> Assessment:
    if reading.role is Role.ECHO or reading.role is Role.EXIT:
        severity = Severity.NOTE if severity is Severity.NOTE else Severity.ECHO
    elif reading.signature is not None and severity is Severity.ECHO:
        severity = Severity.ROOT  # an echo-shaped event that states a root error ('... exit code: ... CUDA error')
    cause = reading.cause or fallback or Cause.PYTHON_EXCEPTION
    return Assessment(severity, cause, reading.phase, message, None, reading.hint)


def _assess_exception(e: ev.PythonException, after_ready: bool) -> Assessment | None:
    if e.header is not None and e.header.startswith("Exception in thread"):
        return None  # a helper thread died; the process it belongs to goes on
    if not (e.header is not None and _FATAL_HEADER.search(e.header)):
        if not e.uncaught or is_harness_traceback(e):
            return None
        if after_ready and e.frames and not any(_SERVER_FRAME.search(f.path) for f in e.frames):
            return None  # a client's or a benchmark's traceback next to a server that is up
        if after_ready and e.headerless and not e.frames and read_error(_exception_text(_last(e))).signature is None:
            return None  # a lone 'Error: ...' of a harness next to a server that is up: only known errors count
    header_reading = read_error(e.header) if e.header else None
    wrapper_phase = header_reading.phase if header_reading else None
    frames_at = frames_phase(e.frames)
    if not e.complete:
        frames_at = statement_phase(e.statement) or frames_at
        # a frame line cut before ', in <function>' has lost its line number's tail too
        whole = [f for f in e.frames if f.function is not None]
        where = whole[-1] if whole else None
        cut = "traceback cut before its exception line"
        message = f"{cut} (last whole frame {where.function} in {where.path}:{where.lineno})" if where else cut
        if e.header:
            message = f"{e.header}: {message}"
        return Assessment(Severity.UNSTATED, Cause.UNKNOWN, wrapper_phase or frames_at, message, floor=frames_floor(e.frames))
    exceptions = [*e.chain, _last(e)]
    readings = [read_error(_exception_text(x)) for x in exceptions]
    if any(r.role is Role.ECHO for r in readings):
        # the main process (or torchrun) noticing that a child died: its error is elsewhere
        i = next(i for i, r in enumerate(readings) if r.role is Role.ECHO)
        return _assessment(readings[i], _exception_text(exceptions[i]).split("\n", 1)[0], Severity.ECHO, None)._replace(
            line=_exception_line(e, exceptions[i])
        )
    # the first exception of a chain is the original error, unless it is a wrapper quoting nothing known
    chosen = next(
        (i for i, r in enumerate(readings) if not (r.signature is None and r.phase is not None)),
        0,
    )
    reading = readings[chosen]
    phase = reading.phase or wrapper_phase or frames_at
    cause = reading.cause or (Cause.MODEL_LOAD_ERROR if phase is Phase.WEIGHT_LOADING else Cause.PYTHON_EXCEPTION)
    summary = _exception_text(exceptions[chosen]).split("\n", 1)[0]
    return Assessment(
        Severity.ROOT,
        cause,
        phase,
        summary,
        _exception_line(e, exceptions[chosen]),
        reading.hint or (header_reading.hint if header_reading else None),
        frames_floor(e.frames),
    )


def _last(e: ev.PythonException) -> ev.ChainedException:
    """The exception a traceback ends with, shaped like the earlier ones of its chain."""
    return ev.ChainedException(exc_type=e.exc_type, message=e.message, exception_line=e.exception_line)


def _exception_text(x: ev.ChainedException) -> str:
    return f"{x.exc_type}: {x.message}" if x.exc_type else x.message


def _exception_line(e: ev.PythonException, x: ev.ChainedException) -> int | None:
    """Where to jump: the header of the traceback; without one, the exception's own line."""
    return x.exception_line if e.headerless else None


def _assess_dump(e: ev.FatalSignal) -> Assessment:
    """faulthandler: a signal killed the interpreter. What it says is only that (the line before
    it, a C++ or runtime error, states why); without its first line it is a window on a crash."""
    reading = read_error(e.message)
    cause = Cause.UNKNOWN if e.headerless else (reading.cause or Cause.PYTHON_EXCEPTION)
    hint = None if e.headerless else reading.hint
    return Assessment(Severity.UNSTATED, cause, frames_phase(e.frames), e.message, None, hint, frames_floor(e.frames))
