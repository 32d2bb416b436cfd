"""Stand in for a server in tests: ``python -m logphase.replay RECORDED.log`` writes a recorded
server log to standard output a record at a time (a line, or a traceback whole: Python's logging
writes a record in one write, so a follower never sees a traceback paused half-way), then keeps
running, as a server does after start-up, until it is terminated (``--exit CODE`` exits at the end
instead, as a server whose start-up failed would). The README's pytest example starts it where a
real test starts ``sglang.launch_server``.

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
    return parser.parse_args(argv)


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
    for record in records(lines):
        out.write(record)
        out.flush()  # each record reaches the log as the server would write it
        time.sleep(args.delay)
    if args.exit is not None:
        return int(args.exit)
    threading.Event().wait()  # serving, until terminated
    return 0


if __name__ == "__main__":
    sys.exit(main())
