"""The vLLM catalogue mined from the release wheels (grammars/vllm/catalogue, issue 21).

Checks the checked-in data only: no network, no wheel. The structure is what
scripts/mine_vllm.py promises (README beside the data); the known messages are
the lines issue 21 names (phase markers, durations, failures and echoes), which
must be found where the releases print them, and the line format and process
prefixes of each era are those the envelope has to read.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from functools import cache
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[1]
CATALOGUE = ROOT / "grammars" / "vllm" / "catalogue"
LEVELS = {
    "debug", "info", "warning", "error", "exception", "critical", "print", "tqdm", "raise",
    "log_format", "formatter", "process_prefix", "process_name",
}
FORMATS = {"plain", "fstring", "percent", "format", "expr", "none"}


def _miner() -> ModuleType:
    sys.path.insert(0, str(ROOT / "scripts"))  # mine_vllm imports mine_sglang's walker
    try:
        spec = importlib.util.spec_from_file_location("mine_vllm", ROOT / "scripts" / "mine_vllm.py")
        assert spec and spec.loader
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path.remove(str(ROOT / "scripts"))


MINER = _miner()
INDEX = json.loads((CATALOGUE / "index.json").read_text())
VERSIONS = [e["version"] for e in INDEX["releases"]]


def key(version: str) -> tuple[object, ...]:
    return tuple(MINER.version_key(version))


def since(low: str, high: str = "999") -> list[str]:
    return [v for v in VERSIONS if key(low) <= key(v) < key(high)]


@cache
def load(version: str) -> dict:
    return json.loads((CATALOGUE / f"{version}.json").read_text())


def messages(version: str) -> list[tuple[str, dict]]:
    return [(path, m) for path, f in load(version)["files"].items() for m in f["messages"]]


def found(version: str, text: str, level: str | None = None) -> list[tuple[str, str]]:
    """(file, function) of the messages containing `text`."""
    return [
        (path, m["function"])
        for path, m in messages(version)
        if text in m["template"] and (level is None or m["level"] == level)
    ]


def test_index_lists_every_file_sorted_by_version() -> None:
    on_disk = sorted(p.stem for p in CATALOGUE.glob("*.json") if p.name not in ("index.json", "coverage.json"))  # coverage.json: knowledge.py's ratchet
    assert sorted(VERSIONS) == on_disk
    assert [key(v) for v in VERSIONS] == sorted(key(v) for v in VERSIONS)
    # issue 21's eras: 0.5-0.6 V0, 0.7-0.10 V0/V1, 0.11+ V1 only, and a newer one
    minors = {int(v.split(".")[1]) for v in VERSIONS}
    assert {5, 6, 7, 8, 9, 10, 11} <= minors
    assert max(minors) > 11


@pytest.mark.parametrize("version", VERSIONS)
def test_structure(version: str) -> None:
    cat = load(version)
    assert cat["vllm_version"] == version
    assert cat["wheel"].startswith(f"vllm-{version}-")
    assert len(cat["wheel_sha256"]) == 64
    files = cat["files"]
    assert list(files) == sorted(files)
    entry = next(e for e in INDEX["releases"] if e["version"] == version)
    assert cat["counts"] == {k: entry[k] for k in ("files", "functions", "messages", "overrides")}
    assert cat["counts"]["overrides"] == len(cat["overrides"])
    assert cat["counts"]["files"] == len(files)
    assert cat["counts"]["functions"] == sum(len(f["functions"]) for f in files.values())
    assert cat["counts"]["messages"] == sum(len(f["messages"]) for f in files.values())
    for path, f in files.items():
        assert path.startswith("vllm/") and path.endswith(".py")
        assert f["area"] == MINER.area_of(path)
        names = {d[0] for d in f["functions"]}
        seen = set()
        for m in f["messages"]:
            assert {"line", "col", "function", "level", "template", "format"} <= m.keys()
            assert m["level"] in LEVELS and m["format"] in FORMATS, m
            fn = m["function"]
            assert fn == "<module>" or fn in names or any(n.startswith(fn + ".") for n in names), (path, fn)
            if m["level"] == "raise":
                assert m["exception"]
            seen.add((m["line"], m["col"], m["level"]))
        assert [(m["line"], m["col"]) for m in f["messages"]] == sorted((s[0], s[1]) for s in seen)


# -- the line format and the process prefixes of each era -----------------------------------------


@pytest.mark.parametrize("version", VERSIONS)
def test_date_format_has_no_year(version: str) -> None:
    assert load(version)["logging"]["datefmt"] == ["%m-%d %H:%M:%S"]


@pytest.mark.parametrize("version", since("0.5", "0.8"))
def test_format_before_0_8_has_a_bare_file_position(version: str) -> None:
    (fmt,) = load(version)["logging"]["format"]
    assert fmt.endswith("%(levelname)s %(asctime)s %(filename)s:%(lineno)d] %(message)s")


@pytest.mark.parametrize("version", since("0.8"))
def test_format_since_0_8_brackets_the_file_position(version: str) -> None:
    fmts = load(version)["logging"]["format"]
    assert any("%(asctime)s [%(" in f and ":%(lineno)d] %(message)s" in f for f in fmts)


@pytest.mark.parametrize("version", VERSIONS)
def test_child_process_prefix(version: str) -> None:
    logging = load(version)["logging"]
    if key(version) < key("0.12"):
        # _add_prefix wraps a child's stdout and stderr: every line, prints and tracebacks included
        assert logging["process_prefix"] == ["{CYAN}({worker_name} pid={pid}){RESET} "]
    else:
        # the newest put the process in the format itself: log records only
        assert any("(%(vllm_process_name)s pid=%(process)d)" in f for f in logging["format"])


@pytest.mark.parametrize("version", VERSIONS)
def test_multi_line_messages_repeat_the_prefix(version: str) -> None:
    assert "NewLineFormatter" in load(version)["logging"]["formatter"]


def test_process_names_of_each_era() -> None:
    names = {v: set(load(v)["logging"]["process_name"]) for v in VERSIONS}
    for v in since("0.5", "0.11"):
        assert {"VllmWorkerProcess", "RayWorkerWrapper"} <= names[v], v
    for v in since("0.8"):
        assert "VllmWorker-{rank}" in names[v], v
    for v in since("0.10"):
        assert "APIServer" in names[v] and "Worker" in names[v], v
    for v in since("0.10", "0.12"):
        assert "EngineCore_DP{global_index}" in names[v], v


# -- phase markers and durations ------------------------------------------------------------------


@pytest.mark.parametrize("version", VERSIONS)
def test_markers_of_every_release(version: str) -> None:
    assert found(version, "Starting to load model %s...", "info") or found(version, "Loading model from scratch")
    assert found(version, "Loading safetensors checkpoint shards", "tqdm")
    assert found(version, "Graph capturing finished in %.0f secs", "info")
    assert found(version, "Available routes are:", "info")
    assert found(version, "Initializing a", "info")


@pytest.mark.parametrize("version", since("0.5", "0.11"))
def test_v0_markers(version: str) -> None:
    assert ("vllm/worker/model_runner.py", "GPUModelRunnerBase.load_model") in found(version, "Starting to load model")
    assert found(version, "# GPU blocks: %d, # CPU blocks: %d", "info") or found(version, "Memory profiling takes")


@pytest.mark.parametrize("version", since("0.8"))
def test_v1_durations(version: str) -> None:
    assert found(version, "Loading weights took %.2f seconds", "info")
    assert found(version, "Model loading took", "info")
    assert found(version, "torch.compile t", "info")  # "takes" until 0.1x, "took" in the newest
    assert found(version, "init engine (profile, create kv cache, warmup model) took", "info")


@pytest.mark.parametrize("version", since("0.10"))
def test_v1_memory_profiling(version: str) -> None:
    assert ("vllm/v1/worker/gpu_worker.py", "Worker.determine_available_memory") in found(
        version, "Available KV cache memory: ", "info"
    )


# -- failures and their echoes --------------------------------------------------------------------


@pytest.mark.parametrize("version", VERSIONS)
def test_kv_cache_does_not_fit(version: str) -> None:
    assert found(version, "No available memory for the cache blocks. Try increasing `gpu_memory_utilization`", "raise")


@pytest.mark.parametrize("version", since("0.5", "0.8"))
def test_max_seq_len_larger_than_kv_cache_v0(version: str) -> None:
    assert found(version, "is larger than the maximum number of tokens that can be stored in KV cache", "raise")


@pytest.mark.parametrize("version", since("0.8"))
def test_max_seq_len_larger_than_kv_cache_v1(version: str) -> None:
    assert found(version, "KV cache is needed, which is larger than the available KV cache memory", "raise")


@pytest.mark.parametrize("version", since("0.9"))
def test_free_memory_pre_check(version: str) -> None:
    assert found(version, "on startup is less than desired GPU memory utilization", "raise")


@pytest.mark.parametrize("version", since("0.8"))
def test_v1_echoes(version: str) -> None:
    assert found(version, "Engine core initialization failed. See root cause above", "raise")
    assert found(version, "EngineCore failed to start.", "exception")
    assert found(version, "WorkerProc initialization failed due to an exception in a background process", "raise")
    assert found(version, "EngineCore encountered an issue. See stack trace (above)", "raise")
    assert found(version, "Worker failed with error '{result}', please check the stack trace above", "raise")


@pytest.mark.parametrize("version", since("0.5", "0.11"))
def test_v0_worker_exception_echo(version: str) -> None:
    assert found(version, "Exception in worker %s while processing method %s", "error") or found(
        version, "Exception in worker %s while processing method %s", "exception"
    )


def test_v0_worker_exception_carries_the_error_until_0_6() -> None:
    # 0.5.x logged "...: %s, %s" (the error and its traceback in the header line); 0.6 logger.exception
    assert found("0.5.4", "Exception in worker %s while processing method %s: %s, %s", "error")
    assert found("0.6.4.post1", "Exception in worker %s while processing method %s.", "exception")
