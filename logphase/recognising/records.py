"""Multi-line records. Python tracebacks (chained ones included) become one
``PythonException`` event; faulthandler dumps one ``FatalSignal``; an escaped C++ exception one
``ProcessError``. The shape of each line is ``grammars/shared/traceback.lark``'s.

A record also opens without its first line, because windows and pastes start anywhere: at a frame
(``  File "...", line 12, in f``), at a lone exception line (``ValueError: ...``), at a faulthandler
stack (``Current thread 0x...``). Only lines without SGLang's own prefix can do that: SGLang logs
whole records, header first.

Open records are kept per stream: torchrun's ``[rank3]:`` prefix names the stream, so two ranks'
tracebacks can interleave; unprefixed lines share one stream. A line from another writer (a
timestamped log line, NCCL, Gloo, glog, uvicorn, tqdm) does not break a traceback that has not
reached its exception line yet: it was written by another process in between.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum
from functools import cache
from typing import Literal

from logphase.packs import PACKS, kept_regex
from logphase.packs.grammars import Parsed, terminal_pattern
from logphase.reading.envelope import Envelope
from logphase.recognising.plain import MAX_PARSE_CHARS
from logphase.recognising.prefilter import literal_factors
from logphase.recognising.recognisers import recognise
from logphase.vocabulary import events as ev
from logphase.vocabulary.events import LineInfo

# An exception message may run over several lines ("Possible solutions:", torchrun's failure
# report); beyond this many lines the record is closed and what follows is read on its own.
MAX_MESSAGE_LINES = 40
MAX_FRAMES = 200


# an exception line standing alone: an exception class at the start, then ':' or nothing
# (or any class of a library's exceptions module: 'requests.exceptions.ReadTimeout: ...')
_EXCEPTION_HEAD = (
    r"^(?:(?:[A-Za-z_]\w*\.)*[A-Za-z_]?\w*(?:Error|Exception|Exit|Interrupt)(?::|\s*$)"
    r"|(?:[A-Za-z_]\w*\.)*(?:exceptions|errors)\.[A-Z]\w*:)"
)
# what a line that opens a record has in it, from the grammar's terminals: a header, a frame, a
# faulthandler stack, a C++ terminate, or an exception class at the start of the line
# the record openers a line can hold after other text (a logged message, SGLang's prefix)
OPENER_TERMINALS = ("TRACEBACK", "THREAD_EXCEPTION", "FATAL_ERROR", "THREAD_DUMP", "TERMINATE")
# a header a paste folded: the line ends inside 'Traceback (most recent call last):'
_FOLDED_HEADER = r"Traceback \([\w ]*$"
_OPENERS = re.compile(
    "|".join([terminal_pattern("traceback", t) for t in OPENER_TERMINALS] + [r'^\s*File "', _EXCEPTION_HEAD, _FOLDED_HEADER])
)
OPENERS = _OPENERS  # the bulk path's pre-filter searches for their literals (prefilter.py)
# a line cut inside a traceback header: "[...] Scheduler hit an exception: Tra" at the end of the input
_HEADER_TEXT = "Traceback (most recent call last):"
# (what the servers log before a traceback is their packs': 'hit an exception', 'warmup error')
_CUT_HEADER = re.compile(
    r"(?P<by>.*?(?:" + "|".join(h for pack in PACKS for h in pack.cut_headers) + r")):? ?(?P<tail>T[\w ()]*)?$"
)


class State(Enum):
    FRAMES = "frames"  # reading frames (or waiting for the first)
    MESSAGE = "message"  # the exception line was read; its message may go on
    GAP = "gap"  # a blank line after the message: a chained traceback may follow
    CHAIN = "chain"  # "During handling of the above exception ..." was read
    FATAL = "fatal"  # a faulthandler dump
    CXX = "cxx"  # an escaped C++ exception: what(), c10's origin and native frames


def line_shape(text: str) -> Parsed | None:
    """What traceback.lark says a line is (header, frame, chain, exception ...), or None."""
    stripped = text.strip()
    if not stripped or len(stripped) > MAX_PARSE_CHARS:
        return None
    return recognise("traceback", text if text[:1] in " \t" else stripped)


@dataclass
class _Exception:
    exc_type: str | None
    message_lines: list[str]
    line: int | None = None


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
    headerless: bool = False
    native_stack: bool = False  # a C++ exception's what() is over: c10's native stack follows
    # the exception's message quotes another process's whole traceback (0.2.x launch_server's
    # 'RuntimeError: Initialization failed. controller_init_state: Traceback (most recent ...':
    # its frames and exception line are the message's lines, not a traceback of their own
    quoting: bool = False
    statement: str | None = None  # the source line under the last frame
    # pasted tracebacks: frames at the margin (a tracker stripped the indentation, so the source
    # lines are at the margin too), and a frame line a narrow paste folded, waiting for its rest
    margin: bool = False
    folded_frame: str | None = None
    # another writer's plain line came between its frames ('Killing all sglang processes'): a bare
    # 'Traceback (most recent call last):' after it is a traceback of its own, not this one's chain
    interrupted: bool = False
    last_frame_text: str | None = None  # the last line, when it was a frame line (its rest may follow)
    frame_indent: int = 0  # the frame lines' indentation: a line left of it is no source line
    tail: str = ""  # the last character of the last line taken (a fold goes on mid-word or after a space)
    # faulthandler: the stacks of the dump's threads, innermost frame first as it prints them
    stacks: list[tuple[bool, list[ev.Frame]]] = field(default_factory=list)

    @property
    def fragment(self) -> bool:
        """Only the first part of a folded frame line, its rest not (yet) seen: nothing to report."""
        return self.headerless and self.state is State.FRAMES and not self.frames and not self.exceptions

    @property
    def complete(self) -> bool:
        """The record has reached its exception line (or is a faulthandler dump or a C++ exception)."""
        return bool(self.exceptions) or self.fatal_message is not None or self.state is State.CXX

    def to_event(self) -> ev.EventBase:
        if self.state is State.CXX:
            what = " ".join(m for e in self.exceptions for m in e.message_lines)
            message = f"{self.header}: {what}" if what else (self.header or "C++ exception")
            return self.at.event(ev.ProcessError, "tb_terminate", source="cxx", message=message, end_line=self.last_line)
        if self.fatal_message is not None:
            # the crashing thread's stack ("Current thread"), else the last one, outermost frame first
            current = next((frames for is_current, frames in self.stacks if is_current), None)
            frames = current if current is not None else (self.stacks[-1][1] if self.stacks else [])
            return self.at.event(
                ev.FatalSignal,
                None,
                message=self.fatal_message,
                frames=list(reversed(frames))[-MAX_FRAMES:],
                headerless=self.headerless,
                end_line=self.last_line,
            )
        chain = [
            ev.ChainedException(exc_type=e.exc_type, message="\n".join(e.message_lines), exception_line=e.line)
            for e in self.exceptions
        ]
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
            statement=self.statement if last is None else None,
            uncaught=self.uncaught,
            exception_line=last.exception_line if last else None,
            headerless=self.headerless,
            raised_by=_raising_statement(self.statement) if last is not None else None,
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
        return [record.to_event()] if record and not record.fragment else []

    def close_all(self) -> list[ev.EventBase]:
        out: list[ev.EventBase] = []
        for stream in list(self._open):
            out.extend(self.close(stream))
        return out

    def peek_all(self) -> list[ev.EventBase]:
        """The events the open records would give if closed now (the engine reports them early:
        a killed process never finishes its record)."""
        return [record.to_event() for record in self._open.values() if not record.fragment]

    def has_open(self) -> bool:
        return bool(self._open)

    def all_complete(self) -> bool:
        """True when every open record has reached its exception line."""
        return all(r.complete for r in self._open.values())

    def continues_incomplete(self, env: Envelope, foreign: bool) -> bool:
        """Whether the line would go on a record of its stream that has not reached its exception
        line yet (a traceback's frames): a last line there is inside the traceback."""
        record = self._open.get(env.stream)
        return record is not None and not record.complete and not env.stamped and not foreign

    def takes_plain_lines(self) -> bool:
        """Whether a plain stamped line (the bulk path's) would leave the records as they are: true
        unless the unprefixed stream's record is past its frames (such a line would close it)."""
        record = self._open.get(None)
        return record is None or record.state is State.FRAMES

    def offer(self, env: Envelope, lineno: int, foreign: bool, cut: bool = False) -> tuple[bool, list[ev.EventBase]]:
        """Give a line to the open record of its stream (``cut``: the input ended inside it). Returns
        (consumed, closed events)."""
        stream = env.stream
        if self._takes_fold(env, lineno, foreign):
            return True, []
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
        consumed = _continue(record, text, lineno, cut)
        if record.fragment and record.folded_frame is None:
            # the first part of a frame line whose rest never came: a line that only looked like one
            del self._open[stream]
            return False, []
        if consumed is None:
            record.interrupted = True
            return False, []  # another writer's line between the frames: the record stays open
        if consumed:
            record.lines += 1
            record.last_line = lineno
            record.tail = text[-1:]
            limit = MAX_MESSAGE_LINES + (2 * MAX_FRAMES if record.quoting else 0)
            if record.state is State.MESSAGE and len(record.exceptions[-1].message_lines) > limit:
                return True, self.close(stream)
            return True, []
        return False, self.close(stream)


    def _takes_fold(self, env: Envelope, lineno: int, foreign: bool) -> bool:
        """Whether a line without any prefix is the rest of a frame line, or of an exception line,
        that a paste folded in another stream's record (the fold left the rank's, the process's or
        journald's prefix on its first part only)."""
        if env.stream is not None or env.stamped or env.process is not None:
            return False
        for stream, record in self._open.items():
            if stream is None:
                continue
            text = env.message
            if record.folded_frame is not None:
                taken = _rest_of_frame(record, text)
            elif record.last_frame_text is not None:
                taken = _tail_of_function(record, text, text.strip())
            else:
                taken = not foreign and _rest_of_exception(record, text, lineno)
            if taken:
                record.lines += 1
                record.last_line = lineno
                record.tail = text[-1:]
                return True
        return False


def _rest_of_exception(record: OpenRecord, text: str, lineno: int) -> bool:
    """The line right after a long exception line, at the margin and not a record's first line: the
    rest of it, folded by a paste (its signature may span the fold: diagnosis reads it unfolded)."""
    if record.state is not State.MESSAGE or lineno != record.last_line + 1 or text[:1] in " \t":
        return False
    if not (record.tail == " " or (record.tail.isalnum() and text[:1].isalnum())):
        return False  # the line before ended a sentence or a word: this one is another writer's
    last = record.exceptions[-1].message_lines if record.exceptions else []
    # (its own prefix made the folded line long: the message part of it may be short)
    if not last or len(last[-1]) < _FOLD_MIN // 2 or not text.strip() or _OPENERS.search(text) is not None:
        return False
    last.append(text.strip())
    return True


def _frame(shape: Parsed) -> ev.Frame:
    return ev.Frame(
        path=shape.value("frame_path") or "",
        lineno=int(shape.value("frame_line") or 0),
        function=shape.value("frame_function"),
    )


def _continue(record: OpenRecord, text: str, lineno: int, cut: bool = False) -> bool | None:
    """Whether ``text`` continues ``record`` (and what it adds to it); None for a line that does
    not, written between its frames by someone else (it leaves the record open)."""
    shape = line_shape(text)
    if record.state is State.FATAL:
        return _continue_dump(record, text, shape)
    if record.state is State.CXX:
        return _continue_cxx(record, text.strip(), shape)
    rule = shape.rule if shape is not None else None
    if rule == "tb_thread_exception" and record.state is not State.GAP:
        return False  # the next thread's traceback begins
    stripped = text.strip()
    if not stripped:
        if record.state is State.MESSAGE:
            record.state = State.GAP
        return True
    unfolded = _unfold_frame(record, text, stripped, shape)
    if unfolded is not None:
        return unfolded
    if rule == "tb_header" and shape is not None and shape.value("logged_by") is None:
        return _bare_header(record)
    if rule == "tb_header" and shape is not None and record.state is State.FRAMES and record.frames:
        return _quoting_exception(record, shape, lineno)
    if text.startswith((" ", "\t")) or rule == "tb_frame":
        return _continue_indented(record, stripped, shape, cut, text, lineno)
    if rule == "tb_chain":
        record.state = State.CHAIN
        return True
    if rule in ("tb_fatal", "tb_terminate"):
        return False  # a crash of its own ('Fatal Python error', C++ terminate): never a message's tail
    return _continue_unindented(record, stripped, shape, lineno)


def _bare_header(record: OpenRecord) -> bool:
    """'Traceback (most recent call last):' again: a chained traceback's (or a gap's) frames follow."""
    if record.state is State.FRAMES and record.interrupted:
        return False
    if record.state in (State.GAP, State.CHAIN, State.FRAMES) and (record.state is not State.GAP or not record.exceptions):
        record.state = State.FRAMES
        return True
    return False


def _continue_indented(
    record: OpenRecord, stripped: str, shape: Parsed | None, cut: bool, text: str = "", lineno: int = 0
) -> bool | None:
    """An indented line (or a frame at the margin): a frame, the source line of a frame, or a
    message's continuation."""
    is_frame = shape is not None and shape.rule == "tb_frame"
    if record.state is State.FRAMES and len(text) - len(text.lstrip()) < record.frame_indent and not is_frame:
        # left of the frames: the exception line of a traceback whose lines all lost the same
        # part of their prefix ('[rank1]:' dropped from '[rank1]: ValueError: ...')
        return _continue_unindented(record, stripped, line_shape(stripped), lineno)
    if record.quoting and record.state is State.MESSAGE:
        record.exceptions[-1].message_lines.append(stripped)  # a line of the quoted traceback
        return True
    if shape is not None and is_frame:
        if record.state in (State.GAP, State.MESSAGE):
            # frames after the exception line: another traceback, its header not in the log (or
            # quoted in the message, as Ray's RayTaskError quotes its worker's): read on its own
            return False
        frame = _frame(shape)
        # a frame line the input ends in may be cut inside its function's name: no evidence
        record.frames.append(frame.model_copy(update={"function": None}) if cut else frame)
        record.state = State.FRAMES
        record.statement = None
        record.last_frame_text = None if cut else text
        record.margin = record.margin or not text.startswith((" ", "\t"))
        record.frame_indent = len(text) - len(text.lstrip())
        return True
    if record.state is State.FRAMES and record.frames and record.statement is None:
        record.statement = stripped  # the source line of the innermost frame so far
    if record.state is State.MESSAGE:
        record.exceptions[-1].message_lines.append(stripped)
    return record.state is not State.GAP


def _continue_unindented(record: OpenRecord, stripped: str, shape: Parsed | None, lineno: int) -> bool | None:
    """A line at the margin: after the frames, the exception line; after it, its message's lines."""
    if record.state is State.FRAMES:
        if not _names_an_exception(shape):
            if record.margin and record.frames and (record.statement is None or _CARETS.fullmatch(stripped)):
                # frames at the margin: so is the source line under each (and its ^^^^ marks)
                record.statement = record.statement or stripped
                return True
            return None  # 'srun: Terminating StepId=...' between a traceback's frames
        record.exceptions.append(_exception(shape, stripped, lineno))
        record.state = State.MESSAGE
        return True
    if record.state is State.MESSAGE:
        if not record.frames and record.header is None and _names_an_exception(shape):
            # a lone exception line is followed by another's ('ChildFailedError: ' then the child's
            # 'torch.OutOfMemoryError: ...' pasted under it): a record of its own, not the message
            return False
        record.exceptions[-1].message_lines.append(stripped)
        return True
    return False


# the start of a frame line, and the marks under a source line (Python 3.11+)
_FRAME_START = re.compile(r'File "')
# a frame line a fold cut before its function: in its path (a path with no blank), or in '", line 27'
_INCOMPLETE_FRAME = re.compile(r'\s*File "(?:[^"\s]*|[^"\s]+"(?:,(?: (?:l(?:i(?:n(?:e(?: \d*)?)?)?)?)?)?)?)$')
_CARETS = re.compile(r"[\^~ ]+")
# what may end a frame line a paste folded inside its function's name ('... in init_memory_po' + 'ol')
_NAME_TAIL = re.compile(r"[\w.<>]+")
_STATEMENT_WORDS = frozenset({"raise", "return", "pass", "break", "continue", "yield", "await"})
# a fold happens only in a long line: a shorter frame line ends where Python ended it
_FOLD_MIN = 60


def _unfold_frame(record: OpenRecord, text: str, stripped: str, shape: Parsed | None) -> bool | None:
    """A frame line a paste folded at its width: its first part (kept until its rest comes), the
    line that completes a frame line cut before its function, or the tail of a function's name cut
    at the margin. None for a line that is none of these (a frame line still incomplete is given
    up: it says nothing)."""
    if shape is None and record.state is State.FRAMES and _FRAME_START.match(stripped) and record.folded_frame is None:
        record.folded_frame = text  # 'File "/usr/lib/.../model_ru'
        return True
    if record.folded_frame is not None:
        return _rest_of_frame(record, text)
    return _tail_of_function(record, text, stripped)


def _rest_of_frame(record: OpenRecord, text: str) -> bool | None:
    """The line after the first part of a folded frame line: the frame, whole again, or more of it."""
    joined, record.folded_frame = record.folded_frame + text if record.folded_frame else text, None
    shape = line_shape(joined)
    if shape is not None and shape.rule == "tb_frame":
        if record.frames and record.frames[-1].function is None:
            record.frames.pop()  # the folded part, read as a frame in case nothing followed
        return _continue_indented(record, joined.strip(), shape, False, joined)
    if _INCOMPLETE_FRAME.match(joined) and len(joined) < MAX_PARSE_CHARS:
        record.folded_frame = joined  # folded more than once (a narrow box, a long path)
        return True
    return None


def _tail_of_function(record: OpenRecord, text: str, stripped: str) -> bool | None:
    """The line after a long frame line, at the margin: the rest of its function's name (or of its
    line number and function) when the frame line and it make one frame line."""
    previous, record.last_frame_text = record.last_frame_text, None
    if previous is None or len(previous) < _FOLD_MIN or text[:1] in " \t" or not record.frames:
        return None
    # after a whole function's first letters only the rest of its name: a statement at the margin
    # ('raise', 'main()') is the source line of a traceback a tracker stripped of its indentation
    if record.frames[-1].function is not None and (not _NAME_TAIL.fullmatch(stripped) or stripped in _STATEMENT_WORDS):
        return None
    shape = line_shape(previous + text)
    if shape is None or shape.rule != "tb_frame" or shape.value("frame_function") is None:
        return None
    record.frames[-1] = _frame(shape)
    return True


def _quoting_exception(record: OpenRecord, shape: Parsed, lineno: int) -> bool | None:
    """After frames, an exception line whose message ends by quoting a traceback header
    ('RuntimeError: Initialization failed. controller_init_state: Traceback (most recent call
    last):'): the record's exception, and the quoted traceback is its message. None when the text
    before the header names no exception (a logged message: another writer's record begins)."""
    logged_by = (shape.value("logged_by") or "").strip()
    inner = line_shape(logged_by)
    if not _names_an_exception(inner):
        return None
    exception = _exception(inner, logged_by, lineno)
    exception.message_lines.append(_HEADER_TEXT)
    record.exceptions.append(exception)
    record.state = State.MESSAGE
    record.quoting = True
    return True


# an exception class: CapWords (KeyError, torch.OutOfMemoryError, KeyboardInterrupt), after any module
_EXCEPTION_CLASS = re.compile(r"(?:\w+\.)*_*[A-Z]\w*")
# Python's own statements that raise (a frame's source line): the frame raised, it did not call
_RAISE_STATEMENT = re.compile(r"(raise|assert)\b")


def _raising_statement(statement: str | None) -> Literal["raise", "assert"] | None:
    m = _RAISE_STATEMENT.match(statement or "")
    if m is None:
        return None
    return "raise" if m.group(1) == "raise" else "assert"


def _names_an_exception(shape: Parsed | None) -> bool:
    """An exception line: 'Type: message' or a bare 'Type' whose type is a class name."""
    if shape is None or shape.rule != "tb_exception":
        return False
    return _EXCEPTION_CLASS.fullmatch(shape.value("exc_type") or "") is not None


def _exception(shape: Parsed | None, stripped: str, lineno: int) -> _Exception:
    """The exception an exception line names ('torch.OutOfMemoryError: CUDA out of ...')."""
    exc_type, message = None, stripped
    if shape is not None and shape.rule == "tb_exception":
        exc_type = shape.value("exc_type")
        message = (shape.value("exc_message") or "").strip()
    return _Exception(exc_type, [message] if message else [], lineno)


def _continue_dump(record: OpenRecord, text: str, shape: Parsed | None) -> bool:
    """faulthandler: "Thread 0x... (most recent call first):" blocks of '  File "..."' lines."""
    rule = shape.rule if shape is not None else None
    if rule == "tb_thread_dump":
        record.stacks.append((text.lstrip().startswith(("Current thread", "Stack")), []))
        return True
    if rule == "tb_frame" and shape is not None:
        if not record.stacks:
            record.stacks.append((False, []))
        record.stacks[-1][1].append(_frame(shape))
        return True
    return not text.strip() or text.startswith((" ", "\t")) or rule == "tb_extensions"


def _continue_cxx(record: OpenRecord, stripped: str, shape: Parsed | None) -> bool:
    """A C++ exception: what() and the lines of its message, then c10's origin and frames."""
    rule = shape.rule if shape is not None else None
    if rule == "tb_what" and shape is not None:
        message = (shape.value("exc_message") or "").strip()
        record.exceptions.append(_Exception(None, [message] if message else []))
        return True
    if rule in ("tb_cxx_origin", "tb_cxx_frame"):
        record.native_stack = True
        return True
    if not stripped or rule in ("tb_fatal", "tb_header", "tb_thread_dump"):
        return False
    if record.exceptions and not record.native_stack and len(record.exceptions[-1].message_lines) < MAX_MESSAGE_LINES:
        record.exceptions[-1].message_lines.append(stripped)
        return True
    return False



@cache
def _opener_literals() -> frozenset[str]:
    """Strings one of which every match of ``_OPENERS`` contains."""
    found = literal_factors(_OPENERS.pattern)
    assert found is not None, "the record openers have no literals to search for"
    return found


_REQUEST_HEADER = kept_regex.compile("|".join(f"(?:{h})" for pack in PACKS for h in pack.request_headers) or "(?!)")


def request_header(text: str) -> bool:
    """Whether a line's message is what an HTTP server logs before one request's traceback."""
    return _REQUEST_HEADER.search(text) is not None


def opens_record(env: Envelope, at: LineInfo, cut: bool = False) -> OpenRecord | None:
    """A record starts at a traceback header (bare, rank-prefixed or after a logged message such as
    a scheduler's report of its exception), at threading's 'Exception in thread X:', at faulthandler's
    'Fatal Python error' or a C++ 'terminate called ...'; without its first line, at a frame, a
    faulthandler stack or an exception line that no server's prefix precedes. ``cut``: the input
    ends inside this line (a frame's function name may be cut short)."""
    text = env.message
    if not any(literal in text for literal in _opener_literals()):
        # the regex tries each opener at each position (~1 us a character): any line is first
        # searched for their literals (str's search, a few of them), most hold none
        return None
    if _OPENERS.search(text) is None:
        return None  # a cheap test first: most lines are not traceback lines
    shape = line_shape(text)
    if shape is None:
        # a header folded by a paste ('... hit an exception: Traceback (most recent cal'): the
        # rest of it is on the next line, the frames after it
        return cut_header(env, at) if re.search(_FOLDED_HEADER, text) else _folded_first_frame(env, at, text)
    first = _FIRST_LINES.get(shape.rule)
    if first is not None:
        return first(env, at, text, shape)
    if env.stamped:
        return None  # a server's logger prints records whole: a stamped line is no fragment of one
    record = _headless(at, text, shape)
    if record is not None:
        record.tail = text[-1:]
        if cut and record.frames:
            # a frame line the input ends in may be cut inside its function's name ('in
            # initialize_model' of 'initialize_model_parallel'): no evidence, as in _continue_indented
            record.frames[-1] = record.frames[-1].model_copy(update={"function": None})
            record.last_frame_text = None
    return record


def _thread_exception(env: Envelope, at: LineInfo, text: str, shape: Parsed) -> OpenRecord:
    return OpenRecord(at=at, header=text.strip().rstrip(":"), uncaught=True, state=State.GAP)


def _traceback_header(env: Envelope, at: LineInfo, text: str, shape: Parsed) -> OpenRecord:
    logged_by = shape.value("logged_by")
    header = logged_by.strip().rstrip(":").strip() or None if logged_by else None
    # a bare header with a server's prefix is a scheduler's death in SGLang 0.3.x when a rank logs it
    uncaught = header is None and (not env.stamped or env.rank is not None)
    return OpenRecord(at=at, header=header, uncaught=uncaught)


def _fatal(env: Envelope, at: LineInfo, text: str, shape: Parsed) -> OpenRecord:
    return OpenRecord(at=at, header=None, uncaught=True, state=State.FATAL, fatal_message=text.strip())


def _terminate(env: Envelope, at: LineInfo, text: str, shape: Parsed) -> OpenRecord:
    return OpenRecord(at=at, header=text.strip(), uncaught=True, state=State.CXX)


# the first lines of a record, by their rule in traceback.lark
_FIRST_LINES: dict[str, Callable[[Envelope, LineInfo, str, Parsed], OpenRecord]] = {
    "tb_thread_exception": _thread_exception,
    "tb_header": _traceback_header,
    "tb_fatal": _fatal,
    "tb_terminate": _terminate,
}


def _headless(at: LineInfo, text: str, shape: Parsed) -> OpenRecord | None:
    """A record whose first line is not in the log: a window or a paste starts inside it."""
    rule = shape.rule
    if rule == "tb_frame" and shape.value("frame_function") is None:
        # '  File "/x/scheduler.py", line 210': no function, so neither a traceback's frame line
        # nor faulthandler's whole: a frame line a paste folded (its rest on the next line) or the
        # input cut (a traceback all the same)
        return OpenRecord(at=at, header=None, uncaught=True, frames=[_frame(shape)], headerless=True, folded_frame=text)
    if rule == "tb_thread_dump" or (rule == "tb_frame" and '", line ' in text and not _has_comma_in(text)):
        record = OpenRecord(at=at, header=None, uncaught=True, state=State.FATAL, headerless=True)
        record.fatal_message = "faulthandler stack dump (its 'Fatal Python error' line is not in the log)"
        _continue_dump(record, text, shape)
        return record
    if rule == "tb_frame":
        indent = len(text) - len(text.lstrip())  # none: a paste that lost the frames' indentation
        return OpenRecord(
            at=at,
            header=None,
            uncaught=True,
            frames=[_frame(shape)],
            headerless=True,
            margin=not indent,
            last_frame_text=text,
            frame_indent=indent,
        )
    if rule == "tb_exception" and re.match(_EXCEPTION_HEAD, text.strip()):
        first = _exception(shape, text.strip(), at.line)
        return OpenRecord(at=at, header=None, uncaught=True, exceptions=[first], state=State.MESSAGE, headerless=True)
    return None


def _folded_first_frame(env: Envelope, at: LineInfo, text: str) -> OpenRecord | None:
    """A window that starts at a frame line a paste folded ('  File "/usr/lib/.../model_ru'): a
    headless record waiting for the rest of it (given up, with nothing said, if it never comes)."""
    if env.stamped or not _FRAME_START.match(text.lstrip()) or len(text) > MAX_PARSE_CHARS:
        return None
    return OpenRecord(at=at, header=None, uncaught=True, headerless=True, folded_frame=text)


def _has_comma_in(frame_line: str) -> bool:
    """Tracebacks write '", line 12, in f'; faulthandler '", line 12 in f'."""
    return re.search(r'", line \d+, in ', frame_line) is not None


def cut_header(env: Envelope, at: LineInfo) -> OpenRecord | None:
    """A line cut inside a traceback's header (the last line of a log the process died writing):
    '... Scheduler hit an exception: Tra', or 'Traceback (most rec'."""
    text = env.message.rstrip()
    m = _CUT_HEADER.match(text)
    if m is not None and _HEADER_TEXT.startswith(m.group("tail") or ""):
        return OpenRecord(at=at, header=m.group("by").strip() or None, uncaught=True)
    if len(text.strip()) >= 5 and _HEADER_TEXT.startswith(text.strip()):
        return OpenRecord(at=at, header=None, uncaught=not env.stamped or env.rank is not None)
    return None
