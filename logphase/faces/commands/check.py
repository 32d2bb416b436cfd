"""Check a log (or a saved --json report) against expectations: the test oracle for CI scripts.

Exit 0 when every expectation holds, 1 when any is violated (each printed in one line with its
evidence: log lines, measured vs allowed), 2 for usage or input errors. Without --outcome the
startup must be ready, or failed when --cause is given; --outcome any checks the rest only.
Several logs are each checked against the same expectations (read in parallel, results in order);
the exit code is then the worst.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from logphase.faces.exit_codes import EXIT_FAILED, EXIT_READY
from logphase.faces.inputs import InputError, check_since, parse_expect, read_input, read_startups
from logphase.faces.options import add_jobs, add_server, add_since, add_tolerance

if TYPE_CHECKING:
    from logphase.faces.oracle import Expectations

NAME = "check"
HELP = "check a log against expectations (outcome, cause, durations, settings, memory, baseline)"


def add_arguments(p: argparse.ArgumentParser) -> None:
    from logphase.vocabulary.causes import Cause
    from logphase.vocabulary.phases import PHASE_ORDER

    p.add_argument(
        "files",
        nargs="+",
        metavar="LOG",
        help="log file, a saved `parse --json` report, or - for standard input; several: each is checked",
    )
    p.add_argument(
        "--outcome",
        metavar="OUTCOME",
        help="ready, failed, starting or any (default: ready; failed when --cause is given)",
    )
    p.add_argument("--cause", metavar="CAUSE", help="the failure cause: " + ", ".join(c.value for c in Cause))
    p.add_argument(
        "--max",
        action="append",
        default=[],
        metavar="PHASE=SECONDS",
        help="longest a phase may take (repeatable); phases: " + ", ".join(ph.value for ph in PHASE_ORDER),
    )
    p.add_argument("--max-total", metavar="SECONDS", help="longest the whole startup may take")
    p.add_argument(
        "--expect",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a server_args (or scheduler) value the log must show, e.g. tp_size=2 (repeatable)",
    )
    p.add_argument("--min-avail-mem", metavar="GB", help="lowest free GPU memory allowed at any phase boundary or capture step")
    p.add_argument("--baseline", metavar="REPORT", help="a saved report (or log) whose phase durations must not get slower")
    add_tolerance(p, "with --baseline: ")
    add_since(p)
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.add_argument("-v", "--verbose", action="store_true", help="print every check, not only the violated ones")
    add_jobs(p)
    add_server(p)


def run(args: argparse.Namespace) -> int:
    import orjson

    from logphase.faces.oracle import OracleError, check, parse_max, render_check

    if args.baseline is None and (args.tolerance is not None or args.slack is not None):
        raise InputError("--tolerance and --slack apply to --baseline, which is missing")
    from logphase.faces.oracle import Expectations

    check_since(args.since)
    try:
        want = Expectations.build(
            outcome=args.outcome,
            cause=args.cause,
            max_durations=parse_max(args.max),
            max_total=args.max_total,
            expect=parse_expect(args.expect),
            min_avail_mem=args.min_avail_mem,
            tolerance=args.tolerance,
            slack=args.slack,
        )
    except OracleError as exc:
        raise InputError(str(exc)) from None
    if args.baseline is not None:
        if args.baseline == "-" and "-" in args.files:
            raise InputError("only one of LOG and --baseline can be standard input")
        want.baseline = read_input(args.baseline, server=args.server)
    out = sys.stdout.buffer
    if len(args.files) == 1:
        # one startup, or each server of a saved merged report of a deployment (prefill, decode, router)
        ok = True
        for report in read_startups(args.files[0], args.since, args.server):
            result = check(report, want)
            ok = ok and result.ok
            if args.json:
                out.write(orjson.dumps(result.model_dump(mode="json"), option=orjson.OPT_INDENT_2) + b"\n")
            else:
                out.write(render_check(result, report, verbose=args.verbose).encode())
        out.flush()
        return EXIT_READY if ok else EXIT_FAILED
    return _many(args, want)


def _many(args: argparse.Namespace, want: Expectations) -> int:
    """Each log against the same expectations: its result (JSON Lines with --json), then a count."""
    import orjson

    from logphase.faces.batch import FileOutcome, default_jobs, run_batch, worst_exit
    from logphase.faces.oracle import check, render_check
    from logphase.faces.wording import plural

    out = sys.stdout.buffer
    codes: list[int] = []

    def emit(outcome: FileOutcome) -> None:
        assert outcome.report is not None
        result = check(outcome.report, want)
        codes.append(EXIT_READY if result.ok else EXIT_FAILED)
        if args.json:
            out.write(orjson.dumps({"source": outcome.source, **result.model_dump(mode="json")}) + b"\n")
        else:
            out.write(render_check(result, outcome.report, verbose=args.verbose).encode())
        out.flush()

    def report_error(message: str) -> None:
        sys.stderr.write(f"logphase: {message}\n")
        sys.stderr.flush()

    outcomes = run_batch(args.files, args.since, {}, args.jobs or default_jobs(), emit, report_error, args.server)
    unreadable = [o for o in outcomes if o.error is not None]
    if not args.json:
        passed = codes.count(EXIT_READY)
        line = f"{plural(len(outcomes), 'log')}: {passed} passed, {len(codes) - passed} failed"
        out.write((line + (f", {len(unreadable)} unreadable" if unreadable else "") + "\n").encode())
        out.flush()
    return worst_exit(codes + [o.exit_code for o in unreadable])
