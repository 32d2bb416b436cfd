"""Read a whole log (or - for standard input) and report on its last run. A report saved with
`parse --json` is read back and printed again (in text, or as JSON). Several logs: one line (or one
JSON report) each, in the order given, read in parallel; the exit code is the worst verdict."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from logphase.faces.exit_codes import OUTCOME_EXIT
from logphase.faces.inputs import InputError, check_since, feed_all, open_input, parse_expect, read_head
from logphase.faces.options import add_color, add_expect_since, add_jobs, add_merge, add_server

if TYPE_CHECKING:
    from logphase.reading.lines import LogicalLine
    from logphase.reporting.merge import MergedReport
    from logphase.reporting.report import Report
    from logphase.vocabulary.events import EventBase

NAME = "parse"
HELP = "read a whole log and report"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "files",
        nargs="+",
        metavar="FILE",
        help="log file, a saved `parse --json` report, or - for standard input; several: one report each",
    )
    p.add_argument(
        "--json", action="store_true", help="print the JSON report (see `logphase schema`); several logs: JSON Lines, one each"
    )
    add_jobs(p)
    add_merge(p)
    add_expect_since(p)
    add_server(p)
    p.add_argument("--run", type=int, metavar="N", help="report on run N of the file (1 is the first; default: the last)")
    p.add_argument("--events", action="store_true", help="print the typed events as JSON Lines instead of the report")
    p.add_argument("--unrecognized", action="store_true", help="print the lines no grammar recognised (line number and text)")
    add_color(p)


def run(args: argparse.Namespace) -> int:
    import orjson

    from logphase.engine.engine import Engine
    from logphase.reading.clock import input_year_hint

    expect = parse_expect(args.expect)
    check_since(args.since)
    _check_run(args)
    if args.merge:
        return _merged(args, expect)
    if len(args.files) > 1:
        return _many(args, expect)
    handle, source = open_input(args.files[0])
    out = sys.stdout.buffer
    report, head = read_head(handle, source)
    if report is not None:
        if args.events or args.unrecognized or args.since or expect or args.run is not None or args.server:
            raise InputError(
                f"{source}: a saved report: --run, --events, --unrecognized, --since, --expect and --server apply to logs"
            )
        from logphase.reporting.merge import MergedReport

        if isinstance(report, MergedReport):  # a saved `parse --merge --json`: printed as --merge prints it
            return _print_merged(report, args)
        return _print(report, args)

    def print_unrecognized(line: LogicalLine) -> None:
        out.write(f"{line.lineno}: {line.text}\n".encode(errors="replace"))

    engine = Engine(
        year=input_year_hint(args.files[0]),
        source=source,
        since=args.since,
        on_unrecognized=print_unrecognized if args.unrecognized else None,
        collect_events=args.events,  # the report alone is the same without them, and much faster
        server=args.server,
    )

    def emit_events(events: list[EventBase]) -> None:
        for event in events:
            out.write(orjson.dumps(event.model_dump(mode="json", exclude_none=True)) + b"\n")

    feed_all(engine, handle, source, emit_events if args.events else None, head=head)
    try:
        report = engine.report(expect, run=args.run)
    except ValueError as exc:
        raise InputError(f"--run {args.run}: {exc}") from None
    if args.unrecognized or args.events:
        out.flush()  # already streamed while reading
        return OUTCOME_EXIT[report.outcome]
    return _print(report, args)


def _check_run(args: argparse.Namespace) -> None:
    """--run N picks the report of one run of one log, as `report --run N` draws it."""
    if args.run is None:
        return
    if args.run < 1:
        raise InputError(f"--run {args.run}: runs are numbered from 1")
    if args.merge or len(args.files) > 1:
        raise InputError("--run picks a run of one log; with several logs each is read to its last run")
    if args.events or args.unrecognized:
        raise InputError("--run picks the report of one run; --events and --unrecognized print the whole log")


def _print(report: Report, args: argparse.Namespace) -> int:
    import orjson

    out = sys.stdout.buffer
    if args.json:
        out.write(orjson.dumps(report.model_dump(mode="json"), option=orjson.OPT_INDENT_2) + b"\n")
    else:
        from logphase.faces.text import render_text, use_color

        out.write(render_text(report, use_color(sys.stdout, args.color)).encode())
    out.flush()
    return OUTCOME_EXIT[report.outcome]


def _merged(args: argparse.Namespace, expect: dict[str, str]) -> int:
    """--merge: one report on the logs of one deployment."""
    from logphase.faces.batch import default_jobs
    from logphase.faces.merged import read_merged

    if args.events or args.unrecognized:
        raise InputError("--events and --unrecognized read one log at a time")
    return _print_merged(read_merged(args.files, args.since, expect, args.jobs or default_jobs(), args.server), args)


def _print_merged(merged: MergedReport, args: argparse.Namespace) -> int:
    import orjson

    from logphase.faces.merged import render_merged
    from logphase.faces.text import use_color

    out = sys.stdout.buffer
    if args.json:
        out.write(orjson.dumps(merged.model_dump(mode="json"), option=orjson.OPT_INDENT_2) + b"\n")
    else:
        out.write(render_merged(merged, use_color(sys.stdout, args.color)).encode(errors="replace"))
    out.flush()
    return OUTCOME_EXIT[merged.outcome]


def _many(args: argparse.Namespace, expect: dict[str, str]) -> int:
    """Several logs: a headline per log (or a JSON report per line), then the count per outcome."""
    import orjson

    from logphase.faces.batch import FileOutcome, default_jobs, run_batch, summary, worst_exit
    from logphase.faces.wording import headline

    if args.events or args.unrecognized:
        raise InputError("--events and --unrecognized read one log at a time")
    out = sys.stdout.buffer

    def emit(outcome: FileOutcome) -> None:
        assert outcome.report is not None
        if args.json:
            out.write(orjson.dumps(outcome.report.model_dump(mode="json")) + b"\n")
        else:
            out.write(f"{outcome.source}: {headline(outcome.report)}\n".encode(errors="replace"))
        out.flush()

    def report_error(message: str) -> None:
        sys.stderr.write(f"logphase: {message}\n")
        sys.stderr.flush()

    outcomes = run_batch(args.files, args.since, expect, args.jobs or default_jobs(), emit, report_error, args.server)
    if not args.json:
        out.write(f"{summary(outcomes)}\n".encode())
        out.flush()
    return worst_exit([o.exit_code for o in outcomes])
