"""ToyLLM: a pack of three messages and one failure phrase."""

from logphase.packs import builders as b
from logphase.packs.rows import BEGIN, Message, Pack, Signature, t
from logphase.vocabulary import events as ev
from logphase.vocabulary.causes import Cause, SignatureRole
from logphase.vocabulary.phases import Phase, Transition


def _note(grammar: str, evidence: Transition | None, anywhere: bool) -> Message:
    """A message whose row toyllm.lark writes beside its rule (//@): a note of its phase."""
    return Message(grammar, b.with_message(ev.StartupNote), evidence, stream=None, anywhere=anywhere)


PACK = Pack(
    name="toyllm",
    display_name="ToyLLM",
    grammars=("toyllm",),
    error_grammars=("toyllm_errors",),
    messages={
        "toy_version": Message("toyllm", b.with_message(ev.StartupNote), t(Phase.LAUNCH, BEGIN, server_level=True), stream=None),
        "toy_weights": Message("toyllm", b.simple(ev.WeightLoadBegin), t(Phase.WEIGHT_LOADING, BEGIN, server_level=True), stream=None),
        "toy_ready": Message("toyllm", b.with_message(ev.StartupNote), t(Phase.READY, BEGIN, server_level=True), stream=None),
    },
    signatures=(
        Signature(
            "toy_no_cache_room",
            Cause.KV_CACHE_INSUFFICIENT_MEMORY,
            SignatureRole.ROOT,
            Phase.MEMORY_POOL,
            hint="ToyLLM's cache did not fit: raise --toy-cache-memory.",
            before="device_oom",
        ),
    ),
    annotated_row=_note,
    start_rules=("toy_version",),
    launch_rules=("toy_version",),
)
