"""The SGLang catalogue mined from the release wheels (grammars/sglang/catalogue, issue 20).

Checks the checked-in data only: no network, no wheel. The structure is what
scripts/mine_sglang.py promises (README beside the data); the known messages are
lines logphase already reads, which must be found where the releases print them.
"""

from __future__ import annotations

import importlib.util
import json
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CATALOGUE = ROOT / "grammars" / "sglang" / "catalogue"
PHASES = {"launch", "distributed_init", "weight_loading", "memory_pool", "cuda_graph_capture", "warmup", "ready"}
LEVELS = {"debug", "info", "warning", "error", "exception", "critical", "print", "tqdm", "raise", "log_format"}
FORMATS = {"plain", "fstring", "percent", "format", "expr", "none"}


def _miner():
    spec = importlib.util.spec_from_file_location("mine_sglang", ROOT / "scripts" / "mine_sglang.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


MINER = _miner()
ORDER = ["launch", "distributed_init", "weight_loading", "memory_pool", "cuda_graph_capture", "warmup", "ready"]
INDEX = json.loads((CATALOGUE / "index.json").read_text())
VERSIONS = [e["version"] for e in INDEX["releases"]]


@cache
def load(version: str) -> dict:
    return json.loads((CATALOGUE / f"{version}.json").read_text())


def messages(version: str) -> list[tuple[str, dict]]:
    return [(path, m) for path, f in load(version)["files"].items() for m in f["messages"]]


def key(version: str) -> tuple:
    return MINER.version_key(version)


def test_index_lists_every_file_sorted_by_version() -> None:
    on_disk = sorted(p.stem for p in CATALOGUE.glob("[0-9]*.json"))
    assert sorted(VERSIONS) == on_disk
    assert [key(v) for v in VERSIONS] == sorted(key(v) for v in VERSIONS)
    assert len(set(VERSIONS)) == len(VERSIONS)
    # issue 20 asks for the 0.3, 0.4 and 0.5 eras at least
    assert {v.split(".")[1] for v in VERSIONS} >= {"3", "4", "5"}


def test_version_order_is_release_order() -> None:
    assert key("0.5.0rc2") < key("0.5.0") < key("0.5.0.post1") < key("0.5.1")
    assert key("0.4.9.post6") < key("0.4.10") < key("0.5.0rc0")


@pytest.mark.parametrize("version", VERSIONS)
def test_structure(version: str) -> None:
    cat = load(version)
    assert cat["sglang_version"] == version
    assert cat["wheel"].startswith(f"sglang-{version}-")
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
        assert path.startswith("sglang/") and path.endswith(".py")
        assert f["area"] == MINER.area_of(path)
        defs = f["functions"]
        assert len({tuple(d) for d in defs}) == len(defs), path
        assert [d[1] for d in defs] == sorted(d[1] for d in defs), path
        names = {d[0] for d in defs}
        # the call graph's phases: functions of this file, each with a phase
        assert set(f["phases"]) <= names | {"<module>"}, path
        for qual, e in f["phases"].items():
            assert e["phase"] in PHASES and e["distance"] >= 0, (path, qual)
            assert set(e.get("also", [])) <= PHASES - {e["phase"]}, (path, qual)
            assert set(e.get("spans", [])) <= PHASES, (path, qual)
            assert set(e.get("tied", [])) <= set(e.get("also", [])), (path, qual)
            if "until" in e:
                assert ORDER.index(e["until"]) > ORDER.index(e["phase"]), (path, qual)
        seen = set()
        for m in f["messages"]:
            assert {"line", "col", "function", "level", "template", "format"} <= m.keys()
            assert m["level"] in LEVELS and m["format"] in FORMATS
            assert isinstance(m["template"], str) and isinstance(m["line"], int)
            # the enclosing scope is a function of this file, a class body or the module
            fn = m["function"]
            assert fn == "<module>" or fn in names or any(n.startswith(fn + ".") for n in names), (path, fn)
            if m["level"] == "raise":
                assert m["exception"]
            # a message is printed in its function's phase, or later (after a call into a later phase)
            assert m["phase"] is None or m["phase"] in PHASES, (path, m)
            own = f["phases"].get(fn, {}).get("phase")
            if own is not None:
                assert ORDER.index(m["phase"]) >= ORDER.index(own), (path, m)
            spot = (m["line"], m["col"])
            assert spot not in seen, (path, spot)
            seen.add(spot)
        assert [(m["line"], m["col"]) for m in f["messages"]] == sorted(seen)


def _found(version: str, text: str, level: str | None = None) -> list[tuple[str, str]]:
    """(file, function) of the messages containing `text` (case-insensitive: releases change the case)."""
    return [
        (path, m["function"])
        for path, m in messages(version)
        if text.lower() in m["template"].lower() and (level is None or m["level"] == level)
    ]


@pytest.mark.parametrize("version", VERSIONS)
def test_known_messages_in_every_release(version: str) -> None:
    assert ("_wait_and_warmup" in {fn for _, fn in _found(version, "The server is fired up and ready to roll!", "info")})
    assert _found(version, "Load weight begin. avail mem=", "info")
    assert _found(version, "Load weight end.", "info")
    assert _found(version, "max_total_num_tokens=")
    assert _found(version, "server_args=")
    assert _found(version, "Capture cuda graph failed", "raise")
    assert _found(version, "Memory pool end.", "info")
    assert _found(version, "Prefill batch")
    assert _found(version, "Decode batch")
    # the model runner loads the weights in every release
    assert ("sglang/srt/model_executor/model_runner.py", "ModelRunner.load_model") in _found(version, "Load weight begin")


@pytest.mark.parametrize("version", [v for v in VERSIONS if key(v) >= key("0.3")])
def test_known_messages_since_0_3(version: str) -> None:
    assert _found(version, "Scheduler hit an exception")
    assert _found(version, "DetokenizerManager hit an exception")


@pytest.mark.parametrize("version", [v for v in VERSIONS if key("0.3") <= key(v) < key("0.5.20")])
def test_init_torch_distributed_0_3_to_0_5_19(version: str) -> None:
    # ModelRunner's method until 0.5.15; a module function of distributed/bootstrap.py by 0.5.19
    names = {fn.split(".")[-1] for _, fn in _found(version, "Init torch distributed begin.", "info")}
    assert names == {"init_torch_distributed"}


@pytest.mark.parametrize("version", [v for v in VERSIONS if key("0.4.6") <= key(v) < key("0.5.10")])
def test_launcher_lines_of_0_4_6_to_0_5_9(version: str) -> None:
    assert ("_launch_subprocesses" in {fn for _, fn in _found(version, "scheduler is dead", "error")})
    assert _found(version, "Exit code: ", "error")


@pytest.mark.parametrize("version", [v for v in VERSIONS if key(v) >= key("0.4.6")])
def test_kv_cache_allocated_or_moved(version: str) -> None:
    # "KV Cache is allocated" from the memory pools; the newest releases log the pool from elsewhere
    assert _found(version, "KV Cache is allocated") or _found(version, "max_total_num_tokens=")


def test_frames_issue_20_names() -> None:
    """Frames the unseen logs showed are functions of the catalogue (what point 3 maps to phases)."""
    newest = VERSIONS[-1]
    # (forward_extend left ModelRunner for the attention backends, outside the start-up files, by 0.5.23)
    wanted = {"event_loop_overlap", "init_memory_pool", "initialize", "init_torch_distributed"}
    names = {d[0].split(".")[-1] for f in load(newest)["files"].values() for d in f["functions"]}
    assert wanted <= names
    mid = [v for v in VERSIONS if key("0.4.6") <= key(v) < key("0.5.10")]  # ModelRunner.initialize is newer than 0.4.0
    for v in mid:
        quals = {d[0] for f in load(v)["files"].values() for d in f["functions"]}
        assert {"ModelRunner.initialize", "ModelRunner.forward_extend", "CudaGraphRunner.capture"} <= quals, v


@pytest.mark.parametrize("version", VERSIONS)
def test_logging_format_of_every_release(version: str) -> None:
    """configure_logger's line format (issue 20 point 5): '[%(asctime)s' + prefix + '] %(message)s'."""
    fmts = [m for path, m in messages(version) if m["level"] == "log_format" and m["function"] == "configure_logger"]
    assert fmts, version
    assert all(m["template"].startswith("[%(asctime)s") and m["template"].endswith("] %(message)s") for m in fmts)


# -- the start-up call graph (issue 20 point 1b) -----------------------------------------------------


def _phase_of(version: str, qual: str) -> set[str]:
    return {f["phases"][qual]["phase"] for f in load(version)["files"].values() if qual in f["phases"]}


# functions whose phase SGLang's start-up order fixes, as the call graph must find them
FRAMES = {
    "Scheduler.event_loop_normal": "ready",
    "Scheduler.event_loop_overlap": "ready",
    "ModelRunner.load_model": "weight_loading",
    "ModelRunner.init_memory_pool": "memory_pool",
    "ModelRunner.init_torch_distributed": "distributed_init",
    "ModelRunner.init_cuda_graphs": "cuda_graph_capture",
    "CudaGraphRunner.capture": "cuda_graph_capture",
    "CudaGraphRunner.__init__": "cuda_graph_capture",
    "_wait_and_warmup": "warmup",
    "Scheduler.__init__": "launch",
    "ServerArgs.__post_init__": "launch",
}


@pytest.mark.parametrize("version", VERSIONS)
def test_call_graph_places_the_known_frames(version: str) -> None:
    found = 0
    for qual, phase in FRAMES.items():
        phases = _phase_of(version, qual)
        if phases:
            found += 1
            assert phases == {phase}, (version, qual, phases)
    assert found >= 5, version


@pytest.mark.parametrize("version", VERSIONS)
def test_markers_are_printed_in_their_phase(version: str) -> None:
    wanted = {
        "Load weight begin.": "weight_loading",
        "Memory pool end.": "memory_pool",
        "Init torch distributed begin.": "distributed_init",
        "The server is fired up and ready to roll!": "warmup",  # the warmup's last line
    }
    for text, phase in wanted.items():
        phases = {m["phase"] for _, m in messages(version) if m["template"].startswith(text) and m["level"] == "info"}
        # (0.2 and the newest releases print no "Init torch distributed begin.")
        assert phase in phases or (not phases and not text.startswith("Load weight")), (version, text, phases)
    # the scheduler's ready line comes after the graphs (it closes the capture phase)
    ready_line = {m["phase"] for _, m in messages(version) if m["template"].startswith("max_total_num_tokens=")}
    assert ready_line and ready_line <= {"cuda_graph_capture", "memory_pool"}, (version, ready_line)


def _mine_sources(sources: dict[str, str]) -> dict:
    """The miner's per-file data and phases for made-up sources (no wheel)."""
    import ast

    files, calls, bases = {}, {}, {}
    for path, text in sources.items():
        m = MINER.Miner()
        m.visit(ast.parse(text))
        files[path] = {"area": MINER.area_of(path), "functions": m.functions, "messages": m.messages}
        calls[path], bases[path] = m.calls, m.bases
    MINER.add_phases(files, calls, bases)
    return files


def test_call_graph_on_made_up_sources() -> None:
    """Roots give their phase to what they call; the nearest root wins; a line after a call into
    a later phase is printed in that phase; a class picked at run time is followed."""
    runner = '''
class ModelRunner:
    def __init__(self):
        self.init_torch_distributed()
        self.initialize()

    def init_torch_distributed(self):
        helper()

    def initialize(self):
        self.load_model()
        self.init_memory_pool()
        self.init_cuda_graphs()

    def load_model(self):
        logger.info("Load weight begin.")
        read_weights()

    def init_memory_pool(self):
        helper()

    def init_cuda_graphs(self):
        self.cuda_graph_runner = CudaGraphRunner(self)

def read_weights():
    pass

def helper():
    pass
'''
    graphs = '''
class CudaGraphRunner:
    def __init__(self, runner):
        self.capture()

    def capture(self):
        raise RuntimeError("Capture cuda graph failed")
'''
    scheduler = '''
class Scheduler:
    def __init__(self, overlap):
        Worker = TpModelWorkerClient if overlap else TpModelWorker
        self.tp_worker = Worker()
        logger.info(f"max_total_num_tokens={self.max_total_num_tokens}")

    def event_loop_normal(self):
        self.run_batch()

    def run_batch(self):
        pass

class TpModelWorker:
    def __init__(self):
        self.model_runner = ModelRunner()

class TpModelWorkerClient:
    def __init__(self):
        pass
'''
    files = _mine_sources(
        {
            "sglang/srt/model_executor/model_runner.py": runner,
            "sglang/srt/model_executor/cuda_graph_runner.py": graphs,
            "sglang/srt/managers/scheduler.py": scheduler,
        }
    )
    phases = {q: e for f in files.values() for q, e in f["phases"].items()}
    expected = {
        "ModelRunner.load_model": "weight_loading",
        "read_weights": "weight_loading",
        "ModelRunner.init_memory_pool": "memory_pool",
        "CudaGraphRunner.capture": "cuda_graph_capture",
        "ModelRunner.init_torch_distributed": "distributed_init",
        "Scheduler.run_batch": "ready",
        "TpModelWorkerClient.__init__": "launch",
    }
    assert {q: phases[q]["phase"] for q in expected} == expected
    # helper() is as near to distributed init as to the memory pool: shared, no evidence
    assert phases["helper"]["tied"]
    assert phases["TpModelWorker.__init__"]["until"] == "cuda_graph_capture"
    assert phases["ModelRunner.initialize"]["spans"] == ["weight_loading", "memory_pool", "cuda_graph_capture"]
    by_text = {m["template"]: m["phase"] for f in files.values() for m in f["messages"]}
    assert by_text["Load weight begin."] == "weight_loading"
    assert by_text["Capture cuda graph failed"] == "cuda_graph_capture"
    # printed by the scheduler's constructor after its worker captured the graphs
    assert by_text["max_total_num_tokens={self.max_total_num_tokens}"] == "cuda_graph_capture"
