"""The message table: for each message a grammar recognises, the event it becomes and the phase it
is evidence of. The rows are the packs' (``logphase/packs/``: ``shared.py`` for PyTorch, NCCL,
Gloo, tqdm, uvicorn, the interpreter and tracebacks, ``sglang.py`` for SGLang's own); this module
combines them and reads them, knowing no server. Adding a message is one grammar rule (with its
``//:`` example line) and one row in its pack. A test checks that every message of every grammar
has its row and every row its message, and parses each row's example back to it.

The builders read what the grammar matched by name (``p.value("requested")``, ``p.fields["avail
mem"]``): no regular expression and no token position here.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import cache

from logphase.packs import PACKS, kept_regex
from logphase.packs.grammars import terminal_pattern
from logphase.packs.rows import HTTP_UP, LAUNCH_NOTE, ByLine, Message, Step
from logphase.recognising.notes import SCHEDULER_NOTE, catalogued_evidence, note_evidence
from logphase.vocabulary import events as ev
from logphase.vocabulary.phases import MarkerRole, Phase, Transition

__all__ = [
    "MESSAGES",
    "SCHEDULER_RULES",
    "SCHEDULER_SERVERS",
    "Message",
    "bar_evidence",
    "evidence_in",
    "evidence_of",
    "step_of",
    "stream_of",
    "transitions",
]


def _combined() -> dict[str, Message]:
    table: dict[str, Message] = {}
    for pack in PACKS:
        for rule, message in pack.messages.items():
            if rule in table:
                raise ValueError(f"message {rule!r}: a row in two packs")
            table[rule] = message
    return table


MESSAGES: dict[str, Message] = _combined()
SCHEDULER_RULES = frozenset(rule for rule, m in MESSAGES.items() if m.scheduler) | {SCHEDULER_NOTE}
# the servers whose schedulers print such lines (a single GPU's without a rank tag: TP0's); in a run of
# another server (vLLM: no row is a scheduler's), a scheduler's line of a catalogue it shares code with
# is its own process's, no rank's
SCHEDULER_SERVERS = frozenset(pack.name for pack in PACKS if any(m.scheduler for m in pack.messages.values()))
_MEANINGS: dict[str, dict[str, Transition]] = {pack.name: dict(pack.meanings) for pack in PACKS if pack.meanings}

# -- evidence that depends on the line --------------------------------------------------------------

WEIGHTS_BAR = Transition(Phase.WEIGHT_LOADING, MarkerRole.EVIDENCE)
CAPTURE_BAR = Transition(Phase.CUDA_GRAPH_CAPTURE, MarkerRole.EVIDENCE)
SERVING = Transition(Phase.READY, MarkerRole.SERVING, server_level=True)
SERVING_OR_WARMUP = Transition(Phase.READY, MarkerRole.SERVING_OR_WARMUP, server_level=True)
# what the warmups of the servers poll first (spec 2.3), then they send one generate request
WARMUP_PATHS = tuple(path for pack in PACKS for path in pack.warmup_paths)
LAUNCHERS = tuple(name for pack in PACKS for name in pack.launchers)


@cache
def _bar_kinds() -> tuple[tuple[re.Pattern[str], Transition], ...]:
    # tqdm.lark's descriptions of the bars that are evidence, tried in this order
    return (
        (kept_regex.compile(terminal_pattern("tqdm", "WEIGHTS_BAR_DESC")), WEIGHTS_BAR),
        (kept_regex.compile(terminal_pattern("tqdm", "CAPTURE_BAR_DESC")), CAPTURE_BAR),
    )


def bar_evidence(event: ev.EventBase) -> Transition | None:
    """What a bar counts decides (tqdm.lark): checkpoint shards are weight loading, the capture
    and compile bars are capture, any other bar says nothing."""
    # the grammar's descriptions end before the ':' (or ' (') that follows them in the line
    desc = f"{getattr(event, 'desc', '')}:"
    for pattern, transition in _bar_kinds():
        if pattern.match(desc):
            return transition
    return None


def access_evidence(event: ev.EventBase) -> Transition | None:
    """The warmup asks /model_info first (warmup evidence); every other request is served by a
    server that is up, the warmup's own generate request included (warmup after start-up lines)."""
    path = str(getattr(event, "path", ""))
    return HTTP_UP if path.startswith(WARMUP_PATHS) else SERVING_OR_WARMUP


def batch_evidence(event: ev.EventBase) -> Transition | None:
    """Decode statistics come every 40 decode steps: never from the warmup's 8 tokens. Prefill
    statistics come from the warmup's request too."""
    return SERVING if getattr(event, "stage", "") == "decode" else SERVING_OR_WARMUP


def warning_evidence(event: ev.EventBase) -> Transition | None:
    """A launcher's own warnings (its file is the warning's path): the server is being launched.
    The path is what comes before ': <category>:' (behind any envelope, which a wrapper such as
    logging's 'INFO:launcher:' puts before it)."""
    category = str(getattr(event, "category", ""))
    path = event.raw.split(f": {category}:", 1)[0] if category else event.raw.split(":", 1)[0]
    return LAUNCH_NOTE if any(name in path for name in LAUNCHERS) else None


def note_chooser(event: ev.EventBase) -> Transition | None:
    """A line whose text alone does not say its phase, printed by several functions of several
    phases: the release catalogue's note for the whole message says it (weak evidence)."""
    return catalogued_evidence(str(getattr(event, "message", "")))


CHOOSERS: dict[str, Callable[[ev.EventBase], Transition | None]] = {
    "bar": bar_evidence,
    "access": access_evidence,
    "batch": batch_evidence,
    "warning": warning_evidence,
    "note": note_chooser,
}


def step_of(event: ev.EventBase) -> Step | None:
    """The step whose duration the event's line prints (its ``elapsed_s``), when its row says one."""
    message = MESSAGES.get(event.rule or event.kind)
    return None if message is None else message.step


def step_name(step: Step, event: ev.EventBase) -> str:
    """The name the report gives a step the event's line prints: the step's, each ``{field}`` in it the
    event's value in lower case, spaces as underscores (SGLang's 'capture_{graph}': 'capture_draft_cuda_graph')."""
    if "{" not in step.name:
        return step.name
    values = {name: getattr(event, name, None) for name in _FIELD.findall(step.name)}
    return step.name.format(**{name: str(value or "").strip().lower().replace(" ", "_") for name, value in values.items()})


_FIELD = re.compile(r"\{(\w+)\}")


def stream_of(event: ev.EventBase) -> str | None:
    """Where the line of an event was written: 'stdout', 'stderr', or None when either."""
    message = MESSAGES.get(event.rule or event.kind)
    return "stderr" if message is None else message.stream


def evidence_of(event: ev.EventBase) -> Transition | None:
    """The phase evidence of an event: what its message's row says, given what the line says."""
    # events built by hand (tests, other programs) may leave out the rule: their kind names it
    message = MESSAGES.get(event.rule or event.kind)
    if message is None:
        return note_evidence(event)  # a line known from a release catalogue, or nothing
    if message.evidence is None:
        return None
    if isinstance(message.evidence, ByLine):
        return CHOOSERS[message.evidence.chooser](event)
    return message.evidence


def evidence_in(event: ev.EventBase, server: str | None) -> Transition | None:
    """The phase evidence of an event in a run of ``server`` (a pack's name, None when not known):
    what the server's pack says another pack's message means there, else what its row says."""
    meaning = _MEANINGS.get(server or "", {}).get(event.rule or event.kind)
    return meaning if meaning is not None else evidence_of(event)


def transitions() -> dict[str, Transition]:
    """Every fixed transition of the table, by message (for validating the table)."""
    table = {rule: m.evidence for rule, m in MESSAGES.items() if isinstance(m.evidence, Transition)}
    for server, meanings in _MEANINGS.items():
        table |= {f"{rule} ({server})": transition for rule, transition in meanings.items()}
    return table
