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
from typing import NoReturn

from logphase.faces import collector
from logphase.faces.exit_codes import EXIT_INTERRUPTED, EXIT_OUTPUT_CLOSED, EXIT_USAGE


def commands() -> tuple[ModuleType, ...]:
    """The commands, in the order `logphase --help` lists them (imported when the parser is built:
    `logphase probe` runs without them)."""
    from logphase.faces.commands import check, compare, follow, grafana_dashboard, lnav_format, parse, probe, report, schema

    return (parse, follow, check, compare, report, schema, probe, lnav_format, grafana_dashboard)


class OneLineParser(argparse.ArgumentParser):
    """An argument parser whose usage errors are one line on stderr, like every other exit 2
    (argparse prints the usage block, then the error): ``logphase parse: error: ... (see logphase
    parse --help)``. Subcommands' parsers are of this class too (add_subparsers uses the parent's)."""

    def error(self, message: str) -> NoReturn:
        one_line = " ".join(message.split())
        self.exit(EXIT_USAGE, f"{self.prog}: error: {one_line} (see {self.prog} --help)\n")


def _build_parser() -> tuple[argparse.ArgumentParser, dict[str, tuple[ModuleType, argparse.ArgumentParser]]]:
    from logphase import __version__

    parser = OneLineParser(
        prog="logphase",
        description="Read an SGLang server log: the startup phase it reached, how long each phase took, "
        "and, if startup failed, the root cause and what to change.",
        epilog="exit codes: 0 ready, 1 failed, 3 still starting, 2 usage or input error, "
        "124 follow --timeout ran out, 130 interrupted, 141 output closed (| head)",
    )
    parser.add_argument("--version", action="version", version=f"logphase {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    modules: dict[str, tuple[ModuleType, argparse.ArgumentParser]] = {}
    for module in commands():
        # a command whose description holds an example (follow) keeps its line breaks
        formatter = getattr(module, "HELP_FORMATTER", argparse.HelpFormatter)
        p = sub.add_parser(module.NAME, help=module.HELP, description=module.__doc__, formatter_class=formatter)
        module.add_arguments(p)
        modules[module.NAME] = (module, p)
    return parser, modules


def main(argv: Sequence[str] | None = None) -> int:
    from logphase.faces.inputs import InputError
    from logphase.vocabulary.names import shown_name

    parser, modules = _build_parser()
    args, unknown = parser.parse_known_args(argv)
    if args.command not in modules:
        if unknown:
            parser.error(f"unrecognized arguments: {' '.join(unknown)}")
        parser.print_help()  # a bare `logphase`: what there is to run, on stdout; the error stays one line
        parser.error(f"a command is needed, one of: {', '.join(modules)}")
    module, command_parser = modules[args.command]
    if unknown:  # said by the command's parser, which knows its options (argparse has the top one say it)
        command_parser.error(f"unrecognized arguments: {' '.join(unknown)}")
    try:
        return int(module.run(args))
    except InputError as exc:
        # one line whatever it quotes (a name or a value as typed: a newline, an escape code)
        print(f"logphase: {shown_name(str(exc))}", file=sys.stderr)
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


def probe_main(argv: Sequence[str]) -> int:
    """`logphase probe` read by argparse (--help, a mistake; plain arguments are read without it,
    faces/entry.py): nothing of the other commands, the engine or the grammars is imported."""
    from logphase.faces.commands import probe

    parser = OneLineParser(
        prog="logphase probe", description=probe.__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    probe.add_arguments(parser)
    return probe.run(parser.parse_args(argv))


def entry_point() -> None:
    """The command line (`logphase probe` is read before this module: faces/entry.py)."""
    code = probe_main(sys.argv[2:]) if sys.argv[1:2] == ["probe"] else _main_keeping_cache()
    # Tearing the interpreter down (pydantic's and Lark's objects) is ~10% of a short run, and
    # nothing of ours needs it: flush what was printed and leave.
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except BrokenPipeError:
        pass  # the reader went away (| head), as main() allows
    os._exit(code)


def _main_keeping_cache() -> int:
    from logphase.packs import derived

    # pydantic looks for plugins in every installed package's metadata when it builds its first
    # validator (~10 % of a short run's start); the command line has none to load (setdefault: a user
    # who names plugins to skip keeps that)
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
    # the command line keeps what it derives for its next start (the library writes nothing unless
    # asked: packs/derived.py); asked before anything is derived (commands import the engine in run())
    derived.keep_cache()
    collector.starting()  # resumed when the input is opened (faces/collector.py)
    code = main()
    # patterns compiled for the first time on this machine are kept for the next run (os._exit skips atexit)
    derived.flush()
    return code
