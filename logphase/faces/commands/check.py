"""Check a log (or a saved --json report) against expectations: the test oracle for CI scripts.

Exit 0 when every expectation holds, 1 when any is violated (each printed in one line with its
evidence: log lines, measured vs allowed), 2 for usage or input errors. Without --outcome the
startup must be ready, or failed when --cause is given; --outcome any checks the rest only.
"""

from __future__ import annotations

import argparse
import sys

from logphase.faces.exit_codes import EXIT_FAILED, EXIT_READY
from logphase.faces.inputs import InputError, check_since, parse_expect, read_input
from logphase.faces.options import add_since, add_tolerance

NAME = "check"
HELP = "check a log against expectations (outcome, cause, durations, settings, memory, baseline)"


def add_arguments(p: argparse.ArgumentParser) -> None:
    from logphase.pipeline.causes import Cause
    from logphase.pipeline.phases import PHASE_ORDER

    p.add_argument("file", metavar="LOG", help="log file, a saved `parse --json` report, or - for standard input")
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


def run(args: argparse.Namespace) -> int:
    import orjson

    from logphase.faces.oracle import Expectations, OracleError, check, parse_max, render_check

    if args.baseline is None and (args.tolerance is not None or args.slack is not None):
        raise InputError("--tolerance and --slack apply to --baseline, which is missing")
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
        if args.baseline == "-" and args.file == "-":
            raise InputError("only one of LOG and --baseline can be standard input")
        want.baseline = read_input(args.baseline)
    report = read_input(args.file, args.since)
    result = check(report, want)
    out = sys.stdout.buffer
    if args.json:
        out.write(orjson.dumps(result.model_dump(mode="json"), option=orjson.OPT_INDENT_2) + b"\n")
    else:
        out.write(render_check(result, report, verbose=args.verbose).encode())
    out.flush()
    return EXIT_READY if result.ok else EXIT_FAILED
