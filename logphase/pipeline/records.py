"""Stage 3: multi-line records. Python tracebacks (chained ones included) become one
``PythonException`` event; faulthandler dumps one ``FatalSignal``. The shape of each line is
``grammars/traceback.lark``'s.

Open records are kept per stream: torchrun's ``[rank3]:`` prefix names the stream, so two ranks'
tracebacks can interleave; unprefixed lines share one stream. A line from another writer (a
timestamped log line, NCCL, Gloo, glog, uvicorn, tqdm) does not break a traceback that has not
reached its exception line yet: it was written by another process in between.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from enum import Enum

from logphase.pipeline import events as ev
from logphase.pipeline.envelope import Envelope
from logphase.pipeline.events import LineInfo
from logphase.pipeline.grammars import Parsed, parse, terminal_pattern

# An exception message may run over several lines ("Possible solutions:", torchrun's failure
# report); beyond this many lines the record is closed and what follows is read on its own.
MAX_MESSAGE_LINES = 40
MAX_FRAMES = 200
MAX_PARSE_CHARS = 4096


# what a line that opens a record has in it, from the grammar's terminals
_OPENERS = re.compile("|".join(terminal_pattern("traceback", t) for t in ("TRACEBACK", "THREAD_EXCEPTION", "FATAL_ERROR")))


class State(Enum):
    FRAMES = "frames"  # reading frames (or waiting for the first)
    MESSAGE = "message"  # the exception line was read; its message may go on
    GAP = "gap"  # a blank line after the message: a chained traceback may follow
    CHAIN = "chain"  # "During handling of the above exception ..." was read
    FATAL = "fatal"  # a faulthandler dump


def line_shape(text: str) -> Parsed | None:
    """What traceback.lark says a line is (header, frame, chain, exception ...), or None."""
    stripped = text.strip()
    if not stripped or len(stripped) > MAX_PARSE_CHARS:
        return None
    return parse("traceback", text if text[:1] in " \t" else stripped)


@dataclass
class _Exception:
    exc_type: str | None
    message_lines: list[str]


@dataclass
class OpenRecord:
    at: LineInfo
    header: str | None
    uncaught: bool
    frames: list[ev.Frame] = field(default_factory=list)
    exceptions: list[_Exception] = field(default_factory=list)
    state: State = State.FRAMES
    lines: int = 1
    last_line: int = 0
    fatal_message: str | None = None

    @property
    def complete(self) -> bool:
        """The record has reached its exception line (or is a faulthandler dump)."""
        return bool(self.exceptions) or self.fatal_message is not None

    def to_event(self) -> ev.EventBase:
        if self.fatal_message is not None:
            return self.at.event(ev.FatalSignal, None, message=self.fatal_message, end_line=self.last_line)
        chain = [ev.ChainedException(exc_type=e.exc_type, message="\n".join(e.message_lines)) for e in self.exceptions]
        last = chain[-1] if chain else None
        return self.at.event(
            ev.PythonException,
            None,
            header=self.header,
            exc_type=last.exc_type if last else None,
            message=last.message if last else "",
            frames=self.frames[-MAX_FRAMES:],
            chain=chain[:-1],
            complete=last is not None,
            uncaught=self.uncaught,
            end_line=self.last_line,
        )


class RecordAssembler:
    """The open records, one per stream; lines are offered to them before anything else."""

    def __init__(self) -> None:
        self._open: dict[str | None, OpenRecord] = {}

    def start(self, stream: str | None, record: OpenRecord) -> list[ev.EventBase]:
        """Open a record on ``stream``; a record already open there is closed first."""
        closed = self.close(stream)
        self._open[stream] = record
        return closed

    def close(self, stream: str | None) -> list[ev.EventBase]:
        record = self._open.pop(stream, None)
        return [record.to_event()] if record else []

    def close_all(self) -> list[ev.EventBase]:
        out: list[ev.EventBase] = []
        for stream in list(self._open):
            out.extend(self.close(stream))
        return out

    def peek_all(self) -> list[ev.EventBase]:
        """The events the open records would give if closed now (the engine reports them early:
        a killed process never finishes its record)."""
        return [record.to_event() for record in self._open.values()]

    def has_open(self) -> bool:
        return bool(self._open)

    def all_complete(self) -> bool:
        """True when every open record has reached its exception line."""
        return all(r.complete for r in self._open.values())

    def takes_plain_lines(self) -> bool:
        """Whether a plain stamped line (the bulk path's) would leave the records as they are: true
        unless the unprefixed stream's record is past its frames (such a line would close it)."""
        record = self._open.get(None)
        return record is None or record.state is State.FRAMES

    def offer(self, env: Envelope, lineno: int, foreign: bool) -> tuple[bool, list[ev.EventBase]]:
        """Give a line to the open record of its stream. Returns (consumed, closed events)."""
        stream = env.stream
        record = self._open.get(stream)
        if record is None:
            return False, []
        text = env.message if not env.stamped else ""
        if env.stamped or foreign:
            # Another writer's line. Only a stamped line of the record's own writer ends it (or, for
            # a rank-prefixed stream, any line of that rank): other ranks interleave mid-record,
            # even between the parts of a chained traceback.
            same_writer = env.stamped and env.rank == record.at.rank
            if env.torch_rank is None and (record.state is State.FRAMES or not same_writer):
                return False, []
            return False, self.close(stream)
        consumed = _continue(record, text)
        if consumed:
            record.lines += 1
            record.last_line = lineno
            if record.state is State.MESSAGE and len(record.exceptions[-1].message_lines) > MAX_MESSAGE_LINES:
                return True, self.close(stream)
            return True, []
        return False, self.close(stream)


def _continue(record: OpenRecord, text: str) -> bool:
    """Whether ``text`` continues ``record`` (and what it adds to it)."""
    stripped = text.strip()
    shape = line_shape(text)
    rule = shape.rule if shape is not None else None
    if record.state is State.FATAL:
        # faulthandler dump: "Thread 0x... (most recent call first):" and '  File "..."' lines
        return not stripped or text.startswith((" ", "\t")) or rule in ("tb_thread_dump", "tb_extensions")
    if rule == "tb_thread_exception" and record.state is not State.GAP:
        return False  # the next thread's traceback begins
    if not stripped:
        if record.state is State.MESSAGE:
            record.state = State.GAP
        return True
    if rule == "tb_header" and shape is not None and shape.value("logged_by") is None:
        if record.state in (State.GAP, State.CHAIN, State.FRAMES) and (record.state is not State.GAP or not record.exceptions):
            record.state = State.FRAMES
            return True
        return False
    if text.startswith((" ", "\t")):
        if rule == "tb_frame" and shape is not None:
            record.frames.append(
                ev.Frame(
                    path=shape.value("frame_path") or "",
                    lineno=int(shape.value("frame_line") or 0),
                    function=shape.value("frame_function"),
                )
            )
            record.state = State.FRAMES
            return True
        if record.state is State.MESSAGE:
            record.exceptions[-1].message_lines.append(stripped)
        return record.state is not State.GAP
    if rule == "tb_chain":
        record.state = State.CHAIN
        return True
    if record.state is State.FRAMES:
        exc_type, message = None, stripped
        if rule == "tb_exception" and shape is not None:
            exc_type = shape.value("exc_type")
            message = (shape.value("exc_message") or "").strip()
        record.exceptions.append(_Exception(exc_type, [message] if message else []))
        record.state = State.MESSAGE
        return True
    if record.state is State.MESSAGE:
        record.exceptions[-1].message_lines.append(stripped)
        return True
    return False


def opens_record(env: Envelope, at: LineInfo) -> OpenRecord | None:
    """A record starts at a traceback header (bare, rank-prefixed or after a logged message such as
    'Scheduler hit an exception: '), at threading's 'Exception in thread X:', or at faulthandler's
    'Fatal Python error'."""
    text = env.message
    if _OPENERS.search(text) is None:
        return None  # a cheap test first: most lines are not traceback lines
    shape = line_shape(text)
    if shape is None:
        return None
    if shape.rule == "tb_thread_exception":
        return OpenRecord(at=at, header=text.strip().rstrip(":"), uncaught=True, state=State.GAP)
    if shape.rule == "tb_header":
        logged_by = shape.value("logged_by")
        header = logged_by.strip().rstrip(":").strip() or None if logged_by else None
        uncaught = not env.stamped and header is None
        return OpenRecord(at=at, header=header, uncaught=uncaught)
    if shape.rule == "tb_fatal":
        return OpenRecord(at=at, header=None, uncaught=True, state=State.FATAL, fatal_message=text.strip())
    return None
