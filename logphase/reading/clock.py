"""Times as the log prints them -> one comparable form, ``YYYY-MM-DDTHH:MM:SS[.ffffff]``.

The server's clock is what a server's own prefix prints, whichever server: SGLang's prefix
(``Envelope.stamp``) or a server's logger that envelope.lark peels with the wrappers and marks as
the server's (``SERVER_*_TIME``: vLLM's ``INFO 11-18 18:07:28 [x.py:1] ``; ``Envelope.logger_stamp``).
No code here names a server: a new one gets this clock by marking its prefix in the grammar.

A stamp without a date (``[09:20:26 TP0]``, a journald or glog time without the year) takes its
date from the server's stamp before it (with none, 0001-01-01); a time of day more than half a day
before the one before it is on the next day (midnight passed), so durations still work. A server's
month and day without a year (vLLM's) take the year nearest the server's last date; with none yet,
the year is guessed: a dated wrapper's around it, else of the file's time or today when the reader
gives one (``YearHint``, said in the report), else 1. A guess holds until a stamp of the server
prints its year: the times given so far then move into that year (a re-timing, see below) and the
report no longer says the year was inferred. On a clock that has run on times of day alone (no
stamp printed a date), a month and day are left out: its lines cannot be moved onto that date.

A wrapper's time (docker, kubectl, CI) is another clock than the server's, often in another zone
(``kubectl logs --timestamps`` in UTC, the server in local time). The two are compared only in the
same zone: the zone is learned on the first line that carries both (whole quarter hours, at most
14 h apart); a wrapper whose clock is further off, or later drifts from that zone (one stamp on
every line, a collector stamping lines in batches), is not the server's clock in any zone, and the
lines it alone dates take the time of the server's line before them. A wrapper's time is never
earlier than a time the server has already printed. Lines before the server's first stamp can only
carry the wrapper's time: they are re-timed once that stamp comes (``take_retiming``).
"""

from __future__ import annotations

import calendar
import functools
import os
from collections.abc import Callable
from datetime import date, datetime, timedelta
from typing import Literal, NamedTuple

from logphase.reading.envelope import Envelope, Stamp

_HALF_DAY_S = 12 * 3600
# zones differ by whole quarter hours
_ZONE_STEP_S = 900
# UTC-12 to UTC+14: a wrapper (UTC) this far from the server's time (local) at most, one step of slack
_MOST_ZONES_APART_S = 14 * 3600 + _ZONE_STEP_S
# a wrapper in the learned zone that differs from the server's time by more than this is another
# clock: a real wrapper stamps what it receives within moments, less than a second after the server's
# whole-second stamp (docker -t, kubectl --timestamps); one that stamps lines seconds later or earlier
# (a collector's batches, stdout flushed in blocks) would date the lines it alone stamps by the batch
_DRIFT_S = 1.5

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
        self._date: tuple[int, int, int] | None = None  # the date of the server's last stamp
        self._time_of_day: str | None = None  # the time of day of the server's last stamp
        self._day_shown = False  # a stamp of the server's printed its date (month and day)
        # times of day were given before any stamp showed a date: on 0001-01-01 (and the days after
        # it, past midnight), until a date comes (``_settle_undated``)
        self._undated = False
        # a year was guessed for times that print none, and no stamp of the server's printed one
        # since: the year and month of the last date given a guessed year
        self._guessed: tuple[int, int] | None = None
        self._zone_s: float | None = None  # the server's time minus the wrapper's, once learned
        self._foreign = False  # the wrapper's clock is not the server's in any zone
        self._server_high: datetime | None = None  # the latest time the server's own stamps showed
        self._early_wrapper = False  # lines before the server's first stamp were dated by the wrapper
        self._early_years = 0  # years the times before the server's first stamp move by (a guess corrected)
        self._retimings: list[Retiming] = []  # how the times given so far move, not yet taken

    # -- the server's own stamps --------------------------------------------------------------------

    def resolve(self, stamp: Stamp) -> str | None:
        """The ISO form of a (valid, see envelope.valid_stamp) stamp of the server's (or PyTorch's),
        its date filled in from before; None for Feb 29 of a year that has none (the year taken from before)."""
        if stamp.year is not None and stamp.month is not None and stamp.day is not None:
            self._year_printed(stamp)
            return self._on_date(stamp)
        if stamp.month is not None and stamp.day is not None:
            year = self._date[0] if self._date is not None else 1
            if stamp.day > calendar.monthrange(year, stamp.month)[1]:
                return None
            return f"{year:04d}-{stamp.month:02d}-{stamp.day:02d}T{stamp.time}"
        if self._date is None:
            self._undated = True
        y, m, d = self._date or (1, 1, 1)
        day = datetime(y, m, d)
        if self._time_of_day is not None and _seconds(self._time_of_day) - _seconds(stamp.time) > _HALF_DAY_S:
            day = _shifted(day, 86400.0) or day  # midnight passed
        self._date, self._time_of_day = (day.year, day.month, day.day), stamp.time
        return f"{day.year:04d}-{day.month:02d}-{day.day:02d}T{stamp.time}"

    def _on_date(self, stamp: Stamp) -> str:
        """A stamp with its whole date (printed, or its year filled in): the server's date now."""
        assert stamp.year is not None and stamp.month is not None and stamp.day is not None
        self._settle_undated((stamp.year, stamp.month, stamp.day), stamp.time)
        self._date, self._time_of_day, self._day_shown = (stamp.year, stamp.month, stamp.day), stamp.time, True
        return f"{stamp.year:04d}-{stamp.month:02d}-{stamp.day:02d}T{stamp.time}"

    def _settle_undated(self, day: tuple[int, int, int], clock: str) -> None:
        """A stamp shows its date (``day``, at ``clock``) after times of day were given without one (a
        harness's ``[01:59:05]`` lines, SGLang's time-only prefix, before its first dated stamp): they move
        onto that date, or the day before when their last time of day is later than this one's by more
        than half a day (midnight passed between), not 2025 years before it."""
        if not self._undated or self._date is None or self._time_of_day is None:
            return
        self._undated = False
        target = datetime(*day)
        if _seconds(self._time_of_day) - _seconds(clock) > _HALF_DAY_S:
            target -= timedelta(days=1)
        last = datetime(*self._date)
        self._retimings.append(functools.partial(_undated_moved, last=last, days=(target - last).days))

    def note_server_time(self, ts: str) -> None:
        """The server printed ``ts``, its whole date (a line read in bulk, without :meth:`of`)."""
        try:
            at = _parse(ts)
        except ValueError:  # a stamp that makes no time is no evidence of the server's clock
            return
        self._year_printed(Stamp(at.year, at.month, at.day, ts[11:]))
        self._note_server(at)

    def _note_server(self, at: datetime) -> None:
        if self._server_high is None:
            self._settle_early_lines(at)
        if self._server_high is None or at > self._server_high:
            self._server_high = at

    # -- a line's time ------------------------------------------------------------------------------

    def dated_by_wrapper(self, env: Envelope) -> bool:
        """A line's time is not SGLang's prefix's (a wrapper's, or a logger's peeled with the
        wrappers): it never starts a new run (the phase machine splits runs on the prefix's clock only)."""
        return env.stamp is None and (env.outer is not None or env.logger_stamp is not None)

    def of(self, env: Envelope) -> str | None:
        """A line's time: the server's own stamp, else its innermost wrapper's (in the server's
        zone), else None (the line takes the time of the line before it)."""
        own = env.server_stamp
        if own is not None:
            try:
                ts = self._server_time(own, env.outer, env.wrapper_year)
                self._note_server(_parse(ts))
            except (ValueError, OverflowError):  # a stamp that makes no time (month 84, Feb 30): text
                return None
            return ts
        if env.outer is None:
            return None
        return self._wrapper_time(env.outer)

    def take_retiming(self) -> Retiming | None:
        """Once each: how the times given so far move, now that the clock knows better (the
        wrapper's times before the server's first stamp, in a zone not known then; a year guessed
        before the server printed one). None when nothing moved since the last call."""
        if not self._retimings:
            return None
        retimings, self._retimings = self._retimings, []
        return functools.reduce(_then, retimings)

    def _server_time(self, stamp: Stamp, outer: Stamp | None, wrapper_year: int | None) -> str:
        """The server's stamp as a time; ValueError when it makes none (Feb 29 of a year without one)."""
        if stamp.year is None and stamp.month is not None and self._date is not None and not self._day_shown:
            stamp = Stamp(None, None, None, stamp.time)  # the clock has run on times of day alone
        if stamp.year is None and stamp.month is not None:
            ts = self._day_without_year(stamp, wrapper_year)
        elif stamp.year is None and outer is not None and outer.year is not None and not self._foreign:
            return self._time_in_wrapper_day(stamp, outer)
        else:
            ts = self._resolved(stamp)
        wrapper = self._outer_iso(outer) if outer is not None else None  # a wrapper without a year takes the server's
        if wrapper is not None:
            self._same_clock(ts, wrapper)
        return ts

    def _time_in_wrapper_day(self, stamp: Stamp, outer: Stamp) -> str:
        """A time of day inside a dated wrapper: on the day that puts it nearest the wrapper's time
        in the server's zone (the two may sit on either side of midnight)."""
        wrapper = self._outer_iso(outer)
        guess = _shifted(_parse(wrapper), self._zone_s or 0) if wrapper is not None else None
        ts = _nearest_day(guess, stamp.time) if guess is not None else None
        if ts is not None and wrapper is not None and self._same_clock(ts, wrapper):
            self._settle_undated((int(ts[:4]), int(ts[5:7]), int(ts[8:10])), stamp.time)
            self._date, self._time_of_day = (int(ts[:4]), int(ts[5:7]), int(ts[8:10])), stamp.time
            return ts
        return self._resolved(stamp)

    def _day_without_year(self, stamp: Stamp, wrapper_year: int | None) -> str:
        """A server's month and day printed without a year: in the year nearest the server's last
        date, else in a guessed one (:meth:`_inferred_year`, provisional: :meth:`_year_printed`)."""
        assert stamp.month is not None and stamp.day is not None
        if self._date is not None:
            year = _year_near(stamp.month, self._date[:2])
        else:
            year = self._inferred_year(stamp.month, stamp.day, wrapper_year)
        if stamp.day > calendar.monthrange(year, stamp.month)[1]:
            raise ValueError("Feb 29 of a year without one")
        if self._date is None or self._guessed is not None:
            self._guessed = (year, stamp.month)  # (a year near a guessed one is a guess too)
        return self._on_date(stamp._replace(year=year))

    def _year_printed(self, stamp: Stamp) -> None:
        """A stamp of the server's printed its year: a year guessed before it was provisional. The
        times given so far move by the years it was off, and the report says no year was inferred."""
        if self._guessed is None or stamp.year is None or stamp.month is None:
            return
        year, month = self._guessed
        self._guessed, self.year_inferred = None, None
        years = _year_near(month, (stamp.year, stamp.month)) - year
        if years == 0:
            return
        if self._server_high is None:
            self._early_years = years  # the server's first stamp: the early lines move with the zone
            return
        self._retimings.append(functools.partial(_years_moved, years=years))

    def _resolved(self, stamp: Stamp) -> str:
        ts = self.resolve(stamp)
        if ts is None:
            raise ValueError("the stamp makes no date")
        return ts

    def _same_clock(self, ts: str, wrapper: str) -> bool:
        """Whether the wrapper's clock is the server's in another zone, on a line that shows both:
        the first such line sets the zone, every later one must agree with it."""
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

    def _wrapper_time(self, outer: Stamp) -> str | None:
        wrapper = self._outer_iso(outer)
        if wrapper is None:
            return None
        if self._server_high is None:
            # nothing to compare with yet: the wrapper's time, re-timed once the server's first stamp comes
            self._early_wrapper = True
            return wrapper
        if self._zone_s is None or self._foreign:
            return None  # compared only in the same zone
        shifted = _shifted(_parse(wrapper), self._zone_s)
        if shifted is None:
            return None  # moved past year 1 or 9999 (a damaged stamp): no time
        at = max(shifted, self._server_high)
        return _iso(at, "." in wrapper or at.microsecond != 0)

    def _outer_iso(self, outer: Stamp) -> str | None:
        """A wrapper's stamp in ISO form (a missing year or date: the server's last; before any, the
        year guessed: see :meth:`_inferred_year`), without changing what the server's stamps have
        shown. None when it makes no date (Feb 29 of a year without one)."""
        year, month, day = self._date or (1, 1, 1)
        if outer.month is not None and outer.day is not None:
            if outer.year is None and self._date is None:
                year = self._inferred_year(outer.month, outer.day, None)
                self._guessed = (year, outer.month)
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
        """The server's first stamp came: the wrapper's times before it move into the server's zone
        (when this line showed it) and into the year it printed (when theirs was guessed), and
        never after this first stamp."""
        years, self._early_years = self._early_years, 0
        if not self._early_wrapper:
            if years:
                self._retimings.append(functools.partial(_years_moved, years=years))
            return
        zone = None if self._foreign else self._zone_s

        # the server's whole-second stamp stands for that second: a wrapper's time within it is not later
        latest = _shifted(first, 1 if first.microsecond == 0 else 0) or first

        def moved(ts: str) -> str:
            at = _parse(ts)
            if years:
                at = _years_on(at, years) or first
            at = (_shifted(at, zone) or first) if zone is not None else first
            if at >= latest:
                at = first
            return _iso(at, at.microsecond != 0)

        self._retimings.append(moved)


def _then(first: Retiming, second: Retiming) -> Retiming:
    """``first``, then ``second``."""
    return lambda ts: second(first(ts))


def _year_near(month: int, near: tuple[int, int]) -> int:
    """The year that puts a day of ``month`` nearest the month ``near`` (year, month): the same, or
    the one before or after across New Year."""
    year, near_month = near
    if month == 12 and near_month == 1:
        return year - 1
    if month == 1 and near_month == 12:
        return year + 1
    return year


def _years_on(at: datetime, years: int) -> datetime | None:
    """``at`` the same day and time ``years`` later (Feb 29 -> Feb 28); None past datetime's years."""
    year = at.year + years
    if not 1 <= year <= 9999:
        return None
    return _same_date_in(at, year) or at.replace(year=year, day=28)


def _undated_moved(ts: str, last: datetime, days: int) -> str:
    """A time given on 0001-01-01 or a day after it up to ``last`` (times of day before any date was
    shown), ``days`` later: on the date the server's stamps then showed."""
    at = _parse(ts)
    if at > last + timedelta(days=1) or at.year != 1:
        return ts
    moved = _shifted(at, days * 86400.0)
    return ts if moved is None else _iso(moved, at.microsecond != 0)


def _years_moved(ts: str, years: int) -> str:
    """A time given with a guessed year, in the year the server printed (``years`` off)."""
    at = _parse(ts)
    moved = _years_on(at, years)
    return ts if moved is None else _iso(moved, at.microsecond != 0)


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
