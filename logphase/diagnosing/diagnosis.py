"""Failures: what each event says about one (its severity, cause, phase, message and line).

What an error's text means is the cause table's (``causes.SIGNATURES`` read by
``signatures.read_error``); this module decides which text of an event is read (a traceback's
first exception that is not a wrapper, the ``what()`` of a C++ exception ...), and what an event
that states no error (a cut traceback, a stack dump, a child's exit) amounts to.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from enum import Enum
from typing import Any, Literal, NamedTuple

from logphase.diagnosing.functions import call_phase, frame_floor, frame_phase
from logphase.diagnosing.signatures import Reading, read_error
from logphase.packs import PACKS, kept_regex
from logphase.packs.grammars import Parsed, parse, terminal_pattern
from logphase.recognising.messages import MESSAGES
from logphase.vocabulary import events as ev
from logphase.vocabulary.causes import Cause, SignatureRole
from logphase.vocabulary.phases import Phase, later_phase


class Severity(str, Enum):
    ROOT = "root"  # states an error: the root cause when it is the earliest
    UNSTATED = "unstated"  # a failure whose error the log does not show: a cut traceback, a crash dump
    ECHO = "echo"  # a consequence; the cause only when nothing else is found
    NOTE = "note"  # listed as a consequence when a failure exists, never a failure by itself


# what a check of the server's own start-up code refused: what it was given (an argument, a model, a
# combination) or what it found (a device, a driver, a pool that cannot be made). The cause stays
# python_exception, the vocabulary's word for an exception no signature names; the check says more
Check = Literal["configuration", "environment"]


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
    # an exception the server's own start-up check raised (``Check``): what it refused
    check: Check | None = None



def _any_of(patterns: tuple[str, ...]) -> re.Pattern[str]:
    return kept_regex.compile("|".join(f"(?:{p})" for p in patterns) or r"(?!)")


# the packs' paths of the server's code and of test harnesses, and what a server logs before the
# traceback of a process that dies from it
_HARNESS_FRAME = _any_of(tuple(p for pack in PACKS for p in pack.harness_paths))
_SERVER_FRAME = _any_of(tuple(p for pack in PACKS for p in pack.server_paths))
_REQUEST_FRAME = _any_of(tuple(p for pack in PACKS for p in pack.request_paths))
_REQUEST_HEADER = _any_of(tuple(p for pack in PACKS for p in pack.request_headers))
# what a server logs before one request's traceback (vLLM's 'Error in preprocessing prompt inputs'),
# not a web framework's header, which a start-up's warmup request gets too
_SERVER_REQUEST_HEADER = _any_of(tuple(p for pack in PACKS if pack.server for p in pack.request_headers))
_FATAL_HEADER = _any_of(tuple(p for pack in PACKS for p in pack.fatal_headers))
_CHECK_FRAME = _any_of(tuple(p for pack in PACKS for p in pack.check_paths))
# the exception classes a check raises when what it was given is wrong (a value, a type, a feature
# not implemented for it): the configuration, in whatever phase the check runs
_CHECK_CLASSES = frozenset({"ValueError", "NotImplementedError", "TypeError", "AssertionError", "KeyError", "AttributeError"})
# the server whose pack's signature gives a hint, by the hint (a shared signature's hint is anyone's)
_HINT_SERVER = {s.hint: pack.name for pack in PACKS if pack.server for s in pack.signatures if s.hint}
# threading's excepthook header (traceback.lark), as a record keeps it: without its ':'
_THREAD_HEADER = kept_regex.compile(terminal_pattern("traceback", "THREAD_EXCEPTION"))


def frames_phase(frames: list[ev.Frame]) -> Phase | None:
    """The phase of the innermost frame whose function the table of the server's functions knows
    (``functions.SERVER_FUNCTIONS``): the phase the traceback struck in, even without phase markers.
    The hand rows first, over all frames; then the rows mined from the call graphs (a collective
    helper the graph places in one phase runs in every phase: an outer hand-known frame decides)."""
    for frame in reversed(frames):
        phase = frame_phase(frame.function, frame.path, False)
        if phase is not None:
            return phase
    # only inside the innermost frame that runs several phases (ModelRunner.initialize): a mined
    # frame outside it is earlier than where the traceback struck
    inner = next((i for i in range(len(frames) - 1, -1, -1) if frame_floor(frames[i].function, frames[i].path)), -1)
    for frame in reversed(frames[inner + 1 :]):
        phase = frame_phase(frame.function, frame.path, True)
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


def read_unfolded(text: str) -> Reading:
    """What the cause table reads in an error's text; when it reads nothing in a text of several
    lines, what it reads in them as one line (a paste folded a long error at its width: the lines
    went on mid-word, or after a space the record dropped)."""
    reading = read_error(text)
    if reading.signature is not None or "\n" not in text:
        return reading
    for glue in ("", " "):
        unfolded = read_error(text.replace("\n", glue))
        if unfolded.signature is not None:
            return unfolded
    return reading


def _known_messages(text: str) -> list[Parsed]:
    """The servers' messages the lines of an error's text are, e.g. the 'Rank 1 scheduler died
    during initialization ...' a RuntimeError carries: each line's first, in the packs' order."""
    found: list[Parsed] = []
    for line in text.splitlines():
        body = line.strip()
        found.extend(_first_known(body) or _first_known(body.split(": ", 1)[-1]) or ())  # 'ValueError: <message>'
    return found


def _first_known(text: str) -> tuple[Parsed] | None:
    from logphase.recognising.classify import SERVER_GRAMMARS, per_grammar_match

    if not text or len(text) >= 4096:
        return None
    for grammar in SERVER_GRAMMARS:
        if per_grammar_match(grammar, text):
            parsed = parse(grammar, text)
            if parsed is not None:
                return (parsed,)
    return None


def named_rank(text: str) -> str | None:
    """The rank an error names: the main process says 'Rank 1 scheduler died ...' of TP1 (a message
    row's ``names_rank``)."""
    for parsed in _known_messages(text):
        row = MESSAGES.get(parsed.rule)
        if row is not None and row.names_rank is not None and parsed.value(row.names_rank):
            return f"TP{parsed.value(row.names_rank)}"
    return None


def stated_values(text: str) -> dict[str, str]:
    """The values an error's text states that a hint quotes (a message row's ``hint_values``: the
    smallest --mem-fraction-static SGLang says would fit the KV cache, 0.5.23+), by the hint's name."""
    values: dict[str, str] = {}
    for parsed in _known_messages(text):
        row = MESSAGES.get(parsed.rule)
        for sub_rule, name in (row.hint_values.items() if row is not None else ()):
            value = parsed.value(sub_rule)
            if value:
                values.setdefault(name, value)
    return values


def is_request_traceback(e: ev.PythonException) -> bool:
    """One HTTP request's failure: the header an HTTP server logs before it ('Exception in ASGI
    application'), or frames through the request handling (uvicorn's protocols, a server's request
    handlers). Only a server that is up handles requests: the traceback shows it serving."""
    return _REQUEST_HEADER.search(e.header or "") is not None or any(_REQUEST_FRAME.search(f.path) for f in e.frames)


def shows_serving(e: ev.PythonException) -> bool:
    """A request's traceback that shows the server serving with no line before it (a window): it runs
    through the request handling (a request frame that is no constructor, which a handler's set-up at
    launch runs) or follows a server's own header for a request, and no frame runs in a start-up
    phase (a launch function in a handlers' file: SGLang's load_chat_template_for_openai_api). A web
    framework's header ('Exception in ASGI application') shows it too, even cut before the first
    frame: only a server that is up handles requests. A start-up's warmup request gets that header
    too, but in a start-up, which the machine tells from a window (``_serving_window``)."""
    if any(_start_up_frame(f) for f in e.frames):
        return False
    handled = any(_REQUEST_FRAME.search(f.path) and (f.function or "").rpartition(".")[2] != "__init__" for f in e.frames)
    return handled or _REQUEST_HEADER.search(e.header or "") is not None


def _start_up_frame(frame: ev.Frame) -> bool:
    phase = frame_phase(frame.function, frame.path)
    return phase is not None and phase is not Phase.READY


def outside_the_server(e: ev.PythonException) -> bool:
    """A traceback none of whose frames is in a server's code (nor the libraries it runs on): a
    harness's or a script's around the server (a benchmark's chart script), not the server's."""
    return bool(e.frames) and not any(_SERVER_FRAME.search(f.path) for f in e.frames)


def is_harness_traceback(e: ev.PythonException) -> bool:
    """A test harness's own failure (unittest, pytest, sglang.test helpers), not the server's."""
    return any(_HARNESS_FRAME.search(f.path) for f in e.frames)


def assess(event: ev.EventBase, after_ready: bool, server: str | None = None) -> Assessment | None:
    """How an event bears on failure; None for events that say nothing about it. ``server``: the
    run's server (a pack's name), when known: another server's advice is not given to it."""
    for kind, assessor in _ASSESSORS:
        if isinstance(event, kind):
            assessment: Assessment | None = assessor(event, after_ready)
            return _for_server(assessment, server) if assessment is not None else None
    return None


def hint_server(text: str | None) -> str | None:
    """The server whose flags an error's own advice names (its signature is that server's pack's);
    None for shared advice, or none."""
    return _HINT_SERVER.get(text or "")


def _for_server(assessment: Assessment, server: str | None) -> Assessment:
    """An error's own advice names its server's flags ('--mem-fraction-static'): in another
    server's run it is left out, and the advice for the cause in that server's flags is given."""
    owner = _HINT_SERVER.get(assessment.hint or "")
    return assessment._replace(hint=None) if server is not None and owner not in (None, server) else assessment


def _assess_error_line(event: ev.ErrorLine, after_ready: bool) -> Assessment | None:
    if event.error == "warmup_failed":
        return None  # PD warmup: the server stays up; reported as a warning
    # the row of the message states its cause (events built by hand may name only the error)
    message = MESSAGES.get(event.rule or event.error) or MESSAGES.get(_BY_ERROR.get(event.error, ""))
    cause = message.cause if message is not None and message.cause is not None else Cause.PYTHON_EXCEPTION
    return _from_text(event.message, Severity.ROOT, cause)


def _assess_child(event: ev.ChildFailure, after_ready: bool) -> Assessment | None:
    if event.what == "pg_not_destroyed":
        return Assessment(Severity.NOTE, Cause.UNKNOWN, None, event.message)
    fallback = Cause.KILLED if event.what == "killed" or event.exit_code in (-9, 137) else Cause.CHILD_PROCESS_FAILED
    return _from_text(event.message, Severity.ECHO, fallback)


def _assess_distributed(event: ev.DistributedError, after_ready: bool) -> Assessment | None:
    if event.error == "socket_failure":  # retried until the store answers or times out
        return Assessment(Severity.NOTE, Cause.DISTRIBUTED_TIMEOUT, Phase.DISTRIBUTED_INIT, event.message)
    fallback = Cause.NCCL_ERROR if event.error == "nccl_abort" else Cause.DISTRIBUTED_TIMEOUT
    return _from_text(event.message, Severity.ROOT, fallback)


def _assess_torch(event: ev.TorchLog, after_ready: bool) -> Assessment | None:
    # c10's error lines ('[E130 ...] ProcessGroupGloo.cpp:143] Gloo connectFullMesh failed ...')
    # state a root cause when the table knows their text; other levels never do
    if event.level == "W":
        return _torch_timeout_warning(event)
    if event.level not in ("E", "F"):
        return None
    reading = read_error(event.message)
    return _assessment(reading, event.message, Severity.ROOT, None) if reading.signature else None


def _torch_timeout_warning(event: ev.TorchLog) -> Assessment | None:
    """c10d's warning that a wait on the store timed out ('[W...] [c10d] waitForInput ... timed out
    after 1800000ms'): the rendezvous (or a barrier) is over. An echo: it names the failure when no
    process states an error; torch.distributed was initialising, at least."""
    reading = read_error(event.message)
    if reading.cause is not Cause.DISTRIBUTED_TIMEOUT:
        return None
    return Assessment(Severity.ECHO, Cause.DISTRIBUTED_TIMEOUT, None, event.message, floor=Phase.DISTRIBUTED_INIT)


def _assess_process(event: ev.ProcessError, after_ready: bool) -> Assessment | None:
    if event.source == "launcher":  # the exit of a process whose error, if any, came before
        fallback = Cause.KILLED if event.exit_code in (-9, 137) else Cause.CHILD_PROCESS_FAILED
        return _from_text(event.message, Severity.ECHO, fallback)
    if event.source == "shell":  # 'Segmentation fault (core dumped)': a crash, not why
        return _from_text(event.message, Severity.UNSTATED, Cause.PYTHON_EXCEPTION)
    return _from_text(event.message, Severity.ROOT, Cause.PYTHON_EXCEPTION)


def _assess_warning(event: ev.PythonWarning, after_ready: bool) -> Assessment | None:
    reading = read_error(event.message)
    if reading.role is SignatureRole.EXIT:
        # the process tree exited: after a serving stop that is normal
        return _assessment(reading, event.message, Severity.NOTE if after_ready else Severity.ECHO, None)
    return None


def _assess_dump_event(event: ev.FatalSignal, after_ready: bool) -> Assessment | None:
    return _assess_dump(event)


# an error line's message row, by the error it names (for events built without their rule)
_BY_ERROR = {"bind_failed": "http_bind_failed"}


def _from_text(text: str, severity: Severity, fallback: Cause) -> Assessment:
    """An event whose text is the error: the table decides, ``fallback`` when it knows nothing."""
    return _assessment(read_unfolded(text), text, severity, fallback)


def _assessment(reading: Reading, message: str, severity: Severity, fallback: Cause | None) -> Assessment:
    if reading.role is SignatureRole.ECHO or reading.role is SignatureRole.EXIT:
        severity = Severity.NOTE if severity is Severity.NOTE else Severity.ECHO
    elif reading.role is SignatureRole.UNSTATED:
        severity = Severity.NOTE if severity is Severity.NOTE else Severity.UNSTATED
    elif reading.signature is not None and severity is Severity.ECHO:
        severity = Severity.ROOT  # an echo-shaped event that states a root error ('... exit code: ... CUDA error')
    cause = reading.cause or fallback or Cause.PYTHON_EXCEPTION
    return Assessment(severity, cause, reading.phase, message, None, reading.hint)


def _assess_exception(e: ev.PythonException, after_ready: bool) -> Assessment | None:
    if _ignored(e, after_ready):
        return None
    header_reading = read_error(e.header) if e.header else None
    wrapper_phase = header_reading.phase if header_reading else None
    if not e.complete:
        return _cut(e, header_reading)
    exceptions = [*e.chain, _last(e)]
    readings = [read_unfolded(_exception_text(x)) for x in exceptions]
    echo = next((i for i, r in enumerate(readings) if r.role is SignatureRole.ECHO), None)
    if echo is not None:
        # the main process (or torchrun) noticing that a child died, or a peer's connection closing:
        # its error is elsewhere. Its frames are the echoing process's (the main process waits in
        # launch code while a child loads weights): they show how far that process got, no more
        echoed = _assessment(readings[echo], _exception_text(exceptions[echo]).split("\n", 1)[0], Severity.ECHO, None)
        floor = later_phase(frames_floor(e.frames), frames_phase(e.frames))
        return echoed._replace(line=_exception_line(e, exceptions[echo]), floor=floor)
    # the first exception of a chain is the original error, unless it is a wrapper quoting nothing known
    chosen = next(
        (i for i, r in enumerate(readings) if not (r.signature is None and r.phase is not None)),
        0,
    )
    reading = readings[chosen]
    phase = reading.phase or wrapper_phase or frames_phase(e.frames)
    cause, check = (reading.cause, None) if reading.cause else _unread_cause(e, phase, own=chosen == len(exceptions) - 1)
    summary = _exception_text(exceptions[chosen]).split("\n", 1)[0]
    return Assessment(
        Severity.UNSTATED if reading.role is SignatureRole.UNSTATED else Severity.ROOT,
        cause,
        phase,
        summary,
        _exception_line(e, exceptions[chosen]),
        reading.hint or (header_reading.hint if header_reading else None),
        frames_floor(e.frames),
        check,
    )


def _unread_cause(e: ev.PythonException, phase: Phase | None, own: bool) -> tuple[Cause, Check | None]:
    """The cause of an exception no signature reads, and the check that raised it, by where it was
    raised. A loader's error is the model's. One the server's start-up code raised itself (``own``:
    the last exception of the chain, raised by a raise or assert statement of a check path's
    innermost frame) is a check of its own that failed: of the configuration at launch or for a
    check's classes (a value, a type, a feature not implemented), of the environment otherwise. A
    serving server's exceptions, and the warmup's asserts on its request's response, are no check:
    a request failed there."""
    if phase is Phase.WEIGHT_LOADING:
        return Cause.MODEL_LOAD_ERROR, None
    if not own or phase is Phase.READY or not _raised_by_check(e):
        return Cause.PYTHON_EXCEPTION, None
    if phase is Phase.WARMUP and e.raised_by == "assert":
        return Cause.PYTHON_EXCEPTION, None  # the warmup asserts its request's response: the request failed
    if phase is Phase.LAUNCH or (e.exc_type or "").rsplit(".", 1)[-1] in _CHECK_CLASSES:
        return Cause.PYTHON_EXCEPTION, "configuration"
    return Cause.PYTHON_EXCEPTION, "environment"


def _raised_by_check(e: ev.PythonException) -> bool:
    return e.raised_by is not None and bool(e.frames) and _CHECK_FRAME.search(e.frames[-1].path) is not None


def _ignored(e: ev.PythonException, after_ready: bool) -> bool:
    """A traceback that is no failure of the server: a helper thread's, one that was caught, a
    harness's, or (once the server is up) a client's."""
    if e.header is not None and _THREAD_HEADER.match(f"{e.header}:"):
        return True  # a helper thread died; the process it belongs to goes on
    if e.header is not None and _FATAL_HEADER.search(e.header):
        return False  # the server logs it before the process dies from it
    if not e.uncaught or is_harness_traceback(e):
        return True
    if after_ready and is_request_traceback(e):
        return True  # one request failed (the client got a 500): the server serves on
    if after_ready and e.frames and not any(_SERVER_FRAME.search(f.path) for f in e.frames):
        return True  # a client's or a benchmark's traceback next to a server that is up
    # a lone 'Error: ...' of a harness next to a server that is up: only known errors count
    return after_ready and e.headerless and not e.frames and read_error(_exception_text(_last(e))).signature is None


def _cut(e: ev.PythonException, header_reading: Reading | None) -> Assessment:
    """A traceback cut before its exception line: where it was is all it says, unless its header
    states the error itself ('Exception in worker ... while processing method init_device: NCCL
    error ...'): then the cut record says why too."""
    if header_reading is not None and header_reading.signature is not None and header_reading.role is SignatureRole.ROOT:
        return _assessment(header_reading, e.header or "", Severity.ROOT, None)._replace(floor=frames_floor(e.frames))
    wrapper_phase = header_reading.phase if header_reading else None
    frames_at = statement_phase(e.statement) or frames_phase(e.frames)
    # a frame line cut before ', in <function>' has lost its line number's tail too
    whole = [f for f in e.frames if f.function is not None]
    where = whole[-1] if whole else None
    cut = "traceback cut before its exception line"
    message = f"{cut} (last whole frame {where.function} in {where.path}:{where.lineno})" if where else cut
    if e.header:
        message = f"{e.header}: {message}"
    return Assessment(Severity.UNSTATED, Cause.UNKNOWN, wrapper_phase or frames_at, message, floor=frames_floor(e.frames))


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


# what each kind of event says about a failure (the first whose type the event is decides)
_ASSESSORS: tuple[tuple[type, Callable[[Any, bool], Assessment | None]], ...] = (
    (ev.PythonException, _assess_exception),
    (ev.FatalSignal, _assess_dump_event),
    (ev.ErrorLine, _assess_error_line),
    (ev.ChildFailure, _assess_child),
    (ev.DistributedError, _assess_distributed),
    (ev.TorchLog, _assess_torch),
    (ev.ProcessError, _assess_process),
    (ev.PythonWarning, _assess_warning),
)
