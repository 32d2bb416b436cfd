"""The `logphase` command's first step: `logphase probe` goes its own way here, before argparse, the
commands, the engine or the grammars are imported (the kubelet runs it every few seconds: it costs
the interpreter's start and little more); every other command goes to ``cli.py``."""

from __future__ import annotations

import os
import sys


def command_line() -> None:
    if sys.argv[1:2] != ["probe"]:
        from logphase.faces.cli import entry_point

        entry_point()
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
