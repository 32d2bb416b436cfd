"""Answer a Kubernetes probe from the state a following sidecar keeps (`logphase follow LOG
--state-file STATE`), in a few milliseconds: it reads that small file, never the log.

  startupProbe:  exec: command: [logphase, probe, /logs/state.json, --termination-log, /dev/termination-log]

--startup (default) passes while the start-up makes progress (a line within the stall budget of the
phase it is in), fails at a start-up failure or a stall, with the cause; --ready passes once the
server is ready; --live fails once the log shows the server failed.

Exit code: 0 passes, 1 fails, 2 no state to judge by (no sidecar, or one that stopped writing): said
in one line; for --live that passes (a liveness probe restarts the server: only a failure fails it).
"""

from __future__ import annotations

import argparse

from logphase.faces.fleet import probe

NAME = "probe"
HELP = "answer a Kubernetes start-up, readiness or liveness probe from the sidecar's state file"
HELP_FORMATTER = argparse.RawDescriptionHelpFormatter


def add_arguments(p: argparse.ArgumentParser) -> None:
    probe.add_probe_arguments(p)


def run(args: argparse.Namespace) -> int:
    return probe.answer_probe(args)
