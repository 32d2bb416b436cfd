"""Stand in for a server in tests: ``python -m logphase.replay RECORDED.log`` writes a recorded
server log to standard output a record at a time (a line, or a traceback whole: Python's logging
writes a record in one write, so a follower never sees a traceback paused half-way), then keeps
running, as a server does after start-up, until it is terminated (``--exit CODE`` exits at the end
instead, as a server whose start-up failed would). The README's pytest example starts it where a
real test starts ``sglang.launch_server``. ``--pace SPEED`` writes it at the pace its own stamps
give (``timeline``: a progress bar's redraws at the times its own clock gives), SPEED times faster.

Exit codes: 2 when the recorded log cannot be read (one line on stderr); otherwise ``--exit``'s code,
or the signal's when terminated.
"""

from __future__ import annotations

import argparse
import sys
import threading
import time
from collections.abc import Iterable, Iterator, Sequence

from logphase.faces.exit_codes import EXIT_USAGE


def _arguments(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m logphase.replay", description=__doc__.split("\n\n")[0])
    parser.add_argument("recorded", help="the recorded server log to write out")
    parser.add_argument("--delay", type=float, default=0.005, help="seconds between records (default 0.005)")
    parser.add_argument(
        "--exit", type=int, default=None, metavar="CODE", help="exit with CODE once written (default: keep running)"
    )
    parser.add_argument(
        "--pace",
        type=float,
        default=None,
        metavar="SPEED",
        help="write the log at the pace of its own stamps, SPEED times faster (1: as it was written); --delay is then unused",
    )
    return parser.parse_args(argv)


def timeline(data: bytes, source: str = "<replay>") -> list[tuple[float, bytes]]:
    """The log cut where its events start, each piece with the second (from the first stamp) at
    which it was written: an event's time, a progress bar's redraw at its bar's start plus the
    elapsed time the bar prints (a weight load with one stamp in ten minutes takes ten minutes),
    never earlier than the piece before it. What comes before the first stamp is written at 0."""
    return stamped_timeline(data, source)[1]


def stamped_timeline(data: bytes, source: str = "<replay>") -> tuple[float, list[tuple[float, bytes]]]:
    """:func:`timeline`, and the time its 0 is (the first stamp, in seconds of the epoch as the
    local zone reads the stamp; 0.0 for a log without one)."""
    from logphase.engine.engine import Engine
    from logphase.reading.clock import input_year_hint
    from logphase.vocabulary.events import ProgressBar

    # stamps that print no year (vLLM's) take the file's, or today's, as every face reads them
    engine = Engine(source=source, year=input_year_hint(source))
    events = engine.feed(data) + engine.finish()
    points: list[tuple[int, float]] = []
    bar_starts: dict[tuple[str, str | None], float] = {}
    latest = None
    for event in sorted(events, key=lambda e: e.offset):
        at = _seconds(event.ts)
        if at is None or at < 0:
            continue  # no time, or a stamp that prints no year and took none (year 1): not the server's clock
        if isinstance(event, ProgressBar) and event.elapsed_s is not None:
            start = bar_starts.setdefault((event.desc, event.rank), at - event.elapsed_s)
            at = start + event.elapsed_s
        latest = at if latest is None else max(latest, at)
        points.append((event.offset, latest))
    if not points:
        return 0.0, [(0.0, data)] if data else []
    first = points[0][1]
    cuts = [0] + [offset for offset, _ in points[1:]] + [len(data)]
    times = [at - first for _, at in points]
    return first, [(times[i], data[cuts[i] : cuts[i + 1]]) for i in range(len(points)) if cuts[i + 1] > cuts[i]]


def _seconds(ts: str | None) -> float | None:
    from datetime import datetime

    if ts is None:
        return None
    try:
        return datetime.fromisoformat(ts).timestamp()
    except ValueError:
        return None


def records(lines: Iterable[bytes]) -> Iterator[bytes]:
    """The lines grouped as a server writes them: indented lines join the record before them, and a
    traceback (from its ``Traceback (most recent call last)`` header) takes every line up to the
    next one that opens with ``[`` (a stamped line)."""
    record = b""
    for line in lines:
        in_traceback = b"Traceback (most recent call last)" in record and not line.startswith(b"[")
        if record and (in_traceback or line[:1] in (b" ", b"\t")):
            record += line
            continue
        if record:
            yield record
        record = line
    if record:
        yield record


def main(argv: Sequence[str] | None = None) -> int:
    args = _arguments(argv)
    try:
        with open(args.recorded, "rb") as f:
            lines = f.read().splitlines(keepends=True)
    except OSError as exc:
        sys.stderr.write(f"logphase.replay: {args.recorded}: {exc.strerror or exc}\n")
        return EXIT_USAGE
    out = sys.stdout.buffer
    if args.pace is not None:
        _write_paced(b"".join(lines), args.pace, args.recorded)
    else:
        for record in records(lines):
            out.write(record)
            out.flush()  # each record reaches the log as the server would write it
            time.sleep(args.delay)
    if args.exit is not None:
        return int(args.exit)
    threading.Event().wait()  # serving, until terminated
    return 0


def _write_paced(data: bytes, speed: float, source: str) -> None:
    out = sys.stdout.buffer
    begun = time.monotonic()
    for at, piece in timeline(data, source):
        wait = at / speed - (time.monotonic() - begun)
        if wait > 0:
            time.sleep(wait)
        out.write(piece)
        out.flush()


if __name__ == "__main__":
    sys.exit(main())
