"""The reading stage's entry point: a logical line -> a :class:`ReadLine`, the line as every later
stage sees it: its text with secrets redacted, its envelope (wrappers and the server's prefix), its
own time on the log's one clock, and where it stands (blank, before ``--since``).

Bytes become logical lines in ``lines.py`` (the splitter, owned here); runs of lines the bulk path
counts a block at a time leave the splitter as runs and come back here only for their times
(:meth:`LineReader.note_server_time`, :meth:`LineReader.date_run`).
"""

from __future__ import annotations

from typing import NamedTuple

from logphase.reading.clock import LogClock, Retiming, YearHint
from logphase.reading.envelope import Envelope, Stamp, split_envelope, valid_stamp
from logphase.reading.lines import LineSplitter, LogicalLine
from logphase.vocabulary.events import LineInfo
from logphase.vocabulary.redact import redact_text

# Raw text kept on an event; the rest of a long line is reachable through its line number.
MAX_RAW_CHARS = 2000


class ReadLine(NamedTuple):
    """A logical line as the reading stage hands it on."""

    line: LogicalLine  # its text redacted: no secret reaches an event, a report or a face
    env: Envelope | None  # None: a bare blank line
    ts: str | None  # its own time (None: it has none and inherits the one before)
    ignored: bool  # before --since
    blank: bool  # no message: bare, or a wrapper's or the server's prefix alone
    info: LineInfo | None  # where it came from, for the events built from it (None when blank or ignored)


class LineReader:
    """Reads logical lines in order: the splitter, the envelope of each line, the log's clock and
    the ``--since`` gate. One per input."""

    def __init__(self, since: str | None = None, year: YearHint | None = None) -> None:
        self.splitter = LineSplitter()
        self.clock = LogClock(year)
        self.since = since
        self.gate_open = since is None
        self.last_ts: str | None = None
        # the lines before each line were re-timed so (clock.take_retiming): records opened then
        # are re-timed when they close
        self._retimed: list[tuple[int, Retiming]] = []
        self._retiming: Retiming | None = None  # the re-timing not yet taken by the fold
        self._wrapped: tuple[int, str | None, Stamp | None] = (0, None, None)  # the last wrapped physical line
        self.bad_stamps = 0  # lines whose stamp makes no valid time (read as text, time inherited)
        self.first_bad_stamp: tuple[int, str] | None = None

    def read(self, line: LogicalLine) -> ReadLine:
        """The line's envelope and time; a blank line moves no time."""
        line = line._replace(text=redact_text(line.text))
        text = line.text
        env = self._same_physical_line(line.lineno, split_envelope(text)) if text.strip() else None
        if env is None or (not env.message.strip() and not env.stamped):
            return ReadLine(line, env, None, not self.gate_open, True, None)
        ts = self._time(line.lineno, env)
        if not self.gate_open:
            return ReadLine(line, env, ts, True, False, None)
        return ReadLine(line, env, ts, False, False, self._info(line, env, ts))

    def take_retiming(self) -> Retiming | None:
        """Once: how the times of the lines read so far move (the wrapper's before the server's
        first stamp, in a zone not known then; a year guessed before the server printed one), for
        what was already folded from them."""
        retiming, self._retiming = self._retiming, None
        return retiming

    def retimed(self, event_line: int, ts: str | None) -> str | None:
        """The time of an event of line ``event_line`` completed now (a traceback opened before the
        server's first stamp keeps the wrapper's time until it closes)."""
        for before, retiming in self._retimed:
            if ts is not None and event_line < before:
                ts = retiming(ts)
        return ts

    # -- times the later stages and the bulk path ask about -----------------------------------------

    def date_own_stamp(self, stamp: Stamp, written: str, lineno: int) -> str | None:
        """A time a message carries inside itself (PyTorch's glog stamp), on the log's clock: it
        becomes the last time seen. None when it makes no time (counted as a bad stamp)."""
        ts = self.clock.resolve(stamp) if valid_stamp(stamp) else None
        if ts is None:
            self._note_bad_stamp(lineno, written)
            return None
        self.last_ts = ts
        return ts

    def note_server_time(self, ts: str, lineno: int) -> None:
        """The server printed ``ts`` at line ``lineno`` (a line read in bulk)."""
        self.clock.note_server_time(ts)
        self._note_retiming(lineno)

    def date_run(self, stamp: bytes) -> str | None:
        """The time of a run's last stamp (``b'YYYY-MM-DD HH:MM:SS'``), the last time seen now."""
        self.last_ts = self.clock.resolve(Stamp(int(stamp[:4]), int(stamp[5:7]), int(stamp[8:10]), stamp[11:19].decode()))
        return self.last_ts

    # -- per line -----------------------------------------------------------------------------------

    def _time(self, lineno: int, env: Envelope) -> str | None:
        """The line's own time (None: none); notes a bad stamp, opens the --since gate, moves the
        last time seen."""
        ts = self.clock.of(env)
        self._note_retiming(lineno)
        # a wrapper's time alone may rightly give none (its clock is not the server's in any zone):
        # only a stamp the envelope refused, or the server's own that makes no date, is a bad one
        if env.bad_stamp is not None or (ts is None and env.server_stamp is not None):
            self._note_bad_stamp(lineno, env.bad_stamp or _written(env))
        if ts is not None:
            if not self.gate_open and self.since is not None and ts >= self.since:
                self.gate_open = True
            self.last_ts = ts
        return ts

    def _note_retiming(self, lineno: int) -> None:
        retiming = self.clock.take_retiming()
        if retiming is not None:
            pending = self._retiming
            self._retiming = retiming if pending is None else (lambda ts: retiming(pending(ts)))
            self._retimed.append((lineno, retiming))

    def _note_bad_stamp(self, lineno: int, text: str) -> None:
        """A stamp-shaped part that makes no time: counted, and the first one kept for the warning."""
        self.bad_stamps += 1
        if self.first_bad_stamp is None:
            self.first_bad_stamp = (lineno, text)

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
            ts_wrapper=self.clock.dated_by_wrapper(env),
            line=line.lineno,
            offset=line.offset,
            raw=line.text[:MAX_RAW_CHARS],
            ts=ts if ts is not None else self.last_ts,
            ts_inherited=ts is None and self.last_ts is not None,
            rank=env.rank,
            writer=env.writer,
        )


def _written(env: Envelope) -> str:
    """A stamp as the line wrote it, near enough for a warning (the clock could not date it)."""
    stamp = env.server_stamp or env.outer
    if stamp is None:
        return ""
    year, month, day, clock = stamp
    date = "-".join(f"{v:02d}" for v in (year, month, day) if v is not None)
    return f"{date} {clock}".strip()
