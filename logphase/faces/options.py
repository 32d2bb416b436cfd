"""Command-line options that several commands share, declared once."""

from __future__ import annotations

import argparse


def add_expect(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--expect",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a server_args value you launched with, e.g. mem_fraction_static=0.88; "
        "a mismatch is a stale_log warning (repeatable)",
    )


def add_since(p: argparse.ArgumentParser) -> None:
    p.add_argument("--since", metavar="TIME", help="ignore output before this time, e.g. '2026-05-09 09:20:00'")


def add_expect_since(p: argparse.ArgumentParser) -> None:
    add_expect(p)
    add_since(p)


def add_color(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--color",
        choices=("auto", "always", "never"),
        default="auto",
        help="colour the text output: auto (on a terminal, unless NO_COLOR is set; default), always, never",
    )


def add_tolerance(p: argparse.ArgumentParser, scope: str) -> None:
    """--tolerance and --slack, for comparisons with a baseline (``scope`` prefixes their help)."""
    p.add_argument("--tolerance", metavar="RATIO", help=f"{scope}allowed slowdown per phase, 0.2 = 20%% (default 0.2)")
    p.add_argument(
        "--slack",
        metavar="SECONDS",
        help=f"{scope}a phase is slower only if also this many seconds slower (default 1; logs stamp whole seconds)",
    )


def add_jobs(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--jobs",
        "-j",
        type=_positive_int,
        default=None,
        metavar="N",
        help="with several logs: read N at a time in parallel processes (default: the number of CPUs)",
    )


def add_merge(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--merge",
        action="store_true",
        help="read the logs as one deployment: the nodes of a multi-node server (--nnodes) become one report "
        "(ranks of every node, phases across nodes, node clock skew, the lagging rank, the root cause across "
        "nodes); prefill, decode and router logs are separate servers side by side",
    )


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def add_server(p: argparse.ArgumentParser) -> None:
    """--server: which server wrote the log, when its lines do not say (or say it wrongly)."""
    from logphase.packs.registry import SERVERS

    p.add_argument(
        "--server",
        choices=SERVERS,
        help="the server that wrote the log: every run is reported as this server's (default: from the "
        "server's own start lines, per run)",
    )


def add_otlp(p: argparse.ArgumentParser) -> None:
    """--otlp: start-up traces to an OpenTelemetry collector."""
    p.add_argument(
        "--otlp",
        metavar="URL",
        help="send each run as one trace to this OTLP/HTTP collector (e.g. http://otel-collector:4318; /v1/traces "
        "is added to a URL without a path): a span for the start-up, one per phase, the server's own measured steps "
        "under them, the cause on failure (needs pip install 'logphase[otel]'; OTEL_EXPORTER_OTLP_HEADERS and "
        "OTEL_RESOURCE_ATTRIBUTES are read as the SDK reads them)",
    )
