"""The one incremental engine behind every face of logphase (parse, follow, library, oracle).

    bytes (any chunking) -> LineSplitter -> envelope -> records / classify -> PhaseMachine -> Report

``feed`` returns the events the new bytes completed; ``finish`` flushes the held partial line and
open multi-line records; ``report`` describes the state at any moment without changing it.
"""

from __future__ import annotations

import copy
import os
import re
from collections.abc import Callable, Mapping

from logphase.folding.machine import PhaseMachine
from logphase.packs import kept_regex
from logphase.packs.grammars import terminal_pattern
from logphase.reading.clock import LogClock, YearHint, file_time_hint
from logphase.reading.envelope import Envelope, Stamp, split_envelope, valid_stamp
from logphase.reading.lines import LineRun, LineSplitter, LogicalLine
from logphase.recognising.bulk import BulkReader, QuietLines
from logphase.recognising.classify import classify, foreign_source
from logphase.recognising.detect import server_start
from logphase.recognising.messages import MESSAGES
from logphase.recognising.notes import has_notes, note_event
from logphase.recognising.records import RecordAssembler, cut_header, line_shape, opens_record
from logphase.reporting.build_report import build_report
from logphase.reporting.report import LinesReport, Report, WarningReport, YearReport, normalize_expect
from logphase.vocabulary import events as ev
from logphase.vocabulary.events import LineInfo
from logphase.vocabulary.redact import redact_text
from logphase.vocabulary.servers import Server

# Raw text kept on an event; the rest of a long line is reachable through its line number.
MAX_RAW_CHARS = 2000
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


class Engine:
    """The incremental reader of one log: feed it bytes in any chunking, ask for the report at
    any moment.

    ``source`` names the input in reports. ``since`` ("2026-05-09 09:20:00") ignores output
    stamped earlier. ``on_unrecognized`` is called with every line no grammar recognised. With
    ``collect_events=False`` ``feed`` and ``finish`` return no events, and the lines whose
    events only move the clock (batch statistics, access lines once ready) are counted in bulk
    without building their events: the report is the same, many times faster.
    """

    def __init__(
        self,
        source: str = "<stream>",
        since: str | None = None,
        on_unrecognized: Callable[[LogicalLine], None] | None = None,
        collect_events: bool = True,
        server: Server | None = None,
        year: YearHint | None = None,
    ) -> None:
        """``server`` says which server wrote the log (``--server``): every run is that server's,
        whatever its start lines show. ``year``: where stamps that print no year (vLLM's) take it
        when no line of the log says it (``clock.file_time_hint``, ``clock.current_year_hint``)."""
        self.source = source
        self._collect = collect_events
        self._splitter = LineSplitter()
        self._records = RecordAssembler()
        self._machine = PhaseMachine()
        self._machine.server = server
        self._since = normalize_time(since) if since else None
        self._gate_open = self._since is None
        self._last_ts: str | None = None
        self._clock = LogClock(year)
        self._wrapped: tuple[int, str | None, Stamp | None] = (0, None, None)  # the last wrapped physical line
        self._retimed_before = 0  # lines before this one were re-timed (clock.take_retiming)
        self._on_unrecognized = on_unrecognized
        self.unrecognized_sample: list[tuple[int, str]] = []
        self._counts = {"events": 0, "unrecognized": 0, "blank": 0, "ignored": 0, "truncated": 0, "repeated": 0}
        self._truncated_line: int | None = None
        self._bad_stamps = 0  # lines whose stamp makes no valid time (read as text, time inherited)
        self._first_bad_stamp: tuple[int, str] | None = None
        self._warning_tail = 0  # indented source lines that follow a Python warning
        self._finished = False
        self._folded = 0  # events the machine has folded (built, or lines read in bulk as events)
        self._bulk = BulkReader()
        self._has_notes = has_notes()

    # -- public face ------------------------------------------------------------------------------

    def feed(self, data: bytes | str) -> list[ev.EventBase]:
        """Read more input (bytes; text is taken as UTF-8). Returns the events it completed: a
        line is complete at its newline, a traceback at the line after it. The partial last line
        is held until its newline or :meth:`finish`."""
        if self._finished:
            raise RuntimeError("Engine.feed() after finish()")
        if isinstance(data, str):
            data = data.encode("utf-8", errors="surrogateescape")
        elif not isinstance(data, bytes | bytearray | memoryview):
            raise TypeError(f"Engine.feed() takes bytes or str, not {type(data).__name__}")
        out: list[ev.EventBase] = []
        if self._collect:
            for line in self._splitter.feed(data):
                self._line(line, out)
            return out
        target = _BulkSide(self, out)
        for item in self._bulk.split(self._splitter, data):
            if isinstance(item, LineRun):
                self._bulk.read(item, target)
            else:
                self._line(item, out)
        return []

    def finish(self) -> list[ev.EventBase]:
        """The input has ended: flush the held partial line and the open tracebacks, and return
        their events. Later calls return nothing; ``feed`` after ``finish`` is an error."""
        if self._finished:
            return []
        out: list[ev.EventBase] = []
        for line in self._splitter.finish():
            self._line(line, out)
        for event in self._records.close_all():
            self._emit(event, out)
        self._finished = True
        return out if self._collect else []

    def has_open_records(self) -> bool:
        """True while a traceback (or another multi-line record) is still being read."""
        return self._records.has_open()

    def open_records_complete(self) -> bool:
        """True when every open traceback has reached its exception line."""
        return self._records.all_complete()

    def report(self, expect: Mapping[str, object] | None = None, include_open: bool = True, run: int | None = None) -> Report:
        """The report now, on the last run or on run ``run`` (1-based; ValueError if absent).

        ``expect`` maps server_args keys to the values you launched with (``{"tp_size": 2}``): a
        mismatch is a ``stale_log`` warning. ``include_open`` counts a traceback still being read
        (a killed process never finishes its record). The engine is not changed."""
        machine = self._machine
        pending = self._records.peek_all() if include_open else []
        if pending:
            # an open traceback counts already (a killed process never finishes its record)
            machine = copy.deepcopy(machine)
            for event in pending:
                machine.feed(event)
        stats = self._splitter.stats
        c = self._counts
        lines = LinesReport(
            total=c["events"] + c["unrecognized"] + c["blank"] + c["ignored"] + c["truncated"],
            events=c["events"],
            unrecognized=c["unrecognized"],
            blank=c["blank"],
            ignored=c["ignored"],
            truncated=c["truncated"],
            physical=stats.physical,
            invalid_utf8=stats.invalid_utf8,
            overlong=stats.overlong,
            repeated=c["repeated"],
        )
        report = build_report(
            machine,
            lines,
            self.source,
            normalize_expect(expect),
            self._truncated_line,
            run_index=run,
            input_complete=self._finished,
            since=self._since,
        )
        if self._first_bad_stamp is not None:
            report.warnings.append(self._bad_stamp_warning(self._first_bad_stamp))
        if self._clock.year_inferred is not None:
            year, source = self._clock.year_inferred
            report.year_inferred = YearReport.model_validate({"year": year, "source": source})
        return report

    def _bad_stamp_warning(self, first: tuple[int, str]) -> WarningReport:
        line, text = first
        n = self._bad_stamps
        lines = "1 line carries" if n == 1 else f"{n} lines carry"
        return WarningReport(
            kind="invalid_timestamp",
            message=f"{lines} a timestamp that makes no valid time (first {text!r}): read as text, "
            f"{'its' if n == 1 else 'their'} time taken from the line before",
            line=line,
            found=text,
        )

    @property
    def bytes_seen(self) -> int:
        """Bytes fed so far."""
        return self._splitter.bytes_seen

    @property
    def events_folded(self) -> int:
        """Events folded into the machine so far, whether they were built or their lines read in
        bulk: what tells a reader that does not collect events (``follow``) that a feed moved the
        machine, and the report may say something new."""
        return self._folded

    def _classify(self, env: Envelope, info: LineInfo) -> ev.EventBase | None:
        """The event of a line: what a grammar reads, else (until ready) a start-up note."""
        found = classify(env, info)
        if found is None and self._notes_wanted():
            found = note_event(env.message, info)  # a start-up message of a release that no grammar reads
        return found

    def _notes_wanted(self) -> bool:
        """Whether a line no grammar reads is looked up among the packs' start-up notes
        (recognising/notes.py): until the run is ready; after that they could tell nothing."""
        return self._has_notes and self._machine.run.ready_line is None

    # -- per line -------------------------------------------------------------------------------

    def _line(self, line: LogicalLine, out: list[ev.EventBase]) -> None:
        """One logical line the long way: envelope, time, then the first step that takes it (a
        blank line, a cut last line, a warning's source line, an open record's next line, a
        record's first line, a message or an unrecognized line)."""
        line = line._replace(text=redact_text(line.text))  # no secret reaches an event, a report or a face
        env = self._envelope(line)
        if env is None or (not env.message.strip() and not env.stamped):
            self._blank(line, env, out)
            return
        ts = self._time(line, env)
        if not self._gate_open:
            self._counts["ignored"] += 1
            return
        self._note_server(env, line.lineno)
        if line.partial and self._visibly_cut(line, env, ts):
            self._partial(line, env, ts, out)
            return
        if self._warning_source(line.text, env) or self._record_goes_on(line, env, out):
            self._counts["events"] += 1
            return
        info = self._info(line, env, ts)
        if self._record_starts(line, env, info, out):
            self._counts["events"] += 1
            return
        self._message(line, env, info, ts, out)

    def _envelope(self, line: LogicalLine) -> Envelope | None:
        """The line's envelope (None for a blank line), with its physical line's wrapper."""
        if not line.text.strip():
            return None
        return self._same_physical_line(line.lineno, split_envelope(line.text))

    def _blank(self, line: LogicalLine, env: Envelope | None, out: list[ev.EventBase]) -> None:
        """A blank line, bare or in a wrapper ("sglang-1  | "): it may end a traceback's message."""
        if not self._gate_open:
            self._counts["ignored"] += 1
            return
        if line.partial and line.text.strip():  # a wrapper's prefix, cut before its message
            self._counts["truncated"] += 1
            self._truncated_line = line.lineno
            return
        consumed, closed = self._records.offer(env or split_envelope(""), line.lineno, False)
        for event in closed:
            self._emit(event, out)
        self._counts["events" if consumed else "blank"] += 1

    def _time(self, line: LogicalLine, env: Envelope) -> str | None:
        """The line's time (None: it has none of its own); notes a bad stamp, opens the --since
        gate, moves the last time seen."""
        ts = self._clock.of(env)
        self._retime_lines_before(line.lineno)
        # a wrapper's time alone may rightly give none (its clock is not SGLang's in any zone): only
        # a stamp the envelope refused, or SGLang's own that makes no date, is a bad one
        if env.bad_stamp is not None or (ts is None and env.stamp is not None):
            self._note_bad_stamp(line.lineno, env.bad_stamp or _written(env))
        if ts is not None:
            if not self._gate_open and self._since is not None and ts >= self._since:
                self._gate_open = True
            self._last_ts = ts
        return ts

    def _warning_source(self, text: str, env: Envelope) -> bool:
        """Whether the line is a Python warning's indented source line (counted as its event's)."""
        if not self._warning_tail:
            return False
        if not env.stamped and text[:1] in " \t":
            shape = line_shape(text)
            if shape is None or shape.rule != "tb_frame":
                self._warning_tail -= 1
                return True
        self._warning_tail = 0
        return False

    def _record_goes_on(self, line: LogicalLine, env: Envelope, out: list[ev.EventBase]) -> bool:
        """Offers the line to the open records: whether one took it (the records it closed are emitted)."""
        # only an open record asks whose the line is (a search through a long line costs)
        foreign = self._records.has_open() and foreign_source(env)
        consumed, closed = self._records.offer(env, line.lineno, foreign)
        for done in closed:
            self._emit(done, out)
        return consumed

    def _record_starts(self, line: LogicalLine, env: Envelope, info: LineInfo, out: list[ev.EventBase]) -> bool:
        """Whether the line opens a multi-line record (a traceback)."""
        record = opens_record(env, info)
        if record is None:
            return False
        record.last_line = line.lineno
        for done in self._records.start(env.stream, record):
            self._emit(done, out)
        return True

    def _message(self, line: LogicalLine, env: Envelope, info: LineInfo, ts: str | None, out: list[ev.EventBase]) -> None:
        """A one-line message: its event, or an unrecognized line."""
        found = self._classify(env, info)
        if found is None:
            self._unrecognized(line, env, ts)
            return
        self._counts["events"] += 1
        if isinstance(found, ev.PythonWarning):
            self._warning_tail = WARNING_TAIL_LINES
        if ts is None:
            self._own_time(found, env, line.lineno)
        self._emit(found, out)

    def _unrecognized(self, line: LogicalLine, env: Envelope, ts: str | None) -> None:
        if env.stamped and ts is not None:
            self._machine.note_line(ts, line.lineno)  # SGLang's, though no message logphase knows
        self._counts["unrecognized"] += 1
        if len(self.unrecognized_sample) < KEEP_UNRECOGNIZED:
            self.unrecognized_sample.append((line.lineno, line.text[:300]))
        if self._on_unrecognized is not None:
            self._on_unrecognized(line)

    def _note_server(self, env: Envelope, lineno: int) -> None:
        """Which server the line shows (detect.py), and the lines Ray folded into it."""
        start = server_start(env)
        if start is not None:
            self._machine.note_start(start, lineno)
        self._counts["repeated"] += env.repeated

    def _own_time(self, event: ev.EventBase, env: Envelope, line: int) -> None:
        """A line no wrapper or SGLang prefix dates may carry its own time: PyTorch's glog stamp
        ('[E130 18:11:34.707542570 ProcessGroupGloo.cpp:143]', 'W0529 14:02:24.102000 90211 ...')."""
        if MESSAGES.get(event.rule or "", None) is None or MESSAGES[event.rule or ""].grammar != "torch":
            return
        m = _GLOG_TIME.match(env.message)
        if m is None:
            return
        month_day, clock = m.group(1)[1:].split(" ", 1)  # after the level letter
        stamp = Stamp(None, int(month_day[:-2]), int(month_day[-2:]), clock[:15])
        ts = self._clock.resolve(stamp) if valid_stamp(stamp) else None
        if ts is None:
            self._note_bad_stamp(line, m.group(0).lstrip("["))  # month 13: text, the time stays inherited
            return
        event.ts = self._last_ts = ts
        event.ts_inherited = False

    def _visibly_cut(self, line: LogicalLine, env: Envelope, ts: str | None) -> bool:
        """Whether the last line, which the input ended without its newline, shows that it was cut:
        it is inside a traceback not yet at its exception line, it is a progress bar's redraw that
        is not a whole bar, or it is a prefix or a traceback header half written (``[2026-05-12 18:2``,
        ``Traceback (most rec``), or SGLang's prefix without its message. Any other
        last line is a line (logs copied out of notebooks, CI pages and chats lose the last ``\n``)."""
        if self._records.continues_incomplete(env, foreign_source(env)):
            return True
        message = env.message.strip()
        if env.stamped and not message:
            return True
        if _HALF_PREFIX.fullmatch(message) is not None or cut_header(env, self._info(line, env, ts)) is not None:
            return True  # a prefix, or a traceback's header ("Scheduler hit an exception: Tra"), half written
        return _BAR_SHAPE.search(message) is not None and not isinstance(classify(env, self._info(line, env, ts)), ev.ProgressBar)

    def _partial(self, line: LogicalLine, env: Envelope, ts: str | None, out: list[ev.EventBase]) -> None:
        """A line visibly cut short (see ``_visibly_cut``): a cut traceback header still opens its
        record, the rest of a traceback says where it was; the line is counted as truncated."""
        info = self._info(line, env, ts)
        bar = classify(env, info)
        if isinstance(bar, ev.ProgressBar):
            self._emit(bar, out)
            self._counts["events"] += 1
            return
        # the rest of an open traceback (a frame or a call cut mid-word says where it was), or its header
        consumed, closed = self._records.offer(env, line.lineno, foreign_source(env), cut=True)
        for done in closed:
            self._emit(done, out)
        record = None if consumed else opens_record(env, info) or cut_header(env, info)
        if record is not None:
            record.last_line = line.lineno
            for done in self._records.start(env.stream, record):
                self._emit(done, out)
        self._counts["truncated"] += 1
        self._truncated_line = line.lineno

    def _note_bad_stamp(self, lineno: int, text: str) -> None:
        """A stamp-shaped part that makes no time: counted, and the first one kept for the warning."""
        self._bad_stamps += 1
        if self._first_bad_stamp is None:
            self._first_bad_stamp = (lineno, text)

    def _same_physical_line(self, lineno: int, env: Envelope) -> Envelope:
        """A wrapper (docker, compose, Ray ...) wraps a physical line: the pieces split from it (bar
        redraws, another rank's line glued on) were written through the same wrapper."""
        if env.writer is None and env.outer is None and self._wrapped[0] == lineno:
            return env._replace(writer=self._wrapped[1], outer=self._wrapped[2])
        if env.writer is not None or env.outer is not None:
            self._wrapped = (lineno, env.writer, env.outer)
        return env

    def _info(self, line: LogicalLine, env: Envelope, ts: str | None) -> LineInfo:
        return LineInfo(
            ts_wrapper=self._clock.dated_by_wrapper(env),
            line=line.lineno,
            offset=line.offset,
            raw=line.text[:MAX_RAW_CHARS],
            ts=ts if ts is not None else self._last_ts,
            ts_inherited=ts is None and self._last_ts is not None,
            rank=env.rank,
            writer=env.writer,
        )

    def _note_server_time(self, ts: str, lineno: int) -> None:
        """SGLang printed ``ts`` at line ``lineno`` (a line read in bulk)."""
        self._clock.note_server_time(ts)
        self._retime_lines_before(lineno)

    def _retime_lines_before(self, lineno: int) -> None:
        """At SGLang's first stamp: the lines before it were dated by a wrapper in a zone not known
        then; the times they gave move (clock.take_retiming), before this line's time is folded in."""
        retiming = self._clock.take_retiming()
        if retiming is not None:
            self._machine.retime(retiming)
            self._retimed_before = lineno

    def _emit(self, event: ev.EventBase, out: list[ev.EventBase]) -> None:
        if event.line < self._retimed_before:
            event.ts = self._clock.retime(event.ts)  # a record opened before SGLang's first stamp
        self._machine.feed(event)
        self._folded += 1
        out.append(event)


class _BulkSide:
    """The engine as the bulk path sees it (bulk.BulkTarget): its state, and where counted lines
    and the lines that need the long way go."""

    def __init__(self, engine: Engine, out: list[ev.EventBase]) -> None:
        self._engine, self._out = engine, out

    def gate_open(self) -> bool:
        return self._engine._gate_open

    def ready(self) -> bool:
        return self._engine._machine.ready

    def takes_plain_lines(self) -> bool:
        return self._engine._records.takes_plain_lines()

    def quiet_clean(self) -> bool:
        e = self._engine
        return e._gate_open and e._on_unrecognized is None and not e._warning_tail and not e._records.has_open()

    def sample_room(self) -> int:
        return KEEP_UNRECOGNIZED - len(self._engine.unrecognized_sample)

    def notes_wanted(self) -> bool:
        return self._engine._notes_wanted()

    def served(self, stamps: list[tuple[bytes, bytes]], first_line: int) -> int:
        e = self._engine
        e._note_server_time(_iso(stamps[0][0]), first_line)
        taken = e._machine.feed_plain(stamps, first_line)
        if taken:
            e._counts["events"] += taken
            e._folded += taken
            e._last_ts = _iso(stamps[taken - 1][0])
            e._note_server_time(e._last_ts, first_line)
            e._warning_tail = 0
        return taken

    def quiet(self, lines: QuietLines) -> None:
        e = self._engine
        e._counts["unrecognized"] += lines.logical
        first, last, high = lines.first, lines.last, lines.high
        if first is None or last is None or high is None:
            return  # no time, no writer: nothing else moves
        first_line = lines.last_line - lines.lines + 1
        e._warning_tail = 0
        e._note_server_time(_iso(first), first_line)
        e._last_ts = e._clock.resolve(Stamp(int(last[:4]), int(last[5:7]), int(last[8:10]), last[11:19].decode()))
        e._note_server_time(_iso(high), first_line)
        e._machine.note_lines(_iso(first), _iso(high), lines.last_line)

    def long_way(self, line: LogicalLine) -> None:
        self._engine._line(line, self._out)


def _written(env: Envelope) -> str:
    """A stamp as the line wrote it, near enough for a warning (the clock could not date it)."""
    stamp = env.stamp or env.outer
    if stamp is None:
        return ""
    year, month, day, clock = stamp
    date = "-".join(f"{v:02d}" for v in (year, month, day) if v is not None)
    return f"{date} {clock}".strip()


def _iso(stamp: bytes) -> str:
    return stamp.decode("ascii").replace(" ", "T", 1)


def normalize_time(text: str) -> str:
    """'2026-05-09 09:20:26' or '2026-05-09T09:20' -> '2026-05-09T09:20:26' style, comparable as text."""
    from datetime import datetime

    value = datetime.fromisoformat(text.strip().replace(" ", "T", 1))
    return value.isoformat(timespec="seconds") if value.microsecond == 0 else value.isoformat()


def parse_bytes(
    data: bytes,
    source: str = "<bytes>",
    expect: Mapping[str, object] | None = None,
    since: str | None = None,
    server: Server | None = None,
) -> Report:
    """The report on a whole log held in memory (its last run). See :class:`Engine` for the options
    (``server``: the server every run is, whatever its lines show)."""
    return parse_stream(_nothing_more, source, expect, since, head=data, server=server)


def _nothing_more(_size: int) -> bytes:
    return b""


def parse_text(
    text: str,
    source: str = "<text>",
    expect: Mapping[str, object] | None = None,
    since: str | None = None,
    server: Server | None = None,
) -> Report:
    """The report on a whole log given as text."""
    return parse_bytes(text.encode("utf-8", errors="surrogateescape"), source, expect, since, server)


# 1 MiB reads. Measured on the 100 MB reference log (bench/): the bulk path is as fast with 1 MiB
# as with 2 or 4 MiB and a third slower with 8 MiB (cache misses, page faults), and readers that
# collect events hold one block's worth of them (~180 MB at 4 MiB, ~60 MB at 1 MiB).
BLOCK_SIZE = 1 << 20


def read_all(
    engine: Engine,
    read: Callable[[int], bytes],
    head: bytes = b"",
    on_events: Callable[[list[ev.EventBase]], None] | None = None,
) -> Engine:
    """The read-feed loop of every reader of a whole input: ``head`` (already read from it) first,
    then ``read(BLOCK_SIZE)`` until it gives b"", each block fed to the engine; then ``finish``.
    ``on_events`` gets the events of each feed (none unless the engine collects them). Errors of
    ``read`` propagate as they are. Returns the engine, finished."""
    block = head
    while True:
        if block:
            events = engine.feed(block)
            if on_events is not None:
                on_events(events)
        block = read(BLOCK_SIZE)
        if not block:
            break
    events = engine.finish()
    if on_events is not None:
        on_events(events)
    return engine


def parse_stream(
    read: Callable[[int], bytes],
    source: str,
    expect: Mapping[str, object] | None = None,
    since: str | None = None,
    head: bytes = b"",
    year: YearHint | None = None,
    server: Server | None = None,
) -> Report:
    """The report on a log read through ``read`` (``head`` already read from it), in blocks with
    constant memory: its last run. ``year``: where year-less stamps take their year, ``server``: the
    server every run is (--server) (``Engine``)."""
    engine = Engine(source=source, since=since, collect_events=False, year=year, server=server)
    return read_all(engine, read, head).report(expect)


def parse_file(
    path: str | os.PathLike[str],
    expect: Mapping[str, object] | None = None,
    since: str | None = None,
    server: Server | None = None,
) -> Report:
    """The report on a log file (its last run), read in 1 MiB blocks with constant memory.

    ``expect`` maps server_args keys to what you launched with, e.g. ``{"mem_fraction_static": 0.88}``;
    ``since`` ignores output stamped before that time; ``server`` says which server wrote it (every
    run is that server's, whatever its lines show). OSError if the file cannot be read."""
    name = os.fspath(path)
    with open(name, "rb") as handle:
        return parse_stream(handle.read, name, expect, since, year=file_time_hint(name), server=server)
