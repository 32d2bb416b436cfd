"""The recognising stage's entry point: a read line (``reading.reader.ReadLine``) -> what it means,
handed to the next stage through an :class:`EventSink`: the typed events it completes, the server
its start shows, the time of a server's line no grammar knows.

The first step that takes a line decides: a blank line (it may end a traceback's message), a line
cut short at the end of the input, a Python warning's source line, the next line of an open
multi-line record (``records.py``), the first line of one, a one-line message (``classify.py``, else
a release's start-up note, ``notes.py``; either may be a setting the server changed, ``overrides.py``),
else an unrecognized line, counted and kept as a sample.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Protocol

from logphase.packs import kept_regex
from logphase.packs.grammars import terminal_pattern
from logphase.reading.envelope import Envelope, Stamp
from logphase.reading.lines import LogicalLine
from logphase.reading.reader import LineReader, ReadLine
from logphase.recognising.classify import classify, foreign_source
from logphase.recognising.detect import Start, server_start
from logphase.recognising.messages import MESSAGES
from logphase.recognising.notes import has_notes, note_event
from logphase.recognising.overrides import has_overrides, override_event
from logphase.recognising.records import OpenRecord, RecordAssembler, cut_header, line_shape, opens_record, request_header
from logphase.vocabulary import events as ev
from logphase.vocabulary.events import LineInfo

KEEP_UNRECOGNIZED = 200
# "file.py:12: UserWarning: text" is followed by the indented source line (sometimes two)
WARNING_TAIL_LINES = 2
# PyTorch's glog prefix (grammars/shared/torch.lark's GLOG_STAMP): level, month and day, time
# ("E0130 18:11:34.707542"; "E130 ..." in c10's own logger: the month without its leading zero)
_GLOG_TIME = kept_regex.compile(r"\[?(" + terminal_pattern("torch", "GLOG_STAMP") + ")")
# a last line that is only the start of a prefix: SGLang's or torchrun's bracket ("[2026-05-12 18:2",
# "[2026-05-12 18:20:05 TP", "[rank"), or a wrapper's stamp ("2026-05-12T18:2")
_HALF_PREFIX = re.compile(r"\[(?:\d[\d\-:.,T ]*(?: [A-Z]{1,4}\d*)*|r(?:a(?:n(?:k\d*)?)?)?)?|\d{1,4}(?:-[\d\-:.,T+Z]*)?")
# what a progress bar's redraw shows ("40%|████", "50% Completed | 3/6", "| 14/35 [00:0")
_BAR_SHAPE = re.compile(r"\d%\||% Completed|\| *\d+/\d+ \[")


class EventSink(Protocol):
    """Where recognised lines go: the next stage (the engine wires it to the phase machine)."""

    def event(self, event: ev.EventBase) -> None:
        """A typed event, complete (a traceback at the line after its last one)."""

    def start(self, start: Start, lineno: int) -> None:
        """A line shows which server runs (``detect.py``)."""

    def server_line(self, ts: str, lineno: int) -> None:
        """A line with the server's own prefix and time that no grammar knows."""

    def own_time(self, ts: str, lineno: int) -> None:
        """A time the server's process printed inside a message (PyTorch's glog stamp): its own clock."""

    def notes_wanted(self) -> bool:
        """Whether a line no grammar reads may be a release's start-up note now (until the run is
        ready: after that it could tell nothing)."""


class LineCounts:
    """Logical lines by what became of them (the report's ``lines``)."""

    __slots__ = ("blank", "events", "ignored", "repeated", "truncated", "unrecognized")

    def __init__(self) -> None:
        self.events = self.unrecognized = self.blank = self.ignored = self.truncated = self.repeated = 0


class EventReader:
    """Reads the lines of one input, in order, into events (see the module's docstring)."""

    def __init__(self, reader: LineReader, on_unrecognized: Callable[[LogicalLine], None] | None = None) -> None:
        """``reader``: the reading stage of the same input (the clock of a time a message carries
        inside itself); ``on_unrecognized`` is called with every line no grammar recognised."""
        self._reader = reader
        self.records = RecordAssembler()
        self.counts = LineCounts()
        self.unrecognized_sample: list[tuple[int, str]] = []
        self.truncated_line: int | None = None
        self.on_unrecognized = on_unrecognized
        self.warning_tail = 0  # indented source lines that follow a Python warning
        self.has_notes = has_notes()
        self.has_catalogue = self.has_notes or has_overrides()
        # the last line read that may be the logged header of the traceback after it: (line, writer, text)
        self._last_message: tuple[int, str | None, str] = (0, None, "")

    def read(self, read: ReadLine, sink: EventSink) -> None:
        """One line, in order; what it means goes to ``sink``."""
        line, env = read.line, read.env
        if read.blank:
            self._blank(line, env, read.ignored, sink)
            return
        if read.ignored or env is None or read.info is None:
            self.counts.ignored += 1
            return
        start = server_start(env)
        if start is not None:
            sink.start(start, line.lineno)
        self.counts.repeated += env.repeated
        if line.partial and self._visibly_cut(env, read.info):
            self._partial(line, env, read.info, sink)
            return
        if self._warning_source(line.text, env) or self._record_goes_on(line, env, sink):
            self.counts.events += 1
            return
        if self._record_starts(line, env, read.info, sink):
            self.counts.events += 1
            return
        self._last_message = (line.lineno, env.stream, env.message)
        self._message(line, env, read.info, read.ts, sink)

    def finish(self, sink: EventSink) -> None:
        """The input has ended: the open records are complete as they stand."""
        for event in self.records.close_all():
            sink.event(event)

    def quiet_clean(self) -> bool:
        """Whether a run of lines no grammar reads may be counted in bulk now: nobody asks for each
        unrecognized line, and no warning or record may take one."""
        return self.on_unrecognized is None and not self.warning_tail and not self.records.has_open()

    def sample_room(self) -> int:
        return KEEP_UNRECOGNIZED - len(self.unrecognized_sample)

    # -- per line -----------------------------------------------------------------------------------

    def _blank(self, line: LogicalLine, env: Envelope | None, ignored: bool, sink: EventSink) -> None:
        """A blank line, bare or in a wrapper ("sglang-1  | "): it may end a traceback's message."""
        if ignored:
            self.counts.ignored += 1
            return
        if line.partial and line.text.strip():  # a wrapper's prefix, cut before its message
            self.counts.truncated += 1
            self.truncated_line = line.lineno
            return
        consumed, closed = self.records.offer(env or _NO_ENVELOPE, line.lineno, False)
        for event in closed:
            sink.event(event)
        if consumed:
            self.counts.events += 1
        else:
            self.counts.blank += 1

    def _warning_source(self, text: str, env: Envelope) -> bool:
        """Whether the line is a Python warning's indented source line (counted as its event's)."""
        if not self.warning_tail:
            return False
        if not env.stamped and text[:1] in " \t":
            shape = line_shape(text)
            if shape is None or shape.rule != "tb_frame":
                self.warning_tail -= 1
                return True
        self.warning_tail = 0
        return False

    def _record_goes_on(self, line: LogicalLine, env: Envelope, sink: EventSink) -> bool:
        """Offers the line to the open records: whether one took it (the records it closed go on)."""
        # only an open record asks whose the line is (a search through a long line costs)
        foreign = self.records.has_open() and foreign_source(env)
        consumed, closed = self.records.offer(env, line.lineno, foreign)
        for done in closed:
            sink.event(done)
        return consumed

    def _record_starts(self, line: LogicalLine, env: Envelope, info: LineInfo, sink: EventSink) -> bool:
        """Whether the line opens a multi-line record (a traceback)."""
        record = opens_record(env, info)
        if record is None:
            return False
        self._logged_header(record, line.lineno, env)
        record.last_line = line.lineno
        for done in self.records.start(env.stream, record):
            sink.event(done)
        return True

    def _logged_header(self, record: OpenRecord, lineno: int, env: Envelope) -> None:
        """A traceback whose header is the message its writer logged on the line before it (an
        HTTP server's 'Exception in ASGI application': one request's failure) takes it as its header."""
        before, stream, text = self._last_message
        if record.header is None and before == lineno - 1 and stream == env.stream and request_header(text):
            record.header = text.strip()

    def _message(self, line: LogicalLine, env: Envelope, info: LineInfo, ts: str | None, sink: EventSink) -> None:
        """A one-line message: its event (what a grammar reads, else a start-up note), or an
        unrecognized line."""
        found = classify(env, info)
        if (found is None or isinstance(found, ev.StartupNote)) and self.has_catalogue and sink.notes_wanted():
            if found is None and self.has_notes:
                found = note_event(env.message, info)  # a start-up message of a release that no grammar reads
            # a setting the server changed on its own (overrides.py): read as that, with the note's evidence
            found = override_event(env.message, info, found) or found
        if found is None:
            self._unrecognized(line, env, ts, sink)
            return
        self.counts.events += 1
        if isinstance(found, ev.PythonWarning):
            self.warning_tail = WARNING_TAIL_LINES
        own = self._own_time(found, env, line.lineno) if ts is None else None
        sink.event(found)
        if own is not None:
            sink.own_time(own, line.lineno)

    def _unrecognized(self, line: LogicalLine, env: Envelope, ts: str | None, sink: EventSink) -> None:
        if env.stamped and ts is not None:
            sink.server_line(ts, line.lineno)  # the server's, though no message logphase knows
        self.counts.unrecognized += 1
        if len(self.unrecognized_sample) < KEEP_UNRECOGNIZED:
            self.unrecognized_sample.append((line.lineno, line.text[:300]))
        if self.on_unrecognized is not None:
            self.on_unrecognized(line)

    def _own_time(self, event: ev.EventBase, env: Envelope, line: int) -> str | None:
        """A line no wrapper or server prefix dates may carry its own time: PyTorch's glog stamp
        ('[E130 18:11:34.707542570 ProcessGroupGloo.cpp:143]', 'W0529 14:02:24.102000 90211 ...'), or the
        same stamp of another program that logs with glog, whose lines a server's grammar reads (an
        inference server's own start-up lines). Returns it (None: none)."""
        if event.rule not in MESSAGES:
            return None
        m = _GLOG_TIME.match(env.message)
        if m is None:
            return None
        month_day, clock = m.group(1)[1:].split(" ", 1)  # after the level letter
        stamp = Stamp(None, int(month_day[:-2]), int(month_day[-2:]), clock[:15])
        ts = self._reader.date_own_stamp(stamp, m.group(0).lstrip("["), line)
        if ts is not None:  # month 13: text, the time stays inherited
            event.ts = ts
            event.ts_inherited = False
        return ts

    def _visibly_cut(self, env: Envelope, info: LineInfo) -> bool:
        """Whether the last line, which the input ended without its newline, shows that it was cut:
        it is inside a traceback not yet at its exception line (its first frame line included, when
        the traceback's start is not in the input), it is a progress bar's redraw that
        is not a whole bar, or it is a prefix or a traceback header half written (``[2026-05-12 18:2``,
        ``Traceback (most rec``), or the server's prefix without its message. Any other last line is
        a line (logs copied out of notebooks, CI pages and chats lose the last ``\\n``)."""
        if self.records.continues_incomplete(env, foreign_source(env)):
            return True
        opened = opens_record(env, info)
        if opened is not None and opened.headerless and opened.frames:
            return True  # a window that ends in its first frame line: a traceback not yet at its exception
        message = env.message.strip()
        if env.stamped and not message:
            return True
        if _HALF_PREFIX.fullmatch(message) is not None or cut_header(env, info) is not None:
            return True  # a prefix, or a traceback's header ("Scheduler hit an exception: Tra"), half written
        return _BAR_SHAPE.search(message) is not None and not isinstance(classify(env, info), ev.ProgressBar)

    def _partial(self, line: LogicalLine, env: Envelope, info: LineInfo, sink: EventSink) -> None:
        """A line visibly cut short (see ``_visibly_cut``): a cut traceback header still opens its
        record, the rest of a traceback says where it was; the line is counted as truncated."""
        bar = classify(env, info)
        if isinstance(bar, ev.ProgressBar):
            sink.event(bar)
            self.counts.events += 1
            return
        # the rest of an open traceback (a frame or a call cut mid-word says where it was), or its header
        consumed, closed = self.records.offer(env, line.lineno, foreign_source(env), cut=True)
        for done in closed:
            sink.event(done)
        record = None if consumed else opens_record(env, info, cut=True) or cut_header(env, info)
        if record is not None:
            self._logged_header(record, line.lineno, env)
            record.last_line = line.lineno
            for done in self.records.start(env.stream, record):
                sink.event(done)
        self.counts.truncated += 1
        self.truncated_line = line.lineno


_NO_ENVELOPE = Envelope(None, None, "", None)
