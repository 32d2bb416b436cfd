"""Readers of a whole input, every face's way in: a log held in memory, a stream read in blocks with
constant memory, a file by name. Each is the engine fed block by block, then finished."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping

from logphase.engine.engine import Engine
from logphase.reading.clock import YearHint, file_time_hint
from logphase.reporting.report import Report
from logphase.vocabulary import events as ev
from logphase.vocabulary.servers import Server


def parse_bytes(
    data: bytes,
    source: str = "<bytes>",
    expect: Mapping[str, object] | None = None,
    since: str | None = None,
    server: Server | None = None,
) -> Report:
    """The report on a whole log held in memory (its last run). See :class:`Engine` for the options
    (``server``: the server every run is, whatever its lines show)."""
    return parse_stream(_nothing_more, source, expect, since, head=data, server=server)


def _nothing_more(_size: int) -> bytes:
    return b""


def parse_text(
    text: str,
    source: str = "<text>",
    expect: Mapping[str, object] | None = None,
    since: str | None = None,
    server: Server | None = None,
) -> Report:
    """The report on a whole log given as text."""
    return parse_bytes(text.encode("utf-8", errors="surrogateescape"), source, expect, since, server)


# 1 MiB reads. Measured on the 100 MB reference log (bench/): the bulk path is as fast with 1 MiB
# as with 2 or 4 MiB and a third slower with 8 MiB (cache misses, page faults), and readers that
# collect events hold one block's worth of them (~180 MB at 4 MiB, ~60 MB at 1 MiB).
BLOCK_SIZE = 1 << 20


def read_all(
    engine: Engine,
    read: Callable[[int], bytes],
    head: bytes = b"",
    on_events: Callable[[list[ev.EventBase]], None] | None = None,
) -> Engine:
    """The read-feed loop of every reader of a whole input: ``head`` (already read from it) first,
    then ``read(BLOCK_SIZE)`` until it gives b"", each block fed to the engine; then ``finish``.
    ``on_events`` gets the events of each feed (none unless the engine collects them). Errors of
    ``read`` propagate as they are. Returns the engine, finished."""
    block = head
    while True:
        if block:
            events = engine.feed(block)
            if on_events is not None:
                on_events(events)
        block = read(BLOCK_SIZE)
        if not block:
            break
    events = engine.finish()
    if on_events is not None:
        on_events(events)
    return engine


def parse_stream(
    read: Callable[[int], bytes],
    source: str,
    expect: Mapping[str, object] | None = None,
    since: str | None = None,
    head: bytes = b"",
    year: YearHint | None = None,
    server: Server | None = None,
) -> Report:
    """The report on a log read through ``read`` (``head`` already read from it), in blocks with
    constant memory: its last run. ``year``: where year-less stamps take their year, ``server``: the
    server every run is (--server) (``Engine``)."""
    engine = Engine(source=source, since=since, collect_events=False, year=year, server=server)
    return read_all(engine, read, head).report(expect)


def parse_file(
    path: str | os.PathLike[str],
    expect: Mapping[str, object] | None = None,
    since: str | None = None,
    server: Server | None = None,
) -> Report:
    """The report on a log file (its last run), read in 1 MiB blocks with constant memory.

    ``expect`` maps server_args keys to what you launched with, e.g. ``{"mem_fraction_static": 0.88}``;
    ``since`` ignores output stamped before that time; ``server`` says which server wrote it (every
    run is that server's, whatever its lines show). OSError if the file cannot be read."""
    name = os.fspath(path)
    with open(name, "rb") as handle:
        return parse_stream(handle.read, name, expect, since, year=file_time_hint(name), server=server)
