"""The `logphase` command's first step: `logphase probe` goes its own way here, before argparse, the
commands, the engine or the grammars are imported (the kubelet runs it every few seconds: it costs
the interpreter's start and little more); every other command goes to ``cli.py``."""

from __future__ import annotations

import os
import sys

# what logphase runs on (pyproject.toml's dependencies): missing, the install is broken, not the input
_RUNTIME_DEPENDENCIES = frozenset({"lark", "pydantic", "pydantic_core", "orjson"})


def command_line() -> None:
    if sys.argv[1:2] != ["probe"]:
        try:
            from logphase.faces.cli import entry_point

            entry_point()
        except ModuleNotFoundError as exc:
            missing = (exc.name or "").partition(".")[0]
            if missing not in _RUNTIME_DEPENDENCIES:
                raise
            # run from a checkout with a Python that lacks what `pip install .` brings: one line
            where = sys.executable
            print(f"logphase: {missing} is not installed for {where}: install logphase with pip (pip install .)", file=sys.stderr)
            sys.exit(2)
        return
    from logphase.faces.fleet import probe

    args = probe.plain_args(sys.argv[2:])
    if args is None:  # --help or a mistake: argparse says it
        from logphase.faces.cli import probe_main

        code = probe_main(sys.argv[2:])
    else:
        code = probe.answer_probe(args)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
