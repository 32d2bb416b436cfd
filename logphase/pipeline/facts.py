"""What events say besides phases: configuration, memory readings at phase boundaries, the sizes
of the pools and graphs, SGLang's own overrides and notices worth a warning."""

from __future__ import annotations

from logphase.pipeline import events as ev
from logphase.pipeline.messages import bar_evidence
from logphase.pipeline.phases import Phase
from logphase.pipeline.runs import Run


def note_facts(run: Run, event: ev.EventBase, rank: str) -> None:
    """Fold what ``event`` says into ``run``'s facts; ``rank`` is its writer ('main' for the server)."""
    if isinstance(event, ev.ServerArgs):
        if run.server_args is None:
            run.server_args, run.server_args_line = event.args, event.line
        run.node_ranks.add(event.args.get("node_rank"))
    elif isinstance(event, ev.ParameterOverride):
        # every rank says it, and a server may say it again on each request: the report names it once
        if not any(o.setting == event.setting and o.message == event.message for o in run.overrides):
            run.overrides.append(event)
    elif isinstance(event, ev.WeightLoadBegin) and event.avail_mem_gb is not None:
        _reading(run, rank, "weight_loading_start", event.avail_mem_gb, event.line)
    elif isinstance(event, ev.WeightLoadEnd):
        if event.avail_mem_gb is not None:
            _reading(run, rank, "weight_loading_end", event.avail_mem_gb, event.line)
        if event.mem_usage_gb is not None and run.weights_gb is None:
            run.weights_gb = event.mem_usage_gb
    elif isinstance(event, ev.KvCacheAllocated):
        if rank == _first_rank(run, rank):
            size = (
                event.kv_size_gb
                if event.kv_size_gb is not None
                else ((event.k_size_gb or 0.0) + (event.v_size_gb or 0.0) if event.k_size_gb is not None else None)
            )
            if size is not None:
                run.kv_cache_gb = round((run.kv_cache_gb or 0.0) + size, 4)
            if event.tokens is not None and run.kv_tokens is None:
                run.kv_tokens = event.tokens
    elif isinstance(event, ev.MambaCacheAllocated):
        if rank == _first_rank(run, rank):
            run.mamba_cache_gb = round(
                (run.mamba_cache_gb or 0.0) + (event.conv_state_gb or 0.0) + (event.ssm_state_gb or 0.0), 4
            )
    elif isinstance(event, ev.MemoryPoolEnd) and event.avail_mem_gb is not None:
        _reading(run, rank, "memory_pool_end", event.avail_mem_gb, event.line)
    elif isinstance(event, ev.CaptureBegin):
        if event.avail_mem_gb is not None:
            _reading(run, rank, "cuda_graph_capture_start", event.avail_mem_gb, event.line)
            _capture_mem(run, event.avail_mem_gb, event.rank, event.line)
        if event.batch_sizes:
            run.max_capture_bs = max([run.max_capture_bs or 0, *event.batch_sizes])
    elif isinstance(event, ev.CaptureEnd):
        if event.avail_mem_gb is not None:
            _reading(run, rank, "cuda_graph_capture_end", event.avail_mem_gb, event.line, latest=True)
        if event.mem_usage_gb is not None and rank == _first_rank(run, rank):
            run.cuda_graph_gb = round((run.cuda_graph_gb or 0.0) + event.mem_usage_gb, 4)
        if event.batch_sizes:
            run.max_capture_bs = max([run.max_capture_bs or 0, *event.batch_sizes])
    elif isinstance(event, ev.CaptureSizes) and event.what == "bs" and event.sizes:
        run.max_capture_bs = max([run.max_capture_bs or 0, *event.sizes])
    elif isinstance(event, ev.ProgressBar):
        shows = bar_evidence(event)
        if shows is not None and shows.phase is not None:
            run.bars[shows.phase] = event  # its own clock, for a phase whose lines carry no time
        capturing = shows is not None and shows.phase is Phase.CUDA_GRAPH_CAPTURE
        if event.avail_mem_gb is not None and capturing:
            _capture_mem(run, event.avail_mem_gb, event.rank, event.line)
        if event.batch_size is not None and capturing:
            run.max_capture_bs = max(run.max_capture_bs or 0, event.batch_size)
    elif isinstance(event, ev.SchedulerReady):
        if not run.scheduler:
            run.scheduler = {
                k: v
                for k, v in event.model_dump(
                    include={
                        "max_total_num_tokens",
                        "chunked_prefill_size",
                        "max_prefill_tokens",
                        "max_running_requests",
                        "context_len",
                        "available_gpu_mem_gb",
                    }
                ).items()
                if v is not None
            }
    elif isinstance(event, ev.StartupTimings):
        run.timings = event.timings
    elif isinstance(event, ev.GlooNotConnected):
        run.notices.append(
            (
                "distributed_stall",
                f"Gloo rank {event.gloo_rank} is not connected to ranks {event.missing}: "
                "a peer never joined; startup will hang in distributed init",
                event.line,
            )
        )
    elif isinstance(event, ev.MemoryImbalance):
        run.notices.append(
            (
                "memory_imbalance",
                "GPU memory is unbalanced across ranks: other processes may hold GPU memory (nvidia-smi)",
                event.line,
            )
        )
    elif isinstance(event, ev.ErrorLine) and event.error == "warmup_failed":
        run.notices.append(("warmup_failed", event.message, event.line))


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
