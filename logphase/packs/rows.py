"""What one pack of knowledge is: the row types every pack fills, and the ``Pack`` that holds them.

A pack is data only: the grammars it brings (by file stem, in ``grammars/<pack>/``), its message
rows (what event each message becomes and which phase it is evidence of), its failure signatures
(what an error's text means: cause, role, the phase it names, a hint), its function -> phase table
for traceback frames, and its hint rows (what to change, by cause and phase). The stages' readers
(``recognising/messages.py``, ``diagnosing/cause_table.py``, ``diagnosing/functions.py``,
``diagnosing/hints.py``) combine every pack of the registry (``logphase/packs/__init__.py``); they hold
no server's text themselves.

Every message row and every signature row has its example lines in its grammar, next to its rule
(``//: <line>`` comments, read by ``grammars.examples``): message text lives in ``grammars/`` only.
``tests/test_packs.py`` parses each example back to its row (rule, event, evidence, cause).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal, NamedTuple

from logphase.vocabulary.causes import Cause, SignatureRole
from logphase.vocabulary.phases import MarkerRole, Phase, Transition

if TYPE_CHECKING:  # the row types stay light: `logphase --help` reads the Cause vocabulary only
    from logphase.packs.builders import Builder


@dataclass(frozen=True)
class Signature:
    """One row of the cause table: a rule of a pack's error grammar and what its text means."""

    rule: str  # the rule of an error grammar (grammars/*/..._errors.lark, grammars/shared/errors.lark)
    cause: Cause | None  # None for wrappers: the quoted error's cause
    role: SignatureRole
    phase: Phase | None = None  # the phase the error itself names, whatever the markers say
    hint: str | None = None  # advice for this error in particular (else the cause's, by phase)
    # where a server's row stands among every pack's rows: just before this row of the shared pack (the
    # first row whose phrases occur decides, so echoes come first, then wrappers, then root causes from
    # the most specific to the most general); None: after them all. The shared pack's rows stand in the
    # order it lists them; a server places its rows among those, never among another server's
    before: str | None = None


class ByLine(NamedTuple):
    """Evidence that depends on what the line says: the name of a chooser of ``recognising/messages.py``
    (``bar``, ``access``, ``batch``, ``warning``, ``note``: the catalogue's note for the whole
    message), which reads the event and every pack's data."""

    chooser: str


Stream = Literal["stdout", "stderr"]


class Step(NamedTuple):
    """A duration the server measures and prints itself (vLLM's 'Model loading took ... seconds'),
    more precise than its stamps (whole seconds): a sub-step of the report's phase, in the event's
    ``elapsed_s``."""

    name: str  # what was measured, as the report names it
    phase: Phase  # the phase it is part of (the first one, for a step over several)
    through: Phase | None = None  # the last phase it covers, when it covers more than ``phase``
    whole: bool = False  # it measures the whole phase: the phase's duration is the server's measure
    # the name of the server's own trace span for the same step (vLLM's OpenTelemetry spans), so that a
    # start-up trace logphase sends names it as the server does (faces/fleet/otlp.py); None: it has none
    span: str | None = None
    # listed only where the phase holds more than it (other steps, more time): a measure the server
    # prints of every capture or load, which its phase's stamps agree with but for a draft model's
    quiet: bool = False
    # one of the parts the server measures a phase in, with other work between them that its lines
    # show inside the phase (V1's capture: torch.compile in the profiling run, then the graphs, with the
    # rest of the profiling and the KV-cache sizing between): the phase lasts the sum of its parts
    part: bool = False


@dataclass(frozen=True)
class Message:
    """One message a grammar recognises: the event it becomes and the phase it is evidence of."""

    grammar: str
    build: Builder | None  # None: a multi-line record's line, assembled by records.py
    evidence: Transition | ByLine | None = None
    # printed by the scheduler processes: a single-GPU server prints them without a rank tag, and
    # they are then TP0's
    scheduler: bool = False
    stream: Stream | None = "stderr"  # where its writer writes; None: either (a shell's, a launcher's)
    cause: Cause | None = None  # the cause a one-line error states (the row's event is an error line)
    # looked for further in a line too (behind an envelope logphase does not know); False for a
    # message whose head is common words ('Route: ', 'Request x failed'): known only at a line's start
    anywhere: bool = True
    step: Step | None = None  # the line prints how long this step took (its event's elapsed_s)
    # an error's text that holds this message names the rank that failed in this sub-rule ('Rank 1
    # scheduler died': TP1)
    names_rank: str | None = None
    # values the message states that a hint quotes: sub-rule -> the hint's value name ('the minimum
    # --mem-fraction-static that fits')
    hint_values: Mapping[str, str] = field(default_factory=dict)


class BatchLines(NamedTuple):
    """A server's batch statistics, the commonest line of a served log, read without its grammar's
    parser (recognising/classify.py's fast path, the bulk path's plain lines): the grammar and rule
    that read them, the terminal their head is, and the one a prefill batch's head is. Their
    ``key=value`` fields are the grammar's FIELD_KEY and FIELD_VALUE."""

    grammar: str
    rule: str
    head: str
    prefill_head: str


class ServerFunction(NamedTuple):
    name: str  # the function as a frame prints it ('load_model', '__init__', '<module>')
    phase: Phase
    file: str | None = None  # only in this file (basename): for generic names
    cls: str | None = None  # for a constructor (__init__): its class, as a statement calls it
    # the function runs this phase and the ones after it (ModelRunner.initialize loads the weights,
    # then makes the pools and the graphs): a frame in it is only a lower bound of the phase
    onward: bool = False
    # mined from the releases' call graphs (grammars/sglang/functions.json), not read by hand: a
    # frame of a hand row decides before any mined one (a mined row may be a helper of every phase)
    mined: bool = False
    # a library's function the server calls in one phase (torch.distributed's init_process_group):
    # the installed package it is in ('torch'); a row for any file names a server's function only,
    # and a frame of an installed library is evidence only by such a row (or one naming its file)
    library: str | None = None


@dataclass(frozen=True)
class Hint:
    """What to change for a cause: ``text`` is a ``str.format`` template over the values
    ``diagnosing/hints.py`` reads from the log (``{mfs_text}``, ``{phase}`` ...)."""

    cause: Cause
    text: str
    phases: frozenset[Phase | None] | frozenset[Phase] | None = None  # None: any phase (and none)
    needs: tuple[str, ...] = ()  # values the row needs (it is skipped without them)


@dataclass(frozen=True)
class Pack:
    """Everything logphase knows about one server, or one vocabulary servers share."""

    name: str  # its folder under grammars/ and its module under logphase/packs/
    display_name: str
    grammars: tuple[str, ...]  # the message grammars it brings (file stems), in dispatch order
    server: bool = True  # a server's pack (its messages are looked for anywhere in a line), or the shared one
    record_grammars: tuple[str, ...] = ()  # grammars of multi-line records' lines (records.py assembles them)
    error_grammars: tuple[str, ...] = ()  # grammars of error phrases, read by the cause table
    messages: Mapping[str, Message] = field(default_factory=dict)
    signatures: tuple[Signature, ...] = ()
    functions: tuple[ServerFunction, ...] = ()
    hints: tuple[Hint, ...] = ()
    # the server's config keys the hints quote (hint value -> key of the server's arguments)
    hint_settings: Mapping[str, str] = field(default_factory=dict)
    # the settings a summary shows (the text's model line, the metrics' labels), by logphase's names
    # (model, tp, dp, ep, pp; memory: the share of GPU memory the server takes) -> the server's keys
    summary_settings: Mapping[str, str] = field(default_factory=dict)
    # keys only this server's configuration dump has: a run whose dump holds one gets its advice
    config_marks: tuple[str, ...] = ()
    # the messages only this server prints, at a run's start: a run that prints one is this server's
    # (recognising/detect.py); its ``version`` sub-rule is the server's version
    start_rules: tuple[str, ...] = ()
    # those of them that are the first line a launch prints: one printed again after the run went on
    # is a relaunch
    launch_rules: tuple[str, ...] = ()
    # the envelope rules (grammars/shared/envelope.lark) only this server's processes print: its own
    # logger's prefix (``sglang_prefix``), its child processes' prefixes (``vllm_process``); a line
    # behind one is this server's
    prefix_rules: tuple[str, ...] = ()
    # the envelope rules of the server's own logger prefix (``sglang_prefix``, vLLM's ``vllm``): a line
    # behind one shows this server when nothing else in the run names one (vLLM's prefix is printed by
    # SGLang too, which imports vLLM's kernels: a short window of vLLM's errors names vLLM by it); with
    # the process prefixes of prefix_rules before it, the shape of its lines for other tools (the lnav
    # format ``logphase lnav-format`` derives from the grammar: faces/fleet/lnav.py)
    logger_rules: tuple[str, ...] = ()
    # the names argparse gives this server's launchers ('launch_server.py', 'vllm' of 'vllm serve'):
    # a usage error that names one shows this server when nothing else in the run names one
    programs: tuple[str, ...] = ()
    # lines as the server prints them, one per shape of its prefix: the samples of that lnav format
    # (lnav checks each against the format's patterns; tests/test_lnav.py reads each with the envelope)
    sample_lines: tuple[str, ...] = ()
    # other messages only this server prints (never another server that reuses its code): a window
    # that starts after the start lines is known by them
    own_rules: tuple[str, ...] = ()
    # what another pack's message means in a run of this server (uvicorn's start-up is vLLM's ready)
    meanings: Mapping[str, Transition] = field(default_factory=dict)
    # the programs that launch the server: their own Python warnings are launch evidence
    launchers: tuple[str, ...] = ()
    # what the server's warmup asks first (an HTTP path prefix): warmup evidence, not serving
    warmup_paths: tuple[str, ...] = ()
    # a traceback's frames (regular expressions over a frame's path): the server's own code, and a
    # test harness's (a harness's failure is not the server's)
    server_paths: tuple[str, ...] = ()
    harness_paths: tuple[str, ...] = ()
    # the server's start-up code (regular expressions over a frame's path) whose own raise and assert
    # statements are its checks: an exception raised there, which no signature reads, is a failed
    # check of the configuration or of the environment (diagnosing/diagnosis.py's Check), not a bare exception
    check_paths: tuple[str, ...] = ()
    # an HTTP server's request handling (regular expressions over a frame's path): a traceback
    # through it once the server is up is one request's failure (a 500), and the server serves on
    request_paths: tuple[str, ...] = ()
    # what an HTTP server logs on the line before the traceback of one request's failure (regular
    # expressions over that line's message): the traceback is that request's, whatever it holds
    request_headers: tuple[str, ...] = ()
    # what the server logs before the traceback of a process that dies from it (regular expressions
    # over the header), and the same when the input ends inside the header ('... hit an exception: Tra')
    fatal_headers: tuple[str, ...] = ()
    cut_headers: tuple[str, ...] = ()
    # its batch statistics (the server whose stamped prefix the bulk path reads counts them in bulk)
    batch_lines: BatchLines | None = None
    # the grammars of its configuration dump (each reads one rule named as the grammar): a line of
    # thousands of characters, read by the dump's own parser (packs/server_args.py)
    dump_grammars: tuple[str, ...] = ()
    # how the report's sentences speak of it: the command that launches it (stderr_missing), the flags
    # that leave CUDA graph capture more memory (memory_pressure)
    launch_command: str = ""
    capture_memory_flags: tuple[str, ...] = ()
    # the start-up messages of its releases that no grammar rule reads (a JSON file in its folder,
    # generated from its catalogue): recognising/notes.py reads them as weak phase evidence
    notes: str | None = None
    # the settings its releases change on their own and say so (a JSON file in its folder, generated
    # from its catalogue): recognising/overrides.py reads such a line as a parameter_override
    overrides: str | None = None
    # how a message whose row its grammar writes beside the rule (``//@ weight_loading evidence``)
    # becomes a row: (grammar, evidence, anywhere) -> its Message; None: every row is in ``messages``
    annotated_row: Callable[[str, Transition | None, bool], Message] | None = None
    # its folder in grammars/ (the registry sets it when it loads the pack)
    folder: Path = field(default_factory=Path)


# -- transitions the rows of several packs use ------------------------------------------------------

D, W, M, C = Phase.DISTRIBUTED_INIT, Phase.WEIGHT_LOADING, Phase.MEMORY_POOL, Phase.CUDA_GRAPH_CAPTURE
BEGIN, EVIDENCE, WEAK, END = MarkerRole.BEGIN, MarkerRole.EVIDENCE, MarkerRole.WEAK, MarkerRole.END
CLOSE = Transition(None, MarkerRole.CLOSE)
HTTP_UP = Transition(Phase.WARMUP, MarkerRole.EVIDENCE, server_level=True)
LAUNCH_NOTE = Transition(Phase.LAUNCH, MarkerRole.EVIDENCE, server_level=True)


def t(phase: Phase, role: MarkerRole, server_level: bool = False) -> Transition:
    return Transition(phase, role, server_level)


def annotated(note: str) -> tuple[Transition | None, bool]:
    """A row written beside a grammar's rule (``//@ <phase> <role> [server] [start]``, or ``//@ none
    [start]``): the evidence it gives (``server``: of the server as a whole, not of a rank) and
    whether it is looked for anywhere in a line (``start``: only at a message's start, for heads of
    common words). ValueError on anything else."""
    words = note.split()
    anywhere = "start" not in words
    words = [w for w in words if w != "start"]
    if words == ["none"]:
        return None, anywhere
    if len(words) not in (2, 3) or (len(words) == 3 and words[2] != "server"):
        raise ValueError(f"row note {note!r}: not '<phase> <role> [server] [start]' or 'none [start]'")
    return Transition(Phase(words[0]), MarkerRole(words[1]), server_level=len(words) == 3), anywhere
