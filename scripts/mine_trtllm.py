#!/usr/bin/env python3
"""Mine TensorRT-LLM's source, per release, for the messages its start-up path can print.

The TensorRT-LLM twin of ``scripts/mine_vllm.py`` (issue 32). TensorRT-LLM's wheels are not on PyPI
(only stubs that fetch them from NVIDIA's index at install time), so the source is read from a git
directory of NVIDIA/TensorRT-LLM (the ``fetch`` tool's snapshot, whose history holds every release tag)
with ``git ls-tree`` and ``git show`` (never checked out, never built, never imported), or from an
unpacked source tree of one release (``--tree DIR --versions X``).

Per release, for the files of :data:`START_UP_FILES`:

* Python (``tensorrt_llm/``): mine_sglang's ``Miner`` (imported, not copied) walks each file's AST:
  every ``logger.<level>`` call (TensorRT-LLM's ``tensorrt_llm.logger`` has the same level names,
  ``*_once`` included), ``print``, ``tqdm(desc=...)`` and ``raise``, with template, level, enclosing
  function and line, and every function definition;
* C++ (``cpp/``): the logging macros (``TLLM_LOG_INFO("...")``, ``TLLM_LOG_WARNING``, ``TLLM_LOG_ERROR``,
  ``TLLM_LOG_DEBUG``, ``TLLM_LOG_EXCEPTION``), the checks whose message is the error
  (``TLLM_CHECK_WITH_INFO(cond, "...")``, ``TLLM_THROW("...")``), read with a regular expression over
  the file's text (adjacent literals joined), with the enclosing function where a definition precedes it;
* the logger's own prefix: the Python logger's ``PREFIX``, level letters and ``datefmt``, the C++
  logger's ``kPREFIX`` (``logging`` in the catalogue: what grammars/shared/envelope.lark's
  ``trtllm_logger`` and ``trtllm_native`` read).

Each file gets its area (:func:`area_of`: launch, distributed, weight_loading, memory_pool, capture,
serving, or several), the phase evidence a message of it is.

One JSON file per release goes to ``grammars/trtllm/catalogue/<release>.json`` and ``index.json``
lists the releases mined. Regenerate with::

    python scripts/mine_trtllm.py --git /work/.mirror/NVIDIA+TensorRT-LLM/repo

(``--versions v0.9.0 v1.0.0`` for chosen release tags; the default is one per era: the TensorRT-engine
era 0.9, 0.12, 0.16, 0.21; 1.x with the PyTorch backend 1.0, 1.1; the newest 1.2.)
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from mine_sglang import Miner, glob_match, version_key  # the shared walker

ROOT = Path(__file__).resolve().parent.parent
OUT_DIR = ROOT / "grammars" / "trtllm" / "catalogue"
SCHEMA = 1

# (glob over the repository's paths, area): the files the start-up path runs, first match wins
START_UP_FILES: list[tuple[str, str]] = [
    ("tensorrt_llm/logger.py", "logging"),
    ("tensorrt_llm/__init__.py", "launch"),
    ("tensorrt_llm/commands/serve.py", "launch"),
    ("tensorrt_llm/serve/openai_server.py", "serving"),
    ("tensorrt_llm/llmapi/llm.py", "launch"),
    ("tensorrt_llm/llmapi/llm_args.py", "launch"),
    ("tensorrt_llm/llmapi/llm_utils.py", "weight_loading"),
    ("tensorrt_llm/llmapi/mpi_session.py", "launch"),
    ("tensorrt_llm/executor/proxy.py", "launch"),
    ("tensorrt_llm/executor/worker.py", "several"),
    ("tensorrt_llm/executor/*.py", "several"),
    ("tensorrt_llm/_torch/pyexecutor/model_loader.py", "weight_loading"),
    ("tensorrt_llm/_torch/pyexecutor/model_engine.py", "several"),
    ("tensorrt_llm/_torch/pyexecutor/_util.py", "memory_pool"),
    ("tensorrt_llm/_torch/pyexecutor/resource_manager.py", "memory_pool"),
    ("tensorrt_llm/_torch/pyexecutor/py_executor_creator.py", "several"),
    ("tensorrt_llm/_torch/pyexecutor/cuda_graph_runner.py", "capture"),
    ("tensorrt_llm/_torch/pyexecutor/py_executor.py", "serving"),
    ("tensorrt_llm/_torch/autotuner.py", "capture"),
    ("tensorrt_llm/_torch/models/checkpoints/**/*.py", "weight_loading"),
    ("tensorrt_llm/_torch/models/modeling_utils.py", "weight_loading"),
    ("tensorrt_llm/_torch/distributed/*.py", "distributed"),
    ("tensorrt_llm/runtime/model_runner*.py", "weight_loading"),
    ("cpp/include/tensorrt_llm/common/logger.h", "logging"),
    ("cpp/tensorrt_llm/common/mpiUtils.cpp", "distributed"),
    ("cpp/tensorrt_llm/runtime/ncclCommunicator.cpp", "distributed"),
    ("cpp/tensorrt_llm/runtime/tllmRuntime.cpp", "weight_loading"),
    ("cpp/tensorrt_llm/runtime/gptJsonConfig.cpp", "weight_loading"),
    ("cpp/tensorrt_llm/batch_manager/kvCacheManager.cpp", "memory_pool"),
    ("cpp/tensorrt_llm/batch_manager/trtGptModelInflightBatching.cpp", "several"),
    ("cpp/tensorrt_llm/executor/executorImpl.cpp", "several"),
    ("cpp/tensorrt_llm/plugins/**/*.cpp", "weight_loading"),
    ("triton_backend/inflight_batcher_llm/src/*.cc", "several"),
]

# one release per era: the TensorRT-engine era, 1.x with the PyTorch backend, the newest
DEFAULT_RELEASES = ["v0.9.0", "v0.12.0", "v0.16.0", "v0.21.0", "v1.0.0", "v1.1.0", "v1.2.0"]

# the C++ logging macros and checks: macro name -> the catalogue's level
CXX_LEVELS = {
    "TLLM_LOG_TRACE": "trace",
    "TLLM_LOG_DEBUG": "debug",
    "TLLM_LOG_INFO": "info",
    "TLLM_LOG_WARNING": "warning",
    "TLLM_LOG_ERROR": "error",
    "TLLM_LOG_EXCEPTION": "error",
    "TLLM_THROW": "raise",
    "TLLM_CHECK_WITH_INFO": "raise",
}
_CXX_CALL = re.compile(r"\b(" + "|".join(CXX_LEVELS) + r")\s*\(")
_CXX_STRING = re.compile(r'"((?:[^"\\\n]|\\.)*)"')
# a function definition at a line's start ("void KVCacheManager::allocatePools(...)" then "{")
_CXX_FUNCTION = re.compile(r"^[\w:<>,*&\s]+?\b([\w:~]+)\s*\([^;{}]*\)\s*(?:const\s*)?(?:override\s*)?\{?\s*$", re.M)
# the Python logger's and the C++ logger's prefixes
_PY_PREFIX = re.compile(r"PREFIX\s*=\s*['\"]([^'\"]+)['\"]")
_PY_DATEFMT = re.compile(r"datefmt\s*=\s*['\"]([^'\"]+)['\"]")
_PY_LEVEL = re.compile(r"^\s*(INTERNAL_ERROR|ERROR|WARNING|INFO|VERBOSE|DEBUG)\s*=\s*['\"](\[\w\])['\"]", re.M)
_CXX_PREFIX = re.compile(r"kPREFIX\s*=\s*\"([^\"]+)\"|PREFIX\s*=\s*\"(\[TensorRT-LLM\][^\"]*)\"")


def area_of(path: str) -> str | None:
    for pattern, area in START_UP_FILES:
        if glob_match(path, pattern):
            return area
    return None


# -- reading a release ------------------------------------------------------------------------------


def git_files(git_dir: Path, tag: str) -> Iterator[tuple[str, str]]:
    """(path, text) of each start-up file of the release ``tag`` in a git directory."""
    names = subprocess.run(
        ["git", f"--git-dir={git_dir}", "ls-tree", "-r", "--name-only", tag], capture_output=True, text=True, check=True
    ).stdout.splitlines()
    for name in sorted(names):
        if area_of(name) is None or not name.endswith((".py", ".cpp", ".cc", ".h")):
            continue
        shown = subprocess.run(["git", f"--git-dir={git_dir}", "show", f"{tag}:{name}"], capture_output=True, check=True)
        yield name, shown.stdout.decode("utf-8", "replace")


def tree_files(tree: Path) -> Iterator[tuple[str, str]]:
    """(path, text) of each start-up file of an unpacked source tree."""
    for path in sorted(tree.rglob("*")):
        name = path.relative_to(tree).as_posix()
        if path.is_file() and area_of(name) is not None and name.endswith((".py", ".cpp", ".cc", ".h")):
            yield name, path.read_text(encoding="utf-8", errors="replace")


# -- what a file says -------------------------------------------------------------------------------


def python_messages(name: str, source: str) -> tuple[list[list], list[dict]]:
    """The functions and messages of a Python file (mine_sglang's walker)."""
    try:
        tree = ast.parse(source, filename=name)
    except SyntaxError as exc:  # a release with syntax newer than ours
        print(f"skip {name}: {exc}", file=sys.stderr)
        return [], []
    miner = Miner()
    miner.visit(tree)
    miner.messages.sort(key=lambda e: (e["line"], e["col"]))
    return miner.functions, miner.messages


def cxx_messages(source: str) -> tuple[list[list], list[dict]]:
    """The functions and messages of a C++ file: each logging macro's or check's format string (the
    literals of its arguments joined; a check's condition is its first argument, not its message)."""
    functions = [[m.group(1), source.count("\n", 0, m.start()) + 1] for m in _CXX_FUNCTION.finditer(source)]
    messages: list[dict] = []
    for call in _CXX_CALL.finditer(source):
        macro = call.group(1)
        args = _call_arguments(source, call.end())
        if macro == "TLLM_CHECK_WITH_INFO":
            args = args.split(",", 1)[1] if "," in args else ""
        literals = _CXX_STRING.findall(args)
        if not literals:
            continue
        line = source.count("\n", 0, call.start()) + 1
        function = next((f for f, at in reversed(functions) if at <= line), "<file>")
        messages.append(
            {
                "level": CXX_LEVELS[macro],
                "macro": macro,
                "template": "".join(literals).encode().decode("unicode_escape", "replace"),
                "format": "printf",
                "function": function,
                "line": line,
            }
        )
    return functions, messages


def _call_arguments(source: str, start: int) -> str:
    """The text of a call's arguments, from just after its '(' to the matching ')'."""
    depth, i, quoted = 1, start, False
    while i < len(source) and depth:
        char = source[i]
        if char == "\\" and quoted:
            i += 2
            continue
        if char == '"':
            quoted = not quoted
        elif not quoted:
            depth += {"(": 1, ")": -1}.get(char, 0)
        i += 1
    return source[start : i - 1]


def logging_summary(texts: dict[str, str]) -> dict:
    """The loggers' prefixes: the Python logger's prefix, level letters and date format, the C++
    logger's prefix."""
    summary: dict[str, list[str]] = {"python_prefix": [], "python_levels": [], "datefmt": [], "cxx_prefix": []}
    for name, text in texts.items():
        if name == "tensorrt_llm/logger.py":
            summary["python_prefix"] += _PY_PREFIX.findall(text)
            summary["python_levels"] += [letter for _, letter in _PY_LEVEL.findall(text)]
            summary["datefmt"] += _PY_DATEFMT.findall(text)
        elif name.endswith("logger.h"):
            summary["cxx_prefix"] += [a or b for a, b in _CXX_PREFIX.findall(text)]
    return {k: sorted(set(v)) for k, v in summary.items()}


def mine_release(files: Iterator[tuple[str, str]], version: str, source: str) -> dict:
    texts = dict(files)
    mined: dict[str, dict] = {}
    for name, text in texts.items():
        functions, messages = python_messages(name, text) if name.endswith(".py") else cxx_messages(text)
        if functions or messages:
            mined[name] = {"area": area_of(name), "functions": functions, "messages": messages}
    digest = hashlib.sha256("".join(f"{n}\0{t}" for n, t in sorted(texts.items())).encode()).hexdigest()
    return {
        "schema": SCHEMA,
        "trtllm_version": version.lstrip("v"),
        "source": source,
        "source_sha256": digest,
        "generator": "scripts/mine_trtllm.py",
        "logging": logging_summary(texts),
        "files": mined,
        "counts": {
            "files": len(mined),
            "functions": sum(len(f["functions"]) for f in mined.values()),
            "messages": sum(len(f["messages"]) for f in mined.values()),
        },
    }


def write(catalogue: dict, out: Path) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"{catalogue['trtllm_version']}.json"
    path.write_text(json.dumps(catalogue, sort_keys=True, indent=0, ensure_ascii=False) + "\n")
    return path


def write_index(out: Path) -> None:
    entries = []
    for p in out.glob("*.json"):
        if p.name == "index.json":
            continue
        data = json.loads(p.read_text())
        entries.append({"version": data["trtllm_version"], "file": p.name, **data["counts"]})
    entries.sort(key=lambda e: version_key(e["version"]))
    (out / "index.json").write_text(json.dumps({"schema": SCHEMA, "releases": entries}, sort_keys=True, indent=1) + "\n")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    where = ap.add_mutually_exclusive_group(required=True)
    where.add_argument("--git", type=Path, help="a git directory of NVIDIA/TensorRT-LLM (fetch's snapshot)")
    where.add_argument("--tree", type=Path, help="an unpacked source tree of one release (name it with --versions)")
    ap.add_argument("--versions", nargs="*", help="release tags to mine (v0.9.0 ...); with --tree, the one release")
    ap.add_argument("--out", type=Path, default=OUT_DIR)
    args = ap.parse_args(argv)
    wanted = list(args.versions or DEFAULT_RELEASES)
    if args.tree is not None and len(wanted) != 1:
        ap.error("--tree reads one release: name it with --versions X")
    for tag in wanted:
        files = git_files(args.git, tag) if args.git is not None else tree_files(args.tree)
        cat = mine_release(files, tag, f"{tag} of {args.git}" if args.git is not None else str(args.tree))
        path = write(cat, args.out)
        c = cat["counts"]
        print(f"{tag}: {c['files']} files, {c['functions']} functions, {c['messages']} messages -> {path}")
    write_index(args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
