"""TensorRT-LLM, the third server, read from its pack folder (grammars/trtllm/): its prefixes, its
order (the PyTorch backend's sizing pass), its detection, its failures, every face, and per-rank files
merged. The fixtures are fixtures/logs/trtllm_*.log (MANIFEST.md), written from its source."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from logphase import parse_text
from logphase.diagnosing.cause_table import SIGNATURES
from logphase.engine.whole import parse_bytes
from logphase.packs import PACKS
from logphase.reading.envelope import Stamp, split_envelope
from logphase.reporting.merge import merge

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "fixtures" / "logs"
# (read as bytes: a bar's redraws are "\r", which reading as text would turn into line ends)
READY = FIXTURES / "trtllm_pytorch_ready_v1_2.log"
KV = FIXTURES / "trtllm_kv_insufficient_tp2_v1_0.log"


def logphase(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "logphase", *args],
        input=stdin.decode() if stdin is not None else None,
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
        check=False,
    )


# -- the prefixes: the shared envelope's trtllm_logger and trtllm_native ---------------------------


def test_the_python_logger_prefix_is_the_server_clock_and_the_rank() -> None:
    env = split_envelope("[07/08/2025-19:47:15] [TRT-LLM] [RANK 1] [E] Failed to initialize executor on rank 1: x")
    assert env.logger_stamp == Stamp(2025, 7, 8, "19:47:15")
    assert env.rank == "RANK 1"
    assert env.message == "Failed to initialize executor on rank 1: x"
    plain = split_envelope("[12/20/2025-04:20:21] [TRT-LLM] [I] Using LLM with PyTorch backend")
    assert (plain.rank, plain.message) == (None, "Using LLM with PyTorch backend")


def test_the_cxx_logger_prefix_is_peeled_without_a_time_and_a_quoted_one_stays() -> None:
    env = split_envelope("[TensorRT-LLM][INFO] Loaded engine size: 15448 MiB")
    assert (env.logger_stamp, env.message) == (None, "Loaded engine size: 15448 MiB")
    quoted = split_envelope(
        "[TensorRT-LLM][ERROR] tensorrt_llm::common::TllmException: [TensorRT-LLM][ERROR] Assertion failed: x"
    )
    assert quoted.message.startswith("tensorrt_llm::common::TllmException: [TensorRT-LLM][ERROR] ")


@pytest.mark.parametrize("stamp", ["13/08/2025-19:47:15", "02/30/2025-19:47:15", "07/08/2025-25:47:15"])
def test_a_us_stamp_that_makes_no_time_is_text(stamp: str) -> None:
    env = split_envelope(f"[{stamp}] [TRT-LLM] [I] Using LLM with PyTorch backend")
    assert env.logger_stamp is None and env.bad_stamp == stamp


# -- its order -------------------------------------------------------------------------------------


def test_the_sizing_pass_is_a_step_and_the_final_pass_is_reported_once() -> None:
    report = parse_bytes(READY.read_bytes())
    phases = {p.name.value: p for p in report.phases}
    assert list(phases) == ["launch", "weight_loading", "memory_pool", "cuda_graph_capture", "warmup", "ready"]
    pool, capture = phases["memory_pool"], phases["cuda_graph_capture"]
    # the sampler (line 20) and the sizing pass's KV cache open memory_pool; its autotune and graph warmup
    # are no phase of their own: the memory profiling (line 34) takes the rank back, the final autotune
    # warmup (line 40) opens capture, which the sizing pass's autotune showed first (line 26: follow's
    # record of the phase, whether it read the sizing pass before the profiling or not)
    assert (pool.first_line, pool.start, pool.end) == (20, "2026-03-14T09:00:26", "2026-03-14T09:00:41")
    assert [(s.name, s.duration_s, s.line) for s in pool.steps] == [("sizing_pass", 14.0, 34)]
    assert (capture.first_line, capture.start, capture.duration_s) == (26, "2026-03-14T09:00:41", 3.0)
    assert [(s.name, s.duration_s) for s in phases["weight_loading"].steps] == [("model_init", 14.62)]


def test_a_log_without_a_sizing_pass_goes_forwards_as_before() -> None:
    """The engine era sizes its cache once: no step, the phases in their order."""
    report = parse_bytes((FIXTURES / "trtllm_triton_ready_v0_12.log").read_bytes())
    assert report.outcome == "ready"
    assert all(not p.steps or p.name.value == "weight_loading" for p in report.phases)


# -- detection per run -------------------------------------------------------------------------------


def test_the_server_and_its_version_are_detected_from_its_banner() -> None:
    report = parse_bytes(READY.read_bytes())
    assert (report.server, report.version) == ("trtllm", "1.2.0")


def test_a_window_without_the_banner_is_known_by_its_own_lines() -> None:
    report = parse_text("[TensorRT-LLM][INFO] Loaded engine size: 15448 MiB\n")
    assert (report.server, report.phase) == ("trtllm", "weight_loading")


def test_triton_around_it_is_read_as_its_server() -> None:
    report = parse_bytes((FIXTURES / "trtllm_triton_ready_v0_12.log").read_bytes())
    assert report.server == "trtllm" and report.ready_line == 25  # Started GRPCInferenceService


def test_dynamo_lines_around_it_are_no_server_of_their_own() -> None:
    report = parse_bytes((FIXTURES / "trtllm_dynamo_starting_v0_21.log").read_bytes())
    assert (report.server, report.version, report.outcome) == ("trtllm", "0.21.0", "starting")
    assert report.lines.unrecognized == 3  # Dynamo's own lines


def test_server_trtllm_overrides_detection() -> None:
    done = logphase("parse", "--json", "--server", "trtllm", "-", stdin=b"INFO:     Uvicorn running on http://0.0.0.0:8000\n")
    assert json.loads(done.stdout)["server"] == "trtllm"


# -- its failures ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fixture", "cause", "phase", "rank", "line"),
    [
        ("trtllm_kv_insufficient_tp2_v1_0.log", "kv_cache_insufficient_memory", "memory_pool", "RANK 1", 17),
        ("trtllm_nccl_createcomm_tp4_v1_1.log", "nccl_error", "distributed_init", "RANK 2", 11),
        ("trtllm_segfault_warmup_v1_0.log", "python_exception", "cuda_graph_capture", None, 14),
        ("trtllm_triton_engine_mismatch_v0_9.log", "model_load_error", "weight_loading", None, 12),
        ("trtllm_triton_cuda_oom_tp2_v0_7.log", "cuda_oom", "memory_pool", None, 9),
    ],
)
def test_each_failure_family(fixture: str, cause: str, phase: str, rank: str | None, line: int) -> None:
    report = parse_bytes((FIXTURES / fixture).read_bytes())
    assert report.failure is not None
    assert (report.failure.cause, report.failure.phase, report.failure.rank, report.failure.line) == (cause, phase, rank, line)


def test_hints_name_its_own_flags() -> None:
    kv = parse_bytes(KV.read_bytes()).failure
    mismatch = parse_bytes((FIXTURES / "trtllm_triton_engine_mismatch_v0_9.log").read_bytes()).failure
    assert kv is not None and "--kv_cache_free_gpu_memory_fraction" in kv.hint and "--tp_size" in kv.hint
    assert mismatch is not None and "rebuild it with this release" in mismatch.hint


def test_the_proxy_echo_alone_is_a_child_s_failure() -> None:
    text = (
        'Traceback (most recent call last):\n  File "/x/tensorrt_llm/executor/proxy.py", line 332, in _start_executor_workers\n'
        "    raise RuntimeError(\nRuntimeError: Executor worker returned error\n"
    )
    report = parse_text(text)
    assert report.failure is not None and report.failure.cause == "child_process_failed"


def test_its_signatures_stand_before_the_shared_rows_whose_words_they_hold() -> None:
    order = [s.rule for s in SIGNATURES]
    assert order.index("trtllm_executor_memory") < order.index("device_oom")
    assert order.index("trtllm_cuda_malloc") < order.index("device_oom")
    assert order.index("trtllm_nccl_comm") < order.index("comm_error")
    assert order.index("trtllm_mpi_abort") < order.index("child_killed")


def test_the_pack_is_a_folder_and_its_registry_line() -> None:
    pack = next(p for p in PACKS if p.name == "trtllm")
    assert pack.folder == ROOT / "grammars" / "trtllm" and pack.display_name == "TensorRT-LLM"


# -- every face ----------------------------------------------------------------------------------------


def test_parse_headline_names_it_with_its_version() -> None:
    done = logphase("parse", str(KV.relative_to(ROOT)))
    assert done.returncode == 1
    assert done.stdout.splitlines()[0] == (
        "fixtures/logs/trtllm_kv_insufficient_tp2_v1_0.log (TensorRT-LLM 1.0.0): FAILED in memory_pool after 88 s: "
        "kv_cache_insufficient_memory"
    )


def test_follow_reports_its_phases_and_failure() -> None:
    followed = logphase("follow", "--json", "-", stdin=KV.read_bytes())
    records = [json.loads(line) for line in followed.stdout.splitlines()]
    assert [r["phase"] for r in records if r["kind"] == "phase"] == ["launch", "weight_loading", "memory_pool"]
    assert [r["failure"]["cause"] for r in records if r["kind"] == "failure"] == ["kv_cache_insufficient_memory"]
    assert followed.returncode == 1


def test_check_and_compare_read_it(tmp_path: Path) -> None:
    checked = logphase("check", str(READY), "--outcome", "ready", "--max", "memory_pool=20", "--max-total", "60")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    failing = logphase("check", str(READY), "--max", "cuda_graph_capture=2")
    assert failing.returncode == 1
    baseline = tmp_path / "base.json"
    baseline.write_text(logphase("parse", "--json", str(READY)).stdout, encoding="utf-8")
    compared = logphase("compare", str(baseline), str(READY))
    assert compared.returncode == 0, compared.stdout + compared.stderr


def test_report_draws_its_timeline(tmp_path: Path) -> None:
    page = tmp_path / "startup.html"
    done = logphase("report", str(READY), "-o", str(page))
    assert done.returncode == 0, done.stderr
    assert "sizing_pass" in page.read_text(encoding="utf-8") or "memory_pool" in page.read_text(encoding="utf-8")


def test_per_rank_files_merge_into_one_deployment() -> None:
    """mpirun --output-filename writes each rank's output apart: the ranks' files are one server."""
    lines = KV.read_text(encoding="utf-8").splitlines()
    rank1 = "\n".join(line for line in lines if "[RANK 0]" not in line) + "\n"
    rank0 = "\n".join(line for line in lines[:16] if "[RANK 1]" not in line) + "\n"
    merged = merge([parse_bytes(rank0.encode(), source="rank0.log"), parse_bytes(rank1.encode(), source="rank1.log")], [])
    assert merged.outcome == "failed"
    failed = [n for n in merged.nodes if n.failure is not None]
    assert [(n.source, n.failure.cause if n.failure else None) for n in failed] == [("rank1.log", "kv_cache_insufficient_memory")]


# -- the catalogue's miner (scripts/mine_trtllm.py) ----------------------------------------------------

_LOGGER_PY = """class Logger:
    PREFIX = "TRT-LLM"
    ERROR = "[E]"
    INFO = "[I]"

    def __init__(self):
        handler.setFormatter(logging.Formatter(fmt="[%(asctime)s] %(message)s", datefmt="%m/%d/%Y-%H:%M:%S"))
"""
_LLM_PY = """def _build_model(self):
    logger.info("Using LLM with PyTorch backend")
    if self.args.tensor_parallel_size < 1:
        raise ValueError(f"tp_size must be positive, got {self.args.tensor_parallel_size}")
"""
_RUNTIME_CPP = """void TllmRuntime::loadEngine(std::string const& path)
{
    TLLM_LOG_INFO("Loaded engine size: %" PRIu64 " MiB", size >> 20);
    TLLM_CHECK_WITH_INFO(mEngine != nullptr, "Failed to deserialize cuda engine.");
}
"""


def test_the_miner_reads_a_release_tag_of_a_git_directory(tmp_path: Path) -> None:
    from tests.logs import script_module

    source = tmp_path / "TensorRT-LLM"
    for path, text in {
        "tensorrt_llm/logger.py": _LOGGER_PY,
        "tensorrt_llm/llmapi/llm.py": _LLM_PY,
        "cpp/tensorrt_llm/runtime/tllmRuntime.cpp": _RUNTIME_CPP,
        "docs/index.md": "not a start-up file\n",
    }.items():
        (source / path).parent.mkdir(parents=True, exist_ok=True)
        (source / path).write_text(text, encoding="utf-8")
    git = ["git", "-C", str(source), "-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"]
    for step in (["init", "-q"], ["add", "."], ["commit", "-qm", "r"], ["tag", "v1.0.0"]):
        subprocess.run([*git, *step], check=True, capture_output=True)
    out = tmp_path / "catalogue"
    miner = script_module("mine_trtllm")
    assert miner.main(["--git", str(source / ".git"), "--versions", "v1.0.0", "--out", str(out)]) == 0
    catalogue = json.loads((out / "1.0.0.json").read_text(encoding="utf-8"))
    # (the logger's file for its format; docs/ is no start-up file)
    assert sorted(catalogue["files"]) == [
        "cpp/tensorrt_llm/runtime/tllmRuntime.cpp",
        "tensorrt_llm/llmapi/llm.py",
        "tensorrt_llm/logger.py",
    ]
    assert catalogue["logging"]["python_prefix"] == ["TRT-LLM"] and catalogue["logging"]["datefmt"] == ["%m/%d/%Y-%H:%M:%S"]
    cxx = catalogue["files"]["cpp/tensorrt_llm/runtime/tllmRuntime.cpp"]
    assert [(m["level"], m["template"], m["function"]) for m in cxx["messages"]] == [
        ("info", "Loaded engine size: % MiB", "TllmRuntime::loadEngine"),
        ("raise", "Failed to deserialize cuda engine.", "TllmRuntime::loadEngine"),
    ]
    python = catalogue["files"]["tensorrt_llm/llmapi/llm.py"]["messages"]
    assert [m["level"] for m in python] == ["info", "raise"]
    assert json.loads((out / "index.json").read_text(encoding="utf-8"))["releases"][0]["version"] == "1.0.0"
