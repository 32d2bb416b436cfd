"""Which server a run is, and its version: read from the server's own start lines, never from a
stray line (SGLang imports vLLM's kernels and prints vLLM's platform line with vLLM's logger prefix;
SGLang 0.2-0.3 prints through vLLM's logger). A run of SGLang shows SGLang's own prefix; a run of
vLLM shows one of vLLM's start lines (its API server's version line, an engine's initialisation
line, a headless node's launch line) or the prefix of one of vLLM's processes (a window that starts
after the launch). A start line of another server than the run's starts a run
of its own; a server's first line printed again (``begins``) after the run went on is a relaunch.

The start lines are rules of the servers' grammars, listed by each pack (``Pack.start_rules``; the
first lines of a launch: ``launch_rules``), their version the ``version`` sub-rule; the prefixes only
one server's processes print are the envelope rules each pack names (``Pack.prefix_rules``).

This module is the one place that decides which server a run is: the machine asks it for a line's
start (``server_start``), for a line that only one server prints when no start was seen
(``server_of_rule``), for the server whose stamped prefix the bulk path reads (``STAMPED_SERVER``),
the report for the run's server in the end (``run_server``: else the weak signs, whose code a run's
tracebacks run, ``server_of_frames``, and whose logger prefix its lines carry or launcher a usage error
names, ``Start.weak``), and the
advice, when no line said, by the run's configuration dump (``server_of_config``); a summary reads a run's settings with its
server's keys (``summary_setting``). It names no server: the packs say all of it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import cache
from typing import Any, NamedTuple

from logphase.packs import PACKS, kept_regex
from logphase.packs.grammars import first_terminals, parse, terminal_pattern
from logphase.reading.envelope import Envelope
from logphase.recognising.messages import MESSAGES
from logphase.vocabulary.servers import Server


def _server_of_prefix(rule: str) -> Server | None:
    """The server whose processes alone print the envelope rule ``rule``'s prefix."""
    return next((pack.name for pack in PACKS if pack.server and rule in pack.prefix_rules), None)


# the server whose own prefix is envelope.lark's stamped one ("[2026-05-09 09:20:26 TP0] "), and the
# server whose child processes print its process prefixes ("(EngineCore_DP0 pid=N) ")
STAMPED_SERVER: Server | None = _server_of_prefix("sglang_prefix")
PROCESS_PREFIX_SERVER: Server | None = _server_of_prefix("vllm_process")
# each server's own code, as a traceback's frames show its path
_OWN_CODE: tuple[tuple[Server, re.Pattern[str]], ...] = tuple(
    (pack.name, kept_regex.compile("|".join(pack.server_paths))) for pack in PACKS if pack.server and pack.server_paths
)


def server_of_frames(paths: Iterable[str]) -> Server | None:
    """The server whose code a traceback runs: the one of its outermost frame in a server's code
    (SGLang's frames call into vLLM's kernels, never the other way), None when no frame is."""
    for path in paths:
        for server, code in _OWN_CODE:
            if code.search(path) is not None:
                return server
    return None


# the server whose launcher argparse names in a usage error ('launch_server.py: error: unrecognized ...')
_PROGRAMS: dict[str, Server] = {program: pack.name for pack in PACKS if pack.server for program in pack.programs}
_USAGE_ERROR = kept_regex.compile(
    r"^(?P<program>" + ("|".join(re.escape(p) for p in _PROGRAMS) or r"(?!)") + r")(?: [\w-]+)?: error: "
)


def _server_of_program(text: str) -> Server | None:
    """The server whose launcher a usage error names, None for any other line."""
    m = _USAGE_ERROR.match(text)
    return _PROGRAMS[m.group("program")] if m is not None else None


# the server whose logger each envelope rule of a logger others print too is (vLLM's "vllm")
LOGGER_SERVER: dict[str, Server] = {rule: pack.name for pack in PACKS if pack.server for rule in pack.logger_rules}


class StartRule(NamedTuple):
    server: Server
    grammar: str
    rule: str
    begins: bool  # the first line a launch prints (a second one after the run went on: a relaunch)


# every pack's start lines
STARTS: tuple[StartRule, ...] = tuple(
    StartRule(pack.name, MESSAGES[rule].grammar, rule, rule in pack.launch_rules)
    for pack in PACKS
    if pack.server
    for rule in pack.start_rules
)


class Start(NamedTuple):
    """A line that says which server runs: the server, its version when printed, whether it is the
    first line of a launch."""

    server: Server
    version: str | None = None
    begins: bool = False
    # only a logger prefix other servers print too: the run's server when nothing else names one
    weak: bool = False


@cache
def _heads() -> tuple[re.Pattern[str], dict[str, StartRule]]:
    """One pattern for what a start line begins with (one group per grammar), and the rows by rule."""
    by_grammar: dict[str, list[str]] = {}
    for row in STARTS:
        heads = (terminal_pattern(row.grammar, t) for t in first_terminals(row.grammar, row.rule))
        by_grammar.setdefault(row.grammar, []).extend(heads)
    alternatives = "|".join(f"(?P<{g}>{'|'.join(f'(?:{p})' for p in ps)})" for g, ps in by_grammar.items())
    return kept_regex.compile(alternatives), {row.rule: row for row in STARTS}


def server_start(env: Envelope) -> Start | None:
    """The start this line shows: SGLang's own prefix, a start line of a server's grammar, or a
    vLLM process prefix."""
    if env.stamped and STAMPED_SERVER is not None:
        return Start(STAMPED_SERVER)
    found = _start_line(env.message) if env.message else None
    if found is None and env.process is not None and PROCESS_PREFIX_SERVER is not None:
        return Start(PROCESS_PREFIX_SERVER)  # only that server's processes print these prefixes
    if found is None and env.logger_rule in LOGGER_SERVER:
        return Start(LOGGER_SERVER[env.logger_rule], weak=True)
    program = _server_of_program(env.message) if found is None and env.message else None
    if program is not None:
        return Start(program, weak=True)  # a weak sign too: a script may be named as a launcher is
    return found


# the server a message's rule shows, for the rules only that server prints: its start lines and its
# own lines (never a stray line of it: SGLang's log holds some of vLLM's lines)
SERVER_OF_RULE: dict[str, Server] = {
    rule: pack.name for pack in PACKS if pack.server for rule in (*pack.start_rules, *pack.own_rules)
}


def server_of_rule(rule: str | None) -> Server | None:
    """The server a line of this rule can only be (a window that starts after the start lines)."""
    return SERVER_OF_RULE.get(rule or "")


# a run whose server is not known gets the first server's advice (the one logphase read first)
DEFAULT_SERVER: Server = next(pack.name for pack in PACKS if pack.server)


def server_of_config(config: dict[str, Any]) -> Server | None:
    """The server a run's configuration dump belongs to (for its advice when no line said): the first
    pack one of whose own keys it holds; None when none does (or no dump): no server is known."""
    marked = (pack.name for pack in PACKS if pack.server and any(key in config for key in pack.config_marks))
    return next(marked, None)


def run_server(
    detected: Server | None, forced: Server | None, seen_stamped: bool, weak: tuple[Server | None, ...] = ()
) -> Server | None:
    """The server a run is reported as: ``--server`` (``forced``) when given, else what its lines
    showed (start lines, own lines), else the server of the stamped prefix when only its lines
    the bulk path counts were seen, else the first of the ``weak`` signs that names one (whose code
    its tracebacks run, whose logger prefix its lines carry), else unknown."""
    if forced is not None:
        return forced
    if detected is not None:
        return detected
    if seen_stamped:
        return STAMPED_SERVER
    return next((server for server in weak if server is not None), None)


def _start_line(text: str) -> Start | None:
    heads, rows = _heads()
    m = heads.match(text)
    if m is None or m.lastgroup is None:
        return None
    parsed = parse(m.lastgroup, text.rstrip("\r"))
    row = rows.get(parsed.rule) if parsed is not None else None
    if parsed is None or row is None:
        return None
    return Start(row.server, parsed.value("version"), row.begins)


def summary_setting(server: Server | None, config: dict[str, Any], name: str) -> tuple[str, Any] | None:
    """(the server's key, its value) for a setting a summary shows by logphase's name ('model',
    'tp', 'memory': see ``Pack.summary_settings``), read with the keys of the run's server, else of
    the server its dump belongs to; None when the dump does not give it."""
    wanted = server or server_of_config(config)
    pack = next((p for p in PACKS if p.name == wanted), None)
    key = pack.summary_settings.get(name) if pack is not None else None
    if key is None or config.get(key) is None:
        return None
    return key, config[key]
