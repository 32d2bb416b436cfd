"""A log or a saved ``parse --json`` report, told apart by content: the input of every command.

A report is one JSON object with a ``schema_version``; a log is anything else (a JSON-lines log
included: it is not one document). Logs are streamed through the engine, never held whole. A
merged report (``parse --merge --json``: ``servers`` and ``nodes``) is a saved report too: `parse`
prints it again, and where one report is needed (check, compare) it stands for its server.
"""

from __future__ import annotations

import io
import os
from typing import TYPE_CHECKING, BinaryIO, TypeAlias

import orjson
from pydantic import BaseModel, ValidationError

from logphase.pipeline.report import SCHEMA_VERSION, Report

if TYPE_CHECKING:
    from logphase.pipeline.merge import MergedReport

# what a saved JSON document holds: one log's report, or the merged report of a deployment
Saved: TypeAlias = "Report | MergedReport"

# version 2 only added fields, all with defaults: a saved version-1 report reads as a version 2
READABLE_SCHEMAS = (1, SCHEMA_VERSION)


class NotAReport(ValueError):
    """JSON that claims to be a report but is not a readable one: one line, for the user."""


def looks_like_report(head: bytes) -> bool:
    return head.lstrip()[:1] == b"{"


def report_from_json(data: bytes, source: str) -> Saved | None:
    """The saved report in ``data``; None when it is not one JSON document (a JSON-lines log, say)."""
    try:
        value = orjson.loads(data)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(value, dict) or "schema_version" not in value:
        raise NotAReport(f"{source}: JSON, but not a logphase report (no schema_version)")
    if value["schema_version"] not in READABLE_SCHEMAS:
        raise NotAReport(
            f"{source}: report schema_version {value['schema_version']!r}, this logphase reads "
            + ", ".join(map(str, READABLE_SCHEMAS))
        )
    value["schema_version"] = SCHEMA_VERSION
    model: type[BaseModel] = Report
    if "servers" in value and "nodes" in value:
        from logphase.pipeline.merge import MergedReport

        model = MergedReport
    try:
        return model.model_validate(value)  # type: ignore[return-value]
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise NotAReport(f"{source}: not a valid logphase report: {where}: {first['msg']}") from None


def saved_report(handle: BinaryIO, head: bytes, source: str) -> tuple[Saved | None, bytes]:
    """When ``head`` (the first block read from ``handle``) starts a JSON document, read the rest
    and return the saved report in it; otherwise (None, head) and the log goes to the engine. The
    second value is what was read from ``handle`` so far."""
    if not looks_like_report(head):
        return None, head
    data = head + handle.read()
    return report_from_json(data, source), data


def read_report(handle: BinaryIO, source: str, since: str | None = None, expect: dict[str, str] | None = None) -> Report:
    """The report on a log read from ``handle`` (streamed, in blocks), or the saved report it is.
    NotAReport for JSON that is not a readable report; OSError for a failed read. ``since`` and
    ``expect`` apply to logs only."""
    from logphase.pipeline.engine import BLOCK_SIZE, Engine

    first = handle.read(BLOCK_SIZE)
    report, head = saved_report(handle, first, source)
    if report is not None:
        if since is not None or expect:
            raise NotAReport(f"{source}: a saved report; --since and --expect apply to logs only")
        return one_report(report, source)
    engine = Engine(source=source, since=since, collect_events=False)
    engine.feed(head)
    if head is first:  # else saved_report read the whole input already
        while block := handle.read(BLOCK_SIZE):
            engine.feed(block)
    engine.finish()
    return engine.report(expect)


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
