"""Command line: ``logphase parse``, ``logphase schema``.

Exit codes: 0 ready, 1 failed, 3 still starting, 2 usage or input error, 130 interrupted.
"""

from __future__ import annotations

import argparse
import os
import stat
import sys
from collections.abc import Sequence

EXIT_READY, EXIT_FAILED, EXIT_USAGE, EXIT_STARTING, EXIT_INTERRUPTED = 0, 1, 2, 3, 130
OUTCOME_EXIT = {"ready": EXIT_READY, "failed": EXIT_FAILED, "starting": EXIT_STARTING}


class InputError(Exception):
    """A problem with what the user gave us: reported in one line, exit code 2."""


def _parse_expect(items: Sequence[str]) -> dict[str, str]:
    expect: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise InputError(f"--expect takes KEY=VALUE (as in server_args, e.g. mem_fraction_static=0.88), got {item!r}")
        expect[key.strip().lstrip("-").replace("-", "_")] = value.strip()
    return expect


def _build_parser() -> argparse.ArgumentParser:
    from logphase import __version__

    parser = argparse.ArgumentParser(
        prog="logphase",
        description="Read an SGLang server log: the startup phase it reached, how long each phase took, "
        "and, if startup failed, the root cause and what to change.",
        epilog="exit codes: 0 ready, 1 failed, 3 still starting, 2 usage or input error",
    )
    parser.add_argument("--version", action="version", version=f"logphase {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    p = sub.add_parser(
        "parse", help="read a whole log and report", description="Read a whole log (or - for stdin) and report on its last run."
    )
    p.add_argument("file", metavar="FILE", help="log file, or - for standard input")
    p.add_argument("--json", action="store_true", help="print the JSON report (see `logphase schema`)")
    p.add_argument(
        "--expect",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a server_args value you launched with, e.g. mem_fraction_static=0.88; "
        "a mismatch is a stale_log warning (repeatable)",
    )
    p.add_argument("--since", metavar="TIME", help="ignore output before this time, e.g. '2026-05-09 09:20:00'")
    p.add_argument("--events", action="store_true", help="print the typed events as JSON Lines instead of the report")
    p.add_argument("--unrecognized", action="store_true", help="print the lines no grammar recognised (line number and text)")

    sub.add_parser("schema", help="print the JSON schema of the report and of the events")
    return parser


def _open_input(name: str) -> tuple[object, str]:
    if name == "-":
        return sys.stdin.buffer, "<stdin>"
    try:
        st = os.stat(name)
    except FileNotFoundError:
        raise InputError(f"{name}: no such file") from None
    except PermissionError:
        raise InputError(f"{name}: permission denied") from None
    except OSError as exc:
        raise InputError(f"{name}: {exc.strerror or exc}") from None
    if stat.S_ISDIR(st.st_mode):
        raise InputError(f"{name}: is a directory, give a log file")
    try:
        return open(name, "rb"), name
    except PermissionError:
        raise InputError(f"{name}: permission denied") from None
    except OSError as exc:
        raise InputError(f"{name}: {exc.strerror or exc}") from None


def _cmd_parse(args: argparse.Namespace) -> int:
    import orjson

    from logphase.engine import BLOCK_SIZE, Engine
    from logphase.lines import LogicalLine

    expect = _parse_expect(args.expect)
    handle, source = _open_input(args.file)
    out = sys.stdout.buffer

    def print_unrecognized(line: LogicalLine) -> None:
        out.write(f"{line.lineno}: {line.text}\n".encode(errors="replace"))

    try:
        engine = Engine(source=source, since=args.since, on_unrecognized=print_unrecognized if args.unrecognized else None)
    except ValueError:
        raise InputError(f"--since: not a time: {args.since!r} (use e.g. '2026-05-09 09:20:00')") from None

    def emit_events(events: list) -> None:  # type: ignore[type-arg]
        if args.events:
            for event in events:
                out.write(orjson.dumps(event.model_dump(mode="json", exclude_none=True)) + b"\n")

    try:
        while True:
            try:
                block = handle.read(BLOCK_SIZE)  # type: ignore[attr-defined]
            except OSError as exc:
                raise InputError(f"{source}: read failed: {exc.strerror or exc}") from None
            if not block:
                break
            emit_events(engine.feed(block))
        emit_events(engine.finish())
    finally:
        if handle is not sys.stdin.buffer:
            handle.close()  # type: ignore[attr-defined]
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


def _cmd_schema() -> int:
    import orjson
    from pydantic import TypeAdapter

    from logphase.events import Event
    from logphase.report import Report

    schema = {"report": Report.model_json_schema(), "event": TypeAdapter(Event).json_schema()}
    sys.stdout.buffer.write(orjson.dumps(schema, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS) + b"\n")
    return EXIT_READY


def main(argv: Sequence[str] | None = None) -> int:
    parser = _build_parser()
    args = parser.parse_args(argv)
    try:
        if args.command == "parse":
            return _cmd_parse(args)
        if args.command == "schema":
            return _cmd_schema()
        parser.print_help()
        return EXIT_USAGE
    except InputError as exc:
        print(f"logphase: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("logphase: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # the reader went away (| head): not an error of ours
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_READY


def entry_point() -> None:
    sys.exit(main())
