"""Draw the startup as a picture: one self-contained HTML page (inline SVG and CSS, nothing
fetched), a Gantt chart of the phases per rank with the failure, its consequences and free GPU
memory at each phase boundary; optionally the drawing alone as an SVG file."""

from __future__ import annotations

import argparse
import sys
from typing import BinaryIO

from logphase.cli import OUTCOME_EXIT, InputError, add_expect_since, check_since, feed_all, open_input, parse_expect

NAME = "report"
HELP = "draw the startup timeline as a self-contained HTML page (and SVG)"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("file", metavar="LOG", help="log file, or - for standard input")
    p.add_argument(
        "-o", "--output", default="startup.html", metavar="HTML", help="the page to write (default startup.html; - for stdout)"
    )
    p.add_argument("--svg", metavar="SVG", help="also write the drawing alone as an SVG file")
    p.add_argument("--run", type=int, metavar="N", help="draw run N of the file (1 is the first; default: the last)")
    add_expect_since(p)


def run(args: argparse.Namespace) -> int:
    from logphase.engine import Engine
    from logphase.timeline import headline, render_html, render_svg

    expect = parse_expect(args.expect)
    check_since(args.since)
    if args.run is not None and args.run < 1:
        raise InputError(f"--run {args.run}: runs are numbered from 1")
    handle, source = open_input(args.file)
    engine = Engine(source=source, since=args.since, collect_events=False)
    feed_all(engine, handle, source)
    try:
        report = engine.report(expect, run=args.run)
    except ValueError as exc:
        raise InputError(f"--run {args.run}: {exc}") from None
    context = {}
    if report.failure is not None and args.file != "-":
        wanted = {report.failure.line, *(c.line for c in report.failure.consequences)}
        context = line_context(args.file, wanted)
    page = render_html(report, context)
    _write(args.output, page)
    if args.svg:
        _write(args.svg, render_svg(report, context))
    written = " and ".join(x if x != "-" else "stdout" for x in (args.output, args.svg) if x)
    print(f"{source}: {headline(report)}; wrote {written}", file=sys.stderr if "-" in (args.output, args.svg) else sys.stdout)
    return OUTCOME_EXIT[report.outcome]


def _write(path: str, text: str) -> None:
    if path == "-":
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    try:
        with open(path, "w", encoding="utf-8") as out:
            out.write(text)
    except OSError as exc:
        raise InputError(f"{path}: cannot write: {exc.strerror or exc}") from None


def line_context(path: str, wanted: set[int]) -> dict[int, tuple[str | None, str | None]]:
    """(timestamp, rank) of the given log lines: the line's own timestamp, or the last one before
    it (as the engine dates untimestamped lines); the line's own rank tag, or None (the server)."""
    from logphase.engine import BLOCK_SIZE
    from logphase.lines import LineSplitter
    from logphase.prefix import split_envelope

    found: dict[int, tuple[str | None, str | None]] = {}
    if not wanted:
        return found
    last = max(wanted)
    splitter = LineSplitter()
    last_ts: str | None = None
    dated: set[int] = set()
    try:
        handle: BinaryIO = open(path, "rb")  # noqa: SIM115 (closed by the with below)
    except OSError:
        return found
    with handle:
        while block := handle.read(BLOCK_SIZE):
            for line in splitter.feed(block):
                if line.lineno > last:
                    return found
                env = split_envelope(line.text)
                if env.ts is not None:
                    last_ts = env.ts
                _note(found, dated, line.lineno, wanted, env.ts, env.rank, last_ts)
        for line in splitter.finish():
            env = split_envelope(line.text)
            if env.ts is not None:
                last_ts = env.ts
            _note(found, dated, line.lineno, wanted, env.ts, env.rank, last_ts)
    return found


def _note(
    found: dict[int, tuple[str | None, str | None]],
    dated: set[int],
    lineno: int,
    wanted: set[int],
    ts: str | None,
    rank: str | None,
    last_ts: str | None,
) -> None:
    """A physical line split in pieces (bars, glued ranks) is dated by its first piece with a timestamp."""
    if lineno not in wanted or lineno in dated:
        return
    if ts is not None:
        found[lineno] = (ts, rank)
        dated.add(lineno)
    elif lineno not in found:
        found[lineno] = (last_ts, rank)
