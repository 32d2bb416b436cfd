"""Times as the log prints them -> one comparable form, ``YYYY-MM-DDTHH:MM:SS[.ffffff]``.

A stamp without a date (``[09:20:26 TP0]``, a journald or glog time without the year) takes its
date from the nearest dated line before it; with none, it is dated 0001-01-01, and a time that goes
back by more than half a day starts the next day (midnight passed), so durations still work.
A wrapper's time (docker, CI) may be in another zone than SGLang's: the offset between the two is
learned from lines that carry both and applied to the lines that carry only the wrapper's; a time
of day inside a dated wrapper takes the day that puts it nearest the wrapper's time.
"""

from __future__ import annotations

import calendar
from datetime import datetime, timedelta

from logphase.pipeline.envelope import Envelope, Stamp

UNDATED = "0001-01-01"
_HALF_DAY_S = 12 * 3600
# zones differ by whole quarter hours
_ZONE_STEP_S = 900


class LogClock:
    """The dates and zone offset a log's stamps have shown so far."""

    def __init__(self) -> None:
        self._date: tuple[int, int, int] | None = None  # the last full date seen
        self._undated_day = 0  # days passed since the first undated stamp
        self._undated_last: str | None = None
        self._outer_offset: float | None = None  # SGLang's time minus the wrapper's

    def resolve(self, stamp: Stamp) -> str | None:
        """The ISO form of a (valid, see envelope.valid_stamp) stamp, with the date filled in from
        what came before; None for Feb 29 of a year that has none (the year taken from before)."""
        if stamp.year is not None and stamp.month is not None and stamp.day is not None:
            self._date = (stamp.year, stamp.month, stamp.day)
            return f"{stamp.year:04d}-{stamp.month:02d}-{stamp.day:02d}T{stamp.time}"
        if stamp.month is not None and stamp.day is not None:
            year = self._date[0] if self._date is not None else 1
            if stamp.day > calendar.monthrange(year, stamp.month)[1]:
                return None
            return f"{year:04d}-{stamp.month:02d}-{stamp.day:02d}T{stamp.time}"
        if self._date is not None:
            y, m, d = self._date
            return f"{y:04d}-{m:02d}-{d:02d}T{stamp.time}"
        last = self._undated_last
        if last is not None and _seconds(last) - _seconds(stamp.time) > _HALF_DAY_S:
            self._undated_day += 1
        self._undated_last = stamp.time
        day = datetime(1, 1, 1) + timedelta(days=min(self._undated_day, 365 * 9000))
        return f"{day.year:04d}-{day.month:02d}-{day.day:02d}T{stamp.time}"

    def provisional(self, env: Envelope) -> bool:
        """A line's time is only its wrapper's, in a zone not yet matched to SGLang's."""
        return env.stamp is None and env.outer is not None and self._outer_offset is None

    def of(self, env: Envelope) -> str | None:
        """A line's time: SGLang's own stamp, else its innermost wrapper's (in SGLang's zone); None
        when neither makes a time (the line then takes the time of the lines before it)."""
        if env.stamp is not None:
            ts: str | None
            outer: str | None
            if env.outer is not None and env.stamp.year is None and env.outer.year is not None:
                # a time of day inside a dated wrapper: the day that puts it nearest the wrapper's
                # time in SGLang's zone (the two may sit on either side of midnight)
                outer = self.resolve(env.outer)
                guess = _shifted(_parse(outer), self._outer_offset or 0) if outer is not None else None
                ts = _nearest_day(guess, env.stamp.time) if guess is not None else None
            else:
                ts = self.resolve(env.stamp)
            outer = self.resolve(env.outer) if env.outer is not None else None
            if ts is not None and outer is not None:
                offset = (_parse(ts) - _parse(outer)).total_seconds()
                self._outer_offset = round(offset / _ZONE_STEP_S) * _ZONE_STEP_S
            if ts is not None or outer is None:
                return ts
            return self._in_sglang_zone(outer)
        if env.outer is None:
            return None
        outer = self.resolve(env.outer)
        return self._in_sglang_zone(outer) if outer is not None else None

    def _in_sglang_zone(self, outer: str) -> str:
        if not self._outer_offset:
            return outer
        shifted = _shifted(_parse(outer), self._outer_offset)
        if shifted is None:
            return outer  # moved past year 1 or 9999 (a damaged stamp): the wrapper's own time
        return shifted.isoformat(timespec="microseconds" if "." in outer else "seconds")


def _shifted(at: datetime, seconds: float) -> datetime | None:
    """``at`` moved by ``seconds``; None when that leaves datetime's years 1-9999."""
    try:
        return at + timedelta(seconds=seconds)
    except OverflowError:
        return None


def _nearest_day(guess: datetime, clock: str) -> str | None:
    """``clock`` (HH:MM:SS[.f]) on the day before, of or after ``guess``, whichever is nearest it."""
    at = datetime.fromisoformat(f"{guess.date().isoformat()}T{clock}")
    days = (_shifted(at, d * 86400.0) for d in (-1, 0, 1))
    best = min((t for t in days if t is not None), key=lambda t: abs((t - guess).total_seconds()))
    return best.isoformat(timespec="microseconds" if "." in clock else "seconds")


def _seconds(clock: str) -> float:
    h, m, s = clock.split(":")
    return int(h) * 3600 + int(m) * 60 + float(s)


def _parse(ts: str) -> datetime:
    return datetime.fromisoformat(ts)
