"""Compare two startups (each a log or a saved --json report): per-phase durations side by side
with ratios, configuration and memory differences, and a verdict per phase against --tolerance.

Exit 0 when nothing regressed, 1 when a phase got slower than baseline x (1 + tolerance) (and
--slack seconds slower) or the outcome got worse (ready > starting > failed), 2 for input errors.
"""

from __future__ import annotations

import argparse
import sys

from logphase.faces.exit_codes import EXIT_FAILED, EXIT_READY
from logphase.faces.inputs import InputError, read_input
from logphase.faces.options import add_server, add_tolerance

NAME = "compare"
HELP = "compare two startups phase by phase; exit 1 on a regression"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("baseline", metavar="BASELINE", help="the reference: a log or a saved `parse --json` report")
    p.add_argument("new", metavar="NEW", help="the run to judge: a log or a saved report (- for standard input)")
    add_tolerance(p, "")
    p.add_argument("--json", action="store_true", help="print the comparison as JSON")
    add_server(p)


def run(args: argparse.Namespace) -> int:
    import orjson

    from logphase.faces.oracle import DEFAULT_SLACK_S, DEFAULT_TOLERANCE, OracleError, compare, parse_number, render_comparison

    try:
        tolerance = parse_number(args.tolerance, "--tolerance") if args.tolerance is not None else DEFAULT_TOLERANCE
        slack = parse_number(args.slack, "--slack", "s") if args.slack is not None else DEFAULT_SLACK_S
    except OracleError as exc:
        raise InputError(str(exc)) from None
    if args.baseline == "-" and args.new == "-":
        raise InputError("only one of BASELINE and NEW can be standard input")
    baseline = read_input(args.baseline, server=args.server)
    new = read_input(args.new, server=args.server)
    result = compare(baseline, new, tolerance, slack)
    out = sys.stdout.buffer
    if args.json:
        out.write(orjson.dumps(result.model_dump(mode="json"), option=orjson.OPT_INDENT_2) + b"\n")
    else:
        out.write(render_comparison(result, baseline, new).encode())
    out.flush()
    return EXIT_FAILED if result.regressed else EXIT_READY
