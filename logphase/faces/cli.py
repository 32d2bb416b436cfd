"""Command line entry point. Each command lives in ``logphase/commands/<name>.py`` and exposes
``NAME``, ``HELP``, ``add_arguments(parser)`` and ``run(args) -> exit code``.

Exit codes: 0 ready, 1 failed, 3 still starting, 2 usage or input error, 130 interrupted
(``follow`` adds 124 for --timeout).
"""

from __future__ import annotations

import argparse
import importlib
import os
import stat
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, BinaryIO

if TYPE_CHECKING:
    from logphase.pipeline.engine import Engine
    from logphase.pipeline.events import EventBase
    from logphase.pipeline.report import Report

from logphase.faces.exit_codes import (  # noqa: F401 - re-exported for the command modules
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_READY,
    EXIT_STARTING,
    EXIT_USAGE,
    OUTCOME_EXIT,
)

# command modules, in the order `logphase --help` lists them
COMMANDS = ("parse", "follow", "check", "compare", "report", "schema")


class InputError(Exception):
    """A problem with what the user gave us: reported in one line, exit code 2."""


def parse_expect(items: Sequence[str]) -> dict[str, str]:
    from logphase.pipeline.report import normalize_expect

    pairs: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip().lstrip("-"):
            raise InputError(f"--expect takes KEY=VALUE (as in server_args, e.g. mem_fraction_static=0.88), got {item!r}")
        pairs[key] = value
    return normalize_expect(pairs)


def add_expect_since(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--expect",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a server_args value you launched with, e.g. mem_fraction_static=0.88; "
        "a mismatch is a stale_log warning (repeatable)",
    )
    p.add_argument("--since", metavar="TIME", help="ignore output before this time, e.g. '2026-05-09 09:20:00'")


def add_color(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--color",
        choices=("auto", "always", "never"),
        default="auto",
        help="colour the text output: auto (on a terminal, unless NO_COLOR is set; default), always, never",
    )


def check_since(value: str | None) -> None:
    if value is None:
        return
    from logphase.pipeline.engine import normalize_time

    try:
        normalize_time(value)
    except ValueError:
        raise InputError(f"--since: not a time: {value!r} (use e.g. '2026-05-09 09:20:00')") from None


def open_input(name: str) -> tuple[BinaryIO, str]:
    """Open FILE or - (stdin) for reading bytes; every failure is an InputError with one line."""
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


def read_head(handle: BinaryIO, source: str) -> tuple[Report | None, bytes]:
    """The first block of the input, or the saved report the input is (see logphase.faces.loading)."""
    from logphase.faces.loading import NotAReport, saved_report
    from logphase.pipeline.engine import BLOCK_SIZE

    try:
        first = handle.read(BLOCK_SIZE)
        report, head = saved_report(handle, first, source)
    except OSError as exc:
        raise InputError(f"{source}: read failed: {exc.strerror or exc}") from None
    except NotAReport as exc:
        raise InputError(str(exc)) from None
    if report is not None and handle is not sys.stdin.buffer:
        handle.close()
    return report, head


def feed_all(
    engine: Engine,
    handle: BinaryIO,
    source: str,
    on_events: Callable[[list[EventBase]], None] | None = None,
    head: bytes = b"",
) -> None:
    """Feed a whole input (``head``, already read from it, first) to the engine in large blocks,
    finish it and close the input; a read error is an InputError."""
    from logphase.pipeline.engine import BLOCK_SIZE

    try:
        if head:
            events = engine.feed(head)
            if on_events is not None:
                on_events(events)
        while True:
            try:
                block = handle.read(BLOCK_SIZE)
            except OSError as exc:
                raise InputError(f"{source}: read failed: {exc.strerror or exc}") from None
            if not block:
                break
            events = engine.feed(block)
            if on_events is not None:
                on_events(events)
        events = engine.finish()
        if on_events is not None:
            on_events(events)
    finally:
        if handle is not sys.stdin.buffer:
            handle.close()


def _build_parser() -> tuple[argparse.ArgumentParser, dict[str, object]]:
    from logphase import __version__

    parser = argparse.ArgumentParser(
        prog="logphase",
        description="Read an SGLang server log: the startup phase it reached, how long each phase took, "
        "and, if startup failed, the root cause and what to change.",
        epilog="exit codes: 0 ready, 1 failed, 3 still starting, 2 usage or input error",
    )
    parser.add_argument("--version", action="version", version=f"logphase {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    modules: dict[str, object] = {}
    for name in COMMANDS:
        module = importlib.import_module(f"logphase.faces.commands.{name}")
        p = sub.add_parser(module.NAME, help=module.HELP, description=module.__doc__)
        module.add_arguments(p)
        modules[module.NAME] = module
    return parser, modules


def main(argv: Sequence[str] | None = None) -> int:
    parser, modules = _build_parser()
    args = parser.parse_args(argv)
    module = modules.get(args.command)
    if module is None:
        parser.print_help()
        return EXIT_USAGE
    try:
        return int(module.run(args))  # type: ignore[attr-defined]
    except InputError as exc:
        print(f"logphase: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("logphase: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # the reader went away (| head): not an error of ours; keep Python from complaining at exit
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_READY


def entry_point() -> None:
    code = main()
    # Tearing the interpreter down (pydantic's and Lark's objects) is ~10% of a short run, and
    # nothing of ours needs it: flush what was printed and leave.
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except BrokenPipeError:
        pass  # the reader went away (| head), as main() allows
    os._exit(code)
