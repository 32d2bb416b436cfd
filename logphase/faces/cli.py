"""Command line entry point. Each command lives in ``logphase/faces/commands/<name>.py`` and exposes
``NAME``, ``HELP``, ``add_arguments(parser)`` and ``run(args) -> exit code``.

Exit codes (``logphase/faces/exit_codes.py``): 0 ready, 1 failed, 3 still starting, 2 usage or
input error, 124 ``follow --timeout`` ran out, 130 interrupted, 141 output closed by its reader.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from types import ModuleType

from logphase.faces.commands import check, compare, follow, parse, report, schema
from logphase.faces.exit_codes import EXIT_INTERRUPTED, EXIT_OUTPUT_CLOSED, EXIT_USAGE
from logphase.faces.inputs import InputError

# in the order `logphase --help` lists them
COMMANDS: tuple[ModuleType, ...] = (parse, follow, check, compare, report, schema)


def _build_parser() -> tuple[argparse.ArgumentParser, dict[str, ModuleType]]:
    from logphase import __version__

    parser = argparse.ArgumentParser(
        prog="logphase",
        description="Read an SGLang server log: the startup phase it reached, how long each phase took, "
        "and, if startup failed, the root cause and what to change.",
        epilog="exit codes: 0 ready, 1 failed, 3 still starting, 2 usage or input error, "
        "124 follow --timeout ran out, 130 interrupted, 141 output closed (| head)",
    )
    parser.add_argument("--version", action="version", version=f"logphase {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    modules: dict[str, ModuleType] = {}
    for module in COMMANDS:
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
        return int(module.run(args))
    except InputError as exc:
        print(f"logphase: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("logphase: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # the reader went away (| head): no traceback, and not a verdict either (0 would say
        # ready): the code a shell gives a process killed by SIGPIPE
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_OUTPUT_CLOSED


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
