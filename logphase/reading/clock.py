"""Times as the log prints them -> one comparable form, ``YYYY-MM-DDTHH:MM:SS[.ffffff]``.

A stamp without a date (``[09:20:26 TP0]``, a journald or glog time without the year) takes its
date from SGLang's stamp before it (with none, 0001-01-01; a month and day without a year, as vLLM
and journald print them, take the year of a dated wrapper around them, else of the file's time or
today when the reader gives one: ``YearHint``, said in the report); a time of day more than half a day
before the one before it is on the next day (midnight passed), so durations still work.

A wrapper's time (docker, kubectl, CI) is another clock than SGLang's, often in another zone
(``kubectl logs --timestamps`` in UTC, SGLang in local time). The two are compared only in the
same zone: the zone is learned on the first line that carries both (whole quarter hours, at most
14 h apart); a wrapper whose clock is further off, or later drifts from that zone (one stamp on
every line, a collector stamping lines in batches), is not SGLang's clock in any zone, and the
lines it alone dates take the time of SGLang's line before them. A wrapper's time is never
earlier than a time SGLang has already printed. Lines before SGLang's first stamp can only carry
the wrapper's time: they are re-timed once that stamp comes (``take_retiming``).
"""

from __future__ import annotations

import calendar
import os
from collections.abc import Callable
from datetime import date, datetime, timedelta
from typing import Literal, NamedTuple

from logphase.reading.envelope import Envelope, Stamp

_HALF_DAY_S = 12 * 3600
# zones differ by whole quarter hours
_ZONE_STEP_S = 900
# UTC-12 to UTC+14: a wrapper (UTC) this far from SGLang's time (local) at most, one step of slack
_MOST_ZONES_APART_S = 14 * 3600 + _ZONE_STEP_S
# a wrapper in the learned zone that differs from SGLang's time by more than this is another clock
# (a real wrapper stamps what it receives within moments; stdout buffering delays it by seconds)
_DRIFT_S = 120.0

Retiming = Callable[[str], str]


class YearHint(NamedTuple):
    """Where a year comes from for stamps that print none (vLLM's ``INFO 11-18 18:07:28``,
    journald's ``Nov 30 12:00:00``) when no stamp of the log gives one: a day the log was written
    by (its file's time, or today), and which it is."""

    by: date
    source: Literal["file_time", "current_year"]


def file_time_hint(path: str) -> YearHint | None:
    """The file's modification time: its last line was written then, every earlier one before."""
    try:
        return YearHint(datetime.fromtimestamp(os.stat(path).st_mtime).date(), "file_time")
    except (OSError, ValueError, OverflowError):
        return None


def current_year_hint() -> YearHint:
    """Today: standard input, a pipe, or a file whose time says nothing."""
    return YearHint(date.today(), "current_year")


def input_year_hint(name: str) -> YearHint:
    """Where the stamps of an input given by name take their year: the file's time, or today for
    standard input ('-', '<stdin>') and a file whose time cannot be read. Every face asks this."""
    return (file_time_hint(name) if name not in ("-", "<stdin>") else None) or current_year_hint()


def normalize_time(text: str) -> str:
    """'2026-05-09 09:20:26' or '2026-05-09T09:20' -> '2026-05-09T09:20:26' style, comparable as text."""
    value = datetime.fromisoformat(text.strip().replace(" ", "T", 1))
    return value.isoformat(timespec="seconds") if value.microsecond == 0 else value.isoformat()


class LogClock:
    """The dates and the wrapper's zone a log's stamps have shown so far."""

    def __init__(self, year: YearHint | None = None) -> None:
        """``year``: where stamps without a year take theirs when the log gives none (else year 1)."""
        self._year_hint = year
        # the year given to stamps that print none, and where it came from (the report says it)
        self.year_inferred: tuple[int, str] | None = None
        self._date: tuple[int, int, int] | None = None  # the date of SGLang's last stamp
        self._time_of_day: str | None = None  # the time of day of SGLang's last stamp
        self._zone_s: float | None = None  # SGLang's time minus the wrapper's, once learned
        self._foreign = False  # the wrapper's clock is not SGLang's in any zone
        self._server_high: datetime | None = None  # the latest time SGLang's own stamps showed
        self._early_wrapper = False  # lines before SGLang's first stamp were dated by the wrapper
        self._retiming: Retiming | None = None  # how those lines' times move, once known
        self._retiming_taken = False

    # -- SGLang's own stamps ------------------------------------------------------------------------

    def resolve(self, stamp: Stamp) -> str | None:
        """The ISO form of a (valid, see envelope.valid_stamp) stamp of SGLang's (or PyTorch's), its
        date filled in from before; None for Feb 29 of a year that has none (the year taken from before)."""
        if stamp.year is not None and stamp.month is not None and stamp.day is not None:
            self._date, self._time_of_day = (stamp.year, stamp.month, stamp.day), stamp.time
            return f"{stamp.year:04d}-{stamp.month:02d}-{stamp.day:02d}T{stamp.time}"
        if stamp.month is not None and stamp.day is not None:
            year = self._date[0] if self._date is not None else 1
            if stamp.day > calendar.monthrange(year, stamp.month)[1]:
                return None
            return f"{year:04d}-{stamp.month:02d}-{stamp.day:02d}T{stamp.time}"
        y, m, d = self._date or (1, 1, 1)
        day = datetime(y, m, d)
        if self._time_of_day is not None and _seconds(self._time_of_day) - _seconds(stamp.time) > _HALF_DAY_S:
            day = _shifted(day, 86400.0) or day  # midnight passed
        self._date, self._time_of_day = (day.year, day.month, day.day), stamp.time
        return f"{day.year:04d}-{day.month:02d}-{day.day:02d}T{stamp.time}"

    def note_server_time(self, ts: str) -> None:
        """SGLang printed ``ts`` (a line read in bulk, without :meth:`of`)."""
        try:
            at = _parse(ts)
        except ValueError:  # a stamp that makes no time is no evidence of SGLang's clock
            return
        if self._server_high is None:
            self._settle_early_lines(at)
        if self._server_high is None or at > self._server_high:
            self._server_high = at

    # -- a line's time ------------------------------------------------------------------------------

    def dated_by_wrapper(self, env: Envelope) -> bool:
        """A line's time is its wrapper's, not SGLang's: it never starts a new run."""
        return env.stamp is None and env.outer is not None

    def of(self, env: Envelope) -> str | None:
        """A line's time: SGLang's own stamp, else its innermost wrapper's (in SGLang's zone), else
        None (the line takes the time of the line before it)."""
        if env.stamp is not None:
            try:
                ts = self._server_time(env.stamp, env.outer)
                self.note_server_time(ts)
            except (ValueError, OverflowError):  # a stamp that makes no time (month 84, Feb 30): text
                return None
            return ts
        if env.outer is None:
            return None
        return self._wrapper_time(env.outer, env.wrapper_year)

    def take_retiming(self) -> Retiming | None:
        """Once: how the times given to lines before SGLang's first stamp (the wrapper's, in a zone
        not known then) move, now that it came. None until then, or when there were none."""
        if self._retiming is None or self._retiming_taken:
            return None
        self._retiming_taken = True
        return self._retiming

    def retime(self, ts: str | None) -> str | None:
        """``ts`` of a line before SGLang's first stamp, re-timed (as ``take_retiming``)."""
        if ts is None or self._retiming is None:
            return ts
        return self._retiming(ts)

    def _server_time(self, stamp: Stamp, outer: Stamp | None) -> str:
        """SGLang's stamp as a time; ValueError when it makes none (Feb 29 of a year without one)."""
        if outer is None:
            return self._resolved(stamp)
        if stamp.year is None and outer.year is not None and not self._foreign:
            # a time of day inside a dated wrapper: the day that puts it nearest the wrapper's
            # time in SGLang's zone (the two may sit on either side of midnight)
            wrapper = self._outer_iso(outer)
            guess = _shifted(_parse(wrapper), self._zone_s or 0) if wrapper is not None else None
            ts = _nearest_day(guess, stamp.time) if guess is not None else None
            if ts is not None and wrapper is not None and self._same_clock(ts, wrapper):
                self._date, self._time_of_day = (int(ts[:4]), int(ts[5:7]), int(ts[8:10])), stamp.time
                return ts
            return self._resolved(stamp)
        ts = self._resolved(stamp)
        wrapper = self._outer_iso(outer)  # after SGLang's stamp: a wrapper without a year takes its
        if wrapper is not None:
            self._same_clock(ts, wrapper)
        return ts

    def _resolved(self, stamp: Stamp) -> str:
        ts = self.resolve(stamp)
        if ts is None:
            raise ValueError("the stamp makes no date")
        return ts

    def _same_clock(self, ts: str, wrapper: str) -> bool:
        """Whether the wrapper's clock is SGLang's in another zone, on a line that shows both: the
        first such line sets the zone, every later one must agree with it."""
        if self._foreign:
            return False
        apart = (_parse(ts) - _parse(wrapper)).total_seconds()
        if self._zone_s is None:
            if abs(apart) > _MOST_ZONES_APART_S:
                self._foreign = True
                return False
            self._zone_s = round(apart / _ZONE_STEP_S) * _ZONE_STEP_S
            return True
        if abs(apart - self._zone_s) > _DRIFT_S:
            self._foreign = True
            return False
        return True

    def _wrapper_time(self, outer: Stamp, wrapper_year: int | None = None) -> str | None:
        wrapper = self._outer_iso(outer, wrapper_year)
        if wrapper is None:
            return None
        if self._server_high is None:
            # nothing to compare with yet: the wrapper's time, re-timed once SGLang's first stamp comes
            self._early_wrapper = True
            return wrapper
        if self._zone_s is None or self._foreign:
            return None  # compared only in the same zone
        shifted = _shifted(_parse(wrapper), self._zone_s)
        if shifted is None:
            return None  # moved past year 1 or 9999 (a damaged stamp): no time
        at = max(shifted, self._server_high)
        return _iso(at, "." in wrapper or at.microsecond != 0)

    def _outer_iso(self, outer: Stamp, wrapper_year: int | None = None) -> str | None:
        """A wrapper's stamp in ISO form (a missing year or date: SGLang's last; before any, the
        year inferred: see :meth:`_inferred_year`), without changing what SGLang's stamps have shown.
        None when it makes no date (Feb 29 of a year without one)."""
        year, month, day = self._date or (1, 1, 1)
        if outer.month is not None and outer.day is not None:
            if outer.year is None and self._date is None:
                year = self._inferred_year(outer.month, outer.day, wrapper_year)
            year, month, day = outer.year or year, outer.month, outer.day
        try:
            return datetime(year, month, day).date().isoformat() + "T" + outer.time
        except ValueError:
            return None

    def _inferred_year(self, month: int, day: int, wrapper_year: int | None) -> int:
        """The year of a month and day printed without one, before any stamp of the log gave a
        year: a dated wrapper's around it, else the latest year that puts the day no later than the
        hint's day (the log was written by then: Dec 31 before a January file time is last year's),
        else 1 (unknown)."""
        if wrapper_year is not None:
            found: tuple[int, str] = (wrapper_year, "wrapper")
        elif self._year_hint is not None:
            by = self._year_hint.by
            found = (by.year if (month, day) <= (by.month, by.day) else by.year - 1, self._year_hint.source)
        else:
            return 1
        if self.year_inferred is None or (found[1] == "wrapper" and self.year_inferred[1] != "wrapper"):
            self.year_inferred = found
        return found[0]

    def _settle_early_lines(self, first: datetime) -> None:
        """SGLang's first stamp came: the wrapper's times before it move into SGLang's zone (when
        this line showed it), and never after this first stamp."""
        if not self._early_wrapper:
            return
        zone = None if self._foreign else self._zone_s

        # SGLang's whole-second stamp stands for that second: a wrapper's time within it is not later
        latest = _shifted(first, 1 if first.microsecond == 0 else 0) or first

        def moved(ts: str) -> str:
            at = _parse(ts)
            if at.year == 1 and first.year != 1:
                # a wrapper that prints no year (journald) took the year 1 before SGLang's first date
                at = _same_date_in(at, first.year) or first
            at = (_shifted(at, zone) or first) if zone is not None else first
            if at >= latest:
                at = first
            return _iso(at, at.microsecond != 0)

        self._retiming = moved


def _same_date_in(at: datetime, year: int) -> datetime | None:
    try:
        return at.replace(year=year)
    except ValueError:  # Feb 29
        return None


def _shifted(at: datetime, seconds: float) -> datetime | None:
    """``at`` moved by ``seconds``; None when that leaves datetime's years 1-9999."""
    try:
        return at + timedelta(seconds=seconds)
    except OverflowError:
        return None


def _nearest_day(guess: datetime, clock: str) -> str | None:
    """``clock`` (HH:MM:SS[.f]) on the day before, of or after ``guess``, whichever is nearest it."""
    at = datetime.fromisoformat(f"{guess.date().isoformat()}T{clock}")
    days = [t for t in (_shifted(at, d * 86400.0) for d in (-1, 0, 1)) if t is not None]
    best = min(days, key=lambda t: abs((t - guess).total_seconds()))
    return best.isoformat(timespec="microseconds" if "." in clock else "seconds")


def _seconds(clock: str) -> float:
    h, m, s = clock.split(":")
    return int(h) * 3600 + int(m) * 60 + float(s)


def _parse(ts: str) -> datetime:
    return datetime.fromisoformat(ts)


def _iso(at: datetime, fraction: bool) -> str:
    return at.isoformat(timespec="microseconds" if fraction else "seconds")
