"""Read a whole log (or - for standard input) and report on its last run. A report saved with
`parse --json` is read back and printed again (in text, or as JSON). Several logs: one line (or one
JSON report) each, in the order given, read in parallel; the exit code is the worst verdict."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from logphase.faces.exit_codes import OUTCOME_EXIT
from logphase.faces.inputs import InputError, check_since, feed_all, open_input, parse_expect, read_head
from logphase.faces.options import add_color, add_expect_since, add_jobs, add_merge, add_otlp, add_server

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
    add_otlp(p)
    add_color(p)


def run(args: argparse.Namespace) -> int:
    import orjson

    from logphase.engine.engine import Engine
    from logphase.faces.fleet.otlp import StepTimes
    from logphase.reading.clock import input_year_hint

    expect = parse_expect(args.expect)
    check_since(args.since)
    _check_run(args)
    otlp = _otlp_url(args)
    if args.merge:
        return _merged(args, expect)
    if len(args.files) > 1:
        return _many(args, expect, otlp)
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
            if otlp is not None:
                raise InputError(f"{source}: a saved merged report: --otlp sends the runs of one server's log")
            return _print_merged(report, args)
        code = _print(report, args)
        if otlp is not None:
            _send(otlp, [report], {})  # a saved report keeps its steps' lines, not their times
        return code

    def print_unrecognized(line: LogicalLine) -> None:
        out.write(f"{line.lineno}: {line.text}\n".encode(errors="replace"))

    engine = Engine(
        year=input_year_hint(args.files[0]),
        source=source,
        since=args.since,
        on_unrecognized=print_unrecognized if args.unrecognized else None,
        # the report alone is the same without them, and much faster; --otlp keeps the time of the
        # lines that print a step's duration
        collect_events=args.events or otlp is not None,
        server=args.server,
    )
    steps = StepTimes()

    def on_events(events: list[EventBase]) -> None:
        if args.events:
            for event in events:
                out.write(orjson.dumps(event.model_dump(mode="json", exclude_none=True)) + b"\n")
        steps.on_events(events)

    feed_all(engine, handle, source, on_events if args.events or otlp is not None else None, head=head)
    try:
        report = engine.report(expect, run=args.run)
    except ValueError as exc:
        raise InputError(f"--run {args.run}: {exc}") from None
    if args.unrecognized or args.events:
        out.flush()  # already streamed while reading
        code = OUTCOME_EXIT[report.outcome]
    else:
        code = _print(report, args)
    if otlp is not None:
        runs = [report] if args.run is not None else [engine.report(expect, run=n) for n in range(1, report.runs)] + [report]
        _send(otlp, runs, steps.times)
    return code


def _otlp_url(args: argparse.Namespace) -> str | None:
    """--otlp's traces endpoint, checked before anything is read (None: not asked)."""
    if args.otlp is None:
        return None
    from logphase.faces.fleet.otlp import check_url

    if args.merge:
        raise InputError("--otlp sends the runs of each log: not with --merge")
    return check_url(args.otlp)


def _send(url: str, reports: list[Report], line_times: dict[int, str]) -> None:
    """Each run as one trace; a collector that does not take it is one line on stderr (the exit
    code stays the verdict on the log)."""
    from logphase.faces.fleet.otlp import send_reports

    for error in send_reports(reports, url, line_times):
        sys.stderr.write(f"logphase: {error}\n")
    sys.stderr.flush()


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


def _many(args: argparse.Namespace, expect: dict[str, str], otlp: str | None = None) -> int:
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
    if otlp is not None:
        _send_many(otlp, [o.source for o in outcomes if o.report is not None], args, expect)
    return worst_exit([o.exit_code for o in outcomes])


def _send_many(url: str, names: list[str], args: argparse.Namespace, expect: dict[str, str]) -> None:
    """--otlp with several logs: each read again with its events (every run, and its steps' times)."""
    from logphase.faces.fleet.otlp import runs_of

    for name in names:
        try:
            reports, times = runs_of(name, expect, args.since, args.server)
        except InputError as exc:
            sys.stderr.write(f"logphase: --otlp: {exc}\n")
            continue
        _send(url, reports, times)
