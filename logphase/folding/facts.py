"""What events say besides phases: configuration, memory readings at phase boundaries, the sizes
of the pools and graphs, the server's own overrides and notices worth a warning.

One handler per event type (``_HANDLERS``): a new fact is a handler and a row, not a branch in a
chain every event walks through."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from logphase.folding.runs import Run
from logphase.recognising.messages import bar_evidence
from logphase.vocabulary import events as ev
from logphase.vocabulary.phases import Phase

# the settings the scheduler states when it is ready: the fields of its event, whatever they are
SCHEDULER_KEYS: frozenset[str] = frozenset(ev.SchedulerReady.model_fields) - frozenset(ev.EventBase.model_fields)


def note_facts(run: Run, event: ev.EventBase, rank: str) -> None:
    """Fold what ``event`` says into ``run``'s facts; ``rank`` is its writer ('main' for the server)."""
    for event_type in type(event).__mro__:
        handler = _HANDLERS.get(event_type)
        if handler is not None:
            handler(run, event, rank)
            return


def _server_args(run: Run, event: ev.ServerArgs, rank: str) -> None:
    if run.server_args is None:
        run.server_args, run.server_args_line = event.args, event.line
    run.node_ranks.add(event.args.get("node_rank"))


# a command-line flag a notice names, with the value it names (`--x-y=v`) or as given (`--x-y is set`)
_NAMED_FLAG = re.compile(r"--(?P<flag>[a-z][\w-]*)(?:=(?P<value>[^\s,()]+)| is set\b)")
_UNSET: tuple[Any, ...] = (None, False, "", "auto")


def _repeats_user_setting(message: str, args: dict[str, Any] | None) -> bool:
    """Whether the notice only echoes what the user asked for: it names a flag, and ``server_args``
    holds that flag with the value it names (or set at all, for "is set"). SGLang then did what it
    was told, so there is nothing to warn about."""
    for m in _NAMED_FLAG.finditer(message):
        given = (args or {}).get(m["flag"].replace("-", "_"))
        if m["value"] is None and given not in _UNSET:
            return True
        if m["value"] is not None and given is not None and str(given).strip("'\"") == m["value"].strip("'\""):
            return True
    return False


def _parameter_override(run: Run, event: ev.ParameterOverride, rank: str) -> None:
    if _repeats_user_setting(event.message, run.server_args):
        return
    # every rank says it, and a server may say it again on each request: the report names it once
    if not any(o.setting == event.setting and o.message == event.message for o in run.overrides):
        run.overrides.append(event)


def _weight_load_begin(run: Run, event: ev.WeightLoadBegin, rank: str) -> None:
    if event.avail_mem_gb is not None:
        _reading(run, rank, "weight_loading_start", event.avail_mem_gb, event.line)


def _weight_load_end(run: Run, event: ev.WeightLoadEnd, rank: str) -> None:
    readings = run.memory.get(rank, {})
    first_end = "weight_loading_end" not in readings
    size = event.mem_usage_gb
    begin = readings.get("weight_loading_start")
    if size is None and first_end and begin is not None and event.avail_mem_gb is not None:
        # 0.2-0.4.3 print no mem usage: the weights took what their loading took from free memory
        size = round(begin - event.avail_mem_gb, 2)
    if event.avail_mem_gb is not None:
        _reading(run, rank, "weight_loading_end", event.avail_mem_gb, event.line)
    # a draft model (EAGLE) loads its own weights after the target's: the report counts both, as it
    # counts both KV caches; sizes are per rank and alike across ranks, so one rank's are summed
    if size is not None and rank == _first_rank(run, rank):
        run.weights_gb = round((run.weights_gb or 0.0) + size, 4)


def _kv_cache_size(event: ev.KvCacheAllocated) -> float | None:
    """The pool's size: as one figure, or as its K and V halves."""
    if event.kv_size_gb is not None:
        return event.kv_size_gb
    if event.k_size_gb is not None:
        return event.k_size_gb + (event.v_size_gb or 0.0)
    return None


def _kv_cache_allocated(run: Run, event: ev.KvCacheAllocated, rank: str) -> None:
    if rank != _first_rank(run, rank):
        return
    size = _kv_cache_size(event)
    if size is not None:
        run.kv_cache_gb = round((run.kv_cache_gb or 0.0) + size, 4)
    if event.tokens is not None and run.kv_tokens is None:
        run.kv_tokens = event.tokens


def _mamba_cache_allocated(run: Run, event: ev.MambaCacheAllocated, rank: str) -> None:
    if rank == _first_rank(run, rank):
        run.mamba_cache_gb = round((run.mamba_cache_gb or 0.0) + (event.conv_state_gb or 0.0) + (event.ssm_state_gb or 0.0), 4)


def _memory_pool_end(run: Run, event: ev.MemoryPoolEnd, rank: str) -> None:
    if event.avail_mem_gb is not None:
        _reading(run, rank, "memory_pool_end", event.avail_mem_gb, event.line)


def _capture_begin(run: Run, event: ev.CaptureBegin, rank: str) -> None:
    if event.avail_mem_gb is not None:
        _reading(run, rank, "cuda_graph_capture_start", event.avail_mem_gb, event.line)
        _capture_mem(run, event.avail_mem_gb, event.rank, event.line)
    _capture_batch_sizes(run, event.batch_sizes)


def _capture_end(run: Run, event: ev.CaptureEnd, rank: str) -> None:
    if event.avail_mem_gb is not None:
        _reading(run, rank, "cuda_graph_capture_end", event.avail_mem_gb, event.line, latest=True)
    if event.mem_usage_gb is not None and rank == _first_rank(run, rank):
        run.cuda_graph_gb = round((run.cuda_graph_gb or 0.0) + event.mem_usage_gb, 4)
    _capture_batch_sizes(run, event.batch_sizes)


def _capture_sizes(run: Run, event: ev.CaptureSizes, rank: str) -> None:
    if event.what == "bs":
        _capture_batch_sizes(run, event.sizes)


def _capture_batch_sizes(run: Run, sizes: list[int] | None) -> None:
    if sizes:
        run.max_capture_bs = max([run.max_capture_bs or 0, *sizes])


def _progress_bar(run: Run, event: ev.ProgressBar, rank: str) -> None:
    shows = bar_evidence(event)
    if shows is not None and shows.phase is not None:
        run.bars[shows.phase] = event  # its own clock, for a phase whose lines carry no time
    if shows is None or shows.phase is not Phase.CUDA_GRAPH_CAPTURE:
        return
    if event.avail_mem_gb is not None:
        _capture_mem(run, event.avail_mem_gb, event.rank, event.line)
    if event.batch_size is not None:
        run.max_capture_bs = max(run.max_capture_bs or 0, event.batch_size)


def _scheduler_ready(run: Run, event: ev.SchedulerReady, rank: str) -> None:
    if not run.scheduler:
        stated = event.model_dump(include=set(SCHEDULER_KEYS))
        run.scheduler = {k: v for k, v in stated.items() if v is not None}


def _startup_timings(run: Run, event: ev.StartupTimings, rank: str) -> None:
    run.timings = event.timings


def _gloo_not_connected(run: Run, event: ev.GlooNotConnected, rank: str) -> None:
    run.notices.append(
        (
            "distributed_stall",
            f"Gloo rank {event.gloo_rank} is not connected to ranks {event.missing}: "
            "a peer never joined; startup will hang in distributed init",
            event.line,
        )
    )


def _memory_imbalance(run: Run, event: ev.MemoryImbalance, rank: str) -> None:
    run.notices.append(
        (
            "memory_imbalance",
            "GPU memory is unbalanced across ranks: other processes may hold GPU memory (nvidia-smi)",
            event.line,
        )
    )


def _error_line(run: Run, event: ev.ErrorLine, rank: str) -> None:
    if event.error == "warmup_failed":
        run.notices.append(("warmup_failed", event.message, event.line))


# each handler takes the event type it is filed under (the table is checked by hand: mypy cannot
# relate a key's type to its value's parameter)
_HANDLERS: dict[type[ev.EventBase], Callable[[Run, Any, str], None]] = {
    ev.ServerArgs: _server_args,
    ev.ParameterOverride: _parameter_override,
    ev.WeightLoadBegin: _weight_load_begin,
    ev.WeightLoadEnd: _weight_load_end,
    ev.KvCacheAllocated: _kv_cache_allocated,
    ev.MambaCacheAllocated: _mamba_cache_allocated,
    ev.MemoryPoolEnd: _memory_pool_end,
    ev.CaptureBegin: _capture_begin,
    ev.CaptureEnd: _capture_end,
    ev.CaptureSizes: _capture_sizes,
    ev.ProgressBar: _progress_bar,
    ev.SchedulerReady: _scheduler_ready,
    ev.StartupTimings: _startup_timings,
    ev.GlooNotConnected: _gloo_not_connected,
    ev.MemoryImbalance: _memory_imbalance,
    ev.ErrorLine: _error_line,
}


def _first_rank(run: Run, rank: str) -> str:
    # pool and graph sizes are per rank and alike across ranks: sum those of one rank only
    if run.size_rank is None:
        run.size_rank = rank
    return run.size_rank


def _capture_mem(run: Run, avail: float, rank: str | None, line: int) -> None:
    if run.capture_avail_gb is None or avail < run.capture_avail_gb[0]:
        run.capture_avail_gb = (avail, rank, line)


def _reading(run: Run, rank: str, boundary: str, gb: float, line: int, latest: bool = False) -> None:
    """Free memory of ``rank`` at a phase boundary: the first reading, or with ``latest`` the last."""
    readings = run.memory.setdefault(rank, {})
    if latest or boundary not in readings:
        readings[boundary] = gb
        run.memory_lines.setdefault(rank, {})[boundary] = line
