"""Follow a log as it is written (a FILE by name like tail -F, or standard input) and print one
line per phase change, failure, warning and stall; stop when the outcome is known.

Replaces `until grep -q "fired up" log; do sleep 15; done` loops:
  logphase follow server.log --until ready --timeout 900 && run_benchmark
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from logphase.cli import EXIT_INTERRUPTED, OUTCOME_EXIT, InputError, add_expect_since, check_since, parse_expect
from logphase.phases import Phase

NAME = "follow"
HELP = "follow a log live; stop when ready, failed or at --until"

UNTIL_CHOICES = ("outcome", "ready", "failed", "eof", *(p.value for p in Phase if p is not Phase.READY))


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("file", metavar="FILE", nargs="?", default="-", help="log file to follow by name, or - for stdin (default)")
    p.add_argument("--json", action="store_true", help="print JSON Lines records, each with a 'kind'")
    p.add_argument(
        "--until",
        choices=UNTIL_CHOICES,
        default="outcome",
        metavar="POINT",
        help="stop when this point is reached: ready, failed, a phase name, outcome (ready or failed; default) "
        "or eof (read a pipe to its end)",
    )
    p.add_argument("--timeout", type=float, metavar="SECONDS", help="give up after this long (exit 124)")
    p.add_argument(
        "--stall-after",
        type=float,
        metavar="SECONDS",
        help="report silence after this long (default: per phase, e.g. 600 s in CUDA graph capture)",
    )
    add_expect_since(p)


def run(args: argparse.Namespace) -> int:
    import orjson

    from logphase.follow import EXIT_TIMEOUT, Follower, FollowOptions, follow_file, follow_stream
    from logphase.render import render_text
    from logphase.report import Report

    check_since(args.since)
    if args.timeout is not None and args.timeout <= 0:
        raise InputError("--timeout must be a positive number of seconds")
    if args.stall_after is not None and args.stall_after <= 0:
        raise InputError("--stall-after must be a positive number of seconds")
    options = FollowOptions(
        until=args.until, timeout=args.timeout, stall_after=args.stall_after, expect=parse_expect(args.expect), since=args.since
    )
    current: list[Follower] = []

    def interrupted_summary() -> dict[str, Any] | None:
        return current[-1].summary() if current else None

    if args.file != "-":
        import os

        if os.path.isdir(args.file):
            raise InputError(f"{args.file}: is a directory, give a log file")
        records = follow_file(args.file, options, on_follower=current.append)
    else:
        records = follow_stream(sys.stdin.buffer, options, on_follower=current.append)
    out = sys.stdout.buffer
    last: dict[str, Any] | None = None
    code: int | None = None
    try:
        for record in records:
            last = record
            if record["kind"] == "timeout":
                code = EXIT_TIMEOUT
            if args.json:
                out.write(orjson.dumps(record) + b"\n")
            elif record["kind"] in ("summary", "timeout"):
                out.write(b"\n" + render_text(Report.model_validate(record["report"])).encode())
                if record["kind"] == "timeout":
                    out.write(f"logphase: gave up after {args.timeout:g} s\n".encode())
            else:
                out.write(_human(record).encode())
            out.flush()
    except KeyboardInterrupt:
        # the summary of what was read so far, then the conventional exit code
        summary = interrupted_summary()
        if summary is not None:
            if args.json:
                out.write(orjson.dumps(summary) + b"\n")
            else:
                out.write(b"\n" + render_text(Report.model_validate(summary["report"])).encode())
        sys.stderr.write("logphase: interrupted\n")
        out.flush()
        return EXIT_INTERRUPTED
    if code is not None:
        return code
    if last is not None and last.get("kind") == "summary":
        return int(last["exit_code"])
    return OUTCOME_EXIT["starting"]


HUMAN_LABELS = {"failure": "FAILED", "run": "new run"}


def _human(record: dict[str, Any]) -> str:
    kind = record["kind"]
    label = HUMAN_LABELS.get(kind, kind)
    when = record.get("ts") or ""
    when = when.replace("T", " ") + "  " if when else ""
    text = f"{when}{label:<8} {record.get('message', '')}"
    if kind == "failure":
        text += f"\n         hint: {record['failure']['hint']}"
    return text + "\n"
