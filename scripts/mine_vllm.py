#!/usr/bin/env python3
"""Mine vLLM release wheels for the messages its start-up path can print.

The vLLM twin of ``scripts/mine_sglang.py`` (issue 21): same method, same
message records, its own file table.  For each release the wheel is fetched
with ``pip download vllm==X --no-deps`` (cached in the git-ignored
``scripts/.cache/``), opened with :mod:`zipfile` (never installed, never
imported) and every ``.py`` file matched by :data:`START_UP_FILES` is parsed
with :mod:`ast` by mine_sglang's ``Miner`` (imported, not copied): every
``logger.<level>`` call (``*_once`` included), ``print``, ``tqdm(desc=...)``
and ``raise``, with template, level, enclosing function and line, and every
function definition.

On top of that, what is particular to vLLM's output:

* ``log_format``: the line format and the date format of ``vllm/logger.py``
  (module-level ``_FORMAT`` / ``_DATE_FORMAT`` strings, ``name`` says which),
  and the formatter class that repeats the prefix on every line of a
  multi-line message (``NewLineFormatter``);
* ``process_prefix``: the ``(Name pid=N)`` prefix vLLM writes before every
  line of a child process (``prefix = f"...({worker_name} pid={pid})..."``
  in ``_add_prefix``/``decorate_logs``);
* ``process_name``: the names those prefixes carry (``Process(name=...)``,
  ``set_process_title(...)``, ``decorate_logs(...)``, ``process_name = ...``)
  and the Ray actor classes whose lines Ray prefixes with
  ``(ClassName pid=N, ip=A)`` (``ray.remote(...)(Class)``).

and, for messages mine_sglang's walker does not see: a parameter's string default
used as the message (``message: str = "%storch.compile took %.2f s in total"``),
an exception built in a variable before it is raised (``e = Exception("WorkerProc
initialization failed ..."); raise e``), an exception class's message constant
(``EngineDeadError``), and the ``lgr`` logger argument of the newest release.

Each catalogue file also carries a ``logging`` summary (format, date format,
formatter classes, prefixes and process names) so the envelope of a release
can be read without walking the messages.

One JSON file per release goes to ``grammars/vllm/catalogue/<version>.json``
and ``index.json`` lists the releases mined.  Regenerate with::

    python scripts/mine_vllm.py

(``--versions 0.6.4.post1 0.8.5.post1`` for chosen releases, ``newest`` for
the newest final release on the index, ``--cache DIR`` for the wheel cache.)
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import json
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import mine_sglang
from mine_sglang import (  # the shared walker
    LEVELS,
    Miner,
    add_phases,
    glob_match,
    mine_files,
    version_key,
    wheel_classes,
    write_function_table,
)
from vllm_phases import VLLM_PHASE_ROOTS

ROOT = Path(__file__).resolve().parent.parent
OUT_DIR = ROOT / "grammars" / "vllm" / "catalogue"
# the vLLM pack's frame table: the start-up call graph of every release mined (vllm_phases.py)
FUNCTIONS = ROOT / "grammars" / "vllm" / "functions.json"
CACHE_DIR = Path(__file__).resolve().parent / ".cache"
SCHEMA = 1

# The start-up path, as globs on the wheel's paths, each with the area of
# start-up it belongs to.  First match wins.  `*` stays inside one path
# segment, `**` spans segments (mine_sglang.glob_match).
START_UP_FILES: list[tuple[str, str]] = [
    # logging: the line format and the multi-line formatter
    ("vllm/logger.py", "logging"),
    ("vllm/logging_utils/*.py", "logging"),
    ("vllm/logging/*.py", "logging"),  # the formatter's package until 0.5.x
    # launch: CLI, OpenAI server, HTTP launcher (uvicorn)
    ("vllm/entrypoints/openai/api_server.py", "launch"),
    ("vllm/entrypoints/openai/cli_args.py", "server_args"),
    ("vllm/entrypoints/cli/*.py", "launch"),
    ("vllm/entrypoints/api_server.py", "launch"),
    ("vllm/entrypoints/launcher.py", "http"),
    # (newest releases: entrypoints/launchers/, entrypoints/common/startup.py)
    ("vllm/entrypoints/launchers/launcher.py", "http"),
    ("vllm/entrypoints/launchers/*.py", "launch"),
    ("vllm/entrypoints/launchers/api_server/*.py", "launch"),
    ("vllm/entrypoints/common/startup.py", "launch"),
    ("vllm/entrypoints/utils.py", "launch"),
    ("vllm/entrypoints/openai/serving_engine.py", "http"),
    ("vllm/entrypoints/serve/**/api_router.py", "http"),
    # while serving: request log and the periodic throughput lines (ready evidence)
    ("vllm/entrypoints/logger.py", "runtime"),
    ("vllm/engine/metrics.py", "runtime"),
    ("vllm/v1/metrics/loggers.py", "runtime"),
    # configuration and its validation
    ("vllm/engine/arg_utils.py", "config"),
    ("vllm/config.py", "config"),
    ("vllm/config/*.py", "config"),
    # V0 engine (and the multiprocessing front end, MQLLMEngine)
    ("vllm/engine/llm_engine.py", "engine"),
    ("vllm/engine/async_llm_engine.py", "engine"),
    ("vllm/engine/multiprocessing/*.py", "engine"),
    # V1 engine core, its client and the process utilities
    ("vllm/v1/engine/core*.py", "engine_core"),
    ("vllm/v1/engine/async_llm.py", "engine"),
    ("vllm/v1/engine/llm_engine.py", "engine"),
    ("vllm/v1/engine/utils.py", "engine_core"),
    ("vllm/v1/engine/exceptions.py", "engine_core"),
    ("vllm/v1/utils.py", "engine_core"),
    # KV-cache sizing (V1): the cache-does-not-fit raises
    ("vllm/v1/core/kv_cache_utils.py", "memory_pool"),
    ("vllm/v1/core/kv_cache_planning.py", "memory_pool"),
    # executors (multiproc, Ray, uni) of both engines
    ("vllm/executor/*.py", "executor"),
    ("vllm/v1/executor/*.py", "executor"),
    # workers and model runners of both engines
    ("vllm/worker/*.py", "worker"),
    ("vllm/v1/worker/*.py", "worker"),
    ("vllm/v1/worker/gpu/*.py", "worker"),
    # weights
    ("vllm/model_executor/model_loader/*.py", "weight_loading"),
    ("vllm/model_executor/model_loader/**/*.py", "weight_loading"),
    # torch.compile and CUDA graphs
    ("vllm/compilation/*.py", "compilation"),
    # distributed init and the communicators it builds
    ("vllm/distributed/parallel_state.py", "distributed"),
    ("vllm/distributed/utils.py", "distributed"),
    ("vllm/distributed/device_communicators/*.py", "distributed"),
    # attention backend choice (printed during model init)
    ("vllm/attention/selector.py", "worker"),
    ("vllm/v1/attention/selector.py", "worker"),
    # platforms (the "Automatically detected platform cuda." line)
    ("vllm/platforms/*.py", "platform"),
    # shared helpers: ports, memory, process titles
    ("vllm/utils.py", "utils"),
    ("vllm/utils/__init__.py", "utils"),
    ("vllm/utils/*.py", "utils"),
    ("vllm/env_override.py", "utils"),
]

DEFAULT_RELEASES = [
    "0.5.4",
    "0.6.4.post1",
    "0.7.3",
    "0.8.5.post1",
    "0.9.2",
    "0.10.2",
    "0.11.0",
    "newest",
]

# Names a child process's prefix is built from: `(VllmWorkerProcess pid=N)`.
PREFIX_FUNCTIONS = {"_add_prefix", "decorate_logs", "set_process_title", "_maybe_force_spawn"}
FORMAT_NAME = re.compile(r"^_?(?:\w*_)?(?:FORMAT|DATE_FORMAT|DATEFMT)$")


def area_of(path: str) -> str | None:
    for pattern, area in START_UP_FILES:
        if glob_match(path, pattern):
            return area
    return None


def available_versions() -> list[str]:
    out = subprocess.run(
        [sys.executable, "-m", "pip", "index", "versions", "vllm"],
        capture_output=True, text=True, check=True,
    ).stdout
    m = re.search(r"Available versions:\s*(.*)", out)
    if not m:
        raise SystemExit("pip index versions vllm: no version list")
    return sorted((v.strip() for v in m.group(1).split(",")), key=version_key)


def wheel_for(version: str, cache: Path) -> Path:
    return mine_sglang.wheel_for(version, cache, package="vllm")


def _last(node: ast.AST) -> str:
    """The last segment of a called name: `ctx.Process` -> `Process`."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return ""


def _is_text(node: ast.AST | None) -> bool:
    return isinstance(node, ast.JoinedStr) or (isinstance(node, ast.Constant) and isinstance(node.value, str))


# Loggers mine_sglang does not know by name: `lgr.info(message, version, model)` (0.2x's
# log_version_and_model takes the logger as an argument).
EXTRA_LOGGERS = {"lgr", "init_logger"}


def _string_defaults(node: ast.FunctionDef | ast.AsyncFunctionDef) -> dict[str, ast.AST]:
    """Parameters with a string default: `message: str = "%storch.compile took %.2f s in total"`."""
    args = node.args
    positional = args.posonlyargs + args.args
    pairs = list(zip(positional[len(positional) - len(args.defaults):], args.defaults, strict=True))
    pairs += [(a, d) for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True) if d is not None]
    return {a.arg: d for a, d in pairs if _stringish(d)}


class VllmMiner(Miner):
    """mine_sglang's walker plus vLLM's line format, process prefixes and process names."""

    def __init__(self) -> None:
        super().__init__()
        self.defaults: list[dict[str, ast.AST]] = []

    def _vllm_function(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        self.defaults.append(_string_defaults(node))
        self._function(node)
        self.defaults.pop()

    visit_FunctionDef = _vllm_function
    visit_AsyncFunctionDef = _vllm_function

    def _resolve(self, msg: ast.AST | None, line: int) -> tuple[ast.AST | None, str | None]:
        """mine_sglang's local-variable rule, then a parameter's string default (monitor_torch_compile)."""
        value, via = super()._resolve(msg, line)
        if via is None and isinstance(msg, ast.Name) and self.defaults and msg.id in self.defaults[-1]:
            return self.defaults[-1][msg.id], msg.id
        return value, via

    def visit_Assign(self, node: ast.Assign) -> None:
        if len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            name = node.targets[0].id
            value = node.value
            if FORMAT_NAME.match(name) and _stringish(value):
                self._add(node, "log_format", value, name=name)
            elif name == "prefix" and self.scope and self.scope[-1] in PREFIX_FUNCTIONS and _stringish(value):
                self._add(node, "process_prefix", value, name=name)
            elif name in ("process_name", "proc_name") and _stringish(value):
                self._add(node, "process_name", value, name=name)
            elif self.scope and self.scope[-1].endswith(("Error", "Exception")) and name.endswith("MESSAGE") \
                    and _stringish(value):
                # class EngineDeadError: ENGINE_DEAD_MESSAGE = "..." (the text __init__ passes on)
                self._add(node, "raise", value, exception=self.scope[-1], via=name)
            elif _exception_call(value):
                # `e = Exception("WorkerProc initialization failed ..."); ...; raise e` (wait_for_ready)
                assert isinstance(value, ast.Call)
                self._add(node, "raise", self._resolve(value.args[0], node.lineno)[0],
                          exception=_last(value.func), via=name)
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        called = _last(node.func)
        before = len(self.messages)
        if self._exception_init(node):
            pass
        elif (
            isinstance(node.func, ast.Attribute)
            and called in LEVELS
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id in EXTRA_LOGGERS
        ):
            msg = node.args[0] if node.args else None
            self._add(node, LEVELS[called], msg)
            if msg is not None and len(node.args) > 1 and _is_text(msg):
                self.messages[-1]["format"] = "percent"
        elif called == "Process":
            name = next((k.value for k in node.keywords if k.arg == "name"), None)
            if name is not None and _stringish(name):
                self._add(node, "process_name", name, name="Process")
        elif called in PREFIX_FUNCTIONS and node.args and _stringish(node.args[0]):
            self._add(node, "process_name", node.args[0], name=called)
        elif (
            isinstance(node.func, ast.Call)
            and _last(node.func.func) == "remote"
            and node.args
            and isinstance(node.args[0], ast.Name)
        ):
            # ray.remote(num_gpus=1)(RayWorkerWrapper): Ray prefixes its lines "(RayWorkerWrapper pid=N, ip=A)"
            self._add(node, "process_name", None, name="ray.remote")
            self.messages[-1]["template"] = node.args[0].id
            self.messages[-1]["format"] = "plain"
        super().visit_Call(node)
        # `logger.info(message, a, b)` with `message` a variable or a default: %-format all the same
        for entry in self.messages[before:]:
            if (entry["line"], entry["col"]) == (node.lineno, node.col_offset) and len(node.args) > 1 \
                    and entry.get("via") and entry["format"] == "plain" and "%" in entry["template"]:
                entry["format"] = "percent"

    def _exception_init(self, node: ast.Call) -> bool:
        """`super().__init__(ENGINE_DEAD_MESSAGE, ...)` in an exception's `__init__`: the text it raises with."""
        if not (
            len(self.scope) >= 2
            and self.scope[-1] == "__init__"
            and self.scope[-2].endswith(("Error", "Exception"))
            and _last(node.func) == "__init__"
            and isinstance(node.func, ast.Attribute)
            and isinstance(node.func.value, ast.Call)
            and _last(node.func.value.func) == "super"
            and node.args
        ):
            return False
        msg, via = self._resolve(node.args[0], node.lineno)
        if msg is None or not _stringish(msg):
            return False
        self._add(node, "raise", msg, exception=self.scope[-2], via=via)
        return True

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        # the formatter that repeats the prefix on every line of a message (NewLineFormatter, ...)
        bases = {_last(b) for b in node.bases}
        if bases & {"Formatter", "NewLineFormatter"}:
            self._add(node, "formatter", None, name=node.name)
            self.messages[-1]["template"] = node.name
            self.messages[-1]["format"] = "plain"
        super().visit_ClassDef(node)


def _exception_call(node: ast.AST) -> bool:
    """`SomeError("text", ...)`: an exception built before it is raised."""
    return (
        isinstance(node, ast.Call)
        and _last(node.func).endswith(("Error", "Exception"))
        and _last(node.func)[:1].isupper()
        and bool(node.args)
        and _stringish(node.args[0])
    )


def _stringish(node: ast.AST) -> bool:
    if _is_text(node):
        return True
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Mod)):
        return _stringish(node.left) or _stringish(node.right)
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "format"
        and _is_text(node.func.value)
    )


def logging_summary(files: dict[str, dict]) -> dict:
    """The envelope facts of a release, gathered from the messages."""
    summary: dict[str, list] = {"format": [], "datefmt": [], "formatter": [], "process_prefix": [], "process_name": []}
    for path, f in files.items():
        for m in f["messages"]:
            level = m["level"]
            if level == "log_format" and path.startswith(("vllm/logger.py", "vllm/logging_utils/", "vllm/logging/")):
                key = "datefmt" if "DATE" in m.get("name", "") else "format"
                summary[key].append(m["template"])
            elif level in ("formatter", "process_prefix", "process_name"):
                summary[level].append(m["template"])
    return {k: sorted(set(v)) for k, v in summary.items()}


# -- overrides (mine_overrides.py) ------------------------------------------------------------------

# the files that define the engine's settings: its configs and its engine arguments
CONFIG_FILES = ("vllm/config.py", "vllm/config/*.py", "vllm/engine/arg_utils.py")
ARG_CLASSES = ("EngineArgs", "AsyncEngineArgs")
# owners `<x>_config.field` that hold no setting of the engine: the model's own (Hugging Face) configs
NOT_SETTINGS = re.compile(r"^(?:hf|hf_text|text|vision|quant|pretrained|generation|sampling|tokenizer)_config$|^config$")
SETTING_OWNER = re.compile(r"_config$")


# the classes whose fields a user sets: the engine arguments (every CLI flag) and the compilation
# config (set whole by --compilation-config / -cc); the other configs' fields are set through these
SETTING_CLASSES = (*ARG_CLASSES, "CompilationConfig")


def config_fields(wheel: Path) -> frozenset[str]:
    """The settings of a release: the fields of its engine arguments and compilation config (but
    those a user cannot pass, `field(init=False)`: what vLLM computes, `compilation_time`)."""
    out: set[str] = set()
    for cls in wheel_classes(wheel, CONFIG_FILES):
        if cls.name in SETTING_CLASSES:
            out.update(_class_fields(cls))
    return frozenset(out)


def _class_fields(cls: ast.ClassDef) -> set[str]:
    return {
        s.target.id
        for s in cls.body
        if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name) and not _computed(s.value)
    }


def _computed(value: ast.AST | None) -> bool:
    """`field(default=0.0, init=False)`: a field vLLM fills in, not one a user passes."""
    return isinstance(value, ast.Call) and any(
        k.arg == "init" and isinstance(k.value, ast.Constant) and k.value.value is False for k in value.keywords
    )


def vllm_setting(fields: frozenset[str]) -> Callable[[str, str, str], tuple[str, bool] | None]:
    """The engine setting `owner.name = ...` changes: `self.x` in a `*Config` or `EngineArgs`
    class, `<x>_config.x` anywhere (the model's own configs aside)."""

    def is_setting(owner: str, name: str, cls: str) -> tuple[str, bool] | None:
        if name not in fields or name.startswith("_"):
            return None
        last = owner.split(".")[-1]
        if owner == "self":
            ok = cls.endswith("Config") or cls in ARG_CLASSES
        else:
            ok = SETTING_OWNER.search(last) is not None and NOT_SETTINGS.match(last) is None
        return (name, False) if ok else None

    return is_setting


def mine_wheel(wheel: Path, version: str) -> dict:
    mined = list(mine_files(wheel, area_of, VllmMiner))
    files: dict[str, dict] = {
        name: {"area": area, "functions": m.functions, "messages": m.messages}
        for name, area, m in mined
    }
    found = mine_sglang.mine_overrides(wheel, mined, vllm_setting(config_fields(wheel)))
    digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
    return {
        "schema": SCHEMA,
        "vllm_version": version,
        "wheel": wheel.name,
        "wheel_sha256": digest,
        "generator": "scripts/mine_vllm.py",
        "logging": logging_summary(files),
        "files": files,
        # the settings the release changes on its own and says so (mine_overrides.py)
        "overrides": found,
        "counts": {
            "files": len(files),
            "functions": sum(len(f["functions"]) for f in files.values()),
            "messages": sum(len(f["messages"]) for f in files.values()),
            "overrides": len(found),
        },
    }


def write(catalogue: dict, out: Path) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"{catalogue['vllm_version']}.json"
    path.write_text(json.dumps(catalogue, sort_keys=True, indent=0, ensure_ascii=False) + "\n")
    return path


def write_index(out: Path) -> None:
    entries = []
    for p in out.glob("[0-9]*.json"):  # the releases (index.json and coverage.json are not)
        data = json.loads(p.read_text())
        entries.append({"version": data["vllm_version"], "file": p.name, **data["counts"]})
    entries.sort(key=lambda e: version_key(e["version"]))
    (out / "index.json").write_text(
        json.dumps({"schema": SCHEMA, "releases": entries}, sort_keys=True, indent=1) + "\n"
    )


def call_graph_phases(wheel: Path) -> dict[str, dict]:
    """The phase of every function of a release's start-up files that vLLM's phase roots
    (vllm_phases.py) reach, by wheel path and qualified name: the same walk as SGLang's
    (mine_sglang.add_phases), over the same files as the catalogue."""
    files: dict[str, dict] = {}
    calls: dict[str, dict] = {}
    bases: dict[str, dict] = {}
    for name, _area, m in mine_files(wheel, area_of, VllmMiner):
        files[name] = {"functions": m.functions, "messages": []}
        calls[name], bases[name] = m.calls, m.bases
    add_phases(files, calls, bases, VLLM_PHASE_ROOTS)
    return {path: f["phases"] for path, f in files.items() if f["phases"]}


def write_functions(out: Path, cache: Path, dest: Path = FUNCTIONS) -> int:
    """grammars/vllm/functions.json from the wheels of the releases the catalogue lists (the
    SGLang pack's functions.json is written the same way: mine_sglang.write_function_table)."""
    index = json.loads((out / "index.json").read_text())
    releases = [(e["version"], call_graph_phases(wheel_for(e["version"], cache))) for e in index["releases"]]
    return write_function_table(releases, dest, "scripts/mine_vllm.py")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--versions", nargs="*", help="releases to mine ('newest' = newest final release on the index)")
    ap.add_argument("--cache", type=Path, default=CACHE_DIR, help="wheel cache (git-ignored)")
    ap.add_argument("--out", type=Path, default=OUT_DIR)
    ap.add_argument("--functions-only", action="store_true",
                    help="only write grammars/vllm/functions.json, from the releases the catalogue lists")
    args = ap.parse_args(argv)
    if args.functions_only:
        print(f"{write_functions(args.out, args.cache)} functions -> {FUNCTIONS.relative_to(ROOT)}")
        return 0

    wanted = list(args.versions or DEFAULT_RELEASES)
    if "newest" in wanted:
        finals = [v for v in available_versions() if not re.search(r"(rc|a|b|dev)\d", v)]
        wanted = [finals[-1] if v == "newest" else v for v in wanted]
    wanted = sorted(set(wanted), key=version_key)

    for v in wanted:
        wheel = wheel_for(v, args.cache)
        cat = mine_wheel(wheel, v)
        path = write(cat, args.out)
        c = cat["counts"]
        shown = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
        print(f"{v}: {c['files']} files, {c['functions']} functions, {c['messages']} messages -> {shown}")
    write_index(args.out)
    if args.out == OUT_DIR:
        print(f"{write_functions(args.out, args.cache)} functions -> {FUNCTIONS.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
