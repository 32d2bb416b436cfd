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
from functools import cache

from logphase.pipeline import events as ev
from logphase.pipeline.build_report import build_report
from logphase.pipeline.classify import classify, foreign_source
from logphase.pipeline.clock import LogClock
from logphase.pipeline.envelope import Envelope, Stamp, plain_minutes_valid, split_envelope, valid_plain_stamp, valid_stamp
from logphase.pipeline.events import LineInfo
from logphase.pipeline.grammars import terminal_pattern
from logphase.pipeline.lines import LineSplitter, LogicalLine, Run, RunPatterns, count_pieces, pieces_of
from logphase.pipeline.machine import PhaseMachine
from logphase.pipeline.messages import MESSAGES
from logphase.pipeline.notes import has_notes, note_event, note_hits
from logphase.pipeline.plain import PLAIN_LINES, PLAIN_RUN, bulk_runs, junk_line
from logphase.pipeline.prefilter import event_finder
from logphase.pipeline.records import RecordAssembler, cut_header, line_shape, opens_record
from logphase.pipeline.redact import redact_text
from logphase.pipeline.report import LinesReport, Report, WarningReport, normalize_expect

# Raw text kept on an event; the rest of a long line is reachable through its line number.
MAX_RAW_CHARS = 2000
KEEP_UNRECOGNIZED = 200
# bytes read before the bulk path looks for quiet runs (plain.bulk_runs) too
QUIET_RUNS_AFTER = 1 << 20
# "file.py:12: UserWarning: text" is followed by the indented source line (sometimes two)
WARNING_TAIL_LINES = 2
_PLAIN = RunPatterns(PLAIN_LINES, PLAIN_RUN)
# a quiet line's timestamp (plain.bulk_runs checked its shape)
_QUIET_STAMP = re.compile(rb"(?m)^\[(.{19})")


@cache
def _bulk() -> RunPatterns:
    """Plain and quiet runs (plain.bulk_runs), junk lines (plain.junk_line): built on the first
    bulk read, not at import."""
    return RunPatterns(PLAIN_LINES, bulk_runs(), junk_line)


# a traceback header inside a run of plain lines: the run takes the long way (traceback.lark's TRACEBACK)
_TRACEBACK_BYTES = b"Traceback (most recent call last):"
assert re.fullmatch(terminal_pattern("traceback", "TRACEBACK"), _TRACEBACK_BYTES.decode())
# PyTorch's glog prefix: level, month and day, time ("E0130 18:11:34.707542"), from grammars/shared/torch.lark
# ("E130 ..." in c10's own logger: the month without its leading zero)
_GLOG_TIME = re.compile(r"\[?[IWEF](?P<month>\d\d?)(?P<day>\d\d) (?P<time>\d\d:\d\d:\d\d(?:\.\d+)?)")
assert re.fullmatch(terminal_pattern("torch", "GLOG_STAMP"), "E130 18:11:34.707542")
# a last line that is only the start of a prefix: SGLang's or torchrun's bracket ("[2026-05-12 18:2",
# "[2026-05-12 18:20:05 TP", "[rank"), or a wrapper's stamp ("2026-05-12T18:2")
_HALF_PREFIX = re.compile(r"\[(?:\d[\d\-:.,T ]*(?: [A-Z]{1,4}\d*)*|r(?:a(?:n(?:k\d*)?)?)?)?|\d{1,4}(?:-[\d\-:.,T+Z]*)?")
# what a progress bar's redraw shows ("40%|████", "50% Completed | 3/6", "| 14/35 [00:0")
_BAR_SHAPE = re.compile(r"\d%\||% Completed|\| *\d+/\d+ \[")
_DIGITS_TO_0 = bytes.maketrans(b"123456789", b"000000000")
_STAMP_SHAPE = b"0000-00-00 00:00:00"  # what PLAIN_LINE's 19-byte timestamps must look like


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
    ) -> None:
        self.source = source
        self._collect = collect_events
        self._splitter = LineSplitter()
        self._records = RecordAssembler()
        self._machine = PhaseMachine()
        self._since = normalize_time(since) if since else None
        self._gate_open = self._since is None
        self._last_ts: str | None = None
        self._clock = LogClock()
        self._wrapped: tuple[int, str | None, Stamp | None] = (0, None, None)  # the last wrapped physical line
        self._retimed_before = 0  # lines before this one were re-timed (clock.take_retiming)
        self._on_unrecognized = on_unrecognized
        self.unrecognized_sample: list[tuple[int, str]] = []
        self._counts = {"events": 0, "unrecognized": 0, "blank": 0, "ignored": 0, "truncated": 0}
        self._truncated_line: int | None = None
        self._bad_stamps = 0  # lines whose stamp makes no valid time (read as text, time inherited)
        self._first_bad_stamp: tuple[int, str] | None = None
        self._warning_tail = 0  # indented source lines that follow a Python warning
        self._finished = False
        self._has_notes = has_notes()
        self._quiet_runs = False  # the bulk path looks for quiet runs (QUIET_RUNS_AFTER)

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
        # quiet runs pay for themselves on long logs only: their patterns take ~40 ms to build; and
        # at once on bytes that are not text (binary data read line by line costs ~100 us a line)
        if not self._quiet_runs and (self._splitter.bytes_seen + len(data) > QUIET_RUNS_AFTER or _not_text(data)):
            self._quiet_runs = True
        patterns = _bulk() if self._quiet_runs else _PLAIN
        for item in self._splitter.feed_runs(data, patterns):
            if isinstance(item, Run):
                self._run(item, out)
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

    # -- runs of plain lines (collect_events=False) -----------------------------------------------

    def _run(self, run: Run, out: list[ev.EventBase]) -> None:
        """Lines that classify() would turn into RuntimeBatch / HttpAccess events: what ``_line``
        does with them is counting them and moving the clock, unless state says otherwise."""
        if run.quiet:
            self._quiet_run(run, out)
            return
        data, lineno, offset, n, stamps, joined, _, _, _ = run
        if (
            not self._gate_open
            or joined.translate(_DIGITS_TO_0) != _STAMP_SHAPE * n
            or not plain_minutes_valid(joined)
            or _TRACEBACK_BYTES in data
            # no "L", no "NCCL": a one-byte search is many times faster than a five-byte one
            or (b"INFO:" in data and b"L" in data and b"NCCL" in data)
        ):
            # rare: another time format, a traceback or NCCL text inside, --since not reached yet
            self._run_lines(data, lineno, offset, 1, out)
            return
        i = 0
        line_i, pos = 0, 1  # data[pos:] starts with line number line_i of the run
        while i < n:
            if not self._machine.ready:
                # before ready these lines are evidence (warmup, or a log that starts while serving)
                while line_i < i:
                    pos = data.index(b"\n", pos) + 1
                    line_i += 1
                self._run_lines(data, lineno + i, offset + pos - 1, pos, out)
                return
            taken = 0
            if self._records.takes_plain_lines():  # else the line closes the open traceback
                self._note_server_time(_iso(stamps[i][0]), lineno + i)
                taken = self._machine.feed_plain(stamps[i:] if i else stamps, lineno + i)
            if taken:
                self._counts["events"] += taken
                self._last_ts = stamps[i + taken - 1][0].decode("ascii").replace(" ", "T", 1)
                self._note_server_time(self._last_ts, lineno + i)
                self._warning_tail = 0
                i += taken
            if i < n:
                # this line needs the long way (a clock jump starts a new run, a traceback closes)
                while line_i < i:
                    pos = data.index(b"\n", pos) + 1
                    line_i += 1
                end = data.index(b"\n", pos)
                self._line(LogicalLine(lineno + i, offset + pos - 1, data[pos:end].decode("ascii")), out)
                pos, line_i = end + 1, i + 1
                i += 1

    def _quiet_run(self, run: Run, out: list[ev.EventBase]) -> None:
        """Lines that may be no event (plain.bulk_runs): the lines that hold none of the
        pre-filter's literals are unrecognized, counted in bulk, moving the clock as each would;
        the others take the long way, and so does every line while state needs each one (--since
        not reached, an open record, a warning's source lines, --unrecognized). Until the run is
        ready, so do the lines that may be a start-up note (pipeline/notes.py: by their first word)."""
        data, lineno, offset, segmented = run.data, run.lineno, run.offset, run.segmented
        hits = event_finder().line_hits(data)
        with_notes = False
        h = 0
        pos, line_i = 1, 0  # data[pos:] is the run's line line_i
        while pos < len(data):
            if not with_notes and self._notes_wanted():
                # (again when a new run began at a line of the block taken the long way)
                hits, h, with_notes = sorted(hits + note_hits(data)), 0, True
            if not self._quiet_state_clean():
                end = data.index(b"\n", pos)
                self._run_line(data[pos:end], lineno + line_i, offset + pos - 1, segmented, out)
                pos, line_i = end + 1, line_i + 1
                continue
            while h < len(hits) and hits[h] - 1 < pos:
                h += 1  # a literal on a line already read
            if h == len(hits):
                self._quiet_lines(data[pos - 1 :], lineno + line_i, offset + pos - 1, run, out)
                return
            start = data.rfind(b"\n", 0, hits[h] - 1) + 1
            line_i += self._quiet_lines(data[pos - 1 : start], lineno + line_i, offset + pos - 1, run, out)
            end = data.index(b"\n", hits[h] - 1)
            self._run_line(data[start:end], lineno + line_i, offset + start - 1, segmented, out)
            pos, line_i = end + 1, line_i + 1

    def _quiet_state_clean(self) -> bool:
        """Whether a line with no event would change nothing but counts (and the clock)."""
        return self._gate_open and self._on_unrecognized is None and not self._warning_tail and not self._records.has_open()

    def _classify(self, env: Envelope, info: LineInfo) -> ev.EventBase | None:
        """The event of a line: what a grammar reads, else (until ready) a start-up note."""
        found = classify(env, info)
        if found is None and self._notes_wanted():
            found = note_event(env.message, info)  # a start-up message of a release that no grammar reads
        return found

    def _notes_wanted(self) -> bool:
        """Whether a line no grammar reads is looked up among the packs' start-up notes
        (pipeline/notes.py): until the run is ready; after that they could tell nothing."""
        return self._has_notes and self._machine.run.ready_line is None

    def _quiet_lines(self, data: bytes, lineno: int, offset: int, run: Run, out: list[ev.EventBase]) -> int:
        """``data`` (b"\\n" and whole lines of ``run``) holds unrecognized lines: count them, keep
        the first ones as the sample, move the clock (SGLang's lines). Returns how many lines it had."""
        n = data.count(b"\n") - 1
        if n <= 0:
            return 0
        room = KEEP_UNRECOGNIZED - len(self.unrecognized_sample)
        if room > 0:
            # the sample is taken line by line (each line the long way, as it would be)
            cut = 0
            for _ in range(min(room, n)):
                cut = data.index(b"\n", cut + 1)
            self._run_lines(data[: cut + 1], lineno, offset, 1, out, run.segmented)
            if room >= n:
                return n
            rest = self._quiet_lines(data[cut:], lineno + room, offset + cut, run, out)
            return room + rest
        if run.unstamped:
            self._counts["unrecognized"] += count_pieces(data) if run.segmented else n
            return n  # no time, no writer: nothing else moves
        stamps = _QUIET_STAMP.findall(data)
        first, last, low, high = stamps[0], stamps[-1], min(stamps), max(stamps)
        one_date = low[:10] == high[:10] and valid_plain_stamp(low) and valid_plain_stamp(high)
        if not (one_date and plain_minutes_valid(b"".join(stamps))):
            # a stamp that makes no time among them (or a change of date): each line the long way
            self._run_lines(data, lineno, offset, 1, out, run.segmented)
            return n
        self._counts["unrecognized"] += count_pieces(data) if run.segmented else n
        self._warning_tail = 0
        self._note_server_time(_iso(first), lineno)
        self._last_ts = self._clock.resolve(Stamp(int(last[:4]), int(last[5:7]), int(last[8:10]), last[11:19].decode()))
        self._note_server_time(_iso(high), lineno)
        self._machine.note_lines(_iso(first), _iso(high), lineno + n - 1)
        return n

    def _run_lines(
        self, data: bytes, lineno: int, offset: int, pos: int, out: list[ev.EventBase], segmented: bool = False
    ) -> None:
        """The lines of a run from ``data[pos:]`` on (``lineno`` at ``offset``), one by one."""
        for i, raw in enumerate(data[pos:-1].split(b"\n")):
            self._run_line(raw, lineno + i, offset, segmented, out)
            offset += len(raw) + 1

    def _run_line(self, raw: bytes, lineno: int, offset: int, segmented: bool, out: list[ev.EventBase]) -> None:
        """One line of a run (without its \\n) the long way: a junk line's pieces each on its own."""
        if not segmented:
            self._line(LogicalLine(lineno, offset, raw.decode("ascii")), out)
            return
        for piece in pieces_of(raw, lineno, offset):
            self._line(piece, out)

    # -- per line -------------------------------------------------------------------------------

    def _line(self, line: LogicalLine, out: list[ev.EventBase]) -> None:
        line = line._replace(text=redact_text(line.text))  # no secret reaches an event, a report or a face
        text = line.text
        env = split_envelope(text) if text.strip() else None
        if env is not None:
            env = self._same_physical_line(line.lineno, env)
        if env is None or (not env.message.strip() and not env.stamped):
            # a blank line, bare or in a wrapper ("sglang-1  | "): it may end a traceback's message
            if not self._gate_open:
                self._counts["ignored"] += 1
                return
            if line.partial and text.strip():  # a wrapper's prefix, cut before its message
                self._counts["truncated"] += 1
                self._truncated_line = line.lineno
                return
            consumed, closed = self._records.offer(env or split_envelope(""), line.lineno, False)
            for event in closed:
                self._emit(event, out)
            if consumed:
                self._counts["events"] += 1
            else:
                self._counts["blank"] += 1
            return
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
        if not self._gate_open:
            self._counts["ignored"] += 1
            return
        if line.partial and self._visibly_cut(line, env, ts):
            self._partial(line, env, ts, out)
            return
        if self._warning_tail:
            shape = line_shape(text) if not env.stamped and text[:1] in " \t" else None
            if not env.stamped and text[:1] in " \t" and (shape is None or shape.rule != "tb_frame"):
                self._warning_tail -= 1
                self._counts["events"] += 1
                return
            self._warning_tail = 0
        # only an open record asks whose the line is (a search through a long line costs)
        foreign = self._records.has_open() and foreign_source(env)
        consumed, closed = self._records.offer(env, line.lineno, foreign)
        for done in closed:
            self._emit(done, out)
        if consumed:
            self._counts["events"] += 1
            return
        info = self._info(line, env, ts)
        record = opens_record(env, info)
        if record is not None:
            record.last_line = line.lineno
            for done in self._records.start(env.stream, record):
                self._emit(done, out)
            self._counts["events"] += 1
            return
        found = self._classify(env, info)
        if found is None:
            if env.stamped and ts is not None:
                self._machine.note_line(ts, line.lineno)  # SGLang's, though no message logphase knows
            self._counts["unrecognized"] += 1
            if len(self.unrecognized_sample) < KEEP_UNRECOGNIZED:
                self.unrecognized_sample.append((line.lineno, text[:300]))
            if self._on_unrecognized is not None:
                self._on_unrecognized(line)
            return
        self._counts["events"] += 1
        if isinstance(found, ev.PythonWarning):
            self._warning_tail = WARNING_TAIL_LINES
        if ts is None:
            self._own_time(found, env, line.lineno)
        self._emit(found, out)

    def _own_time(self, event: ev.EventBase, env: Envelope, line: int) -> None:
        """A line no wrapper or SGLang prefix dates may carry its own time: PyTorch's glog stamp
        ('[E130 18:11:34.707542570 ProcessGroupGloo.cpp:143]', 'W0529 14:02:24.102000 90211 ...')."""
        if MESSAGES.get(event.rule or "", None) is None or MESSAGES[event.rule or ""].grammar != "torch":
            return
        m = _GLOG_TIME.match(env.message)
        if m is None:
            return
        stamp = Stamp(None, int(m.group("month")), int(m.group("day")), m.group("time")[:15])
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
        out.append(event)


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


def _not_text(data: bytes) -> bool:
    """NUL bytes or invalid UTF-8: binary data (a block cut inside a character counts too, harmlessly)."""
    if data.isascii():
        return b"\x00" in data
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return True
    return False


def normalize_time(text: str) -> str:
    """'2026-05-09 09:20:26' or '2026-05-09T09:20' -> '2026-05-09T09:20:26' style, comparable as text."""
    from datetime import datetime

    value = datetime.fromisoformat(text.strip().replace(" ", "T", 1))
    return value.isoformat(timespec="seconds") if value.microsecond == 0 else value.isoformat()


def parse_bytes(
    data: bytes, source: str = "<bytes>", expect: Mapping[str, object] | None = None, since: str | None = None
) -> Report:
    """The report on a whole log held in memory (its last run). See :class:`Engine` for the options."""
    engine = Engine(source=source, since=since, collect_events=False)
    engine.feed(data)
    engine.finish()
    return engine.report(expect)


def parse_text(text: str, source: str = "<text>", expect: Mapping[str, object] | None = None, since: str | None = None) -> Report:
    """The report on a whole log given as text."""
    return parse_bytes(text.encode("utf-8", errors="surrogateescape"), source, expect, since)


# 1 MiB reads. Measured on the 100 MB reference log (bench/): the bulk path is as fast with 1 MiB
# as with 2 or 4 MiB and a third slower with 8 MiB (cache misses, page faults), and readers that
# collect events hold one block's worth of them (~180 MB at 4 MiB, ~60 MB at 1 MiB).
BLOCK_SIZE = 1 << 20


def parse_file(path: str | os.PathLike[str], expect: Mapping[str, object] | None = None, since: str | None = None) -> Report:
    """The report on a log file (its last run), read in 1 MiB blocks with constant memory.

    ``expect`` maps server_args keys to what you launched with, e.g. ``{"mem_fraction_static": 0.88}``;
    ``since`` ignores output stamped before that time. OSError if the file cannot be read."""
    name = os.fspath(path)
    engine = Engine(source=name, since=since, collect_events=False)
    with open(name, "rb") as handle:
        while block := handle.read(BLOCK_SIZE):
            engine.feed(block)
    engine.finish()
    return engine.report(expect)
