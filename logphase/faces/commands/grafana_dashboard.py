"""Print a Grafana dashboard (JSON) for the metrics of `logphase follow --metrics-port`: the phase and
the outcome of each server over time, the root cause of a failure, silence against follow's stall
budget, time in the phase, phase durations, the start-up total and free GPU memory per rank. Its
queries are built from the metric names the exporter serves.

  logphase grafana-dashboard > logphase-dashboard.json
  (Grafana: Dashboards > New > Import, upload the file, choose the Prometheus data source)
"""

from __future__ import annotations

import argparse
import sys

NAME = "grafana-dashboard"
HELP = "print a Grafana dashboard for the metrics of follow --metrics-port"
HELP_FORMATTER = argparse.RawDescriptionHelpFormatter


def add_arguments(p: argparse.ArgumentParser) -> None:
    """No options: the dashboard's datasource, jobs and instances are chosen in Grafana."""


def run(args: argparse.Namespace) -> int:
    import orjson

    from logphase import __version__
    from logphase.faces.fleet.grafana import dashboard

    sys.stdout.buffer.write(orjson.dumps(dashboard(__version__), option=orjson.OPT_INDENT_2) + b"\n")
    sys.stdout.buffer.flush()
    return 0
