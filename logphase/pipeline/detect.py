"""Which server a run is, and its version: read from the server's own start lines, never from a
stray line (SGLang imports vLLM's kernels and prints vLLM's platform line with vLLM's logger prefix;
SGLang 0.2-0.3 prints through vLLM's logger). A run of SGLang shows SGLang's own prefix; a run of
vLLM shows one of vLLM's start lines (its API server's version line, an engine's initialisation
line, a headless node's launch line) or the prefix of one of vLLM's processes (a window that starts
after the launch). A start line of another server than the run's starts a run
of its own; a server's first line printed again (``begins``) after the run went on is a relaunch.

The start lines are rules of the servers' grammars (``grammars/<pack>/``), listed in ``STARTS`` by
rule name; the version is their ``version`` sub-rule.
"""

from __future__ import annotations

import re
from functools import cache
from typing import NamedTuple

from logphase.pipeline.envelope import Envelope
from logphase.pipeline.grammars import first_terminals, parse, terminal_pattern
from logphase.servers.names import Server


class StartRule(NamedTuple):
    server: Server
    grammar: str
    rule: str
    begins: bool  # the first line a launch prints (a second one after the run went on: a relaunch)


# vLLM: "vLLM API server version X" (0.5-0.11), "vLLM server version X, serving model M" (newest),
# the newest's logo line with the version, "Initializing a V1 LLM engine (vX) ..." (every release; the
# first line of a run without a front end: the offline LLM class), a headless worker node's launch line
STARTS: tuple[StartRule, ...] = (
    StartRule("vllm", "vllm", "api_server_version", True),
    StartRule("vllm", "vllm", "server_version", True),
    StartRule("vllm", "vllm", "version_logo", False),
    StartRule("vllm", "vllm", "engine_init", False),
    StartRule("vllm", "vllm", "headless_launch", True),
)


class Start(NamedTuple):
    """A line that says which server runs: the server, its version when printed, whether it is the
    first line of a launch."""

    server: Server
    version: str | None = None
    begins: bool = False


@cache
def _heads() -> tuple[re.Pattern[str], dict[str, StartRule]]:
    """One pattern for what a start line begins with (one group per grammar), and the rows by rule."""
    by_grammar: dict[str, list[str]] = {}
    for row in STARTS:
        heads = (terminal_pattern(row.grammar, t) for t in first_terminals(row.grammar, row.rule))
        by_grammar.setdefault(row.grammar, []).extend(heads)
    alternatives = "|".join(f"(?P<{g}>{'|'.join(f'(?:{p})' for p in ps)})" for g, ps in by_grammar.items())
    return re.compile(alternatives), {row.rule: row for row in STARTS}


def server_start(env: Envelope) -> Start | None:
    """The start this line shows: SGLang's own prefix, a start line of a server's grammar, or a
    vLLM process prefix."""
    if env.stamped:
        return Start("sglang")
    found = _start_line(env.message) if env.message else None
    if found is None and env.process is not None:
        return Start("vllm")  # only vLLM's processes print these prefixes (envelope.lark's vllm_process)
    return found


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
