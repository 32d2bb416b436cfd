"""What the release-era fixtures showed logphase did not know (the gaps of era-gaps.md), one shape each,
in lines written for the test (the fixtures hold the same shapes in whole logs)."""

from __future__ import annotations

from logphase import parse_bytes
from logphase.packs.server_args import parse_server_args

STAMP = "[2026-08-03 07:40:{:02d}{}] "


def _log(*lines: str) -> bytes:
    return ("\n".join(lines) + "\n").encode()


def test_a_set_and_a_list_of_reprs_come_out_whole() -> None:
    args, fmt = parse_server_args(
        "server_args=ServerArgs(lora_target_modules={'q_proj', 'v_proj'}, "
        "lora_paths=[LoRARef(lora_id='a', lora_name='sql', pinned=False), LoRARef(lora_id='b', lora_name='x')], "
        "empty={}, tp_size=2)"
    )
    assert fmt == "call"
    assert args["lora_target_modules"] == ["q_proj", "v_proj"]
    assert args["lora_paths"] == ["LoRARef(...)", "LoRARef(...)"]
    assert args["empty"] == {} and args["tp_size"] == 2
    assert "lora_name" not in args


_DISABLE = "Disable prefill CUDA graph because cuda_graph_config resolved prefill.backend='disabled' (e.g. via --cuda-graph-backend-prefill=disabled or auto-disable rules)."


def _override_warnings(given: str) -> list[str]:
    report = parse_bytes(
        _log(
            STAMP.format(5, "") + f"server_args=ServerArgs(model_path='m', port=30000, cuda_graph_backend_prefill={given})",
            STAMP.format(25, " TP0") + _DISABLE,
        )
    )
    return [w.kind for w in report.warnings if w.kind == "ignored_parameter"]


def test_a_notice_that_repeats_the_users_own_flag_is_no_warning() -> None:
    assert _override_warnings("'disabled'") == []


def test_the_same_notice_after_another_setting_is_a_warning() -> None:
    assert _override_warnings("'auto'") == ["ignored_parameter"]


def test_lora_adapters_loading_after_the_weights_are_weight_loading() -> None:
    report = parse_bytes(
        _log(
            STAMP.format(14, " TP0") + "Load weight begin. avail mem=43.52 GB",
            STAMP.format(21, " TP0") + "Load weight end. type=Qwen3ForCausalLM, avail mem=35.72 GB, mem usage=7.80 GB.",
            STAMP.format(21, " TP0") + "Using csgmv as backend of LoRA kernels.",
            STAMP.format(22, " TP0") + "LoRA adapter loading starts: LoRARef(lora_id='0a', lora_name='sql'). avail mem=35.41 GB",
            STAMP.format(24, " TP0") + "LoRA adapter loading completes: LoRARef(lora_id='0a', lora_name='sql'). avail mem=35.41 GB",
            STAMP.format(24, " TP0") + "KV Cache is allocated. #tokens: 418560, K size: 14.37 GB, V size: 14.37 GB",
        )
    )
    weights = next(p for p in report.phases if p.name == "weight_loading")
    assert weights.end is not None and weights.end.endswith("07:40:24")
    assert report.lines.unrecognized == 0
    assert not report.unaccounted


def test_weights_size_from_free_memory_when_the_end_line_has_no_usage() -> None:
    report = parse_bytes(
        _log(
            STAMP.format(13, " TP0") + "Load weight begin. avail mem=78.35 GB",
            STAMP.format(40, " TP0") + "Load weight end. type=Qwen2ForCausalLM, dtype=torch.bfloat16, avail mem=63.54 GB",
        )
    )
    assert report.memory.weights_gb == 14.81


def test_a_launch_error_that_quotes_a_childs_traceback_is_one_record() -> None:
    quoted = [
        '  File "/sglang/srt/managers/tp_worker.py", line 95, in __init__',
        "    self.model_runner = ModelRunner(",
        '  File "/sglang/srt/model_executor/model_runner.py", line 137, in init_torch_distributed',
        "    init_distributed_environment(",
        "torch.distributed.DistNetworkError: The server socket has failed to bind to [::]:28765 (errno: 98 - Address already in use).",
    ]
    report = parse_bytes(
        _log(
            *quoted,
            "",
            "Traceback (most recent call last):",
            '  File "/sglang/srt/server.py", line 365, in launch_server',
            "    raise RuntimeError(",
            "RuntimeError: Initialization failed. controller_init_state: Traceback (most recent call last):",
            *quoted,
            ", detoken_init_state: init ok",
        )
    )
    failure = report.failure
    assert failure is not None and failure.cause == "port_in_use" and failure.line == 5
    # the launcher's error is one echo, not a traceback cut short plus another one
    assert [c.message for c in failure.consequences] == ["RuntimeError: Initialization failed. controller_init_state"]
    # the port taken in distributed init is the store's, not the HTTP port
    assert failure.phase == "distributed_init" and "--nccl-port" in (failure.hint or "")


def _window(*frames: tuple[str, str]) -> str | None:
    lines = []
    for path, function in frames:
        lines += [f'  File "/sgl-workspace/sglang/python/sglang/srt/{path}", line 10, in {function}', "    x()"]
    report = parse_bytes(_log(*lines, "RuntimeError: something broke here"))
    return None if report.failure is None else str(report.failure.phase)


def test_frames_known_only_to_the_mined_table_place_a_window() -> None:
    # KVCacheConfigurator's own pool builders (0.5.19+) are not in the hand table
    assert _window(("managers/scheduler.py", "run_scheduler_process"), ("mem_cache/pool_configurator.py", "align_page_size")) == (
        "memory_pool"
    )


def test_a_hand_known_frame_decides_before_an_inner_mined_helper() -> None:
    # pynccl's all_reduce is placed in distributed init by the call graph, but capture calls it too
    assert (
        _window(
            ("model_executor/cuda_graph_runner.py", "capture_one_batch_size"),
            ("distributed/device_communicators/pynccl.py", "all_reduce"),
        )
        == "cuda_graph_capture"
    )
