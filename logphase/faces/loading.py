"""A log or a saved ``parse --json`` report, told apart by content: the input of every command.

A report is one JSON object with a ``schema_version``; a log is anything else (a JSON-lines log
included: it is not one document). Logs are streamed through the engine, never held whole. A
merged report (``parse --merge --json``: ``servers`` and ``nodes``) is a saved report too: `parse`
prints it again, and where one report is needed (check, compare) it stands for its server.
"""

from __future__ import annotations

import io
import math
import os
import re
from collections.abc import Iterable
from datetime import datetime
from typing import TYPE_CHECKING, BinaryIO, TypeAlias

import orjson
from pydantic import BaseModel, ValidationError

from logphase.faces.wording import plural
from logphase.reporting.report import SCHEMA_VERSION, Report
from logphase.vocabulary.errors import LogphaseError
from logphase.vocabulary.phases import PHASE_ORDER

if TYPE_CHECKING:
    from logphase.reading.clock import YearHint
    from logphase.reporting.merge import MergedReport
    from logphase.vocabulary.servers import Server

# what a saved JSON document holds: one log's report, or the merged report of a deployment
Saved: TypeAlias = "Report | MergedReport"

# version 2 only added fields, all with defaults: a saved version-1 report reads as a version 2
READABLE_SCHEMAS = (1, SCHEMA_VERSION)


class NotAReport(LogphaseError, ValueError):
    """JSON that claims to be a report but is not a readable one: one line, for the user."""


# how a saved report starts: logphase writes schema_version first (indented or not)
_REPORT_START = re.compile(rb'\{\s*"schema_version"\s*:')
# a list of reports, as a script might save several: refused, in words that say so
_REPORT_LIST_START = re.compile(rb'\[\s*\{\s*"schema_version"\s*:')
# orjson's words for a document nested deeper than it reads, and how deep that is
_TOO_DEEP = "depth limit exceeded"
_MAX_DEPTH = 1024
# and for a document followed by more (JSON lines: `parse --json` of several logs)
_SEVERAL = ("unexpected content after document", "trailing characters")
# keys only a report has at its top (a JSON-lines log's objects have others: log, time, level, msg ...)
_REPORT_KEYS = frozenset(("schema_version", "outcome", "phases", "failure", "servers", "total_startup_s"))
# a saved report is small (kilobytes); a longer input that starts like one is read as a log
MAX_REPORT_BYTES = 64 << 20
# no value of a sane report comes near this (durations in seconds, memory in GB, counts)
ABSURD = 1e15
# a phase longer than this (a year) is no start-up a log recorded
MAX_DURATION_S = 366 * 86400.0


def looks_like_report(head: bytes) -> bool:
    """Whether the first bytes of an input start a saved report, judged from them alone (a log
    may be gigabytes, and JSON-lines logs such as docker's json-file start with "{" too): a JSON
    object whose first key is schema_version, a first line that is an object with a report's keys,
    or a JSON document over several lines (not one object per line) that names schema_version in
    its head. So does what only looks like one to be refused: a JSON list of reports, and JSON
    nested deeper than any parser reads (no log line is either)."""
    text = head.lstrip()
    if text[:1] not in (b"{", b"["):
        return False
    if _REPORT_START.match(text) or _REPORT_LIST_START.match(text):
        return True
    first_line = text.split(b"\n", 1)[0]
    try:
        first = orjson.loads(first_line)
    except orjson.JSONDecodeError as exc:
        if str(exc).startswith(_TOO_DEEP):
            return True
        return text[:1] == b"{" and b'"schema_version"' in text
    if isinstance(first, list):  # a line of a log starts "[" too ('[2026-05-12 ...]'): only a list of reports
        first = first[0] if first else None
    # a whole object on the first line: JSON lines (a log), unless its keys are a report's
    return isinstance(first, dict) and not _REPORT_KEYS.isdisjoint(first)


def report_from_json(data: bytes, source: str) -> Saved:
    """The saved report (one log's, or a merged one) in ``data``. NotAReport when it is not valid
    JSON (cut, NaN, Infinity, nested too deep), not a report (a list of them, a schema_version that
    is no version number), or holds values no log gives (negative or absurd durations, phases out
    of order)."""
    value = _json_object(data, source)
    version = value["schema_version"]
    # a version is a number: true is no 1, though Python's == says so
    if type(version) is not int or version not in READABLE_SCHEMAS:
        shown = orjson.dumps(version).decode()[:40]
        raise NotAReport(f"{source}: report schema_version {shown}, this logphase reads " + ", ".join(map(str, READABLE_SCHEMAS)))
    value["schema_version"] = SCHEMA_VERSION
    absurd = _absurd_number(value)
    if absurd is not None:
        raise NotAReport(f"{source}: not a valid logphase report: {absurd[0]}: {absurd[1]!r} is no value a log gives")
    model: type[BaseModel] = Report
    if "servers" in value and "nodes" in value:
        from logphase.reporting.merge import MergedReport

        model = MergedReport
    try:
        saved: Saved = model.model_validate(value)  # type: ignore[assignment]
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise NotAReport(f"{source}: not a valid logphase report: {where}: {first['msg']}") from None
    reports = [server.report for server in saved.servers] if not isinstance(saved, Report) else [saved]
    for report in reports:
        problem = _insane(report)
        if problem is not None:
            raise NotAReport(f"{source}: not a valid logphase report: {problem}")
    return saved


def _json_object(data: bytes, source: str) -> dict[str, object]:
    """The JSON object a saved report is, with its schema_version; NotAReport, in words that say
    what the input is instead, for anything else."""
    try:
        value = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        reason = str(exc).split(":")[0]
        if reason.startswith(_TOO_DEEP):
            raise NotAReport(f"{source}: JSON nested deeper than {_MAX_DEPTH} levels: no logphase report (nor log) is") from None
        if reason.startswith(_SEVERAL):
            raise NotAReport(
                f"{source}: more than one JSON document (parse --json of several logs writes one a line): "
                "give each saved report in a file of its own"
            ) from None
        raise NotAReport(f"{source}: a saved report that is not valid JSON ({reason})") from None
    if isinstance(value, list):
        raise NotAReport(
            f"{source}: a JSON list of {plural(len(value), 'value')}, not a logphase report: a saved report is one JSON object "
            "(parse --json of one log); give each in a file of its own"
        )
    if not isinstance(value, dict) or "schema_version" not in value:
        raise NotAReport(f"{source}: JSON, but not a logphase report (no schema_version)")
    return value


def _absurd_number(value: object, where: str = "") -> tuple[str, float] | None:
    """The first number in a JSON value that no report holds (its magnitude at 1e15 or more)."""
    if isinstance(value, dict):
        items: Iterable[tuple[str, object]] = ((f"{where}.{k}" if where else str(k), v) for k, v in value.items())
    elif isinstance(value, list):
        items = ((f"{where}.{i}", v) for i, v in enumerate(value))
    elif isinstance(value, int | float) and not isinstance(value, bool):
        return (where, value) if not math.isfinite(value) or abs(value) >= ABSURD else None
    else:
        return None
    for at, item in items:
        found = _absurd_number(item, at)
        if found is not None:
            return found
    return None


def _insane(report: Report) -> str | None:
    """What makes a report's times impossible: a negative or year-long duration, a time that is no
    time, a phase that ends before it starts, phases out of their order."""
    spans: list[tuple[str, str | None, str | None, float | None]] = []
    for p in report.phases:
        spans.append((f"phases.{p.name.value}", p.start, p.end, p.duration_s))
        spans.extend((f"phases.{p.name.value}.ranks.{r}", s.start, s.end, s.duration_s) for r, s in p.ranks.items())
    spans.extend((f"unaccounted.{i}", u.start, u.end, u.duration_s) for i, u in enumerate(report.unaccounted))
    spans.append(("total_startup_s", None, None, report.total_startup_s))
    for where, start, end, duration in spans:
        if duration is not None and not 0 <= duration <= MAX_DURATION_S:
            return f"{where}: a duration of {duration!r} s"
        for ts in (start, end):
            if ts is not None and not _is_time(ts):
                return f"{where}: {ts!r} is not a time"
        if start is not None and end is not None and _is_time(start) and _is_time(end) and end < start:
            return f"{where}: ends ({end}) before it starts ({start})"
    order = [PHASE_ORDER.index(p.name) for p in report.phases]
    if order != sorted(order) or len(set(order)) != len(order):
        return "phases: not in the order of start-up (" + ", ".join(p.name.value for p in report.phases) + ")"
    return None


def _is_time(ts: str) -> bool:
    try:
        datetime.fromisoformat(ts)
    except ValueError:
        return False
    return True


def saved_report(handle: BinaryIO, head: bytes, source: str) -> tuple[Saved | None, bytes]:
    """When ``head`` (the first block read from ``handle``) starts a JSON document, read the rest
    and return the saved report in it; otherwise (None, head) and the log goes to the engine. The
    second value is what was read from ``handle`` so far."""
    if not looks_like_report(head):
        return None, head
    data = head + handle.read(MAX_REPORT_BYTES)
    if len(data) > MAX_REPORT_BYTES:
        raise NotAReport(f"{source}: starts like a saved report but is over {MAX_REPORT_BYTES >> 20} MB: no report is")
    return report_from_json(data, source), data


def read_report(
    handle: BinaryIO,
    source: str,
    since: str | None = None,
    expect: dict[str, str] | None = None,
    server: Server | None = None,
    year: YearHint | None = None,
) -> Report:
    """The report on a log read from ``handle`` (streamed, in blocks), or the saved report it is.
    NotAReport for JSON that is not a readable report; OSError for a failed read. ``since`` and
    ``expect`` apply to logs only."""
    from logphase.engine.whole import BLOCK_SIZE, parse_stream

    report, head = saved_report(handle, handle.read(BLOCK_SIZE), source)
    if report is not None:
        if since is not None or expect:
            raise NotAReport(f"{source}: a saved report; --since and --expect apply to logs only")
        return one_report(report, source)
    return parse_stream(handle.read, source, expect, since, head=head, year=year, server=server)


def one_report(saved: Saved, source: str) -> Report:
    """The report that a saved document stands for where one is needed: a merged report's server
    (its nodes combined, as `parse --merge` shows it); one with several servers (prefill, decode,
    router) is refused, as there is no one startup to compare (`check` of one such file checks
    each server: faces/inputs.read_startups)."""
    if isinstance(saved, Report):
        return saved
    if len(saved.servers) == 1:
        return saved.servers[0].report
    roles = ", ".join(server.role for server in saved.servers)
    raise NotAReport(
        f"{source}: a merged report of {len(saved.servers)} servers ({roles}): this takes one startup "
        "(check alone checks each server), give the logs (or saved reports) of one server"
    )


def load(value: object, source: str | None = None) -> Report:
    """A report from a :class:`Report`, a path (str without a newline, or os.PathLike) to a log or
    a saved report, or the log itself as text or bytes (text must contain a newline)."""
    if isinstance(value, Report):
        return value
    if isinstance(value, bytes | bytearray):
        return read_report(io.BytesIO(bytes(value)), source or "<bytes>")
    if isinstance(value, str) and "\n" in value:
        return read_report(io.BytesIO(value.encode("utf-8", errors="surrogateescape")), source or "<text>")
    if isinstance(value, str | os.PathLike):
        path = os.fspath(value)
        with open(path, "rb") as handle:
            return read_report(handle, source or str(path))
    raise TypeError(f"expected a log path, log text, bytes or a Report, got {type(value).__name__}")
