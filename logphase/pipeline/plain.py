"""The bulk path's patterns: the lines that fill a served log, recognised a block at a time.

Composed from the grammars' terminals, so that they accept exactly what the line path does.
"""

from __future__ import annotations

import re
from functools import cache

from logphase.pipeline.grammars import terminal_pattern

# Lines longer than this never reach Lark: the field regexes are linear per field, but quadratic
# on a pathological line with many separators and no '='.
MAX_PARSE_CHARS = 4096


def _compile_plain_lines() -> tuple[re.Pattern[bytes], re.Pattern[bytes]]:
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
    scan for line starts. ``run``: one or more plain lines from a line start, each through its
    "\\n"."""

    def term(source: str, name: str, bound: int) -> bytes:
        # the grammar's terminal with each + bounded: a longer line takes the long way
        return terminal_pattern(source, name).replace("+", f"{{1,{bound}}}").encode()

    tags = rb"((?: (?:" + terminal_pattern("envelope", "RANK_TAG").encode() + rb"))*)"
    batch = term("sglang", "RUNTIME_BATCH", 20) + rb"[^\n]{0,3900}"
    access = (
        rb"INFO: {1,64}"
        + term("http", "CLIENT", 256)
        + rb' - "'
        + term("http", "METHOD", 16)
        + rb" "
        + term("http", "PATH", 2048)
        + rb" "
        + term("http", "PROTOCOL", 16)
        + rb'" \d{1,9}[^\n]{0,1024}'
    )
    # longest messages: batch 13 + 23 + 42 + 1 + 3900, access 5 + 64 + 256 + 4 + 16 + 1 + 2048 + 1 + 5 + 16 + 2 + 9 + 1024
    assert MAX_PARSE_CHARS >= 4037
    head = rb"\[(.{19})" + tags + rb"\] (?:" + access + rb"|" + batch + rb")"
    lines = re.compile(rb"\n(?:" + head + rb"(?=\n)|[^\n]*)")
    run = re.compile(rb"(?m)^(?:" + head.replace(b"(.{19})((?: ", b".{19}(?:(?: ", 1) + rb"\n)+")
    assert lines.groups == 2 and run.groups == 0
    return lines, run


PLAIN_LINES, PLAIN_RUN = _compile_plain_lines()
# the head of a plain line, as PLAIN_RUN repeats it (for the runs that mix in quiet lines)
_PLAIN_RUN_BODY = PLAIN_RUN.pattern.removeprefix(rb"(?m)^")
assert PLAIN_RUN.pattern != _PLAIN_RUN_BODY

# A quiet line's message is at most this long; a longer one takes the long way.
MAX_QUIET_CHARS = 8000


@cache
def bulk_runs() -> re.Pattern[bytes]:
    """Runs the bulk path takes from a line start: plain lines (group ``plain``, as PLAIN_RUN), or
    lines that may be no event at all: SGLang's (group ``quiet``: debug output such as ``[ts] Key
    ... already exists. Skipped.``) and others (group ``loose``: kernel libraries' chatter, tree
    dumps, indented output). A quiet line is ``[YYYY-MM-DD HH:MM:SS tags] message``; a loose line
    has no envelope at all (no wrapper, no torchrun or SGLang prefix: envelope.lark's own patterns)
    and is not blank. In both the message has no weak head nor a head's literal start
    (prefilter.py) at its start, no ``%`` (the progress-bar probe), at most MAX_QUIET_CHARS.
    Whether such a line is no event is then up to the pre-filter's literals, which the engine
    searches each run for. Valid for ASCII text only, as PLAIN_RUN is."""
    from logphase.pipeline.envelope import envelope_patterns
    from logphase.pipeline.prefilter import event_literals, head_leads

    # no weak head (which the literals miss) and, for speed, no head's literal start (an event
    # line, most likely: it is left to the line path, not found in the run and taken out of it)
    leads = [re.escape(lead) for lead in sorted(head_leads(), key=lambda x: (-len(x), x))]
    heads = rb"(?!" + "|".join([*leads, *(f"(?:{h})" for h in event_literals()[1])]).encode() + rb")"
    body = rb"[^%\n]{0," + str(MAX_QUIET_CHARS).encode() + rb"}\n"
    tags = rb"(?: (?:" + terminal_pattern("envelope", "RANK_TAG").encode() + rb"))*"
    quiet = rb"\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d" + tags + rb"\] " + heads + rb"[^\s%]" + body
    envelope = rb"(?!" + b"|".join(p.encode() for p in envelope_patterns()) + rb")"
    loose = envelope + heads + rb"(?=[^\n]*\S)" + body
    return re.compile(
        rb"(?m)^(?:(?P<plain>" + _PLAIN_RUN_BODY + rb")|(?P<quiet>(?:" + quiet + rb")+)|(?P<loose>(?:" + loose + rb")+))"
    )


@cache
def junk_line() -> re.Pattern[str]:
    """A physical line (decoded, without its ``\\n``) that is no event and changes nothing but the
    counts, whatever its bytes: binary data, random text, output no grammar knows. For
    ``fullmatch``. Each of its pieces between ``\\r`` (a logical line of its own) has no envelope
    and no weak head nor a head's literal start at its start (as quiet runs), a character that is
    not white space (it is not blank: ``\\S`` is what ``str.strip`` keeps), no
    ``%`` before a bar's meter (the progress-bar probe), no ``[`` before two digits or a digit and
    a colon (a glued SGLang prefix, a bar's clock), no ANSI escape sequence, at most MAX_QUIET_CHARS
    characters (never overlong). Whether a piece holds a literal of an event is the pre-filter's
    question, as for quiet runs. A str pattern: the envelope and the heads are matched on the text
    as the line path decodes it (``\\d``, ``\\w``, ``\\s`` of str)."""
    from logphase.pipeline.envelope import envelope_patterns
    from logphase.pipeline.prefilter import event_literals, first_chars, head_leads

    leads = [re.escape(lead) for lead in sorted(head_leads(), key=lambda x: (-len(x), x))]
    starts = "|".join([*(f"(?:{p})" for p in envelope_patterns()), *leads, *(f"(?:{h})" for h in event_literals()[1])])
    # what they can start with, tried first: most pieces of binary data start with none of it
    first = first_chars(starts)
    guard = f"(?=[{first}])" if first else ""
    meter = terminal_pattern("tqdm", "BAR_METER")
    # the loop unrolled: runs of ordinary characters are one repeat (a group per character costs ~10x)
    plain = r"[^%\[\x1b\r]*"
    # an escape that lines._ANSI would not remove (with ``[^\x07]`` across pieces: stricter)
    escape = r"\x1b(?!\[[0-9;?]*[A-Za-z]|\][^\x07]*\x07)"
    odd = rf"(?:%(?!{meter})|\[(?!\d[\d:])|{escape})"
    bounded = r"(?=[^\r]{1," + str(MAX_QUIET_CHARS) + r"}(?:\r|\Z))"
    piece = f"(?!{guard}(?:{starts}))" + bounded + r"(?=[^\r]*?\S)" + plain + f"(?:{odd}{plain})*" + r"(?=\r|\Z)"
    return re.compile(r"\r*(?:" + piece + r"\r*)+")
