"""The patterns of plain lines, the lines that fill a served log (batch statistics, access lines),
recognised a block at a time by the bulk path (bulk.py).

Composed from the grammars' terminals, so that they accept exactly what the line path does. A leaf:
it imports the grammars only, so that classify can share MAX_PARSE_CHARS with it.
"""

from __future__ import annotations

import re

from logphase.packs import PACKS, kept_regex
from logphase.packs.grammars import terminal_pattern

# Lines longer than this never reach Lark: the field regexes are linear per field, but quadratic
# on a pathological line with many separators and no '='.
MAX_PARSE_CHARS = 4096


def _compile_plain_lines() -> tuple[re.Pattern[bytes], re.Pattern[bytes], bytes]:
    """Physical lines whose events only move the clock once the server is ready:
    ``[ts TP0] Decode batch, ...``, ``[ts TP0] Prefill batch, ...`` and uvicorn access lines.

    A plain line is one that classify() turns into ``RuntimeBatch`` / ``HttpAccess`` through its
    fast paths: its message is what the grammars' RUNTIME_BATCH / access terminals accept, and it
    is no longer than MAX_PARSE_CHARS (every part is bounded). Its timestamp is any 19 bytes here
    (checking it digit by digit costs the regex a third more), so the engine checks the shape of
    all of them at once: ``YYYY-MM-DD HH:MM:SS``, what envelope.lark's TIMESTAMP accepts without
    fractions. Valid for ASCII text without ``\\r``, ``\\x1b`` and ``\\x1c``-``\\x1f`` only (str
    ``\\s`` has those, bytes ``\\s`` not), which lines.LineSplitter checks. The engine adds the
    conditions that depend on state (before ready these lines are phase evidence; NCCL text, open
    tracebacks).

    Returns two patterns. ``lines``: for ``findall`` over "\\n" + a block of whole lines; one
    match for every "\\n", groups (timestamp, rank tags) of the line after it if that line is
    plain, else empty (the phase machine keeps a clock per writer). Each match starts at a
    "\\n" (a literal: the regex engine jumps to it) and stops before the next, so there is no
    scan for line starts. ``run``: one or more plain lines (``lines_run``). And the pattern of one
    plain line, without groups."""

    def term(source: str, name: str, bound: int) -> bytes:
        # the grammar's terminal with each + bounded: a longer line takes the long way
        return terminal_pattern(source, name).replace("+", f"{{1,{bound}}}").encode()

    tags = rb"((?: (?:" + terminal_pattern("envelope", "RANK_TAG").encode() + rb"))*)"
    # the stamped prefix's server's batch statistics (none: no batch line is plain)
    batch_lines = next((pack.batch_lines for pack in PACKS if pack.batch_lines is not None), None)
    batch = term(batch_lines.grammar, batch_lines.head, 20) + rb"[^\n]{0,3900}" if batch_lines is not None else rb"(?!)"
    access = (
        rb"(?:" + term("http", "UVICORN_LEVEL", 0) + rb") {1,64}"
        + term("http", "CLIENT", 256)
        + rb' - "'
        + term("http", "METHOD", 16)
        + rb" "
        + term("http", "PATH", 2048)
        + rb" "
        + term("http", "PROTOCOL", 16)
        + rb'" \d{1,9}[^\n]{0,1024}'
    )
    # longest messages: batch 13 + 23 + 42 + 1 + 3900, access 9 + 64 + 256 + 4 + 16 + 1 + 2048 + 1 + 5 + 16 + 2 + 9 + 1024
    assert MAX_PARSE_CHARS >= 4041
    head = rb"\[(.{19})" + tags + rb"\] (?:" + access + rb"|" + batch + rb")"
    lines = kept_regex.compile(rb"\n(?:" + head + rb"(?=\n)|[^\n]*)")
    line = head.replace(b"(.{19})((?: ", b".{19}(?:(?: ", 1)
    run = kept_regex.compile(lines_run(line))
    assert lines.groups == 2 and run.groups == 0
    return lines, run, line


def lines_run(line: bytes) -> bytes:
    """A run of lines that each match ``line`` (a pattern of one line without its "\\n"), found in
    "\\n" + whole lines: the match starts at the "\\n" before the first line and ends before the
    "\\n" after the last (left for the next run to start with). Starting at a literal "\\n" lets
    the regex engine jump from line to line while it searches; ``(?m)^`` made it try every
    character of the lines between runs (3x slower on long lines)."""
    return rb"\n" + repeated(line) + rb"(?=\n)"


def repeated(line: bytes) -> bytes:
    """One or more lines that each match ``line``, "\\n" between them (see ``lines_run``)."""
    return rb"(?:" + line + rb")(?:\n(?:" + line + rb"))*"


PLAIN_LINES, PLAIN_RUN, PLAIN_LINE = _compile_plain_lines()
