"""Bytes in any chunking -> logical lines.

A logical line is what one writer meant as one line. Physical lines are split on ``\\n``, ``\\r\\n``
and bare ``\\r`` (tqdm redraws); a timestamp prefix found in the middle of a line starts a new
logical line (two ranks glued together by unbuffered writes). ANSI colour codes are removed and
invalid UTF-8 is replaced and counted. Line numbers count ``\\n`` only, as ``grep -n`` does, so
segments split off by ``\\r`` or by a glued prefix share the number of their physical line.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from operator import itemgetter
from typing import NamedTuple, cast

from logphase.packs import kept_regex
from logphase.packs.grammars import terminal_pattern
from logphase.reading.envelope import wrappers_end

# Longest line handed to the later stages. Real SGLang lines reach ~250 kB (request dumps), so
# this is about cost, not correctness: nothing downstream needs more than the head of a line.
MAX_LINE_BYTES = 64 * 1024

_ANSI = re.compile(rb"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07")


def _glued_prefix_pattern() -> re.Pattern[bytes]:
    """Where another writer's SGLang line starts in the middle of a line: a dated stamp, or a
    time of day with a rank tag (a bare "[12:00:00]" inside a message is too common to split at).
    The syntax comes from grammars/shared/envelope.lark so that there is one definition of it."""
    dated = terminal_pattern("envelope", "TIMESTAMP")
    clock = terminal_pattern("envelope", "CLOCK_TIME")
    tag = terminal_pattern("envelope", "RANK_TAG")
    return kept_regex.compile(rb"\[(?:" + dated.encode() + rb"[ \]]|" + clock.encode() + rb" (?:" + tag.encode() + rb"))")


def _bar_end_pattern() -> re.Pattern[bytes]:
    """Where a progress bar's meter ends ('... 3/12 [00:01<00:02,  3.6it/s]') and another writer's
    text follows without a line break: a bar is redrawn without a newline, so whatever another
    process writes next lands on the same line. From grammars/shared/tqdm.lark's clock terminals."""
    elapsed = terminal_pattern("tqdm", "ELAPSED")
    remaining = terminal_pattern("tqdm", "REMAINING")
    clock = rb"\[(?:" + elapsed.encode() + rb")<(?:" + remaining.encode() + rb")"
    return kept_regex.compile(rb"\| *\d+/\d+ " + clock + rb"(?:, [^\]\r\n]*)?\](?=[^\s\]])")


class LogicalLine(NamedTuple):
    lineno: int
    offset: int
    text: str
    partial: bool = False  # the input ended before this line's terminator


class LineRun(NamedTuple):
    """Consecutive complete physical lines, each of which is one logical line as it stands."""

    data: bytes  # b"\n", then the lines, each ending with \n (the "\n" before each line is a regex anchor)
    lineno: int  # number of the first line
    offset: int  # absolute offset of the first byte
    size: int  # number of lines
    # each line's (timestamp, rank tags): the 19 bytes after its "[", then the tags as written
    # (b"", b" TP0", ...); tuples as findall makes them, the cheapest form to get them in
    stamps: list[tuple[bytes, bytes]]
    joined: bytes  # the timestamps back to back, 19 bytes each
    # a run of quiet lines (RunPatterns.run's group "quiet"): SGLang lines that may be no event;
    # stamps and joined are then empty (the engine reads what it needs itself)
    quiet: bool = False
    unstamped: bool = False  # a quiet run of lines without SGLang's prefix (RunPatterns' group "loose")
    # a quiet run of junk lines (RunPatterns.junk): any bytes, each \r-separated piece a logical line
    segmented: bool = False

    def logical_lines(self) -> list[LogicalLine]:
        """The lines of the run as ``LineSplitter.feed`` would have given them (plain runs are ASCII)."""
        out: list[LogicalLine] = []
        pos = self.offset
        for j, raw in enumerate(self.data.split(b"\n")[1:-1]):
            if self.segmented:
                out.extend(pieces_of(raw, self.lineno + j, pos))
            else:
                out.append(LogicalLine(self.lineno + j, pos, raw.decode()))
            pos += len(raw) + 1
        return out


def pieces_of(raw: bytes, lineno: int, offset: int) -> list[LogicalLine]:
    """The logical lines of a junk line (``raw``, without its \\n, at ``offset``): its pieces
    between \\r, as the splitter gives them (a junk line has no glued prefix, no escape, no
    overlong piece)."""
    out: list[LogicalLine] = []
    pos = offset
    for part in raw.split(b"\r"):
        if part:
            out.append(LogicalLine(lineno, pos, part.decode("utf-8", errors="replace")))
        pos += len(part) + 1
    return out


_PIECES = re.compile(rb"[^\r\n]+")
# every byte to b"a" but the separators, which become b"\n": a piece starts at each b"\na"
_SEPARATORS = bytes(10 if b in (10, 13) else 97 for b in range(256))


def count_pieces(data: bytes) -> int:
    """How many logical lines the junk lines in ``data`` (b"\\n" and whole lines) make: their
    non-empty pieces between \\r."""
    return data.translate(_SEPARATORS).count(b"\na")


class RunPatterns(NamedTuple):
    # over "\n" + lines: a match at every "\n", groups (timestamp, rank tags) of the line after
    # it if that line is plain, else empty
    lines: re.Pattern[bytes]
    # one or more such lines (plain.lines_run: from the "\n" before the first to the one after the
    # last, not included); or, with groups "plain"/"quiet"/"loose", a run of one kind
    run: re.Pattern[bytes]
    # a junk line, decoded (plain.junk_line, built on first use): the lines between runs that are
    # not ASCII and match it make quiet runs too
    junk: Callable[[], re.Pattern[str]] | None = None
    # runs as ``run`` finds them but of lines without \r, \x1b, \x1c-\x1f (built on first use):
    # searched in a quiet or loose run of ``run``'s that holds such a line
    strict: Callable[[], re.Pattern[bytes]] | None = None


_STAMP = itemgetter(0)
# bytes that the splitter treats specially, or that str regexes see as whitespace and bytes ones not
_NOT_IN_RUNS = (b"\r", b"\x1b", b"\x1c", b"\x1d", b"\x1e", b"\x1f")
# a byte that keeps a line out of a run: one of those, or one that is not ASCII
_NOT_AS_THEY_STAND = re.compile(rb"[\x80-\xff\r\x1b\x1c-\x1f]")


# Runs are offered only to a splitter that keeps lines at least this long whole.
MAX_RUN_LINE = 8192


@dataclass
class LineStats:
    physical: int = 0
    logical: int = 0
    invalid_utf8: int = 0
    overlong: int = 0
    dropped_bytes: int = 0


class LineSplitter:
    """Incremental splitter. ``feed`` returns the lines completed by the new bytes; ``finish``
    returns the held partial last line, if any. The output never depends on the chunking."""

    def __init__(self, max_line: int = MAX_LINE_BYTES) -> None:
        self._max_line = max_line
        self._held = bytearray()
        self._held_offset = 0  # absolute offset of the first held byte
        self._held_overflow = 0  # bytes of the held line dropped past max_line
        self._lineno = 1
        # whether the current physical line (since the last \n) already produced a segment
        self._line_has_content = False
        self._line_start = 0  # absolute offset of the current physical line
        self._overflow_ends_cr = False  # the dropped tail of the held line ends with \r
        self._glued = _glued_prefix_pattern()
        self._bar_end = _bar_end_pattern()
        self._all_plain = True  # feed_runs: the last block was one run
        self.stats = LineStats()

    @property
    def bytes_seen(self) -> int:
        return self._held_offset + len(self._held) + self._held_overflow

    def feed(self, data: bytes) -> list[LogicalLine]:
        # without run patterns every item is a LogicalLine
        return cast("list[LogicalLine]", self._feed(data, None))

    def feed_runs(self, data: bytes, patterns: RunPatterns) -> list[LogicalLine | LineRun]:
        """Like ``feed``, but consecutive physical lines that ``patterns`` match and that are each
        one logical line as they stand (ASCII, no ``\\r``, no escape, no glued prefix) come back
        as one :class:`LineRun` of raw bytes instead of a ``LogicalLine`` each: no per-line work.
        Line numbers and stats are kept as ``feed`` keeps them."""
        if self._max_line < MAX_RUN_LINE:
            return self._feed(data, None)
        return self._feed(data, patterns)

    def _feed(self, data: bytes, pattern: RunPatterns | None) -> list[LogicalLine | LineRun]:
        if not data:
            return []
        out: list[LogicalLine | LineRun] = []
        if self._held_overflow:
            if self._overflow_ends_cr:
                # the last dropped byte was a \r terminator: give it back to the input
                self._held_overflow -= 1
                self._overflow_ends_cr = False
                data = b"\r" + data
            first_end = _first_terminator(data)
            if first_end < 0:
                self._held_overflow += len(data)
                return []
            # the overlong line ends here: keep its head, drop the rest up to the terminator
            self.stats.dropped_bytes += self._held_overflow + first_end
            self.stats.overlong += 1
            out.extend(self._emit_segments(bytes(self._held), self._held_offset))
            self._held_offset += len(self._held) + self._held_overflow + first_end
            self._held = bytearray()
            self._held_overflow = 0
            data = data[first_end:]
        elif self._held.endswith(b"\r"):
            # the held line ended with a \r that was waiting for its \n: look at both together
            data = bytes(self._held) + data
            self._held = bytearray()
        cut = max(data.rfind(b"\n"), data.rfind(b"\r"))
        if cut == len(data) - 1 and data[cut] == 0x0D:
            # a trailing \r may be the first half of \r\n: wait for the next byte
            cut = max(data.rfind(b"\n", 0, cut), data.rfind(b"\r", 0, cut))
        if cut < 0:
            self._hold(data)
            return out
        offset = self._held_offset
        if pattern is None:
            block = bytes(self._held) + data[: cut + 1] if self._held else data[: cut + 1]
            self._held_offset = offset + len(block)
            self._held = bytearray()
            out.extend(self._split_lines(block, offset))
        else:
            # one copy, with the "\n" the patterns anchor on: a second 4 MB buffer alive at the
            # same time costs more in page faults than the regex work on it
            buf = b"".join((b"\n", self._held, memoryview(data)[: cut + 1]))
            self._held_offset = offset + len(buf) - 1
            self._held = bytearray()
            out.extend(self._split_runs(buf, offset, pattern))
        self._hold(data[cut + 1 :])
        return out

    def finish(self) -> list[LogicalLine]:
        """Flush the held partial line; its segments are marked ``partial``."""
        if not self._held and not self._held_overflow:
            return []
        ends_with_cr = self._held.endswith(b"\r") and not self._held_overflow
        if self._held_overflow:
            ends_with_cr = self._overflow_ends_cr
            self.stats.overlong += 1
            self.stats.dropped_bytes += self._held_overflow - int(self._overflow_ends_cr)
            self._overflow_ends_cr = False
        text = bytes(self._held)
        segments = self._emit_segments(text, self._held_offset)
        self._held_offset += len(self._held) + self._held_overflow
        self._held = bytearray()
        self._held_overflow = 0
        if not segments and not self._line_has_content:
            return []
        self.stats.physical += 1
        if ends_with_cr:
            return segments
        return [*segments[:-1], segments[-1]._replace(partial=True)] if segments else []

    # -- internals -------------------------------------------------------------------------------

    def _hold(self, data: bytes) -> None:
        if not data:
            return
        # a held \r (waiting to see if \n follows) is a terminator, not part of the line
        lead = 1 if self._held[:1] == b"\r" or (not self._held and data[:1] == b"\r") else 0
        room = self._max_line + lead - len(self._held)
        if len(data) > room:
            self._held += data[: max(room, 0)]
            self._held_overflow += len(data) - max(room, 0)
            self._overflow_ends_cr = data.endswith(b"\r")
        else:
            self._held += data

    def _split_runs(self, buf: bytes, offset: int, patterns: RunPatterns) -> list[LogicalLine | LineRun]:
        """``buf`` is b"\\n" and a block that ends with a terminator; the block's first byte is at
        ``offset``. Positions below are in ``buf``: block position + 1."""
        if self._line_start == offset:
            first = 1
        else:  # a run starts at a physical line start: skip the rest of a line begun earlier
            first = buf.find(b"\n", 1) + 1
            if first <= 0:
                return list(self._split_lines(buf[1:], offset))
        if first == 1 and self._all_plain and buf.endswith(b"\n"):
            # the last block was one run: try the whole of this one with a single findall
            found = patterns.lines.findall(buf)
            found.pop()  # the match at the block's last "\n"
            n = len(found)
            joined = b"".join(map(_STAMP, found))
            if len(joined) == 19 * n and self._plain(buf, n):  # no line without a timestamp
                return [self._take_run(buf, offset, n, found, joined)]
        self._all_plain = False
        if patterns.junk is not None and not buf.isascii() and _binary(buf):
            # binary data: plain and quiet runs (ASCII) are rare, and looking for them costs a regex
            # step at every byte; the lines that are not junk are read one by one
            return self._between_runs(buf[1:], offset, patterns.junk)
        out: list[LogicalLine | LineRun] = []
        done = 1  # buf[1:done] is handled
        for kind, s, e, run, n in self._runs_in(buf, first, patterns):
            if s > done:
                out.extend(self._between_runs(buf[done:s], offset + done - 1, patterns.junk))
            if kind in ("quiet", "loose"):
                quiet = self._take_run(run, offset + s - 1, n, [], b"")
                out.append(quiet._replace(quiet=True, unstamped=kind == "loose"))
            else:
                found = patterns.lines.findall(run)
                found.pop()
                self._all_plain = s == 1 and e == len(buf)
                out.append(self._take_run(run, offset + s - 1, n, found, b"".join(map(_STAMP, found))))
            done = e
        if done < len(buf):
            out.extend(self._between_runs(buf[done:], offset + done - 1, patterns.junk))
        return out

    def _runs_in(self, buf: bytes, first: int, patterns: RunPatterns) -> Iterator[tuple[str, int, int, bytes, int]]:
        """The runs from the line start ``first`` on that are lines as they stand (``_plain``): their
        kind, first line's start, end (past the last line's "\\n"), bytes (with the "\\n" before)
        and number of lines. A quiet or loose run that holds a byte the splitter treats specially
        (``\\r``, an escape), which ``patterns.run`` lets in, is searched again with
        ``patterns.strict``: its runs without such lines (those go the line-by-line way)."""
        # a match starts at the "\n" before its first line and ends before the "\n" after its last
        for m in patterns.run.finditer(buf, first - 1):
            found = self._as_run(buf, m)
            if found is not None:
                yield found
            elif m.lastgroup != "plain" and patterns.strict is not None:
                for inner in patterns.strict().finditer(buf, m.start(), m.end() + 1):
                    found = self._as_run(buf, inner)
                    if found is not None:
                        yield found
                    else:
                        yield from self._plain_parts(buf, inner)

    def _plain_parts(self, buf: bytes, m: re.Match[bytes]) -> Iterator[tuple[str, int, int, bytes, int]]:
        """The runs in a quiet or loose run that is not all lines as they stand: its lines but those
        holding a byte that is not ASCII or that the splitter treats specially, or a prefix glued
        inside (those go the line-by-line way). Each line of a quiet or loose run matches on its own:
        any stretch of them is a run of the same kind. Without this, one such line sent a whole run
        line by line (a tree dump of 8,000 lines after one with a UTF-8 character: ~0.8 s)."""
        start, end = m.start() + 1, m.end() + 1  # the first line's start; past the last line's "\n"
        bad = {buf.rfind(b"\n", 0, x.start()) + 1 for x in _NOT_AS_THEY_STAND.finditer(buf, start, end)}
        glued = (g.start() for g in self._glued.finditer(buf, start, end) if buf[g.start() - 1] != 0x0A)
        bad.update(buf.rfind(b"\n", 0, at) + 1 for at in glued)
        kind = m.lastgroup or ""
        part = start
        for line in [*sorted(bad), end]:
            if line > part:
                run = buf[part - 1 : line]
                n = run.count(b"\n") - 1
                if self._plain(run, n, stamped=kind != "loose"):
                    yield kind, part, line, run, n
            if line < end:
                part = buf.index(b"\n", line) + 1

    def _as_run(self, buf: bytes, m: re.Match[bytes]) -> tuple[str, int, int, bytes, int] | None:
        s, e = m.start() + 1, m.end() + 1  # its first line's start; past its last line's "\n"
        run = buf[s - 1 : e]  # with the "\n" before it
        n = run.count(b"\n") - 1
        kind = m.lastgroup or ""
        return (kind, s, e, run, n) if self._plain(run, n, stamped=kind != "loose") else None

    def _between_runs(
        self, block: bytes, offset: int, junk_pattern: Callable[[], re.Pattern[str]] | None
    ) -> list[LogicalLine | LineRun]:
        """Lines between runs (``block`` ends with a terminator), line by line; but when they are
        not all ASCII, consecutive whole lines that the junk pattern matches (binary data) make a
        quiet run of their own."""
        if junk_pattern is None or block.isascii():
            return list(self._split_lines(block, offset))
        junk = junk_pattern()
        out: list[LogicalLine | LineRun] = []
        start = 0
        if offset != self._line_start:  # the block starts inside a line begun earlier
            start = block.find(b"\n") + 1
            if start <= 0:
                return list(self._split_lines(block, offset))
            out.extend(self._split_lines(block[:start], offset))
        lines = block[start:].split(b"\n")
        tail = lines.pop()  # after the last \n: a piece of a line that ends with \r, or nothing
        texts = block[start:].decode("utf-8", errors="replace").split("\n")  # the same lines: \n is \n
        pos = offset + start
        i = 0
        for is_junk, group in itertools.groupby(junk.fullmatch(text) is not None for text in texts[: len(lines)]):
            n = sum(1 for _ in group)
            chunk = b"\n".join(lines[i : i + n]) + b"\n"
            if is_junk:
                out.append(self._take_junk(chunk, pos, n, texts[i : i + n]))
            else:
                out.extend(self._split_lines(chunk, pos))
            pos += len(chunk)
            i += n
        if tail:
            out.extend(self._split_lines(tail, pos))
        return out

    def _take_junk(self, chunk: bytes, offset: int, n: int, texts: list[str]) -> LineRun:
        """``n`` junk lines (``chunk``, each through its \\n, at ``offset``) as a quiet run, the
        counts kept as ``_split_lines`` keeps them: a logical line per piece, an invalid one per
        piece that is not UTF-8."""
        data = b"\n" + chunk
        pieces = count_pieces(data)
        if data.isascii():
            invalid = 0
        elif b"\xef\xbf\xbd" not in data:
            # decoding put U+FFFD exactly where the bytes are not UTF-8
            pieces_text = "\n".join(texts).replace("\r", "\n").split("\n")
            invalid = sum(map(str.__contains__, pieces_text, itertools.repeat("\ufffd")))
        else:
            invalid = sum(not _is_utf8(piece) for piece in _PIECES.findall(data))
        run = self._take_run(data, offset, n, [], b"")
        self.stats.logical += pieces - n
        self.stats.invalid_utf8 += invalid
        return run._replace(quiet=True, unstamped=True, segmented=True)

    def _plain(self, run: bytes, n: int, stamped: bool = True) -> bool:
        """Whether each line of ``run`` (b"\\n" and n lines) is one logical line as it stands."""
        if not run.isascii() or any(c in run for c in _NOT_IN_RUNS):
            return False
        if stamped and run.count(b"[") == n:
            return True  # each line's one "[" opens its own prefix
        # another "[" somewhere: no timestamp prefix may start inside a line (see _unglue)
        return all(run[m.start() - 1] == 0x0A for m in self._glued.finditer(run))

    def _take_run(self, run: bytes, offset: int, n: int, stamps: list[tuple[bytes, bytes]], joined: bytes) -> LineRun:
        out = LineRun(run, self._lineno, offset, n, stamps, joined)
        self._lineno += n
        self.stats.physical += n
        self.stats.logical += n
        self._line_has_content = False
        self._line_start = offset + len(run) - 1
        return out

    def _split_lines(self, block: bytes, offset: int) -> list[LogicalLine]:
        """``block`` ends with a terminator. Complete physical lines end with \n; a tail that
        ends with a bare \r belongs to a physical line whose \n has not arrived yet."""
        out: list[LogicalLine] = []
        pieces = block.split(b"\n")
        tail = pieces.pop()
        pos = offset
        for piece in pieces:
            if piece.endswith(b"\r"):
                piece = piece[:-1]
            segments = self._emit_segments(piece, pos)
            if not segments and not self._line_has_content:
                self.stats.logical += 1
                segments = [LogicalLine(self._lineno, self._line_start, "")]
            out.extend(segments)
            self.stats.physical += 1
            pos = _advance(block, pos + len(piece), offset)
            self._lineno += 1
            self._line_has_content = False
            self._line_start = pos
        if tail:
            out.extend(self._emit_segments(tail, pos))
        return out

    def _emit_segments(self, piece: bytes, offset: int) -> list[LogicalLine]:
        out: list[LogicalLine] = []
        parts = piece.split(b"\r") if b"\r" in piece else [piece]
        pos = offset
        for part in parts:
            if part:
                for seg_offset, seg in self._unglue(part, pos):
                    out.append(LogicalLine(self._lineno, seg_offset, self._decode(seg)))
            pos += len(part) + 1
        if out:
            self._line_has_content = True
            self.stats.logical += len(out)
        return out

    def _unglue(self, part: bytes, offset: int) -> list[tuple[int, bytes]]:
        if len(part) > self._max_line:
            self.stats.overlong += 1
            self.stats.dropped_bytes += len(part) - self._max_line
            part = part[: self._max_line]
        if b"\x1b" in part:
            part = _ANSI.sub(b"", part)
        if part.find(b"[", 1) < 0:
            return [(offset, part)]
        record = part.find(b'{"log":"')
        if record >= 0 and (record == 0 or wrapped_until(part, record) == record):
            # a docker json-file record carries a whole line, escaped: a stamp inside it is its own
            return [(offset, part)]
        starts = [m.start() for m in self._glued.finditer(part, 1)]
        if starts and starts[0] == wrapped_until(part, starts[0]):
            starts.pop(0)  # what comes before the stamp is the line's own envelope (Ray, docker, compose ...)
        if b"<" in part:
            starts = sorted({*starts, *(m.end() for m in self._bar_end.finditer(part))})
        if not starts:
            return [(offset, part)]
        bounds = [0, *starts, len(part)]
        return [(offset + a, part[a:b]) for a, b in itertools.pairwise(bounds) if b > a]

    def _decode(self, data: bytes) -> str:
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            self.stats.invalid_utf8 += 1
            return data.decode("utf-8", errors="replace")


def wrapped_until(part: bytes, stamp: int) -> int:
    """Where the wrappers before ``part[stamp]`` end, if it is only wrappers; else -1."""
    head = part[:stamp].decode("utf-8", errors="replace")
    return stamp if wrappers_end(head + "[") >= len(head) else -1


# Invalid UTF-8 sequences a block may hold, per byte, and still be read as text: a text log with a
# few mangled lines (a bar cut inside a character, a stray Latin-1 byte) keeps its runs
BINARY_INVALID_PER_BYTE = 1 / 1024


def _binary(block: bytes) -> bool:
    """Whether a block that is not ASCII is binary data: NUL bytes, or invalid UTF-8 at more than
    BINARY_INVALID_PER_BYTE of its bytes (U+FFFD already in the text counts too, harmlessly)."""
    if b"\x00" in block:
        return True
    invalid = block.decode("utf-8", errors="replace").count("\ufffd")
    return invalid > len(block) * BINARY_INVALID_PER_BYTE


def _is_utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _first_terminator(data: bytes) -> int:
    hits = [i for i in (data.find(b"\n"), data.find(b"\r")) if i >= 0]
    return min(hits) if hits else -1


def _advance(block: bytes, pos: int, offset: int) -> int:
    """Position just past the \n that ends the physical line at ``pos``."""
    return offset + block.index(b"\n", pos - offset) + 1
