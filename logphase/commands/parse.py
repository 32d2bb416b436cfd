"""Read a whole log (or - for standard input) and report on its last run."""

from __future__ import annotations

import argparse
import sys

from logphase.cli import OUTCOME_EXIT, add_expect_since, check_since, feed_all, open_input, parse_expect

NAME = "parse"
HELP = "read a whole log and report"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("file", metavar="FILE", help="log file, or - for standard input")
    p.add_argument("--json", action="store_true", help="print the JSON report (see `logphase schema`)")
    add_expect_since(p)
    p.add_argument("--events", action="store_true", help="print the typed events as JSON Lines instead of the report")
    p.add_argument("--unrecognized", action="store_true", help="print the lines no grammar recognised (line number and text)")


def run(args: argparse.Namespace) -> int:
    import orjson

    from logphase.engine import Engine
    from logphase.lines import LogicalLine

    expect = parse_expect(args.expect)
    check_since(args.since)
    handle, source = open_input(args.file)
    out = sys.stdout.buffer

    def print_unrecognized(line: LogicalLine) -> None:
        out.write(f"{line.lineno}: {line.text}\n".encode(errors="replace"))

    engine = Engine(
        source=source,
        since=args.since,
        on_unrecognized=print_unrecognized if args.unrecognized else None,
        collect_events=args.events,  # the report alone is the same without them, and much faster
    )

    def emit_events(events: list) -> None:  # type: ignore[type-arg]
        if args.events:
            for event in events:
                out.write(orjson.dumps(event.model_dump(mode="json", exclude_none=True)) + b"\n")

    feed_all(engine, handle, source, emit_events if args.events else None)
    report = engine.report(expect)
    if args.unrecognized or args.events:
        pass  # already streamed while reading
    elif args.json:
        out.write(orjson.dumps(report.model_dump(mode="json"), option=orjson.OPT_INDENT_2) + b"\n")
    else:
        from logphase.render import render_text

        out.write(render_text(report).encode())
    out.flush()
    return OUTCOME_EXIT[report.outcome]
