"""The one incremental engine behind every face of logphase (parse, follow, library, oracle).

    bytes (any chunking) -> reading (lines, envelope, clock) -> recognising (records, messages)
                         -> folding (the phase machine) -> reporting (the report)

Each line goes down the stages once: ``LineReader.read`` makes it a ``ReadLine``,
``EventReader.read`` hands what it means to the fold (``_Fold``: the machine), and ``report``
describes the state at any moment without changing it. Runs of lines whose events would only be
counted take the bulk path (``recognising/bulk.py``) from the splitter straight to the machine.
``feed`` returns the events the new bytes completed (when they are collected); ``finish`` flushes
the held partial line and the open multi-line records.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping

from logphase.folding.machine import PhaseMachine
from logphase.reading.clock import YearHint, normalize_time
from logphase.reading.lines import LineRun, LogicalLine
from logphase.reading.reader import LineReader
from logphase.recognising.bulk import BulkReader, QuietLines
from logphase.recognising.detect import Start
from logphase.recognising.reader import EventReader
from logphase.reporting.build_report import build_report
from logphase.reporting.report import LinesReport, Report, WarningReport, YearReport, normalize_expect
from logphase.vocabulary import events as ev
from logphase.vocabulary.servers import Server


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
        self._since = normalize_time(since) if since else None
        self._reader = LineReader(self._since, year)
        self._events = EventReader(self._reader, on_unrecognized)
        self._machine = PhaseMachine()
        self._machine.server = server
        self._fold = _Fold(self)
        self._finished = False
        self._bulk = BulkReader()

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
        fold = self._fold
        fold.out = [] if self._collect else None
        if self._collect:
            for line in self._reader.splitter.feed(data):
                self._line(line)
        else:
            target = _BulkSide(self)
            for item in self._bulk.split(self._reader.splitter, data):
                if isinstance(item, LineRun):
                    self._bulk.read(item, target)
                else:
                    self._line(item)
        out, fold.out = fold.out, None
        return out or []

    def finish(self) -> list[ev.EventBase]:
        """The input has ended: flush the held partial line and the open tracebacks, and return
        their events. Later calls return nothing; ``feed`` after ``finish`` is an error."""
        if self._finished:
            return []
        fold = self._fold
        fold.out = []
        for line in self._reader.splitter.finish():
            self._line(line)
        self._events.finish(fold)
        self._finished = True
        out, fold.out = fold.out, None
        return out if self._collect else []

    def has_open_records(self) -> bool:
        """True while a traceback (or another multi-line record) is still being read."""
        return self._events.records.has_open()

    def open_records_complete(self) -> bool:
        """True when every open traceback has reached its exception line."""
        return self._events.records.all_complete()

    def report(self, expect: Mapping[str, object] | None = None, include_open: bool = True, run: int | None = None) -> Report:
        """The report now, on the last run or on run ``run`` (1-based; ValueError if absent).

        ``expect`` maps server_args keys to the values you launched with (``{"tp_size": 2}``): a
        mismatch is a ``stale_log`` warning. ``include_open`` counts a traceback still being read
        (a killed process never finishes its record). The engine is not changed."""
        machine = self._machine
        pending = self._events.records.peek_all() if include_open else []
        if pending:
            # an open traceback counts already (a killed process never finishes its record)
            machine = copy.deepcopy(machine)
            for event in pending:
                machine.feed(event)
        stats = self._reader.splitter.stats
        c = self._events.counts
        lines = LinesReport(
            total=c.events + c.unrecognized + c.blank + c.ignored + c.truncated,
            events=c.events,
            unrecognized=c.unrecognized,
            blank=c.blank,
            ignored=c.ignored,
            truncated=c.truncated,
            physical=stats.physical,
            invalid_utf8=stats.invalid_utf8,
            overlong=stats.overlong,
            repeated=c.repeated,
        )
        report = build_report(
            machine,
            lines,
            self.source,
            normalize_expect(expect),
            self._events.truncated_line,
            run_index=run,
            input_complete=self._finished,
            since=self._since,
        )
        if self._reader.first_bad_stamp is not None:
            report.warnings.append(_bad_stamp_warning(self._reader.bad_stamps, self._reader.first_bad_stamp))
        if self._reader.clock.year_inferred is not None:
            year, source = self._reader.clock.year_inferred
            report.year_inferred = YearReport.model_validate({"year": year, "source": source})
        return report

    @property
    def bytes_seen(self) -> int:
        """Bytes fed so far."""
        return self._reader.splitter.bytes_seen

    @property
    def events_folded(self) -> int:
        """Events folded into the machine so far, whether they were built or their lines read in
        bulk: what tells a reader that does not collect events (``follow``) that a feed moved the
        machine, and the report may say something new."""
        return self._fold.folded

    @property
    def unrecognized_sample(self) -> list[tuple[int, str]]:
        """The first lines no grammar recognised (line number, text), at most 200."""
        return self._events.unrecognized_sample

    # -- per line -------------------------------------------------------------------------------

    def _line(self, line: LogicalLine) -> None:
        """One logical line the long way: down the stages, once."""
        read = self._reader.read(line)
        self._retime()
        self._events.read(read, self._fold)
        if read.ts is not None and read.env is not None and read.env.server_stamp is not None and not read.ignored:
            self._machine.note_own_time(read.ts, line.lineno)  # the server's own clock, not a wrapper's

    def _retime(self) -> None:
        """At the server's first stamp, the times the wrapper gave the lines before it move
        (clock.take_retiming), before this line's events are folded."""
        retiming = self._reader.take_retiming()
        if retiming is not None:
            self._machine.retime(retiming)


class _Fold:
    """The folding stage as the recognising stage sees it (``recognising.reader.EventSink``): what a
    line means, into the phase machine."""

    def __init__(self, engine: Engine) -> None:
        self._machine = engine._machine
        self._reader = engine._reader
        self.out: list[ev.EventBase] | None = None  # the events of the feed, when collected
        self.folded = 0  # events folded, built or read in bulk

    def event(self, event: ev.EventBase) -> None:
        event.ts = self._reader.retimed(event.line, event.ts)  # a record opened before the first stamp
        self._machine.feed(event)
        self.folded += 1
        if self.out is not None:
            self.out.append(event)

    def start(self, start: Start, lineno: int) -> None:
        self._machine.note_start(start, lineno)

    def server_line(self, ts: str, lineno: int) -> None:
        self._machine.note_line(ts, lineno)

    def own_time(self, ts: str, lineno: int) -> None:
        self._machine.note_own_time(ts, lineno)

    def notes_wanted(self) -> bool:
        return self._machine.run.ready_line is None


class _BulkSide:
    """The engine as the bulk path sees it (bulk.BulkTarget): its state, and where counted lines
    and the lines that need the long way go."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine
        self._reader, self._events, self._machine = engine._reader, engine._events, engine._machine

    def gate_open(self) -> bool:
        return self._reader.gate_open

    def ready(self) -> bool:
        return self._machine.ready

    def takes_plain_lines(self) -> bool:
        return self._events.records.takes_plain_lines()

    def quiet_clean(self) -> bool:
        return self._reader.gate_open and self._events.quiet_clean()

    def sample_room(self) -> int:
        return self._events.sample_room()

    def notes_wanted(self) -> bool:
        return self._events.has_catalogue and self._machine.run.ready_line is None

    def served(self, stamps: list[tuple[bytes, bytes]], first_line: int) -> int:
        reader = self._reader
        self._server_time(_iso(stamps[0][0]), first_line)
        taken = self._machine.feed_plain(stamps, first_line)
        if taken:
            self._events.counts.events += taken
            self._engine._fold.folded += taken
            reader.last_ts = _iso(stamps[taken - 1][0])
            self._server_time(reader.last_ts, first_line)
            self._events.warning_tail = 0
        return taken

    def quiet(self, lines: QuietLines) -> None:
        self._events.counts.unrecognized += lines.logical
        first, last, high = lines.first, lines.last, lines.high
        if first is None or last is None or high is None:
            return  # no time, no writer: nothing else moves
        first_line = lines.last_line - lines.lines + 1
        self._events.warning_tail = 0
        self._server_time(_iso(first), first_line)
        self._reader.date_run(last)
        self._server_time(_iso(high), first_line)
        self._machine.note_lines(_iso(first), _iso(high), lines.last_line)

    def long_way(self, line: LogicalLine) -> None:
        self._engine._line(line)

    def _server_time(self, ts: str, lineno: int) -> None:
        """The server printed ``ts`` at line ``lineno`` (a line read in bulk)."""
        self._reader.note_server_time(ts, lineno)
        self._engine._retime()


def _bad_stamp_warning(count: int, first: tuple[int, str]) -> WarningReport:
    line, text = first
    lines = "1 line carries" if count == 1 else f"{count} lines carry"
    return WarningReport(
        kind="invalid_timestamp",
        message=f"{lines} a timestamp that makes no valid time (first {text!r}): read as text, "
        f"{'its' if count == 1 else 'their'} time taken from the line before",
        line=line,
        found=text,
    )


def _iso(stamp: bytes) -> str:
    return stamp.decode("ascii").replace(" ", "T", 1)
