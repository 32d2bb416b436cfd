"""The envelope of a logical line: wrappers other programs put around it (docker, kubectl,
compose, journald, Ray, srun, mpirun, CI, host loggers), torchrun's ``[rankN]:``, SGLang's own
prefix; what is left is the message.

The syntax is ``grammars/shared/envelope.lark``: every alternative of its ``wrapper`` and
``sglang_prefix`` rules is a sequence of terminals, compiled here into one regular expression
(running Lark on every line would cost ~20 us a line). Wrappers are peeled from the start of the
line, outermost first. Named terminals say what a part is: ``*_TIME`` a time, ``*_SOURCE`` the
writer, ``LEVEL`` a log level, ``RANK_TAG`` SGLang's rank tags. A time named ``SERVER_*_TIME`` is a
server's own logger's (vLLM's ``INFO 11-18 18:07:28 [x.py:1] ``), peeled with the wrappers: it is
kept apart from theirs (``Envelope.logger_stamp``), as the server's clock, which theirs are compared with.
"""

from __future__ import annotations

import calendar
import json
import re
from functools import cache, lru_cache
from typing import NamedTuple

from logphase.packs import kept_regex
from logphase.packs.grammars import Symbol, rules, terminal_pattern

# peeled wrappers per line, at most (a kubectl --prefix around docker -t around compose ...)
MAX_WRAPPERS = 6
_MONTHS = {m: i + 1 for i, m in enumerate(("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"))}


class Stamp(NamedTuple):
    """A time as a line prints it; ``year``/``month``/``day`` are None where it leaves them out."""

    year: int | None
    month: int | None
    day: int | None
    time: str  # "HH:MM:SS" or "HH:MM:SS.ffffff"


class Envelope(NamedTuple):
    stamp: Stamp | None  # SGLang's own prefix's time: the line is an SGLang logger line
    rank: str | None  # "TP0", "DP0 TP1 EP1", or torchrun's "rank3"
    message: str
    torch_rank: str | None  # "rank3" when torchrun's "[rank3]:" prefix was present
    outer: Stamp | None = None  # the innermost wrapper's time (another program's clock: docker, kubectl ...)
    writer: str | None = None  # the writer a wrapper names: a pod, a Ray actor, an srun task ...
    # a stamp-shaped part that makes no valid time (month 84, Feb 30, hour 25: OCR damage, a bad
    # paste): it is text, not a time, and the line takes its time from the lines before it
    bad_stamp: str | None = None
    sglang_prefix: bool = False  # SGLang's prefix was there, its stamp one of those bad ones
    # Ray folded this many more of the same line (other actors) into it: "[repeated 7x across cluster]"
    repeated: int = 0
    # a process prefix of vLLM's ("(EngineCore_DP0 pid=104) ", "(VllmWorker rank=1 pid=9) "): a vLLM line
    process: str | None = None
    # the year of a dated wrapper around a time printed without one (docker -t around vLLM's
    # "INFO 11-18 18:07:28 ..."): the year that time is in
    wrapper_year: int | None = None
    # the time a server's own logger prefix peeled with the wrappers printed (envelope.lark's
    # SERVER_*_TIME: vLLM's "INFO 11-18 18:07:28 [x.py:1] "): the server's clock, as ``stamp`` is
    logger_stamp: Stamp | None = None
    # the envelope rule that peeled ``logger_stamp`` (envelope.lark's ``vllm``): whose logger it is
    logger_rule: str | None = None

    @property
    def stamped(self) -> bool:
        """The line carries SGLang's own prefix."""
        return self.stamp is not None or self.sglang_prefix

    @property
    def server_stamp(self) -> Stamp | None:
        """The time a server's own prefix printed, whichever server's (SGLang's prefix, another's
        logger): the server's clock, not a wrapper's."""
        return self.stamp if self.stamp is not None else self.logger_stamp

    @property
    def stream(self) -> str | None:
        """What tells interleaved writers apart for multi-line records (tracebacks)."""
        if self.writer is None:
            return self.torch_rank
        return f"{self.writer}|{self.torch_rank or ''}"


# the terminals whose text the envelope keeps: a time, a writer, a stream, a rank tag
_CAPTURED_KINDS = ("_TIME", "_SOURCE", "_STREAM", "_RANK")
# a time terminal whose name starts so is printed by a server's own logger: the server's clock
_SERVER_TIME = "SERVER_"


def _alternatives(rule: str) -> list[str]:
    """The regular expressions of a rule's expansions, longest first, named terminals captured as
    ``(?P<{rule}_{i}__{TERMINAL}>...)`` and a repeated part (``(" " RANK_TAG)*``) as ``..._TAGS``."""
    by_origin: dict[str, list[tuple[Symbol, ...]]] = {}
    for origin, expansion in rules("envelope"):
        by_origin.setdefault(origin, []).append(expansion)

    def plain(symbols: tuple[Symbol, ...]) -> str:
        out = ""
        for symbol in symbols:
            if symbol.terminal:
                out += f"(?:{terminal_pattern('envelope', symbol.name)})"
            else:
                out += repeated(symbol.name)
        return out

    def repeated(name: str) -> str:
        # Lark writes (...)* as a left-recursive rule: [self, rest...] | [rest...]
        rest = next(e for e in by_origin[name] if not (e and not e[0].terminal and e[0].name == name))
        return f"(?:{plain(rest)})+"

    out: list[str] = []
    for i, expansion in enumerate(sorted(by_origin[rule], key=len, reverse=True)):
        pattern = ""
        for symbol in expansion:
            if symbol.terminal:
                body = f"(?:{terminal_pattern('envelope', symbol.name)})"
                name = symbol.name
                if name.endswith(_CAPTURED_KINDS) or name in ("TIMESTAMP", "LEVEL", "PIPE_LEVEL", "STREAM"):
                    body = f"(?P<{rule}_{i}__{name}>{body})"
                pattern += body
            else:
                pattern += f"(?P<{rule}_{i}__TAGS>{repeated(symbol.name)})"
        out.append(pattern)
    return out


@cache
def _compiled() -> tuple[re.Pattern[str], re.Pattern[str], re.Pattern[str]]:
    wrappers = [expansion[0].name for origin, expansion in rules("envelope") if origin == "wrapper"]
    wrapper = "|".join(f"(?:{alt})" for w in wrappers for alt in _alternatives(w))
    sglang = "|".join(f"(?:{alt})" for alt in _alternatives("sglang_prefix"))
    torch = "|".join(f"(?:{alt})" for alt in _alternatives("torch_rank"))
    return kept_regex.compile(wrapper), kept_regex.compile(sglang), kept_regex.compile(torch)


def envelope_patterns() -> list[str]:
    """What starts a line that has an envelope (a wrapper, torchrun's prefix, SGLang's prefix), as
    regexes without named groups: for the bulk path's runs of lines that have none."""
    unnamed = re.compile(r"\(\?P<\w+>")
    return [*(unnamed.sub("(?:", p.pattern) for p in _compiled()), re.escape(DOCKER_JSON_START)]


def _parts(m: re.Match[str]) -> dict[str, str]:
    """Captured parts of a match by terminal name: {'ISO_TIME': ..., 'K8S_SOURCE': ...}."""
    return {name.rsplit("__", 1)[1]: value for name, value in m.groupdict().items() if value is not None}


def valid_stamp(stamp: Stamp) -> bool:
    """Whether a stamp makes a time: month 1-12, a day its month has (Feb 29 in any year when the
    year is left out: the clock checks it against the year it takes), 00:00:00-23:59:59, a year
    datetime can hold."""
    year, month, day, clock = stamp
    if (year is not None and not 1 <= year <= 9999) or (month is None) != (day is None):
        return False
    if month is not None and day is not None:
        if not 1 <= month <= 12:
            return False
        days = calendar.monthrange(year if year is not None else 2000, month)[1]  # 2000: a leap year
        if not 1 <= day <= days:
            return False
    parts = clock.split(":")
    if len(parts) != 3 or not all(p[:2].isdigit() for p in parts):
        return False
    hour, minute, second = int(parts[0]), int(parts[1]), float(parts[2])
    return hour <= 23 and minute <= 59 and second < 60


@lru_cache(maxsize=4096)
def valid_plain_stamp(raw: bytes) -> bool:
    """Whether ``b'YYYY-MM-DD HH:MM:SS'`` (the bulk path's stamps, digits where digits go) is a time."""
    text = raw.decode("ascii")
    return valid_stamp(Stamp(int(text[:4]), int(text[5:7]), int(text[8:10]), text[11:19]))


def plain_minutes_valid(joined: bytes) -> bool:
    """Whether no minute or second of 19-byte stamps back to back has a tens digit above 5. With
    this, stamps that lie between two valid ones of the same date are valid too (same date, an hour
    no later than a valid one): the bulk path checks only its first and last stamps in full."""
    return not joined[14::19].translate(None, b"012345") and not joined[17::19].translate(None, b"012345")


def parse_stamp(kind: str, text: str) -> Stamp | None:
    """A *_TIME part as a :class:`Stamp` (fractions kept to microseconds); None when it is not one
    (see :func:`valid_stamp`)."""
    stamp = _stamp_parts(kind, text)
    return stamp if stamp is not None and valid_stamp(stamp) else None


def _stamp_parts(kind: str, text: str) -> Stamp | None:
    text = text.strip()
    date, clock = "", text
    if kind == "MPI_TIME":  # "Mon Nov 30 12:00:00 2026"
        _, month, day, clock, year = text.split()
        return Stamp(int(year), _MONTHS.get(month, 0), int(day), clock)
    if kind == "JOURNAL_TIME" and text[:3] in _MONTHS:  # "Nov 30 12:00:00.123"
        month, day, clock = text.split()
        return Stamp(None, _MONTHS[text[:3]], int(day), _time(clock))
    if len(text) >= 19 and text[2] == "/" and text[5] == "/" and text[10] in "- ":  # "12/20/2025-04:20:21" (US order)
        return Stamp(int(text[6:10]), int(text[:2]), int(text[3:5]), _time(text[11:]))
    if len(text) >= 10 and text[4] == "-" and text[10] in " T":
        date, clock = text[:10], text[11:]
        clock = re.split(r"[Z+]|(?<=\d)-(?=\d\d:?\d\d$)", clock)[0]  # the zone, if any
        return Stamp(int(date[:4]), int(date[5:7]), int(date[8:10]), _time(clock))
    if len(text) >= 5 and text[2] == "-":  # "04-20 13:32:25.784" (no year)
        return Stamp(None, int(text[:2]), int(text[3:5]), _time(text[6:]))
    if len(text) >= 8 and text[2] == ":":
        return Stamp(None, None, None, _time(text))
    return None


def _time(clock: str) -> str:
    """'12:00:00,123456789' -> '12:00:00.123456'."""
    clock = clock.replace(",", ".")
    whole, dot, fraction = clock.partition(".")
    return f"{whole}.{fraction[:6].ljust(6, '0')}" if dot and fraction.strip("0") else whole


def wrappers_end(text: str) -> int:
    """Where the wrappers (and torchrun's prefix) at the start of ``text`` end."""
    wrapper, _, torch = _compiled()
    pos = 0
    for _ in range(MAX_WRAPPERS):
        m = wrapper.match(text, pos)
        if m is None or m.end() == pos:
            break
        pos = m.end()
    m = torch.match(text, pos) if text.startswith("[rank", pos) else None
    return m.end() if m is not None else pos


# docker's json-file log driver (/var/lib/docker/containers/ID/ID-json.log): one JSON object a line,
# {"log":"the line\n","stream":"stderr","time":"2026-05-12T18:20:05.123456789Z"}
DOCKER_JSON_START = '{"log":"'
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07")  # colours, escaped in the JSON (lines.py strips raw ones)


def docker_json(text: str) -> tuple[str, str | None, Stamp | None, str | None] | None:
    """A docker json-file line as (the line it carries, its stream, its time, a time that makes no
    valid time); None when ``text`` is not one (cut, or other JSON)."""
    if not text.startswith(DOCKER_JSON_START):
        return None
    try:
        value = json.loads(text) if text.rstrip().endswith("}") else None
    except ValueError:
        value = None
    if not isinstance(value, dict) or not isinstance(value.get("log"), str):
        cut = _cut_log_string(text[len(DOCKER_JSON_START) :])
        if cut is None:
            return None
        value = {"log": cut}  # a record cut short (the end of a file being written): its text so far
    line = _ANSI.sub("", value["log"].rstrip("\n")) if "\x1b" in value["log"] else value["log"].rstrip("\n")
    if "\r" in line:  # a bar's redraws in one write: the last one is where it stands
        line = next((part for part in reversed(line.rstrip("\r").split("\r")) if part.strip()), "")
    stream, written = value.get("stream"), value.get("time")
    stamp, bad = None, None
    if isinstance(written, str) and _iso_time().fullmatch(written):
        stamp = parse_stamp("ISO_TIME", written)
        bad = written if stamp is None else None
    return line, stream if isinstance(stream, str) else None, stamp, bad


# the characters of a JSON string up to its closing quote or the end of the text: plain ones, escapes
_JSON_STRING_BODY = re.compile(r'(?:[^"\\]|\\.)*')
# a \u escape cut in two at the end of the text (a lone backslash is left out by _JSON_STRING_BODY)
_CUT_UNICODE_ESCAPE = re.compile(r"\\u[0-9a-fA-F]{0,3}$")


def _cut_log_string(body: str) -> str | None:
    """The text of a record's "log" string that ``body`` starts (after its opening quote), read up
    to its closing quote or, in a record cut short, as far as it goes; None when it is no string."""
    chars = _JSON_STRING_BODY.match(body)
    content = chars.group(0) if chars else ""
    for candidate in (content, _CUT_UNICODE_ESCAPE.sub("", content)):
        try:
            text = json.loads(f'"{candidate}"')
        except ValueError:
            continue
        return text if isinstance(text, str) else None
    return None


@cache
def _iso_time() -> re.Pattern[str]:
    return kept_regex.compile(terminal_pattern("envelope", "ISO_TIME"))


def process_rank(parts: dict[str, str]) -> str | None:
    """The rank tag a process prefix names (envelope.lark's *_RANK parts): 'VllmWorker rank=1' ->
    'TP1', 'Worker_DP1_TP0' -> 'DP1 TP0', a worker known by its pid -> 'pid=232' (Ray's with its
    node: 'pid=609874 ip=10.0.0.2'); None for the server's own processes (engine core, front end)."""
    if "TP_RANK" in parts:
        return f"TP{parts['TP_RANK']}"
    if "TAGS_RANK" in parts:
        return parts["TAGS_RANK"].replace("_", " ")
    if "PID_WORKER_RANK" in parts:
        return parts.get("PROCESS_SOURCE", "").replace(",", "") or None
    return None


def split_envelope(text: str) -> Envelope:
    """Peel a line's envelope: wrappers, torchrun's prefix, SGLang's prefix; the rest is the message
    (without Ray's ``[repeated Nx across cluster]``, kept as ``repeated``)."""
    env = _split_envelope(text)
    if not env.message.endswith("]") and not env.message.endswith(("] ", "]\t")):
        return env
    m = _repeated().search(env.message)
    if m is None:
        return env
    return env._replace(message=env.message[: m.start()], repeated=int(m.group(1)))


@cache
def _repeated() -> re.Pattern[str]:
    return kept_regex.compile(terminal_pattern("envelope", "RAY_REPEATED"))


class _Wrapped(NamedTuple):
    """What the wrappers at the start of a line said: where they end, the innermost wrapper's time
    (and the innermost with a year), the time of a server's own logger among them, the writer, a
    stamp that makes no time, a process prefix and its rank."""

    end: int = 0
    outer: Stamp | None = None
    dated: Stamp | None = None
    logger: Stamp | None = None
    logger_rule: str | None = None
    writer: str | None = None
    bad: str | None = None
    process: str | None = None
    rank: str | None = None


def _peel_wrappers(text: str, wrapper: re.Pattern[str]) -> _Wrapped:
    found = _Wrapped()
    for _ in range(MAX_WRAPPERS):
        m = wrapper.match(text, found.end)
        if m is None or m.end() == found.end:
            break
        parts = _parts(m)
        for name, value in parts.items():
            if name.endswith("_TIME"):
                found = _with_time(found, parse_stamp(name, value), value, name.startswith(_SERVER_TIME))
                if name.startswith(_SERVER_TIME) and found.logger is not None:
                    found = found._replace(logger_rule=_rule_of(m, name))
            elif name == "PROCESS_SOURCE":
                # the process writes the line: named by its whole prefix, whatever logger prints inside
                process = m.group(0).strip()[1:-1]
                found = found._replace(process=process, writer=process, rank=process_rank(parts) or found.rank)
            elif name.endswith("_RANK") and "PROCESS_SOURCE" not in parts:
                found = found._replace(rank=value.strip())  # a logger's own rank of its process, as printed
            elif name.endswith("_SOURCE") and found.process is None:
                found = found._replace(writer=value.strip())  # the innermost wrapper that names one
        found = found._replace(end=m.end())
    return found


def _rule_of(m: re.Match[str], terminal: str) -> str | None:
    """The envelope rule whose alternative matched ``terminal`` (its groups are named
    ``{rule}_{i}__{TERMINAL}``)."""
    for group, value in m.groupdict().items():
        if value is not None and group.endswith(f"__{terminal}"):
            return group.rsplit("__", 1)[0].rsplit("_", 1)[0]
    return None


def _with_time(found: _Wrapped, stamp: Stamp | None, written: str, server: bool) -> _Wrapped:
    if stamp is None:
        return found._replace(bad=written.strip())
    if server:
        return found._replace(logger=stamp)
    return found._replace(outer=stamp, dated=stamp if stamp.year is not None else found.dated)


def _split_envelope(text: str) -> Envelope:
    wrapper, sglang, torch = _compiled()
    wrapped = _peel_wrappers(text, wrapper)
    pos, outer, writer, bad = wrapped.end, wrapped.outer, wrapped.writer, wrapped.bad
    process, rank, dated, logger = wrapped.process, wrapped.rank, wrapped.dated, wrapped.logger
    if text.startswith(DOCKER_JSON_START, pos):
        carried = _docker_carried(text[pos:], outer, writer, bad, logger)
        if carried is not None:
            return carried
    torch_rank = None
    if text.startswith("[rank", pos):
        m = torch.match(text, pos)
        if m is not None:
            torch_rank = text[pos + 1 : text.index("]", pos)]
            pos = m.end()
    if text.startswith("[", pos):
        m = sglang.match(text, pos)
        if m is not None:
            parts = _parts(m)
            written = parts.get("TIMESTAMP") or parts.get("CLOCK_TIME") or ""
            stamp = parse_stamp("SGLANG", written)
            tags = parts.get("TAGS", "").strip() or None
            if stamp is None:
                bad = written.strip()
            env = Envelope(stamp, tags or rank or torch_rank, text[m.end() :], torch_rank, outer, writer, bad, stamp is None)
            return env._replace(process=process) if process is not None else env
    year = year_of(logger, dated) if logger is not None and dated is not None else None
    env = Envelope(None, rank or torch_rank, text[pos:], torch_rank, outer, writer, bad, process=process, wrapper_year=year)
    return env._replace(logger_stamp=logger, logger_rule=wrapped.logger_rule) if logger is not None else env


def _docker_carried(
    record: str, outer: Stamp | None, writer: str | None, bad: str | None, logger: Stamp | None
) -> Envelope | None:
    """The line a docker json-file record carries, in its own envelope; docker's time and stream
    are inside the others. None when ``record`` is no such record."""
    found = docker_json(record)
    if found is None:
        return None
    line, stream, stamp, bad_time = found
    inner = split_envelope(line)
    server, wrapper = inner.logger_stamp or logger, inner.outer or stamp or outer
    year = inner.wrapper_year
    if year is None and server is not None and wrapper is not None and wrapper.year is not None:
        year = year_of(server, wrapper)  # docker's time gives the year a server's logger leaves out
    return inner._replace(
        outer=wrapper,
        writer=inner.writer or stream or writer,
        bad_stamp=inner.bad_stamp or bad_time or bad,
        logger_stamp=server,
        wrapper_year=year,
    )


def year_of(stamp: Stamp, dated: Stamp) -> int | None:
    """The year of ``stamp`` (a month and day without a year) written when ``dated`` was: the
    same, or the one before or after across New Year (the wrapper in UTC, the program in local time)."""
    if stamp.year is not None or stamp.month is None or dated.year is None or dated.month is None:
        return None
    if stamp.month == 12 and dated.month == 1:
        return dated.year - 1
    if stamp.month == 1 and dated.month == 12:
        return dated.year + 1
    return dated.year
