"""One test per message template and its variants across SGLang releases (spec sections 1-6)."""

from __future__ import annotations

import pytest

from logphase.reading.clock import LogClock
from logphase.reading.envelope import split_envelope
from logphase.recognising.classify import classify
from logphase.vocabulary import events as ev
from logphase.vocabulary.events import LineInfo


def event_of(line: str) -> ev.EventBase | None:
    env = split_envelope(line)
    ts = LogClock().of(env)
    return classify(env, LineInfo(line=1, offset=0, raw=line, ts=ts, ts_inherited=False, rank=env.rank, writer=env.writer))


P = "[2026-05-09 09:20:26 TP0] "


@pytest.mark.parametrize(
    ("line", "kind", "fields"),
    [
        (P + "Init torch distributed begin.", "dist_init_begin", {}),
        (P + "Init parallel begin.", "dist_init_begin", {}),
        (P + "Init torch distributed ends. mem usage=0.52 GB", "dist_init_end", {"mem_usage_gb": 0.52}),
        (
            P + "Init torch distributed ends. elapsed=1.25 s, mem usage=0.52 GB",
            "dist_init_end",
            {"elapsed_s": 1.25, "mem_usage_gb": 0.52},
        ),
        (P + "Init parallel ends. elapsed=3.10 s", "dist_init_end", {"elapsed_s": 3.1}),
        (P + "Memory baseline taken. mem usage=0.61 GB", "memory_baseline", {"mem_usage_gb": 0.61}),
        (P + "sglang is using nccl==2.27.5", "nccl_version", {"version": "2.27.5"}),
        (P + "Load weight begin. avail mem=78.50 GB", "weight_load_begin", {"avail_mem_gb": 78.5}),
        (
            P + "Load weight end. type=LlamaForCausalLM, dtype=torch.bfloat16, avail mem=63.20 GB",
            "weight_load_end",
            {"model_class": "LlamaForCausalLM", "dtype": "torch.bfloat16", "avail_mem_gb": 63.2},
        ),
        (
            P
            + "Load weight end. elapsed=41.35 s, type=Qwen3ForCausalLM, dtype=torch.bfloat16, avail mem=63.20 GB, mem usage=15.30 GB.",
            "weight_load_end",
            {"elapsed_s": 41.35, "mem_usage_gb": 15.3, "avail_mem_gb": 63.2},
        ),
        (
            P + "Load weight end. elapsed=12.00 s, type=X, quant=fp8, bits=8, avail mem=10.00 GB, mem usage=60.00 GB.",
            "weight_load_end",
            {"quant": "fp8", "mem_usage_gb": 60.0},
        ),
        (
            P
            + "Load weight end. Committed real weights after CUDA graph capture in 3.20 s (capture overlap window 1.00 s, startup overlap total 2.00 s)",
            "weight_load_end",
            {"elapsed_s": 3.2},
        ),
        (P + "Using KV cache dtype: torch.bfloat16", "kv_cache_dtype", {}),
        (
            P + "KV Cache is allocated. K size: 5.00 GB, V size: 5.00 GB.",
            "kv_cache_allocated",
            {"k_size_gb": 5.0, "v_size_gb": 5.0},
        ),
        (
            P + "KV Cache is allocated. #tokens: 412000, K size: 9.43 GB, V size: 9.43 GB",
            "kv_cache_allocated",
            {"tokens": 412000, "k_size_gb": 9.43},
        ),
        (
            P + "KV Cache is allocated. #tokens: 900000, KV size: 30.12 GB",
            "kv_cache_allocated",
            {"tokens": 900000, "kv_size_gb": 30.12},
        ),
        (
            P + "KV Cache is allocated. dtype: torch.bfloat16, #tokens: 5000, K size: 1.00 GB, V size: 1.00 GB",
            "kv_cache_allocated",
            {"dtype": "torch.bfloat16", "tokens": 5000},
        ),
        (
            P + "SWA KV Cache is allocated. dtype: torch.bfloat16, #tokens: 5000, K size: 1.00 GB, V size: 1.00 GB",
            "kv_cache_allocated",
            {"label": "SWA"},
        ),
        (
            P + "Mamba Cache is allocated. max_mamba_cache_size: 96, conv_state size: 0.26GB, ssm_state size: 11.25GB ",
            "mamba_cache_allocated",
            {"max_mamba_cache_size": 96, "ssm_state_gb": 11.25},
        ),
        (P + "Memory pool end. avail mem=8.10 GB", "memory_pool_end", {"avail_mem_gb": 8.1}),
        (P + "Capture cuda graph begin. This can take up to several minutes.", "capture_begin", {"graph": "cuda graph"}),
        (
            P + "Capture cuda graph begin. This can take up to several minutes. avail mem=4.80 GB",
            "capture_begin",
            {"avail_mem_gb": 4.8},
        ),
        (
            P + "Capture npu graph begin. This can take up to several minutes. avail mem=30.00 GB",
            "capture_begin",
            {"graph": "npu graph"},
        ),
        (
            P + "Capture target decode CUDA graph begin. backend=full, num_tokens_per_bs=1, bs=[1, 2, 4, 8], avail mem=20.00 GB",
            "capture_begin",
            {"graph": "target decode CUDA graph", "batch_sizes": [1, 2, 4, 8]},
        ),
        (P + "Capture cuda graph bs [1, 2, 4, 8, 16]", "capture_sizes", {"what": "bs", "sizes": [1, 2, 4, 8, 16]}),
        (P + "Capture cuda graph end. Time elapsed: 12.40 s", "capture_end", {"elapsed_s": 12.4}),
        (
            P + "Capture cuda graph end. Time elapsed: 12.40 s. avail mem=3.10 GB. mem usage=1.70 GB.",
            "capture_end",
            {"elapsed_s": 12.4, "avail_mem_gb": 3.1, "mem_usage_gb": 1.7},
        ),
        (
            P + "Capture cuda graph end. Time elapsed: 12.40 s. mem usage=1.70 GB. avail mem=3.10 GB.",
            "capture_end",
            {"avail_mem_gb": 3.1, "mem_usage_gb": 1.7},
        ),
        (
            P + "Capture target decode CUDA graph end. bs=[1, 2, 4], elapsed=5.50 s, mem usage=0.80 GB, avail mem=19.00 GB.",
            "capture_end",
            {"batch_sizes": [1, 2, 4], "elapsed_s": 5.5, "avail_mem_gb": 19.0},
        ),
        (
            P
            + "max_total_num_tokens=412000, chunked_prefill_size=8192, max_prefill_tokens=16384, max_running_requests=4096, context_len=32768, available_gpu_mem=8.05 GB",
            "scheduler_ready",
            {"max_total_num_tokens": 412000, "max_running_requests": 4096, "available_gpu_mem_gb": 8.05},
        ),
        ("[2026-05-09 09:20:26] The server is fired up and ready to roll!", "server_ready", {}),
        ("[2026-05-09 09:20:26] INFO:     The server is fired up and ready to roll!", "server_ready", {}),
        (
            "[2026-05-09 09:20:26] Received sigquit from a child process. It usually means the child failed.",
            "child_failure",
            {"what": "sigquit"},
        ),
        (
            "[2026-05-09 09:20:26] Received sigquit from a child proces. It usually means the child failed.",
            "child_failure",
            {"what": "sigquit"},
        ),
        (
            P + "Scheduler watchdog timeout (self.watchdog_timeout=300, self.soft=False)",
            "error_line",
            {"error": "watchdog_timeout"},
        ),
        (P + "Watchdog timeout (self.watchdog_timeout=300)", "error_line", {"error": "watchdog_timeout"}),
        (
            "[2026-05-09 09:20:26] max_running_requests was reduced from the requested 256 to 96 (per dp worker) due to the available KV cache capacity.",
            "parameter_override",
            {"setting": "max_running_requests", "requested": "256", "actual": "96"},
        ),
        (
            "[2026-05-09 09:20:26] max_total_tokens=500000 is larger than the profiled value 262144. Use the profiled value instead.",
            "parameter_override",
            {"setting": "max_total_tokens", "requested": "500000", "actual": "262144"},
        ),
        (
            "[2026-05-09 09:20:26] Rank 1 scheduler died during initialization (exit code: -9). If exit code is -9 (SIGKILL), a common cause is the OS OOM killer.",
            "child_failure",
            {"what": "scheduler_died", "exit_code": -9},
        ),
        (
            P
            + "Decode batch, #running-req: 1, #token: 100, token usage: 0.01, cuda graph: True, gen throughput (token/s): 50.00, #queue-req: 0",
            "runtime_batch",
            {"stage": "decode"},
        ),
        (
            P
            + "Prefill batch. #new-seq: 1, #new-token: 7, #cached-token: 0, token usage: 0.00, #running-req: 0, #queue-req: 0, ",
            "runtime_batch",
            {"stage": "prefill"},
        ),
        (
            "[Gloo] Rank 0 is connected to 1 peer ranks. Expected number of connected peer ranks is : 1",
            "gloo_connected",
            {"gloo_rank": 0, "connected": 1, "expected": 1},
        ),
        ("[Gloo] Rank 8 is NOT connected to: [1, 3]", "gloo_not_connected", {"missing": [1, 3]}),
        (
            "[/pytorch/third_party/gloo/gloo/transport/tcp/context.cc:237] INFO Rank 0 is connected to 2. Expected number of connected peers is: 2",
            "gloo_connected",
            {"connected": 2},
        ),
        ("vm:458:458 [0] NCCL INFO Channel 00/64 : 0", "nccl_log", {"level": "INFO", "host": "vm", "pid": 458, "device": 0}),
        (
            "[2026-05-09 09:20:26] node1:1234:5678 [3] transport/net.cc:42 NCCL WARN Net : Connection closed by remote peer",
            "nccl_log",
            {"level": "WARN", "device": 3},
        ),
        (
            "node1:1234:5678 [3] misc/socket.cc:50 (ncclSocketConnect) NCCL WARN socket connect failed",
            "nccl_log",
            {"level": "WARN"},
        ),
        ("W1130 02:17:56.938000 626 torch/distributed/run.py:851] *****", "torch_log", {"level": "W"}),
        (
            "E1130 02:18:01.181000 626 torch/distributed/elastic/multiprocessing/api.py:986] failed (exitcode: 1) local_rank: 1 (pid: 648) of binary: /x/python",
            "child_failure",
            {"what": "elastic_failed", "exit_code": 1},
        ),
        (
            "W1130 02:18:01.067000 626 torch/distributed/elastic/multiprocessing/api.py:1012] Sending process 647 closing signal SIGTERM",
            "child_failure",
            {"what": "closing_signal"},
        ),
        (
            "[rank0]:[W1130 02:17:32.233390362 ProcessGroupNCCL.cpp:1575] Warning: WARNING: destroy_process_group() was not called before program exit",
            "child_failure",
            {"what": "pg_not_destroyed", "rank": "rank0"},
        ),
        (
            "[rank0]:[E1218 20:27:21.426415540 ProcessGroupNCCL.cpp:629] [Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1) ran for 600081 milliseconds before timing out.",
            "distributed_error",
            {"error": "collective_timeout"},
        ),
        (
            "Capturing batches (bs=16 avail_mem=4.50 GB):  33%|███▎      | 4/12 [00:01<00:02,  3.6it/s]",
            "progress_bar",
            {"batch_size": 16, "avail_mem_gb": 4.5, "done": 4, "total": 12},
        ),
        (
            "Capturing batches (avail_mem=20.12 GB):  45%|████▌     | 18/40 [00:05<00:04, 3.6it/s]",
            "progress_bar",
            {"avail_mem_gb": 20.12},
        ),
        (
            "Loading safetensors checkpoint shards:  50% Completed | 1/2 [00:01<00:01,  1.07s/it]",
            "progress_bar",
            {"percent": 50, "done": 1},
        ),
        ("Multi-thread loading shards: 100% Completed | 8/8 [00:30<00:00,  3.8s/it]", "progress_bar", {"percent": 100}),
        ("INFO:     Started server process [4242]", "http_server", {"state": "started"}),
        (
            "[2026-05-09 09:20:26] INFO:     Uvicorn running on http://0.0.0.0:30000 (Press CTRL+C to quit)",
            "http_server",
            {"state": "running"},
        ),
        (
            '[2026-05-09 09:20:26] INFO:     127.0.0.1:52000 - "POST /generate HTTP/1.1" 200 OK',
            "http_access",
            {"path": "/generate", "status": 200},
        ),
        (
            "[2026-05-09 09:20:26] ERROR:    [Errno 98] error while attempting to bind on address ('127.0.0.1', 30000): address already in use",
            "error_line",
            {"error": "bind_failed"},
        ),
        (
            "/x/sglang/launch_server.py:54: UserWarning: 'python -m sglang.launch_server' is still supported",
            "python_warning",
            {"category": "UserWarning"},
        ),
        ("Killed", "child_failure", {"what": "killed"}),
        # the main process's template manager (0.4+): noise of the start-up, no phase
        (
            P + "Using default HuggingFace chat template with detected content format: string",
            "startup_note",
            {"rule": "chat_template_default"},
        ),
        # tqdm's first frame, drawn before the caller sets the description
        ("  0%|          | 0/8 [00:00<?, ?it/s]", "progress_bar", {"desc": "", "total": 8}),
    ],
)
def test_template(line: str, kind: str, fields: dict[str, object]) -> None:
    event = event_of(line)
    assert event is not None, f"not recognised: {line}"
    assert event.kind == kind
    for name, value in fields.items():
        assert getattr(event, name) == value, name


@pytest.mark.parametrize(
    "line",
    [
        "random text from a harness",
        "RuntimeError: NCCL error: unhandled cuda error",
        P + "Load weight begin but not quite",
    ],
)
def test_lines_that_carry_no_event(line: str) -> None:
    event = event_of(line)
    assert event is None or (event.kind == "weight_load_begin" and event.avail_mem_gb is None)  # type: ignore[attr-defined]


def test_future_fields_are_tolerated() -> None:
    event = event_of(P + "Load weight end. elapsed=3.00 s, type=X, new_field=42, avail mem=5.00 GB, mem usage=1.00 GB, more=yes.")
    assert isinstance(event, ev.WeightLoadEnd)
    assert (event.elapsed_s, event.avail_mem_gb, event.mem_usage_gb) == (3.0, 5.0, 1.0)


@pytest.mark.parametrize("tags", ["TP0", "DP0 TP1 EP1", "PP0 TP1", "DP3 TP3", "DP0 PP1 ATTN_CP1 MOE_DP0 TP2 EP2"])
def test_rank_tag_combinations(tags: str) -> None:
    event = event_of(f"[2026-05-09 09:20:26 {tags}] Load weight begin. avail mem=1.00 GB")
    assert event is not None and event.rank == tags and event.ts == "2026-05-09T09:20:26"


def test_server_args_both_forms() -> None:
    call = event_of(
        "[2026-05-09 09:20:26] server_args=ServerArgs(model_path='m', tp_size=2, mem_fraction_static=0.85, cuda_graph_bs=[1, 2], path=PosixPath('/a'), e=<X.Y: 1>)"
    )
    as_dict = event_of(
        "[2026-05-09 09:20:26] server_args={'model_path': 'm', 'tp_size': 2, 'mem_fraction_static': 0.85, 'api_key': '<redacted>'}"
    )
    assert isinstance(call, ev.ServerArgs) and isinstance(as_dict, ev.ServerArgs)
    assert call.args["mem_fraction_static"] == as_dict.args["mem_fraction_static"] == 0.85
    assert call.args["tp_size"] == 2 and call.args["cuda_graph_bs"] == [1, 2]
    assert (call.args_format, as_dict.args_format) == ("call", "dict")


def test_server_args_cut_short_keeps_what_it_can() -> None:
    event = event_of("[2026-05-09 09:20:26] server_args=ServerArgs(model_path='m', tp_size=4, mem_fraction_static=0.8, lora_pa")
    assert isinstance(event, ev.ServerArgs)
    assert event.args_format == "unparsed" and event.args["tp_size"] == 4 and event.args["mem_fraction_static"] == 0.8


def test_real_sized_server_args_dump_is_parsed() -> None:
    # real dumps hold 300+ fields (12-20 kB): longer than any other line Lark is given
    fields = ", ".join(f"option_{i}={i}" for i in range(600))
    event = event_of(
        f"[2026-05-09 09:20:26] server_args=ServerArgs(model_path='org/model', tp_size=8, {fields}, mem_fraction_static=0.88)"
    )
    assert isinstance(event, ev.ServerArgs) and event.args_format == "call"
    assert event.args["model_path"] == "org/model" and event.args["mem_fraction_static"] == 0.88 and len(event.args) == 603


def test_a_repeated_dump_gives_values_of_its_own() -> None:
    """Dumps are read once per text (a restart repeats them): each event still owns its values."""
    line = "[2026-05-09 09:20:26] server_args=ServerArgs(model_path='m', cuda_graph_bs=[1, 2], json={'a': [1]})"
    first, second = event_of(line), event_of(line)
    assert isinstance(first, ev.ServerArgs) and isinstance(second, ev.ServerArgs)
    first.args["cuda_graph_bs"].append(4)
    first.args["json"]["a"].append(2)
    assert second.args["cuda_graph_bs"] == [1, 2] and second.args["json"] == {"a": [1]}
    assert event_of(line).args == second.args  # type: ignore[union-attr]


def test_every_bar_probe_match_holds_the_bar_literal() -> None:
    """classify and the bulk path's pre-filter skip a line without BAR_LITERAL: no probe may match
    one (the literals every match contains, read off the probe's pattern)."""
    from logphase.recognising.classify import BAR_LITERAL, _probes
    from logphase.recognising.prefilter import _factors, _sre

    assert _factors(list(_sre.parse(_probes().pattern))) == {BAR_LITERAL}
