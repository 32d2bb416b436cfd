"""The bulk path: runs of lines read a block at a time, without building their events (from stage 1,
the lines, straight to stage 5, the phase machine, for the lines whose events would only be counted).

Used by ``Engine(collect_events=False)`` (``logphase parse`` without --events). The splitter hands
over runs (lines.Run) of lines matched by this module's patterns; :class:`BulkReader` reads a run
against the engine's state (a :class:`BulkTarget`) and gives back, in line order,

* plain lines (batch statistics, access lines once ready): ``BulkTarget.served``, which counts
  them as events and moves the clock, and says how many it took;
* quiet lines (no event at all): ``BulkTarget.quiet``, a :class:`QuietLines` to count as
  unrecognized, with the times that move the clock;
* every other line: ``BulkTarget.long_way``, for the engine's line path.

The report is the one the line path gives for every line: tests/test_fast_path.py compares them.
Which lines may be no event is the pre-filter's question (prefilter.py); this module wires it to
the grammars' heads and record openers.
"""

from __future__ import annotations

import re
from functools import cache, partial
from typing import NamedTuple, Protocol

from logphase.packs import kept_regex
from logphase.packs.derived import cached, digest
from logphase.packs.grammars import terminal_pattern
from logphase.reading.envelope import envelope_patterns, plain_minutes_valid, valid_plain_stamp
from logphase.reading.lines import LineRun, LineSplitter, LogicalLine, RunPatterns, count_pieces, pieces_of
from logphase.recognising.classify import BAR_LITERAL, all_heads
from logphase.recognising.notes import note_hits
from logphase.recognising.overrides import override_hits
from logphase.recognising.plain import PLAIN_LINE, PLAIN_LINES, PLAIN_RUN, repeated
from logphase.recognising.prefilter import (
    MIN_LITERAL,
    LiteralFinder,
    first_chars,
    hyperscan_wanted,
    leading_literals,
    literal_factors,
    prefix_alternation,
)
from logphase.recognising.records import OPENER_TERMINALS, OPENERS

# bytes read before the bulk path looks for quiet runs too
QUIET_RUNS_AFTER = 1 << 20
# A quiet line's message is at most this long; a longer one takes the long way.
MAX_QUIET_CHARS = 8000

PLAIN = RunPatterns(PLAIN_LINES, PLAIN_RUN)
# each quiet line's timestamp (bulk_runs checked its shape), in b"\n" + whole lines: a literal "\n"
# first lets the engine jump from line to line, where (?m)^ tried every character (5x slower)
_QUIET_STAMP = re.compile(rb"\n\[(.{19})")
_DIGITS_TO_0 = bytes.maketrans(b"123456789", b"000000000")
_STAMP_SHAPE = b"0000-00-00 00:00:00"  # what PLAIN_LINE's 19-byte timestamps must look like


def _traceback_header() -> bytes:
    """The literal of a traceback header (traceback.lark's TRACEBACK): inside a run of plain lines
    it sends the run the long way."""
    found = literal_factors(terminal_pattern("traceback", "TRACEBACK"))
    assert found is not None and len(found) == 1, "TRACEBACK has one literal"
    return next(iter(found)).encode()


_TRACEBACK_BYTES = _traceback_header()


# -- the pre-filter's wiring: which literals every event line holds ----------------------------------


@cache
def head_leads() -> frozenset[str]:
    """What the dispatch heads start with, where that is literal: a line whose message starts so is
    most likely an event, and is kept out of quiet runs rather than found in them and taken out
    one by one. Kept on disk (derived.py) by the heads' text: reading them costs what compiling does."""
    heads = all_heads()
    return cached("bulk-head-leads", digest(heads), lambda: sorted(_head_leads(heads)), _strings)


def _head_leads(heads: list[str]) -> frozenset[str]:
    leads: set[str] = set()
    for head in heads:
        leads |= leading_literals(head) or set()
    return frozenset(lead for lead in leads if len(lead) >= MIN_LITERAL)


def _strings(data: object) -> frozenset[str]:
    if not isinstance(data, list) or not all(isinstance(s, str) for s in data):
        raise TypeError("not a list of strings")
    return frozenset(data)


@cache
def event_literals() -> tuple[frozenset[str], tuple[str, ...]]:
    """(the literals some event line must contain, the weak heads checked at a line's start),
    from the dispatch heads, the SGLang heads searched anywhere and the record openers. Kept on
    disk (derived.py) by the text of the patterns they are read from."""
    openers = [terminal_pattern("traceback", name) for name in OPENER_TERMINALS]
    key = digest([*all_heads(), "", *openers, "", OPENERS.pattern, "", BAR_LITERAL])

    def load(data: object) -> tuple[frozenset[str], tuple[str, ...]]:
        if not isinstance(data, list) or len(data) != 2:
            raise TypeError("event literals: not a pair")
        _strings(data[1])  # checked: the weak heads stay a list, in their order
        return _strings(data[0]), tuple(data[1])

    def build() -> list[list[str]]:
        literals, weak = _event_literals()
        return [sorted(literals), list(weak)]

    return cached("bulk-event-literals", key, build, load)


def _event_literals() -> tuple[frozenset[str], tuple[str, ...]]:
    literals: set[str] = {BAR_LITERAL}  # a progress bar (its meter), which no head finds
    weak: list[str] = []
    for head in all_heads():
        found = literal_factors(head)
        if found is None:
            weak.append(head)
        else:
            literals |= found
    for name in OPENER_TERMINALS:
        found = literal_factors(terminal_pattern("traceback", name))
        assert found is not None, f"record opener {name} has no literal to search for"
        literals |= found
    # what opens a record from a line without SGLang's prefix too (a frame, an exception line)
    found = literal_factors(OPENERS.pattern)
    assert found is not None, "the record openers have no literals to search for"
    literals |= found
    return frozenset(literals), tuple(weak)


@cache
def event_finder() -> LiteralFinder:
    return LiteralFinder(event_literals()[0], use_hyperscan=hyperscan_wanted(), name="events")


def _head_starts() -> list[str]:
    """No weak head (which the literals miss) and, for speed, no head's literal start (an event
    line, most likely: it is left to the line path, not found in the run and taken out of it)."""
    return [prefix_alternation(head_leads()), *(f"(?:{h})" for h in event_literals()[1])]


@cache
def bulk_runs(strict: bool = False) -> re.Pattern[bytes]:
    """Runs the bulk path takes (as plain.lines_run finds them): plain lines (group ``plain``), or
    lines that may be no event at all: SGLang's (group ``quiet``: debug output such as ``[ts] Key
    ... already exists. Skipped.``) and others (group ``loose``: kernel libraries' chatter, tree
    dumps, indented output). A quiet line is ``[YYYY-MM-DD HH:MM:SS tags] message``; a loose line
    has no envelope at all (no wrapper, no torchrun or SGLang prefix: envelope.lark's own patterns)
    and is not blank. In both the message has no weak head nor a head's literal start
    (prefilter.py) at its start, at most MAX_QUIET_CHARS. Whether such a line is no event is then
    up to the pre-filter's literals, which the reader searches each run for (a bar's '%' is one).
    Valid for ASCII text only, as PLAIN_RUN is.

    ``strict``: no line holds a byte the line splitter treats specially (\\r, \\x1b, \\x1c-\\x1f);
    searched where the default pattern found a quiet or loose run holding one, so that such a line
    (a bar's redraw) sends only itself the long way, not its whole run."""
    heads = rb"(?!" + "|".join(_head_starts()).encode() + rb")"
    # any character but "\n": the engine scans it ~2x faster than a class; a line with a '%' (a
    # bar's meter) may be in a run, as the pre-filter's literals send it the long way
    char = rb"[^\n\r\x1b\x1c-\x1f]" if strict else rb"."
    body = char + rb"{0," + str(MAX_QUIET_CHARS).encode() + rb"}"
    tags = rb"(?: (?:" + terminal_pattern("envelope", "RANK_TAG").encode() + rb"))*"
    quiet = rb"\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d" + tags + rb"\] " + heads + rb"[^\s%]" + body
    envelope = rb"(?!" + b"|".join(p.encode() for p in envelope_patterns()) + rb")"
    loose = envelope + heads + rb"(?=[^\n]*\S)" + body
    # one "\n" in front of all three: the engine's search jumps to it (plain.lines_run); (?m): the
    # envelope's "$" (Ray's prefix at a line's end) is a line's end here too
    return kept_regex.compile(
        rb"(?m)\n(?:(?P<plain>" + repeated(PLAIN_LINE) + rb")|(?P<quiet>" + repeated(quiet) + rb")|(?P<loose>"
        + repeated(loose) + rb"))(?=\n)"
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
    starts = "|".join([*(f"(?:{p})" for p in envelope_patterns()), *_head_starts()])
    # what they can start with, tried first: most pieces of binary data start with none of it
    first = cached("junk-first-chars", digest([starts]), lambda: first_chars(starts), _optional_string)
    guard = f"(?=[{first}])" if first else ""
    meter = terminal_pattern("tqdm", "BAR_METER")
    # the loop unrolled: runs of ordinary characters are one repeat (a group per character costs ~10x)
    plain = r"[^%\[\x1b\r]*"
    # an escape that lines._ANSI would not remove (with ``[^\x07]`` across pieces: stricter)
    escape = r"\x1b(?!\[[0-9;?]*[A-Za-z]|\][^\x07]*\x07)"
    odd = rf"(?:%(?!{meter})|\[(?!\d[\d:])|{escape})"
    bounded = r"(?=[^\r]{1," + str(MAX_QUIET_CHARS) + r"}(?:\r|\Z))"
    piece = f"(?!{guard}(?:{starts}))" + bounded + r"(?=[^\r]*?\S)" + plain + f"(?:{odd}{plain})*" + r"(?=\r|\Z)"
    return kept_regex.compile(r"\r*(?:" + piece + r"\r*)+")


def _optional_string(data: object) -> str | None:
    if data is not None and not isinstance(data, str):
        raise TypeError("not a string")
    return data


@cache
def bulk_patterns() -> RunPatterns:
    """Plain and quiet runs, junk lines: built on the first long read, not at import."""
    return RunPatterns(PLAIN_LINES, bulk_runs(), junk_line, partial(bulk_runs, True))


# -- the interface ---------------------------------------------------------------------------------


class QuietLines(NamedTuple):
    """Consecutive lines that are no event, counted in bulk."""

    lines: int  # physical lines
    logical: int  # logical lines they make (a junk line's pieces between \r count each)
    last_line: int  # number of the last one
    # SGLang's stamps among them, b"YYYY-MM-DD HH:MM:SS" (the first line's, the last line's, the
    # latest); None for lines with no envelope (no time, no writer: nothing else moves)
    first: bytes | None = None
    last: bytes | None = None
    high: bytes | None = None


class BulkTarget(Protocol):
    """What the bulk path asks of the engine's state, and where it hands what it read."""

    def gate_open(self) -> bool:
        """Whether ``--since`` has been reached (before it, every line is read to find it)."""

    def ready(self) -> bool:
        """Whether the current run is ready (before it, plain lines are phase evidence)."""

    def takes_plain_lines(self) -> bool:
        """Whether a plain line now is only counted (no open record that it would close)."""

    def quiet_clean(self) -> bool:
        """Whether a line with no event would change nothing but counts and the clock."""

    def sample_room(self) -> int:
        """How many more unrecognized lines the sample keeps (each is read the long way)."""

    def notes_wanted(self) -> bool:
        """Whether lines no grammar reads may be start-up notes now (recognising/notes.py: until ready)."""

    def served(self, stamps: list[tuple[bytes, bytes]], first_line: int) -> int:
        """Plain lines from ``first_line`` on, each one's (timestamp, rank tags): count and clock
        the ones the phase machine takes in bulk; returns how many that was (from the first)."""

    def quiet(self, lines: QuietLines) -> None:
        """Lines that are no event: count them, move the clock."""

    def long_way(self, line: LogicalLine) -> None:
        """A line that needs the line path."""


class BulkReader:
    """Reads a block's runs for one engine: chooses the patterns (quiet runs on long or binary
    input only), and reads each run against the engine's state."""

    def __init__(self) -> None:
        self._quiet_runs = False  # whether quiet runs are looked for (QUIET_RUNS_AFTER)

    def split(self, splitter: LineSplitter, data: bytes) -> list[LogicalLine | LineRun]:
        """The block's lines and runs."""
        # quiet runs pay for themselves on long logs only: their patterns take ~40 ms to build; and
        # at once on bytes that are not text (binary data read line by line costs ~100 us a line)
        if not self._quiet_runs and (splitter.bytes_seen + len(data) > QUIET_RUNS_AFTER or _not_text(data)):
            self._quiet_runs = True
        return splitter.feed_runs(data, bulk_patterns() if self._quiet_runs else PLAIN)

    def read(self, run: LineRun, target: BulkTarget) -> None:
        """One run: its lines go to ``target`` in order, counted in bulk or the long way."""
        if run.quiet:
            _QuietRun(run, target).read()
        elif _plain_run_in_bulk(run, target):
            _read_plain(run, target)
        else:
            # rare: another time format, a traceback or NCCL text inside, --since not reached yet
            _long_way(run.data, run.lineno, run.offset, 1, target)


# -- runs of plain lines ---------------------------------------------------------------------------


def _plain_run_in_bulk(run: LineRun, target: BulkTarget) -> bool:
    """Whether a plain run can be counted: every stamp has SGLang's shape and valid minutes, no
    traceback header or NCCL text hides inside, and --since is reached."""
    data, joined = run.data, run.joined
    return (
        target.gate_open()
        and joined.translate(_DIGITS_TO_0) == _STAMP_SHAPE * run.size
        and plain_minutes_valid(joined)
        and _TRACEBACK_BYTES not in data
        # no "L", no "NCCL": a one-byte search is many times faster than a four-byte one
        and not (b"L" in data and b"NCCL" in data)
    )


def _read_plain(run: LineRun, target: BulkTarget) -> None:
    """Plain lines, served in bulk while the machine takes them; the line where it stops (a clock
    jump starts a new run, a traceback closes) goes the long way, and the rest from there on too
    when the run is not ready (before ready these lines are evidence)."""
    data, lineno, offset, n, stamps = run.data, run.lineno, run.offset, run.size, run.stamps
    i = 0
    line_i, pos = 0, 1  # data[pos:] starts with line number line_i of the run
    while i < n:
        if not target.ready():
            pos, line_i = _skip_lines(data, pos, line_i, i)
            _long_way(data, lineno + i, offset + pos - 1, pos, target)
            return
        if target.takes_plain_lines():
            i += target.served(stamps[i:] if i else stamps, lineno + i)
        if i < n:
            pos, line_i = _skip_lines(data, pos, line_i, i)
            end = data.index(b"\n", pos)
            target.long_way(LogicalLine(lineno + i, offset + pos - 1, data[pos:end].decode("ascii")))
            pos, line_i = end + 1, i + 1
            i += 1


def _skip_lines(data: bytes, pos: int, line_i: int, to: int) -> tuple[int, int]:
    """From line ``line_i`` at ``pos`` to the start of line ``to``."""
    while line_i < to:
        pos = data.index(b"\n", pos) + 1
        line_i += 1
    return pos, line_i


# -- runs of quiet lines ---------------------------------------------------------------------------


class _QuietRun:
    """Lines that may be no event: the lines that hold none of the pre-filter's literals are
    unrecognized, counted in bulk, moving the clock as each would; the others take the long way,
    and so does every line while state needs each one (--since not reached, an open record, a
    warning's source lines, --unrecognized), and the first ones (the unrecognized sample). Until
    the run is ready, so do the lines that may be a start-up note (recognising/notes.py) or a setting
    the server changed (recognising/overrides.py)."""

    def __init__(self, run: LineRun, target: BulkTarget) -> None:
        self.run, self.target = run, target

    def read(self) -> None:
        run, target, data = self.run, self.target, self.run.data
        hits = event_finder().line_hits(data)
        with_notes = False
        h = 0
        pos, line_i = 1, 0  # data[pos:] is the run's line line_i
        while pos < len(data):
            if not with_notes and target.notes_wanted():
                # until ready, a line that may be a start-up note takes the long way too (by its first
                # word); again when a new run began at a line of the block taken the long way
                hits, h, with_notes = sorted(hits + note_hits(data) + override_hits(data)), 0, True
            if not target.quiet_clean():
                end = data.index(b"\n", pos)
                _long_way_line(data[pos:end], run.lineno + line_i, run.offset + pos - 1, run.segmented, target)
                pos, line_i = end + 1, line_i + 1
                continue
            while h < len(hits) and hits[h] - 1 < pos:
                h += 1  # a literal on a line already read
            if h == len(hits):
                self._lines(data[pos - 1 :], run.lineno + line_i, run.offset + pos - 1)
                return
            start = data.rfind(b"\n", 0, hits[h] - 1) + 1
            line_i += self._lines(data[pos - 1 : start], run.lineno + line_i, run.offset + pos - 1)
            end = data.index(b"\n", hits[h] - 1)
            _long_way_line(data[start:end], run.lineno + line_i, run.offset + start - 1, run.segmented, target)
            pos, line_i = end + 1, line_i + 1

    def _lines(self, data: bytes, lineno: int, offset: int) -> int:
        """``data`` (b"\\n" and whole lines of the run) holds unrecognized lines: the first ones
        the long way (the sample), the rest counted. Returns how many lines it had."""
        n = data.count(b"\n") - 1
        if n <= 0:
            return 0
        room = self.target.sample_room()
        if room <= 0:
            self._count(data, lineno, offset, n)
            return n
        # the sample is taken line by line (each line the long way, as it would be)
        cut = 0
        for _ in range(min(room, n)):
            cut = data.index(b"\n", cut + 1)
        _long_way(data[: cut + 1], lineno, offset, 1, self.target, self.run.segmented)
        if room >= n:
            return n
        return room + self._lines(data[cut:], lineno + room, offset + cut)

    def _count(self, data: bytes, lineno: int, offset: int, n: int) -> None:
        run, target = self.run, self.target
        logical = count_pieces(data) if run.segmented else n
        if run.unstamped:
            target.quiet(QuietLines(n, logical, lineno + n - 1))
            return
        stamps = _QUIET_STAMP.findall(data)
        low, high = min(stamps), max(stamps)
        one_date = low[:10] == high[:10] and valid_plain_stamp(low) and valid_plain_stamp(high)
        if not (one_date and plain_minutes_valid(b"".join(stamps))):
            # a stamp that makes no time among them (or a change of date): each line the long way
            _long_way(data, lineno, offset, 1, target, run.segmented)
            return
        target.quiet(QuietLines(n, logical, lineno + n - 1, stamps[0], stamps[-1], high))


# -- the long way ----------------------------------------------------------------------------------


def _long_way(data: bytes, lineno: int, offset: int, pos: int, target: BulkTarget, segmented: bool = False) -> None:
    """The lines of a run from ``data[pos:]`` on (``lineno`` at ``offset``), one by one."""
    for i, raw in enumerate(data[pos:-1].split(b"\n")):
        _long_way_line(raw, lineno + i, offset, segmented, target)
        offset += len(raw) + 1


def _long_way_line(raw: bytes, lineno: int, offset: int, segmented: bool, target: BulkTarget) -> None:
    """One line of a run (without its \\n): a junk line's pieces each on its own."""
    if not segmented:
        target.long_way(LogicalLine(lineno, offset, raw.decode("ascii")))
        return
    for piece in pieces_of(raw, lineno, offset):
        target.long_way(piece)


def _not_text(data: bytes) -> bool:
    """NUL bytes or invalid UTF-8: binary data (a block cut inside a character counts too, harmlessly)."""
    if data.isascii():
        return b"\x00" in data
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return True
    return False


__all__ = [
    "PLAIN",
    "QUIET_RUNS_AFTER",
    "BulkReader",
    "BulkTarget",
    "QuietLines",
    "bulk_patterns",
    "bulk_runs",
    "event_finder",
    "event_literals",
    "head_leads",
    "junk_line",
]
