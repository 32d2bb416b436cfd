#!/usr/bin/env python3
"""Mine SGLang release wheels for the messages its start-up path can print.

For each release the wheel is fetched with ``pip download sglang==X --no-deps``
(cached), opened with :mod:`zipfile` (never installed, never imported) and every
``.py`` file matched by :data:`START_UP_FILES` is parsed with :mod:`ast`.  Out
of each file come

* the messages: every ``logger.<level>(...)`` (and ``logging.<level>``,
  ``*_once`` variants, SGLang's ``log_info_on_rank0``/``print_warning_once``
  helpers), ``print(...)``, ``tqdm(desc=...)``, ``raise X(...)`` and
  the logging formats (``logging.basicConfig(format=...)``, ``Formatter(...)``)
  with its message template, level, enclosing function (qualified
  ``Class.method``; ``<module>`` at top level, as tracebacks name it) and line;
* the function definitions (qualified names and lines) and the calls each makes
  by name; :mod:`sglang_phases` walks these from the start-up phase roots
  (``launch_server``, ``Scheduler.__init__``, ``ModelRunner.load_model``,
  ``init_memory_pool``, the graph runners, ``_wait_and_warmup``, the event
  loops ...) and gives every function it reaches a phase (``phases`` per file)
  and every message the phase it is printed in (``phase``).

Templates: plain strings are kept as they are; f-strings become a template
with ``{expr}`` placeholders (literal braces doubled, as in the source
f-string); %-format and ``str.format`` strings are kept as written, with
``format`` saying which.  A message passed as a local variable
(``msg = f"..."; logger.error(msg)``) gets the template of the variable's last
assignment before the call (``via`` names the variable).  Nothing else of the
source is copied.

One JSON file per release goes to ``grammars/sglang/catalogue/<version>.json``,
``index.json`` lists the releases mined and ``grammars/sglang/functions.json``
(the frame table of the SGLang pack, shipped in the wheel) gathers the phases of
every function over all releases mined.  Regenerate with::

    python scripts/mine_sglang.py

(``--versions 0.4.10.post2 0.5.2`` for chosen releases, ``--all-patches`` for
the newest post-release of every X.Y.Z, ``--cache DIR`` for the wheel cache.)
"""

from __future__ import annotations

import argparse
import ast
import fnmatch
import hashlib
import json
import re
import subprocess
import sys
import zipfile
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import mine_overrides as overrides
from sglang_formats import mine_logging
from sglang_phases import PHASE_ROOTS, CallGraph, Roots, assign_phases, call_ref, phase_at, reach

ROOT = Path(__file__).resolve().parent.parent
OUT_DIR = ROOT / "grammars" / "sglang" / "catalogue"
CACHE_DIR = Path(__file__).resolve().parent / ".cache"
SCHEMA = 2  # 2: the call graph's phases (files[*].phases, messages[*].phase)

# The start-up path, as globs on the wheel's paths, each with the area of
# start-up it belongs to.  First match wins.  `*` matches within one path
# segment (it does not cross `/`), `**` matches any number of segments.
START_UP_FILES: list[tuple[str, str]] = [
    # launch: CLI, server process, engine, warmup
    ("sglang/launch_server.py", "launch"),
    ("sglang/srt/server.py", "launch"),
    ("sglang/srt/entrypoints/engine.py", "launch"),
    ("sglang/srt/entrypoints/warmup.py", "warmup"),
    ("sglang/srt/server_args.py", "server_args"),
    # 0.5.15+: the argument groups, their resolution hooks and checks (most of server_args' lines by 0.5.19)
    ("sglang/srt/arg_groups/**", "server_args"),
    ("sglang/srt/managers/configure_logging.py", "logging"),
    # front ends (HTTP, gRPC, OpenAI base: request-level errors while serving)
    ("sglang/srt/entrypoints/http_server*.py", "http"),
    ("sglang/srt/entrypoints/grpc_server.py", "http"),
    ("sglang/srt/entrypoints/openai/serving_base.py", "http"),
    ("sglang/srt/openai_api/adapter.py", "http"),
    ("sglang/srt/entrypoints/*.py", "entrypoints"),
    # scheduler, workers, DP controller, tokenizer and detokenizer processes
    ("sglang/srt/managers/scheduler*.py", "scheduler"),
    ("sglang/srt/managers/scheduler_components/*.py", "scheduler"),
    ("sglang/srt/managers/controller/*.py", "scheduler"),
    ("sglang/srt/observability/scheduler*.py", "scheduler"),
    ("sglang/srt/managers/tp_worker*.py", "tp_worker"),
    ("sglang/srt/managers/data_parallel_controller.py", "dp_controller"),
    ("sglang/srt/managers/detokenizer*.py", "detokenizer"),
    ("sglang/srt/managers/tokenizer_manager.py", "tokenizer"),
    # model runner, CUDA/NPU/XPU graph runners
    ("sglang/srt/model_executor/model_runner*.py", "model_runner"),
    ("sglang/srt/model_executor/model_runner_components/*.py", "model_runner"),
    ("sglang/srt/model_executor/pool_configurator.py", "memory_pool"),
    ("sglang/srt/model_executor/*graph_runner*.py", "cuda_graph"),
    ("sglang/srt/model_executor/runner/*graph_runner*.py", "cuda_graph"),
    ("sglang/srt/hardware_backend/*/graph_runner/*graph_runner*.py", "cuda_graph"),
    ("sglang/srt/speculative/*cuda_graph_runner.py", "cuda_graph"),
    # memory pools and KV-cache allocators
    ("sglang/srt/mem_cache/memory_pool*.py", "memory_pool"),
    ("sglang/srt/mem_cache/allocator*.py", "memory_pool"),
    ("sglang/srt/mem_cache/allocator/*.py", "memory_pool"),
    ("sglang/srt/mem_cache/kv_cache_configurator.py", "memory_pool"),
    ("sglang/srt/mem_cache/pool_host/*.py", "memory_pool"),
    ("sglang/srt/mem_cache/unified_memory_pool.py", "memory_pool"),
    # weights and model config
    ("sglang/srt/model_loader/*.py", "weight_loading"),
    ("sglang/srt/configs/model_config.py", "model_config"),
    ("sglang/srt/model_config.py", "model_config"),
    ("sglang/srt/hf_transformers_utils.py", "model_config"),
    ("sglang/srt/utils/hf_transformers_utils.py", "model_config"),
    ("sglang/srt/utils/hf_transformers/*.py", "model_config"),
    ("sglang/srt/weight_cache/*.py", "weight_loading"),
    # distributed init
    ("sglang/srt/distributed/*.py", "distributed"),
    ("sglang/srt/distributed/device_communicators/*.py", "distributed"),
    # features that print their own start-up lines
    ("sglang/srt/speculative/*worker*.py", "speculative"),
    ("sglang/srt/lora/lora_manager.py", "lora"),
    ("sglang/srt/disaggregation/*.py", "disaggregation"),
    ("sglang/srt/disaggregation/*/conn.py", "disaggregation"),
    # shared helpers
    ("sglang/srt/utils.py", "utils"),
    ("sglang/srt/utils/common.py", "utils"),
]


def glob_match(path: str, pattern: str) -> bool:
    """Segment-wise glob: `*` stays inside a segment, `**` spans segments."""
    return _match(path.split("/"), pattern.split("/"))


def _match(parts: list[str], pats: list[str]) -> bool:
    if not pats:
        return not parts
    if pats[0] == "**":
        return any(_match(parts[i:], pats[1:]) for i in range(len(parts) + 1))
    return bool(parts) and fnmatch.fnmatchcase(parts[0], pats[0]) and _match(parts[1:], pats[1:])


LOGGER_NAMES = {"logger", "logging", "_logger", "log", "LOGGER"}
LEVELS = {
    "debug": "debug",
    "info": "info",
    "warning": "warning",
    "warn": "warning",
    "error": "error",
    "exception": "exception",
    "critical": "critical",
    "fatal": "critical",
    "info_once": "info",
    "warning_once": "warning",
    "debug_once": "debug",
}
# SGLang's own logging helpers: `log_info_on_rank0(logger, msg)`,
# `print_warning_once(msg)`, ...  The level is in the name.
HELPER = re.compile(r"(?:log|print)_(debug|info|warning|error)(?:_\w+)?$")
DEFAULT_RELEASES = [
    "0.2.15",
    "0.3.6.post3",
    "0.4.0.post2",
    "0.4.3.post4",
    "0.4.6.post5",
    "0.4.10.post2",
    "0.5.0rc2",
    "0.5.2",
    "0.5.5.post3",
    "0.5.7",
    "0.5.10.post1",
    "0.5.15.post1",
    "0.5.19",
    "newest",
]


def version_key(v: str) -> tuple:
    """Sort key for SGLang versions: 0.5.0rc2 < 0.5.0 < 0.5.0.post1."""
    m = re.fullmatch(r"(\d+(?:\.\d+)*?)(?:\.?(rc|a|b)(\d+))?(?:\.post(\d+))?", v)
    if not m:
        return ((), 0, 0, 0)
    nums = tuple(int(x) for x in m.group(1).split("."))
    nums = nums + (0,) * (4 - len(nums))
    pre = (-1, int(m.group(3))) if m.group(2) else (0, 0)
    return (nums, pre, int(m.group(4) or 0))


def available_versions() -> list[str]:
    out = subprocess.run(
        [sys.executable, "-m", "pip", "index", "versions", "sglang", "--pre"],
        capture_output=True, text=True, check=True,
    ).stdout
    m = re.search(r"Available versions:\s*(.*)", out)
    if not m:
        raise SystemExit("pip index versions sglang: no version list")
    return sorted((v.strip() for v in m.group(1).split(",")), key=version_key)


def newest_patches(versions: list[str]) -> list[str]:
    """The newest post-release of every X.Y.Z (final releases only)."""
    best: dict[str, str] = {}
    for v in versions:
        if re.search(r"(rc|a|b)\d", v):
            continue
        base = re.sub(r"\.post\d+$", "", v)
        if base not in best or version_key(v) > version_key(best[base]):
            best[base] = v
    return sorted(best.values(), key=version_key)


def wheel_for(version: str, cache: Path, package: str = "sglang") -> Path:
    """The release wheel of ``package`` (its source, never installed), downloaded once into ``cache``.
    Shared by the miners of every server (mine_vllm.py)."""
    cache.mkdir(parents=True, exist_ok=True)
    found = list(cache.glob(f"{package}-{version}-*.whl"))
    if not found:
        subprocess.run(
            [sys.executable, "-m", "pip", "download", f"{package}=={version}",
             "--no-deps", "--only-binary", ":all:", "-d", str(cache), "-q"],
            check=True,
        )
        found = list(cache.glob(f"{package}-{version}-*.whl"))
    if not found:
        raise SystemExit(f"no wheel for {package}=={version}")
    return found[0]


def area_of(path: str) -> str | None:
    for pattern, area in START_UP_FILES:
        if glob_match(path, pattern):
            return area
    return None


# -- templates ---------------------------------------------------------------


def _fvalue(node: ast.FormattedValue) -> str:
    text = ast.unparse(node.value)
    if node.conversion != -1:
        text += "!" + chr(node.conversion)
    if node.format_spec is not None:
        spec = node.format_spec
        text += ":" + (_joined(spec) if isinstance(spec, ast.JoinedStr) else ast.unparse(spec))
    return "{" + text + "}"


def _joined(node: ast.JoinedStr) -> str:
    parts = []
    for v in node.values:
        if isinstance(v, ast.Constant) and isinstance(v.value, str):
            parts.append(v.value.replace("{", "{{").replace("}", "}}"))
        elif isinstance(v, ast.FormattedValue):
            parts.append(_fvalue(v))
        else:  # pragma: no cover - not produced by the parser
            parts.append("{" + ast.unparse(v) + "}")
    return "".join(parts)


def template(node: ast.AST | None) -> tuple[str, str]:
    """(template, format) of a message expression."""
    if node is None:
        return "", "none"
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value, "plain"
    if isinstance(node, ast.JoinedStr):
        return _joined(node), "fstring"
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod):
        left, _ = template(node.left)
        return left, "percent"
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, lf = template(node.left)
        right, rf = template(node.right)
        # text next to a placeholder reads as an f-string; percent/format keep their own syntax
        fmt = lf if lf == rf else next((f for f in ("percent", "format") if f in (lf, rf)), "fstring")
        return left + right, fmt
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "format"
        and isinstance(node.func.value, ast.Constant)
        and isinstance(node.func.value.value, str)
    ):
        return node.func.value.value, "format"
    return "{" + ast.unparse(node) + "}", "expr"


# -- the walk ----------------------------------------------------------------


def _dotted(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return _dotted(node.value) + "." + node.attr
    return ""


class Miner(ast.NodeVisitor):
    def __init__(self) -> None:
        self.scope: list[str] = []
        self.functions: list[list] = []
        self.messages: list[dict] = []
        # per enclosing function: name -> [(line, op, value)] of string assignments
        self.assigns: list[dict[str, list[tuple[int, str, ast.AST]]]] = []
        # the call graph's raw material: calls by name per function, bases per class
        self.calls: dict[str, list[tuple[str, str, str, int]]] = {}
        self.bases: dict[str, list[str]] = {}
        self.in_function = 0
        self.aliases: list[dict[str, list[str]]] = []  # per function: `Worker = A if c else B`
        self.tree: ast.AST | None = None  # the module walked (set by mine_files)

    # scopes
    def _qual(self) -> str:
        return ".".join(self.scope) if self.scope else "<module>"

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self.scope.append(node.name)
        self.bases[self._qual()] = [_dotted(b) for b in node.bases if _dotted(b)]
        self.generic_visit(node)
        self.scope.pop()

    def _function(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        self.scope.append(node.name)
        self.functions.append([self._qual(), node.lineno])
        self.assigns.append(_string_assignments(node))
        self.aliases.append(_class_aliases(node))
        self.in_function += 1
        self.generic_visit(node)
        self.in_function -= 1
        self.aliases.pop()
        self.assigns.pop()
        self.scope.pop()

    def _record_call(self, node: ast.Call) -> None:
        caller = self._qual() if self.in_function else "<module>"
        refs = [node.func] + [k.value for k in node.keywords if k.arg in ("target", "func", "fn")]
        for ref in refs:
            found = call_ref(ref)
            if found is None:
                continue
            names = [found[1]]
            if found[0] == "name" and self.aliases and found[1] in self.aliases[-1]:
                names = self.aliases[-1][found[1]]  # `TpWorkerClass(...)`: the classes it may be
            for name in names:
                self.calls.setdefault(caller, []).append((found[0], name, found[2], node.lineno))

    def _resolve(self, msg: ast.AST | None, line: int) -> tuple[ast.AST | None, str | None]:
        """`msg = f"..."; logger.error(msg)`: the template of the last assignment before the call."""
        if not (isinstance(msg, ast.Name) and self.assigns):
            return msg, None
        steps = [a for a in self.assigns[-1].get(msg.id, []) if a[0] < line]
        starts = [i for i, a in enumerate(steps) if a[1] == "="]
        if not starts:
            return msg, None
        chain = steps[starts[-1]:]
        value = chain[0][2]
        for _, _, more in chain[1:]:
            value = ast.BinOp(left=value, op=ast.Add(), right=more)
        return value, msg.id

    visit_FunctionDef = _function
    visit_AsyncFunctionDef = _function

    # messages
    def _add(self, node: ast.AST, level: str, msg: ast.AST | None, **extra) -> None:
        msg, via = self._resolve(msg, node.lineno)
        if via:
            extra["via"] = via
        text, fmt = template(msg)
        entry = {
            "line": node.lineno,
            "col": node.col_offset,
            "function": self._qual(),
            "level": level,
            "template": text,
            "format": fmt,
        }
        entry.update({k: v for k, v in extra.items() if v is not None})
        self.messages.append(entry)

    def visit_Call(self, node: ast.Call) -> None:
        self._record_call(node)
        f = node.func
        if isinstance(f, ast.Attribute) and f.attr in LEVELS:
            owner = _dotted(f.value).split(".")[-1]
            if owner in LOGGER_NAMES:
                msg = node.args[0] if node.args else _kw(node, "msg")
                text_fmt = None
                if msg is not None and len(node.args) > 1 and isinstance(msg, ast.Constant):
                    text_fmt = "percent"
                self._add(node, LEVELS[f.attr], msg, once=True if f.attr.endswith("_once") else None)
                if text_fmt:
                    self.messages[-1]["format"] = text_fmt
        elif HELPER.match(_dotted(f).split(".")[-1]):
            args = [a for a in node.args if not (isinstance(a, ast.Name) and a.id in LOGGER_NAMES)]
            level = HELPER.match(_dotted(f).split(".")[-1]).group(1)
            self._add(node, level, args[0] if args else _kw(node, "msg"), helper=_dotted(f).split(".")[-1])
        elif _dotted(f).split(".")[-1] in ("basicConfig", "Formatter"):
            # the logging configuration: the line format logphase's envelope grammar reads
            fmt = _kw(node, "format") or _kw(node, "fmt") or (node.args[0] if node.args else None)
            datefmt = _kw(node, "datefmt") or (node.args[1] if len(node.args) > 1 else None)
            if fmt is not None:
                dt = self._resolve(datefmt, node.lineno)[0] if datefmt is not None else None
                self._add(node, "log_format", fmt, datefmt=template(dt)[0] if dt is not None else None)
        elif isinstance(f, ast.Name) and f.id == "print":
            self._print(node)
        elif _dotted(f).split(".")[-1] == "tqdm":
            desc = _kw(node, "desc")
            if desc is not None:
                self._add(node, "tqdm", desc)
        self.generic_visit(node)

    def _print(self, node: ast.Call) -> None:
        if not node.args:
            return
        parts = [template(self._resolve(a, node.lineno)[0]) for a in node.args if not isinstance(a, ast.Starred)]
        if not parts:
            return
        sep = _kw(node, "sep")
        joiner = sep.value if isinstance(sep, ast.Constant) and isinstance(sep.value, str) else " "
        text = joiner.join(p[0] for p in parts)
        fmts = {p[1] for p in parts}
        fmt = fmts.pop() if len(fmts) == 1 else "fstring"
        file = _kw(node, "file")
        stream = _dotted(file) if file is not None else None
        self._add(node, "print", None, stream=stream or None)
        self.messages[-1]["template"] = text
        self.messages[-1]["format"] = fmt

    def visit_Raise(self, node: ast.Raise) -> None:
        exc = node.exc
        if exc is None:  # bare re-raise: no message of its own
            self.generic_visit(node)
            return
        if isinstance(exc, ast.Call):
            name = _dotted(exc.func) or ast.unparse(exc.func)
            msg = exc.args[0] if exc.args else None
            self._add(node, "raise", msg, exception=name)
        else:
            name = _dotted(exc)
            if not name or name[:1].islower():
                # `raise e`: re-raising a caught exception, not a new message
                self.generic_visit(node)
                return
            self._add(node, "raise", None, exception=name)
        self.generic_visit(node)


def _stringish(node: ast.AST) -> bool:
    if isinstance(node, ast.Constant):
        return isinstance(node.value, str)
    if isinstance(node, ast.JoinedStr):
        return True
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Mod)):
        return _stringish(node.left) or (isinstance(node.op, ast.Add) and _stringish(node.right))
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "format"
        and _stringish(node.func.value)
    )


def _own_nodes(fn: ast.AST) -> Iterator[ast.AST]:
    """Every node of a function body but those of the functions, classes and lambdas it defines."""
    todo = list(ast.iter_child_nodes(fn))
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        todo.extend(ast.iter_child_nodes(node))
        yield node


def _string_assignments(fn: ast.AST) -> dict[str, list[tuple[int, str, ast.AST]]]:
    """`name = <string>` and `name += <string>` in a function body (nested defs excluded)."""
    found: dict[str, list[tuple[int, str, ast.AST]]] = {}
    for node in _own_nodes(fn):
        if (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
            and _stringish(node.value)
        ):
            found.setdefault(node.targets[0].id, []).append((node.lineno, "=", node.value))
        elif (
            isinstance(node, ast.AugAssign)
            and isinstance(node.target, ast.Name)
            and isinstance(node.op, ast.Add)
            and _stringish(node.value)
        ):
            found.setdefault(node.target.id, []).append((node.lineno, "+=", node.value))
    for steps in found.values():
        steps.sort(key=lambda a: a[0])
    return found


def _class_aliases(fn: ast.AST) -> dict[str, list[str]]:
    """`Worker = TpModelWorkerClient if overlap else TpModelWorker` in a function body: the class
    names a local variable may hold, so that `Worker(...)` is a call of their constructors."""
    found: dict[str, list[str]] = {}
    for node in _own_nodes(fn):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            leaves = [node.value]
            while leaves and isinstance(leaves[-1], ast.IfExp):
                last = leaves.pop()
                leaves += [last.body, last.orelse]
            names = [_dotted(v).split(".")[-1] for v in leaves if isinstance(v, (ast.Name, ast.Attribute))]
            classes = [n for n in names if n[:1].isupper()]
            if classes and len(classes) == len(leaves):
                found.setdefault(node.targets[0].id, []).extend(classes)
    return found


def _kw(node: ast.Call, name: str) -> ast.AST | None:
    for k in node.keywords:
        if k.arg == name:
            return k.value
    return None


def mine_files(wheel: Path, area_of: Callable[[str], str | None], miner: Callable[[], Miner]) -> Iterator[tuple[str, str, Miner]]:
    """Each start-up file of a wheel (``area_of`` says which, and its area) read by a fresh
    ``miner``: (wheel path, area, the miner that visited it), files with nothing to say skipped.
    Shared by the miners of every server (mine_vllm.py)."""
    with zipfile.ZipFile(wheel) as z:
        for name in sorted(z.namelist()):
            if not name.endswith(".py"):
                continue
            area = area_of(name)
            if area is None:
                continue
            source = z.read(name).decode("utf-8", "replace")
            try:
                tree = ast.parse(source, filename=name)
            except SyntaxError as exc:  # a release with syntax newer than ours
                print(f"skip {name}: {exc}", file=sys.stderr)
                continue
            m = miner()
            m.visit(tree)
            if not (m.functions or m.messages):
                continue
            m.messages.sort(key=lambda e: (e["line"], e["col"]))
            m.tree = tree  # for the passes after the walk (mine_overrides.py)
            yield name, area, m


# -- overrides (mine_overrides.py) ------------------------------------------------------------------

# the files whose classes hold ServerArgs' fields: the class itself (<= 0.5.19) and 0.5.20+'s field groups
SERVER_ARGS_FILES = ("sglang/srt/server_args.py", "sglang/srt/arg_groups/fields/*.py")
# 0.5.20+: a resolution hook sets fields by keyword, `declare_resolution(server_args, "_hook", field=value)`
SGLANG_SETTERS = frozenset({"declare_resolution"})


def wheel_classes(wheel: Path, patterns: Sequence[str]) -> Iterator[ast.ClassDef]:
    """Every class defined in the wheel's files that match one of ``patterns`` (glob_match)."""
    with zipfile.ZipFile(wheel) as z:
        for name in z.namelist():
            if any(glob_match(name, p) for p in patterns):
                tree = ast.parse(z.read(name).decode("utf-8", "replace"))
                yield from (node for node in ast.walk(tree) if isinstance(node, ast.ClassDef))


def server_args_fields(wheel: Path) -> frozenset[str]:
    """The fields of ServerArgs in a release: the annotated names of its class (and of the field
    groups it is made of, 0.5.20+)."""
    out: set[str] = set()
    for cls in wheel_classes(wheel, SERVER_ARGS_FILES):
        if cls.name != "PortArgs":
            out.update(s.target.id for s in cls.body if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name))
    return frozenset(out)


def sglang_setting(fields: frozenset[str]) -> Callable[[str, str, str], tuple[str, bool] | None]:
    """The ServerArgs field `owner.name = ...` changes: `self.x` in ServerArgs (and its mixins) or
    in a process's class that keeps its own copy of a field (the scheduler's, the model runner's
    `self.mem_fraction_static`), `server_args.x` / `self.server_args.x` anywhere; a copy kept as
    the opposite flag (`self.enable_overlap` of `disable_overlap_schedule`) is that field, negated."""

    def is_setting(owner: str, name: str, cls: str) -> tuple[str, bool] | None:
        last = owner.split(".")[-1]
        if last != "server_args" and owner != "self":
            return None
        if name in fields:
            return name, False
        if owner == "self" and name.startswith("enable_") and "ServerArgs" not in cls:
            opposite = [f for f in fields if f.startswith("disable_" + name.removeprefix("enable_"))]
            return (opposite[0], True) if len(opposite) == 1 else None
        return None

    return is_setting


def mine_overrides(wheel: Path, mined: list[tuple[str, str, Miner]], is_setting: overrides.IsSetting,
                   setters: frozenset[str] = frozenset()) -> list[dict]:
    """Every override of a release (mine_overrides.py), with its file, in file and line order."""
    out: list[dict] = []
    for name, _, m in mined:
        if m.tree is None:
            continue
        out.extend({"file": name, **o} for o in overrides.mine(m.tree, m.messages, is_setting, setters))
    return sorted(out, key=lambda o: (o["file"], o["line"]))


def mine_wheel(wheel: Path, version: str) -> dict:
    files: dict[str, dict] = {}
    calls: dict[str, dict[str, list[tuple[str, str, str, int]]]] = {}
    bases: dict[str, dict[str, list[str]]] = {}
    mined = list(mine_files(wheel, area_of, Miner))
    for name, area, m in mined:
        files[name] = {"area": area, "functions": m.functions, "messages": m.messages}
        calls[name], bases[name] = m.calls, m.bases
    add_phases(files, calls, bases)
    found = mine_overrides(wheel, mined, sglang_setting(server_args_fields(wheel)), SGLANG_SETTERS)
    digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
    return {
        "schema": SCHEMA,
        "sglang_version": version,
        "wheel": wheel.name,
        "wheel_sha256": digest,
        "generator": "scripts/mine_sglang.py",
        "files": files,
        # the log formats, rank-tag orders and format switches of the release (sglang_formats.py)
        "logging": mine_logging(wheel),
        # the settings the release changes on its own and says so (mine_overrides.py)
        "overrides": found,
        "counts": {
            "files": len(files),
            "functions": sum(len(f["functions"]) for f in files.values()),
            "messages": sum(len(f["messages"]) for f in files.values()),
            "overrides": len(found),
        },
    }


# code that runs when a module is imported (its top level, a class body): the launch
IMPORT_PHASE = "launch"


def add_phases(files: dict[str, dict], calls: dict, bases: dict, roots: Roots = PHASE_ROOTS) -> None:
    """The start-up call graph (sglang_phases.py) from a server's phase ``roots`` (SGLang's by
    default; vllm_phases.py has vLLM's): `phases` per file (function -> phase, the other phases
    reaching it, the phases it runs through), and each message's `phase`: its function's, or later
    when an earlier line of the function called into a later phase."""
    functions = {p: [d[0] for d in f["functions"]] + ["<module>"] for p, f in files.items()}
    graph = CallGraph(functions, calls, bases)
    assigned = assign_phases(graph, roots)
    last = reach(graph, assigned, roots)
    for node, entry in assigned.items():
        if node in last and last[node] != entry["phase"]:
            entry["until"] = last[node]  # it runs on into that phase (TpModelWorker.__init__: capture)
    for path, f in files.items():
        f["phases"] = {q: e for (p, q), e in sorted(assigned.items()) if p == path}
        classes = set(bases.get(path, {}))
        for m in f["messages"]:
            fn = m["function"]
            entry = assigned.get((path, fn))
            if entry is not None:
                m["phase"] = phase_at(graph, last, path, fn, m["line"], str(entry["phase"]), roots)
                if "tied" in entry:
                    m["shared"] = True  # a helper several phases call: its lines are in any of them
            elif fn == "<module>" or fn in classes:
                m["phase"] = IMPORT_PHASE
            else:
                m["phase"] = None


def write(catalogue: dict, out: Path) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"{catalogue['sglang_version']}.json"
    path.write_text(json.dumps(catalogue, sort_keys=True, indent=0, ensure_ascii=False) + "\n")
    return path


def write_index(out: Path) -> None:
    entries = []
    for p in out.glob("[0-9]*.json"):  # the releases (index.json and coverage.json are not)
        data = json.loads(p.read_text())
        entries.append({"version": data["sglang_version"], "file": p.name, **data["counts"]})
    entries.sort(key=lambda e: version_key(e["version"]))
    (out / "index.json").write_text(
        json.dumps({"schema": SCHEMA, "releases": entries}, sort_keys=True, indent=1) + "\n"
    )


FUNCTIONS = ROOT / "grammars" / "sglang" / "functions.json"


def write_functions(out: Path, dest: Path = FUNCTIONS) -> int:
    """The frame table of the SGLang pack, from every catalogued release (``write_function_table``)."""
    index = json.loads((out / "index.json").read_text())
    releases = []
    for v in (e["version"] for e in index["releases"]):
        cat = json.loads((out / f"{v}.json").read_text())
        releases.append((v, {path: f.get("phases", {}) for path, f in cat["files"].items()}))
    return write_function_table(releases, dest, "scripts/mine_sglang.py")


def write_function_table(releases: list[tuple[str, dict[str, dict]]], dest: Path, generator: str) -> int:
    """A pack's frame table (functions.json), from the call graph of each release, oldest first
    (``releases``: version -> wheel path -> qualified name -> the entry ``add_phases`` gives): each
    function the start-up call graph reaches, by wheel path and qualified name, with its phase in the
    newest release that has it, the first and last release (of those mined) it is in, the phases it
    runs through (`spans`: of the roots it calls; `until`: the last phase it runs on into, through the
    roots and its class's methods it calls), the other phases that reach it (`also`; `tied`: as near as its own, a
    shared helper whose phase is no evidence), and `changes` ([release, phase]
    from which a phase held) when releases disagree. One function a line, for readable diffs.
    Shared by the miners of every server (mine_vllm.py)."""
    versions = [v for v, _ in releases]
    rows: dict[str, dict[str, dict]] = {}
    for v, phases in releases:
        for path, by_function in phases.items():
            for qual, e in by_function.items():
                row = rows.setdefault(path, {}).setdefault(qual, {"first": v, "history": []})
                row["last"] = v
                if not row["history"] or row["history"][-1][1] != e["phase"]:
                    row["history"].append([v, e["phase"]])
                for k in ("spans", "also", "tied", "until"):
                    if k in e:
                        row[k] = e[k]
                    else:
                        row.pop(k, None)
    blocks, count = [], 0
    for path in sorted(rows):
        lines = []
        for qual in sorted(rows[path]):
            row = rows[path][qual]
            history = row.pop("history")
            row["phase"] = history[-1][1]
            if len(history) > 1:
                row["changes"] = history
            lines.append(" " + json.dumps(qual) + ": " + json.dumps(row, sort_keys=True))
        count += len(lines)
        blocks.append(json.dumps(path) + ": {\n" + ",\n".join(lines) + "\n}")
    head = {
        "schema": 1,
        "generator": generator,
        "releases": versions,
        "layout": "functions: wheel path -> qualified name -> {phase, first, last, until?, spans?, also?, tied?, changes?}",
    }
    text = json.dumps(head, sort_keys=True)[:-1] + ', "functions": {\n' + ",\n".join(blocks) + "\n}}\n"
    json.loads(text)  # it must stay JSON
    dest.write_text(text)
    return count


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--versions", nargs="*", help="releases to mine ('newest' = newest on the index)")
    ap.add_argument("--all-patches", action="store_true",
                    help="mine the newest post-release of every X.Y.Z on the index")
    ap.add_argument("--cache", type=Path, default=CACHE_DIR, help="wheel cache (git-ignored)")
    ap.add_argument("--out", type=Path, default=OUT_DIR)
    args = ap.parse_args(argv)

    wanted = args.versions or DEFAULT_RELEASES
    listed: list[str] | None = None
    if args.all_patches or "newest" in wanted:
        listed = available_versions()
    if args.all_patches:
        wanted = [v for v in newest_patches(listed) if version_key(v) >= version_key("0.2.0")]
    if "newest" in wanted:
        finals = [v for v in listed if not re.search(r"(rc|a|b)\d", v)]
        wanted = [finals[-1] if v == "newest" else v for v in wanted]
    wanted = sorted(set(wanted), key=version_key)

    for v in wanted:
        wheel = wheel_for(v, args.cache)
        cat = mine_wheel(wheel, v)
        path = write(cat, args.out)
        c = cat["counts"]
        print(f"{v}: {c['files']} files, {c['functions']} functions, "
              f"{c['messages']} messages -> {path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}")
    write_index(args.out)
    if args.out == OUT_DIR:
        n = write_functions(args.out)
        print(f"{n} functions -> {FUNCTIONS.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
