"""The message table: for each message a grammar recognises, the event it becomes and the phase it
is evidence of. With the grammars in ``grammars/``, this is the whole definition of what logphase
understands; adding a message is one grammar rule, one row here and a fixture line. A test checks
that every message of every grammar has its row and every row its message.

The builders read what the grammar matched by name (``p.value("requested")``, ``p.fields["avail
mem"]``): no regular expression and no token position here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from logphase.pipeline import builders as b
from logphase.pipeline import events as ev
from logphase.pipeline.builders import Builder
from logphase.pipeline.phases import Phase, Role, Transition
from logphase.pipeline.values import gigabytes, integer, number

Chooser = Callable[[ev.EventBase], Transition | None]  # evidence that depends on what the line says


@dataclass(frozen=True)
class Message:
    grammar: str
    build: Builder | None  # None: a multi-line record's line, assembled by records.py
    evidence: Transition | Chooser | None = None
    # printed by the scheduler processes: a single-GPU server prints them without a rank tag, and
    # they are then TP0's
    scheduler: bool = False


# -- evidence that depends on the line ---------------------------------------------------------------

WEIGHTS_BAR = Transition(Phase.WEIGHT_LOADING, Role.EVIDENCE)
CAPTURE_BAR = Transition(Phase.CUDA_GRAPH_CAPTURE, Role.EVIDENCE)
HTTP_UP = Transition(Phase.WARMUP, Role.EVIDENCE, server_level=True)
# what the warmup polls first (spec 2.3), then it sends one generate / chat / encode request
WARMUP_MODEL_INFO = ("/model_info", "/get_model_info")


def bar_evidence(event: ev.EventBase) -> Transition | None:
    """Shard bars are weight loading; 'Capturing ...' and 'Compiling num tokens' bars are capture."""
    desc = getattr(event, "desc", "")
    if "shards" in desc or "checkpoint" in desc:
        return WEIGHTS_BAR
    if desc.startswith(("Capturing", "Compiling num tokens")):
        return CAPTURE_BAR
    return None


SERVING = Transition(Phase.READY, Role.SERVING, server_level=True)
SERVING_OR_WARMUP = Transition(Phase.READY, Role.SERVING_OR_WARMUP, server_level=True)
LAUNCH_NOTE = Transition(Phase.LAUNCH, Role.EVIDENCE, server_level=True)


def access_evidence(event: ev.EventBase) -> Transition | None:
    """The warmup asks /model_info first (warmup evidence); every other request is served by a
    server that is up, the warmup's own generate request included (warmup after start-up lines)."""
    path = str(getattr(event, "path", ""))
    return HTTP_UP if path.startswith(WARMUP_MODEL_INFO) else SERVING_OR_WARMUP


def batch_evidence(event: ev.EventBase) -> Transition | None:
    """Decode statistics come every 40 decode steps: never from the warmup's 8 tokens. Prefill
    statistics come from the warmup's request too."""
    return SERVING if getattr(event, "stage", "") == "decode" else SERVING_OR_WARMUP


def warning_evidence(event: ev.EventBase) -> Transition | None:
    """The launcher's own warnings ('python -m sglang.launch_server' is still supported ...)."""
    return LAUNCH_NOTE if "launch_server" in event.raw.split(":", 1)[0] else None


def _t(phase: Phase, role: Role, server_level: bool = False) -> Transition:
    return Transition(phase, role, server_level)


D, W, M, C = Phase.DISTRIBUTED_INIT, Phase.WEIGHT_LOADING, Phase.MEMORY_POOL, Phase.CUDA_GRAPH_CAPTURE
BEGIN, EVIDENCE, WEAK, END = Role.BEGIN, Role.EVIDENCE, Role.WEAK, Role.END
CLOSE = Transition(None, Role.CLOSE)

# -- the table -----------------------------------------------------------------------------------------

MESSAGES: dict[str, Message] = {
    # server_args.lark: the dump (its builder is in classify.py: a grammar of its own values)
    "server_args": Message("server_args", None, _t(Phase.LAUNCH, BEGIN, server_level=True)),
    # sglang.lark
    "dist_init_begin": Message("sglang", b.simple(ev.DistInitBegin), _t(D, BEGIN), scheduler=True),
    "dist_init_end": Message(
        "sglang",
        b.fields(ev.DistInitEnd, elapsed_s=("elapsed", number), mem_usage_gb=("mem usage", gigabytes)),
        _t(D, END),
        scheduler=True,
    ),
    "memory_baseline": Message(
        "sglang", b.fields(ev.MemoryBaseline, mem_usage_gb=("mem usage", gigabytes)), _t(D, WEAK), scheduler=True
    ),
    "nccl_version": Message("sglang", b.nccl_version, _t(D, WEAK), scheduler=True),
    "nccl_warmup": Message("sglang", b.with_message(ev.CollectiveWarmup), _t(D, WEAK), scheduler=True),
    "weight_load_begin": Message(
        "sglang", b.fields(ev.WeightLoadBegin, avail_mem_gb=("avail mem", gigabytes)), _t(W, BEGIN), scheduler=True
    ),
    "weight_load_end": Message("sglang", b.weight_load_end, _t(W, END), scheduler=True),
    "kv_cache_dtype": Message("sglang", b.kv_cache_dtype, _t(M, EVIDENCE), scheduler=True),
    "kv_cache_allocated": Message("sglang", b.kv_cache_allocated, _t(M, EVIDENCE), scheduler=True),
    "mamba_cache_allocated": Message(
        "sglang",
        b.fields(
            ev.MambaCacheAllocated,
            max_mamba_cache_size=("max_mamba_cache_size", integer),
            conv_state_gb=("conv_state size", gigabytes),
            ssm_state_gb=("ssm_state size", gigabytes),
        ),
        _t(M, EVIDENCE),
        scheduler=True,
    ),
    "swa_memory_pool": Message("sglang", b.with_message(ev.SwaMemoryPool), _t(M, EVIDENCE), scheduler=True),
    "memory_pool_end": Message(
        "sglang", b.fields(ev.MemoryPoolEnd, avail_mem_gb=("avail mem", gigabytes)), _t(M, END), scheduler=True
    ),
    "capture_begin": Message("sglang", b.capture_begin, _t(C, BEGIN), scheduler=True),
    "capture_end": Message("sglang", b.capture_end, _t(C, END), scheduler=True),
    "capture_sizes": Message("sglang", b.capture_sizes, _t(C, EVIDENCE), scheduler=True),
    "capture_failed": Message("sglang", b.error("capture_failed")),
    "scheduler_ready": Message("sglang", b.scheduler_ready, CLOSE, scheduler=True),
    "startup_timings": Message("sglang", b.startup_timings, Transition(None, Role.CLOSE, server_level=True)),
    "server_ready": Message("sglang", b.simple(ev.ServerReady), _t(Phase.READY, BEGIN, server_level=True)),
    "pd_warmup": Message("sglang", b.with_message(ev.WarmupMarker), HTTP_UP),
    "warmup_failed": Message("sglang", b.error("warmup_failed")),
    "sigquit": Message("sglang", b.child("sigquit")),
    "kill_process_tree": Message("sglang", b.child("kill_process_tree")),
    "scheduler_died": Message("sglang", b.child("scheduler_died", "died_code")),
    "scheduler_dead": Message("sglang", b.child("scheduler_dead")),
    "exit_code": Message("sglang", b.child("exit_code", "code")),
    "init_failed": Message("sglang", b.error("init_failed")),
    "watchdog_timeout": Message("sglang", b.error("watchdog_timeout")),
    "subprocess_crashed": Message("sglang", b.child("subprocess_crashed", "code")),
    "child_terminated": Message("sglang", b.child("child_terminated", "code")),
    "not_enough_memory": Message("sglang", b.error("not_enough_memory")),
    "kv_no_room": Message("sglang", b.error("not_enough_memory")),
    "port_in_use": Message("sglang", b.error("port_in_use")),
    "memory_imbalance": Message("sglang", b.memory_imbalance),
    "override_reduced": Message("sglang", b.override("setting", "requested", "actual")),
    "override_reset": Message("sglang", b.override("phrase", None, "actual")),
    "override_profiled": Message("sglang", b.override("setting_key", "requested", "actual")),
    "override_capped": Message("sglang", b.override("setting", None, "actual")),
    "override_disabled": Message("sglang", b.override_disabled),
    "override_adjusted": Message("sglang", b.override_adjusted),
    "shutdown": Message("sglang", b.with_message(ev.Shutdown)),
    "runtime_batch": Message("sglang", b.runtime_batch, batch_evidence),
    "attention_backend_default": Message("sglang", b.with_message(ev.StartupNote), _t(Phase.LAUNCH, EVIDENCE, server_level=True)),
    "custom_allreduce": Message("sglang", b.with_message(ev.StartupNote), _t(D, WEAK), scheduler=True),
    "allreduce_path": Message("sglang", b.with_message(ev.StartupNote), _t(D, WEAK), scheduler=True),
    "weights_format": Message("sglang", b.with_message(ev.StartupNote), _t(W, EVIDENCE), scheduler=True),
    "hf_snapshot": Message("sglang", b.with_message(ev.StartupNote), _t(W, EVIDENCE), scheduler=True),
    "swa_pool_usage": Message("sglang", b.with_message(ev.StartupNote), _t(M, EVIDENCE), scheduler=True),
    "max_concurrent_requests": Message("sglang", b.with_message(ev.StartupNote), _t(M, EVIDENCE), scheduler=True),
    "cuda_graph_addresses": Message("sglang", b.with_message(ev.StartupNote), _t(C, WEAK), scheduler=True),
    # gloo.lark
    "gloo_connected": Message("gloo", b.gloo, _t(D, WEAK)),
    "gloo_not_connected": Message("gloo", b.gloo_not_connected, _t(D, WEAK)),
    "gloo_info": Message("gloo", b.gloo, _t(D, WEAK)),
    # b.nccl.lark
    "nccl_info": Message("nccl", b.nccl("INFO"), _t(D, WEAK)),
    "nccl_warn": Message("nccl", b.nccl("WARN"), _t(D, WEAK)),
    "nccl_trace": Message("nccl", b.nccl("TRACE")),
    "nccl_bare_version": Message("nccl", b.nccl("VERSION")),
    # torch.lark
    "elastic_failed": Message("torch", b.torch_child("elastic_failed")),
    "closing_signal": Message("torch", b.torch_child("closing_signal")),
    "pg_not_destroyed": Message("torch", b.torch_child("pg_not_destroyed")),
    "collective_timeout": Message("torch", b.distributed("collective_timeout")),
    "nccl_aborting": Message("torch", b.distributed("nccl_abort")),
    "store_timeout": Message("torch", b.distributed("store_timeout")),
    "socket_failure": Message("torch", b.distributed("socket_failure")),
    "torch_other": Message("torch", b.torch_other),
    # tqdm.lark
    "progress_bar": Message("tqdm", b.progress_bar, bar_evidence),
    # http.lark
    "http_started": Message("http", b.http_state("started"), HTTP_UP),
    "http_waiting": Message("http", b.http_state("waiting"), HTTP_UP),
    "http_startup_complete": Message("http", b.http_state("startup_complete"), HTTP_UP),
    "http_running": Message("http", b.http_state("running"), HTTP_UP),
    "http_access": Message("http", b.http_access, access_evidence),
    "http_bind_failed": Message("http", b.bind_failed),
    "http_startup_failed": Message("http", b.http_state("startup_failed")),
    "http_shutdown": Message("http", b.http_state("shutdown")),
    "http_other": Message("http", b.http_state("other")),
    # process.lark
    "python_warning": Message("process", b.python_warning, warning_evidence),
    "killed": Message("process", b.killed),
    "shell_signal": Message("process", b.process_error("shell")),
    "interpreter_error": Message("process", b.process_error("interpreter", 1), LAUNCH_NOTE),
    "argument_error": Message("process", b.process_error("argparse", 2), LAUNCH_NOTE),
    "launcher_exit": Message("process", b.process_error("launcher")),
    "runtime_abort": Message("process", b.process_error("runtime")),
    # traceback.lark: the lines of a multi-line record (records.py)
    "tb_header": Message("traceback", None),
    "tb_thread_exception": Message("traceback", None),
    "tb_fatal": Message("traceback", None),
    "tb_thread_dump": Message("traceback", None),
    "tb_extensions": Message("traceback", None),
    "tb_frame": Message("traceback", None),
    "tb_chain": Message("traceback", None),
    "tb_terminate": Message("traceback", None),
    "tb_what": Message("traceback", None),
    "tb_cxx_origin": Message("traceback", None),
    "tb_cxx_frame": Message("traceback", None),
    "tb_exception": Message("traceback", None),
}

# where each source writes (spec section 7): SGLang's logger, uvicorn's startup lines, torch, tqdm and
# Python's warnings go to stderr; Gloo's connection lines (format A), NCCL's debug output and
# uvicorn's access log to stdout
_STDOUT = frozenset(
    {"gloo_connected", "gloo_not_connected", "nccl_info", "nccl_warn", "nccl_trace", "nccl_bare_version", "http_access"}
)
_STREAMLESS = frozenset({"killed", "shell_signal", "launcher_exit"})  # the shell's, a launcher's


def stream_of(event: ev.EventBase) -> str | None:
    """Where the line of an event was written: 'stdout', 'stderr', or None when either."""
    rule = event.rule or event.kind
    if rule in _STDOUT:
        return "stdout"
    if rule in _STREAMLESS:
        return None
    return "stderr"


SCHEDULER_RULES = frozenset(rule for rule, m in MESSAGES.items() if m.scheduler)


def evidence_of(event: ev.EventBase) -> Transition | None:
    """The phase evidence of an event: what its message's row says, given what the line says."""
    # events built by hand (tests, other programs) may leave out the rule: their kind names it
    message = MESSAGES.get(event.rule or event.kind)
    if message is None or message.evidence is None:
        return None
    if isinstance(message.evidence, Transition):
        return message.evidence
    return message.evidence(event)


def transitions() -> dict[str, Transition]:
    """Every fixed transition of the table, by message (for validating the table)."""
    return {rule: m.evidence for rule, m in MESSAGES.items() if isinstance(m.evidence, Transition)}
