"""The body of one logical line -> one typed event (or None when no grammar accepts it).

The grammar a line can belong to is picked by one regular expression composed from the terminals
each message of each grammar can start with (``recognising/messages.py`` lists the messages): Lark only sees
lines that can carry an event. A message is known by its text wherever it starts: when nothing
is recognised at the start of the body (an envelope logphase does not know, say), the servers'
messages are looked for further in the line. The builders of ``recognising/messages.py`` turn the match into
the event.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from functools import cache

from logphase.packs import PACKS, kept_regex
from logphase.packs.derived import cached, digest
from logphase.packs.grammars import first_literal, first_terminals, message_rules, terminal_pattern
from logphase.reading.envelope import Envelope
from logphase.recognising.messages import MESSAGES
from logphase.recognising.plain import MAX_PARSE_CHARS
from logphase.recognising.prefilter import LiteralFinder, alternatives, hyperscan_wanted, leading_literals, start_chars
from logphase.recognising.recognisers import recognise
from logphase.vocabulary import events as ev
from logphase.vocabulary.events import LineInfo

# the servers' own grammars: their messages are looked for anywhere in a line too
SERVER_GRAMMARS = tuple(g for pack in PACKS if pack.server for g in pack.grammars)
# writers other than the one a traceback comes from: their lines do not continue it
FOREIGN = tuple(g for pack in PACKS if not pack.server for g in pack.grammars)
# grammars tried on a line's body, in this order when heads of several match at its start
DISPATCHED = SERVER_GRAMMARS + FOREIGN
# the grammars of the servers' configuration dumps (read by packs/server_args.py), and the one batch
# statistics line the fast path reads (the stamped prefix's server's)
DUMP_GRAMMARS = tuple(g for pack in PACKS for g in pack.dump_grammars)
BATCH_LINES = next((pack.batch_lines for pack in PACKS if pack.batch_lines is not None), None)
# tqdm bars start with any description: they are told by their meter, wherever it is
PROBES = {"tqdm": ("BAR_PERCENT", "BAR_METER")}
# what every meter holds: a line without it is never a bar (tests/test_classify.py checks the grammar)
BAR_LITERAL = "%"


def _heads(grammar: str, anywhere: bool = False) -> list[str]:
    """The terminals a grammar's messages start with; ``anywhere``: only those of the messages that
    may be looked for further in a line (a row can say it is known only at a message's start)."""
    out: list[str] = []
    for rule in message_rules(grammar):
        if anywhere and rule in MESSAGES and not MESSAGES[rule].anywhere:
            continue
        for name in first_terminals(grammar, rule):
            pattern = terminal_pattern(grammar, name)
            if pattern not in out:
                out.append(pattern)
    return out


def _literal_led(pattern: str) -> bool:
    """A head that starts with three plain characters can be searched for anywhere in a line."""
    return re.match(r"(?:[A-Za-z0-9_=]|\\ ){3}", pattern) is not None


class _HeadIndex:
    """Heads matched at the start of a text, in order, compiled per the text's first character: only
    the heads that can start with it (``prefilter.start_chars``; a head that may start with anything
    is in every alternation). The alternation of those gives the match the alternation of all heads
    would (the others cannot match there), and a start compiles only what its lines need: the
    alternation of every head of every grammar costs ~0.1 s to compile, and Python keeps no compiled
    pattern between runs. ``groups``: each head's group (the grammar that a match's ``lastgroup``
    names), or none."""

    def __init__(self, heads: list[tuple[str, str]], named: bool) -> None:
        # each head's top-level alternatives apart: the alternatives of a long head (a terminal that
        # lists messages) start with many characters, each alternative with one
        split = [_head_parts()[h] for _, h in heads]
        self._heads = [(group, alternative) for (group, _), parts in zip(heads, split, strict=True) for alternative, _ in parts]
        starts = [chars for parts in split for _, chars in parts]
        self._named = named
        self._anything = tuple(i for i, chars in enumerate(starts) if chars is None)
        by_char: dict[str, set[int]] = {}
        for i, chars in enumerate(starts):
            for char in chars or ():
                by_char.setdefault(char, set(self._anything)).add(i)
        self._by_char = {char: tuple(sorted(found)) for char, found in by_char.items()}
        self._compiled: dict[tuple[int, ...], re.Pattern[str] | None] = {}

    def match(self, text: str) -> re.Match[str] | None:
        chosen = self._by_char.get(text[:1], self._anything)
        pattern = self._compiled[chosen] if chosen in self._compiled else self._compile(chosen)
        return None if pattern is None else pattern.match(text)

    def _compile(self, chosen: tuple[int, ...]) -> re.Pattern[str] | None:
        groups: dict[str, list[str]] = {}
        for i in chosen:
            group, head = self._heads[i]
            groups.setdefault(group, []).append(f"(?:{head})")
        if self._named:
            alternatives = [f"(?P<{group}>{'|'.join(heads)})" for group, heads in groups.items()]
        else:
            alternatives = [h for heads in groups.values() for h in heads]
        pattern = kept_regex.compile("|".join(alternatives)) if alternatives else None
        self._compiled[chosen] = pattern
        return pattern


@cache
def _head_parts() -> dict[str, list[tuple[str, frozenset[str] | None]]]:
    """Each dispatched head's top-level alternatives (``prefilter.alternatives``) with the
    characters each can start with (``prefilter.start_chars``), kept on disk (derived.py) by the
    heads' own text: the analysis parses each pattern, which costs what compiling it would."""
    heads = sorted({h for g in DISPATCHED if g not in PROBES for h in _heads(g)})

    def build() -> list[list[tuple[str, str | None]]]:
        return [[(part, _chars_text(start_chars(part))) for part in alternatives(head)] for head in heads]

    def load(data: object) -> dict[str, list[tuple[str, frozenset[str] | None]]]:
        if not isinstance(data, list) or len(data) != len(heads):
            raise ValueError("head alternatives: not one entry a head")
        return {
            head: [(str(part), None if chars is None else frozenset(str(chars))) for part, chars in parts]
            for head, parts in zip(heads, data, strict=True)
        }

    return cached("head-alternatives", digest(heads), build, load)


def _chars_text(chars: frozenset[str] | None) -> str | None:
    return None if chars is None else "".join(sorted(chars))


@cache
def _start_heads() -> _HeadIndex:
    """The heads of every dispatched grammar at the start of a body, by grammar, in dispatch order."""
    return _HeadIndex([(g, h) for g in DISPATCHED if g not in PROBES for h in _heads(g)], named=True)


@cache
def _grammar_heads(grammar: str) -> _HeadIndex:
    """The heads of one grammar at the start of a body."""
    return _HeadIndex([(grammar, h) for h in _heads(grammar)], named=False)


@cache
def _probes() -> re.Pattern[str]:
    """The progress-bar probes: a bar is told by its meter, wherever it is."""
    return kept_regex.compile(
        "|".join(
            f"(?P<{grammar}>{''.join(terminal_pattern(grammar, t) for t in names)})" for grammar, names in PROBES.items()
        )
    )


@cache
def _anywhere() -> re.Pattern[str]:
    """The server grammars' heads looked for anywhere in a line, one group per grammar (the group
    that matched names the grammar to parse with)."""
    return kept_regex.compile(
        "|".join(
            f"(?P<{g}>{'|'.join(f'(?:{h})' for h in _heads(g, anywhere=True) if _literal_led(h))})"
            for g in SERVER_GRAMMARS
            if any(_literal_led(h) for h in _heads(g, anywhere=True))
        )
    )


def _fast_paths() -> tuple[re.Pattern[str], re.Pattern[str], re.Pattern[str], re.Pattern[str], re.Pattern[str]]:
    """Regexes for the high-volume lines (access log, batch statistics, NCCL INFO), composed from
    the grammars' own terminals: a served log has millions of these, and Lark costs ~50 us each."""
    t = terminal_pattern
    access = kept_regex.compile(
        rf"(?P<level>{t('http', 'UVICORN_LEVEL')}) +(?P<client>{t('http', 'CLIENT')}) - \""
        rf"(?P<method>{t('http', 'METHOD')}) (?P<path>{t('http', 'PATH')}) {t('http', 'PROTOCOL')}\" (?P<status>\d+)"
    )
    g = BATCH_LINES.grammar if BATCH_LINES is not None else ""
    never = r"(?!)"
    batch = kept_regex.compile(t(g, BATCH_LINES.head) if BATCH_LINES is not None else never)
    # the batch statistics of a prefill
    prefill = kept_regex.compile(t(g, BATCH_LINES.prefill_head) if BATCH_LINES is not None else never)
    field = kept_regex.compile(
        rf"(?P<key>{t(g, 'FIELD_KEY')})(?:=|: )(?P<value>{t(g, 'FIELD_VALUE')})" if BATCH_LINES is not None else never
    )
    nccl_info = kept_regex.compile(
        rf"(?P<host>{t('nccl', 'NCCL_HOST')}):(?P<pid>\d+):\d+ \[(?P<device>\d+)\] NCCL INFO(?: (?P<rest>.*))?", re.DOTALL
    )
    return access, batch, prefill, field, nccl_info


_ACCESS, _BATCH, _PREFILL_BATCH, _FIELD, _NCCL_INFO = _fast_paths()


def all_heads() -> list[str]:
    """Every head the dispatch looks for, at a message's start or (SGLang's) anywhere in it; the
    progress-bar probes aside (they need a '%'): what can make a line an event (prefilter.py)."""
    return [h for g in DISPATCHED if g not in PROBES for h in _heads(g)] + [
        h for g in SERVER_GRAMMARS for h in _heads(g)
    ]


def foreign_source(env: Envelope) -> bool:
    """True when the line is another writer's (a stamped line, NCCL, Gloo, glog, uvicorn, a bar,
    a Python warning, a server's own one-line failure report): it cannot continue a traceback."""
    if env.stamped:
        return True
    text = env.message
    if not text:
        return False
    m = _start_heads().match(text)
    if m is not None:
        return m.lastgroup in FOREIGN or _reports_failure(m.lastgroup, text)
    return _has_bar_meter(text)


def _reports_failure(grammar: str | None, text: str) -> bool:
    """Whether a server's grammar reads the text as a one-line failure report (a row that states a
    cause): a record of its own, never the next line of another exception's message. An exception's
    own line ('RuntimeError: Not enough memory ...') is its traceback's, whatever a grammar reads in it."""
    if grammar not in SERVER_GRAMMARS or len(text) > MAX_PARSE_CHARS or _exception_line().match(text):
        return False
    parsed = recognise(grammar, text)
    row = MESSAGES.get(parsed.rule) if parsed is not None else None
    return row is not None and row.cause is not None


@cache
def _exception_line() -> re.Pattern[str]:
    """An exception's line ('RuntimeError: ...'): traceback.lark's exception type and its colon (a
    C++ name's '::' is no exception's: 'tensorrt_llm::common::TllmException: ...' is a logged line)."""
    return kept_regex.compile(terminal_pattern("traceback", "EXC_TYPE") + ":(?!:)")


def _has_bar_meter(text: str) -> bool:
    """Whether a progress bar's meter is in the text (looked for only where its literal is)."""
    return BAR_LITERAL in text and _probes().search(text) is not None


def classify(env: Envelope, at: LineInfo) -> ev.EventBase | None:
    """The event the body of a line is, or None."""
    text = env.message
    if not text:
        return None
    if len(text) > MAX_PARSE_CHARS and not any(literal in text for literal in _DUMP_LITERALS):
        return None  # only a configuration dump is built from a line this long (see _build)
    event = _at_start(text, at)
    if event is not None:
        return event
    # a bar longer than MAX_PARSE_CHARS is never built: no need to look for its meter (a search
    # through a long line of garbage with many '%' costs milliseconds)
    if len(text) <= MAX_PARSE_CHARS and _has_bar_meter(text):
        event = _build("tqdm", text, at)
        if event is not None:
            return event
    return _further_in(text, at)


def _at_start(text: str, at: LineInfo) -> ev.EventBase | None:
    """A message at the start of the body: the grammar whose head matches first, then any other."""
    m = _start_heads().match(text)
    if m is None:
        return None
    event = _build(m.lastgroup or "", text, at)
    if event is not None:
        return event
    # another grammar's head may match here too
    for grammar in DISPATCHED:
        if grammar not in PROBES and grammar != m.lastgroup and per_grammar_match(grammar, text):
            event = _build(grammar, text, at)
            if event is not None:
                return event
    return None


def _further_in(text: str, at: LineInfo) -> ev.EventBase | None:
    """A message behind something logphase does not know (another logger's prefix): by its text."""
    if len(text) > _LONG_LINE and not any(lead in text for lead in _anywhere_leads()):
        return None  # no server message starts anywhere in it: a long line is not scanned for one
    anywhere = _anywhere()
    _SEARCHED[0] += 1
    if _SEARCHED[0] <= _FINDER_AFTER:  # a few lines: the alternation itself, nothing more to build
        return _first_found(text, at, (m.start() for m in anywhere.finditer(text, 1)))
    finder = _lead_finder()
    if finder is not None and not finder.line_hits(text.encode("utf-8", "replace")):
        return None  # Hyperscan: no head's literal start anywhere in the line
    leads = _lead_pattern()
    return _first_found(text, at, _starts(text, leads, anywhere))


def _starts(text: str, leads: re.Pattern[str], anywhere: re.Pattern[str]) -> Iterator[int]:
    """Where anywhere.finditer(text, 1) finds its matches, trying the alternation only where a
    head's literal start is (every match starts with one): searching the alternation tries every
    head at every position."""
    position = 1
    while (lead := leads.search(text, position)) is not None:
        start = lead.start()
        found = anywhere.match(text, start)
        if found is None:
            position = start + 1
            continue
        position = found.end()
        yield start


def _first_found(text: str, at: LineInfo, starts: Iterable[int]) -> ev.EventBase | None:
    """The first event of the SGLang messages found at ``starts``."""
    anywhere = _anywhere()
    for start in starts:
        if text[start - 1] in _QUOTES:
            continue  # a message quoted in a source line ('raise ValueError("No available ...'): not the message
        found = anywhere.match(text, start)
        event = _build(found.lastgroup or "", text[start:], at) if found is not None else None
        if event is not None:
            return event
    return None


@cache
def _lead_pattern() -> re.Pattern[str]:
    """The literal starts of the heads searched anywhere, as one alternation: where a head may start."""
    return kept_regex.compile("|".join(re.escape(lead) for lead in sorted(_anywhere_leads(), key=lambda s: (-len(s), s))))


@cache
def _lead_finder() -> LiteralFinder | None:
    """Hyperscan's finder of the same literals, when installed: whether any is in a line at all,
    ~20x faster than the alternation; built once a log has had _FINDER_AFTER such lines (building it
    costs more than a short log's searches)."""
    finder = LiteralFinder(_anywhere_leads(), use_hyperscan=True, name="anywhere") if hyperscan_wanted() else None
    return finder if finder is not None and finder.engine == "hyperscan" else None


_FINDER_AFTER = 256  # lines searched further in before the literal starts' search is built
_SEARCHED = [0]  # lines searched for a message further in, in this process


_QUOTES = frozenset("\"'")
# what every head of a dump grammar holds (tests/test_binary_input.py checks it)
_DUMP_LITERALS = tuple(first_literal(g, g) for g in DUMP_GRAMMARS)
# Lines longer than this are first searched for the literal starts of the SGLang messages looked
# for anywhere in a line (str.find is a fast search; the alternation of the heads tries each head
# at each position, ~1 us a character)
_LONG_LINE = 1024


@cache
def _anywhere_leads() -> tuple[str, ...]:
    """What each SGLang head searched anywhere starts with (they are literal-led): a line holding
    none of these holds no match of the ``anywhere`` pattern. Kept on disk (derived.py) by the
    heads' text: reading them parses each."""
    heads = [h for g in SERVER_GRAMMARS for h in _heads(g, anywhere=True) if _literal_led(h)]

    def build() -> list[str]:
        leads: set[str] = set()
        for head in heads:
            found = leading_literals(head)
            assert found, f"a literal-led head without a literal start: {head}"
            leads |= found
        return sorted(leads)

    def load(data: object) -> tuple[str, ...]:
        if not isinstance(data, list) or not all(isinstance(s, str) for s in data):
            raise TypeError("anywhere leads: not a list of strings")
        return tuple(data)

    return cached("anywhere-leads", digest(heads), build, load)


def _build(grammar: str, text: str, at: LineInfo) -> ev.EventBase | None:
    if grammar in DUMP_GRAMMARS:
        return _server_args(grammar, text, at)
    if len(text) > MAX_PARSE_CHARS:
        return None
    fast = _fast_path(grammar, text, at)
    if fast is not None:
        return fast
    parsed = recognise(grammar, text)  # the grammar's compiled expressions, Lark where they cannot tell
    if parsed is None:
        return None
    message = MESSAGES.get(parsed.rule)
    if message is None or message.build is None:
        return None
    event = message.build(parsed, text, at)
    if parsed.rule == "http_other":
        # a server sometimes logs its own markers through uvicorn's logger (SGLang's ("INFO:     The server is
        # fired up and ready to roll!"): the SGLang meaning wins
        inner = parsed.first("HTTP_TEXT") or ""
        for own in SERVER_GRAMMARS if inner else ():
            if per_grammar_match(own, inner):
                return _build(own, inner, at) or event
    return event


def per_grammar_match(grammar: str, text: str) -> bool:
    return _grammar_heads(grammar).match(text) is not None


def _fast_path(grammar: str, text: str, at: LineInfo) -> ev.EventBase | None:
    """The events of the commonest lines without Lark: what the grammars would give."""
    if BATCH_LINES is not None and grammar == BATCH_LINES.grammar:
        head = _BATCH.match(text)
        if head is None:
            return None
        fields = {f.group("key").strip(): f.group("value").strip() for f in _FIELD.finditer(text, head.end())}
        stage = "prefill" if _PREFILL_BATCH.match(text) else "decode"
        return at.event(ev.RuntimeBatch, BATCH_LINES.rule, stage=stage, fields=fields)
    if grammar == "http":
        m = _ACCESS.match(text)
        if m is not None:
            return at.event(
                ev.HttpAccess,
                "http_access",
                client=m.group("client"),
                method=m.group("method"),
                path=m.group("path"),
                status=int(m.group("status")),
            )
    if grammar == "nccl":
        m = _NCCL_INFO.fullmatch(text)
        if m is not None:
            return at.event(
                ev.NcclLog,
                "nccl_info",
                level="INFO",
                host=m.group("host"),
                pid=int(m.group("pid")),
                device=int(m.group("device")),
                source=None,
                message=(m.group("rest") or "").strip(),
            )
    return None


def _server_args(grammar: str, text: str, at: LineInfo) -> ev.EventBase:
    """A configuration dump: its grammar's own rule, read by the dump's parser."""
    from logphase.packs.server_args import parse_server_args

    # thousands of characters, but its grammar has no backtracking field patterns
    args, fmt = parse_server_args(text)
    return at.event(ev.ServerArgs, grammar, args=args, args_format=fmt)
