"""What every command reads: its input by name or from stdin, a saved report or a log, and the
values people type on a command line. Every problem is an :class:`InputError`: one line on stderr
and exit code 2, never a traceback."""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, BinaryIO

from logphase.faces import collector
from logphase.vocabulary.errors import LogphaseError
from logphase.vocabulary.names import shown_name

if TYPE_CHECKING:
    from logphase.engine.engine import Engine
    from logphase.faces.loading import Saved
    from logphase.reporting.report import Report
    from logphase.vocabulary.events import EventBase
    from logphase.vocabulary.servers import Server


class InputError(LogphaseError):
    """A problem with what the user gave us: reported in one line, exit code 2."""


def parse_expect(items: Sequence[str]) -> dict[str, str]:
    from logphase.reporting.report import normalize_expect

    pairs: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip().lstrip("-"):
            raise InputError(f"--expect takes KEY=VALUE (as in server_args, e.g. mem_fraction_static=0.88), got {item!r}")
        pairs[key] = value
    return normalize_expect(pairs)


def check_since(value: str | None) -> None:
    if value is None:
        return
    from logphase.reading.clock import normalize_time

    try:
        normalize_time(value)
    except ValueError:
        raise InputError(f"--since: not a time: {value!r} (use e.g. '2026-05-09 09:20:00')") from None


def open_input(name: str) -> tuple[BinaryIO, str]:
    """Open FILE or - (stdin) for reading the bytes of a log: read through its compression (gzip,
    bz2, xz, zstd); every failure, and an input that is empty or no text, is an InputError."""
    collector.reading()  # the command has started: what it built lives to the end
    handle, source = _open_raw(name)
    from logphase.reading.sniff import NotALog, log_stream

    try:
        return log_stream(handle, source), source
    except NotALog as exc:
        raise InputError(str(exc)) from None
    except OSError as exc:
        raise InputError(f"{source}: read failed: {exc.strerror or exc}") from None


def _open_raw(name: str) -> tuple[BinaryIO, str]:
    if name == "-":
        return sys.stdin.buffer, "<stdin>"
    shown = shown_name(name)  # the name as every output shows it (bytes, a newline, an escape code)
    try:
        st = os.stat(name)
    except FileNotFoundError:
        raise InputError(f"{shown}: no such file") from None
    except PermissionError:
        raise InputError(f"{shown}: permission denied") from None
    except OSError as exc:
        raise InputError(f"{shown}: {exc.strerror or exc}") from None
    if stat.S_ISDIR(st.st_mode):
        raise InputError(f"{shown}: is a directory, give a log file")
    try:
        return open(name, "rb"), shown
    except PermissionError:
        raise InputError(f"{shown}: permission denied") from None
    except OSError as exc:
        raise InputError(f"{shown}: {exc.strerror or exc}") from None


def read_head(handle: BinaryIO, source: str) -> tuple[Saved | None, bytes]:
    """The first block of the input, or the saved report the input is (see logphase.faces.loading):
    one log's, or a merged one."""
    from logphase.engine.whole import BLOCK_SIZE
    from logphase.faces.loading import NotAReport, saved_report

    try:
        first = handle.read(BLOCK_SIZE)
        report, head = saved_report(handle, first, source)
    except OSError as exc:
        raise InputError(f"{source}: read failed: {exc.strerror or exc}") from None
    except NotAReport as exc:
        raise InputError(str(exc)) from None
    if report is not None:
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
    from logphase.engine.whole import read_all

    def read(size: int) -> bytes:
        try:
            return handle.read(size)
        except OSError as exc:
            raise InputError(f"{source}: read failed: {exc.strerror or exc}") from None

    try:
        read_all(engine, read, head, on_events)
    finally:
        handle.close()


def read_input(
    name: str, since: str | None = None, expect: dict[str, str] | None = None, server: Server | None = None
) -> Report:
    """The report on a log, or the saved report, given by name (- for stdin). ``server``: --server,
    the server every run of a log is; the year of stamps that print none: the file's time, or today."""
    from logphase.faces.loading import NotAReport, read_report
    from logphase.reading.clock import input_year_hint

    handle, source = open_input(name)
    try:
        return read_report(handle, source, since, expect, server=server, year=input_year_hint(name))
    except NotAReport as exc:
        raise InputError(str(exc)) from None
    except OSError as exc:
        raise InputError(f"{source}: read failed: {exc.strerror or exc}") from None
    finally:
        if handle is not sys.stdin.buffer:
            handle.close()


def read_startups(name: str, since: str | None = None, server: Server | None = None) -> list[Report]:
    """The startups an input describes: a log's last run, a saved report, or each server of a saved
    merged report (prefill, decode, router: `check` checks each; nodes of one server are one).
    ``server``: --server, the server every run of a log is."""
    from logphase.engine.engine import Engine
    from logphase.reading.clock import input_year_hint
    from logphase.reporting.merge import MergedReport

    handle, source = open_input(name)
    saved, head = read_head(handle, source)
    if saved is None:
        engine = Engine(source=source, since=since, collect_events=False, server=server, year=input_year_hint(name))
        feed_all(engine, handle, source, head=head)
        return [engine.report()]
    if since is not None:
        raise InputError(f"{source}: a saved report; --since applies to logs only")
    return [server.report for server in saved.servers] if isinstance(saved, MergedReport) else [saved]
