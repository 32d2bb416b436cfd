"""The start-up call graph of one SGLang release: which phase each function runs in.

Used by ``mine_sglang.py`` (stdlib only, like it). The miner records, for every function of the
start-up files, the calls it makes *by name* (``self.x()``, ``self.attr.x()``, ``module.f()``,
``f()``, ``Class()``, ``super().x()``, ``Thread(target=self.f)``) and the bases of every class.
Here those names are resolved to functions of the same files and a breadth-first walk starts
from the *phase roots* (:data:`PHASE_ROOTS`: the functions SGLang runs a phase in, read from its
source), all roots at once. A function takes the phase of the root nearest to it (the innermost
root: ``load_model`` is reached from ``Scheduler.__init__`` too, but its own root is nearer);
ties go to the root listed first. Every root that reaches it is recorded as well.

Resolution is by name, not by type, so it errs both ways; it is kept conservative: a method name
defined in many classes (``forward``, ``__call__``) is followed only where the receiver names
its class (``self.model_runner.forward`` -> ``ModelRunner``) and never through the names of
:data:`TOO_GENERIC`.
"""

from __future__ import annotations

import ast
import fnmatch
import re
from collections import deque

PHASES = (
    "launch",
    "distributed_init",
    "weight_loading",
    "memory_pool",
    "cuda_graph_capture",
    "warmup",
    "ready",
)
START_UP_PHASES = PHASES[:-1]

# (phase, qualified-name glob, file glob or None). The most specific first: a tie of distances
# goes to the row listed first. Globs on the qualified name: `*` crosses dots here.
Roots = list[tuple[str, str, str | None]]
PHASE_ROOTS: Roots = [
    # -- serving: the scheduler's loops, the detokenizer's and the tokenizer manager's loops
    ("ready", "Scheduler.event_loop*", None),
    ("ready", "Scheduler*.event_loop*", None),
    ("ready", "*Mixin.event_loop*", None),
    ("ready", "run_event_loop", None),
    ("ready", "*.run_event_loop", None),
    ("ready", "*.dispatch_event_loop", None),
    ("ready", "dispatch_event_loop", None),
    ("ready", "DetokenizerManager.event_loop", None),
    ("ready", "TokenizerManager.handle_loop", None),
    ("ready", "TokenizerManager.generate_request", None),
    ("ready", "*.forward_thread_func*", None),
    # 0.2's scheduler (ModelTpServer): the controller calls its step for each batch of requests
    ("ready", "ModelTpServer.exposed_step", None),
    ("ready", "*watchdog_thread", None),
    # the scheduler's request handlers: called through a dispatch table, not by name
    ("ready", "Scheduler.handle_*", None),
    ("ready", "Scheduler*.handle_*", None),
    ("ready", "*Mixin.handle_*", None),
    # the model's forward passes: the graph runners run them once per captured size too, but a
    # crash in one is a serving crash far more often (the capture's own frames sit outside them)
    ("ready", "ModelRunner.forward_*", None),
    # the HTTP handler of a generate request (the warmup sends one too: a request-level failure)
    ("ready", "generate_request", "sglang/srt/entrypoints/http_server.py"),
    # -- warmup: the HTTP server's warmup request
    ("warmup", "_wait_and_warmup", None),
    ("warmup", "_execute_server_warmup", None),
    ("warmup", "_send_disaggregation_warmup_requests", None),
    ("warmup", "*", "sglang/srt/entrypoints/warmup.py"),
    # -- CUDA (NPU, XPU, piecewise, EAGLE) graph capture
    ("cuda_graph_capture", "*.init_cuda_graphs", None),
    ("cuda_graph_capture", "*.init_device_graphs", None),
    ("cuda_graph_capture", "*.init_*cuda_graph*", None),
    ("cuda_graph_capture", "*.capture_cuda_graphs", None),
    ("cuda_graph_capture", "*GraphRunner.__init__", None),
    ("cuda_graph_capture", "*GraphRunner.capture*", None),
    ("cuda_graph_capture", "*.__init__", "sglang/srt/model_executor/*graph_runner*.py"),
    ("cuda_graph_capture", "*.__init__", "sglang/srt/model_executor/runner/*graph_runner*.py"),
    ("cuda_graph_capture", "*.__init__", "sglang/srt/hardware_backend/*/graph_runner/*graph_runner*.py"),
    # -- the KV cache and the other memory pools
    ("memory_pool", "*.init_memory_pool*", None),
    # the kernels' warmup (FlashInfer autotune, DeepGEMM's JIT) runs after the pools are made and
    # before capture (ModelRunner.initialize calls it after init_memory_pool): the memory pool's tail
    ("memory_pool", "*.kernel_warmup", None),
    ("memory_pool", "*.profile_max_num_token", None),
    ("memory_pool", "*.init_target_memory_pool", None),
    ("memory_pool", "*.alloc_memory_pool", None),
    ("memory_pool", "*.init_kv_cache_configurator", None),
    ("memory_pool", "compute_post_capture_kv_resize", None),  # 0.5.20+: the KV cache sized after capture
    ("memory_pool", "*.__init__", "sglang/srt/mem_cache/memory_pool*.py"),
    ("memory_pool", "*.__init__", "sglang/srt/mem_cache/allocator*.py"),
    ("memory_pool", "*.__init__", "sglang/srt/mem_cache/allocator/*.py"),
    ("memory_pool", "*.__init__", "sglang/srt/mem_cache/pool_host/*.py"),
    ("memory_pool", "*.__init__", "sglang/srt/mem_cache/unified_memory_pool.py"),
    ("memory_pool", "*", "sglang/srt/mem_cache/kv_cache_configurator.py"),
    ("memory_pool", "*", "sglang/srt/model_executor/pool_configurator.py"),
    # -- weights
    ("weight_loading", "*.load_model", None),
    ("weight_loading", "get_model", "sglang/srt/model_loader/*.py"),
    ("weight_loading", "*.load_weights*", "sglang/srt/model_loader/*.py"),
    ("weight_loading", "*", "sglang/srt/model_loader/weight_utils.py"),
    ("weight_loading", "ModelRunner.initialize", None),
    ("weight_loading", "*.start_startup_weight_load", None),
    ("weight_loading", "*.finalize_startup_weight_load", None),
    # -- distributed init
    ("distributed_init", "*init_torch_distributed", None),
    ("distributed_init", "init_distributed_environment", None),
    ("distributed_init", "initialize_model_parallel", None),
    ("distributed_init", "init_parallel_runtime", None),  # 0.5.20+: "Init parallel begin."
    ("distributed_init", "ensure_model_parallel_initialized", None),
    ("distributed_init", "GroupCoordinator.__init__", None),
    ("distributed_init", "*Communicator.__init__", "sglang/srt/distributed/**"),
    ("distributed_init", "CustomAllreduce.__init__", None),
    # -- launch: the main process, the processes it starts, the constructors that run first
    ("launch", "launch_server", None),
    ("launch", "_launch_subprocesses", None),
    ("launch", "launch_engine", None),
    ("launch", "Engine.__init__", None),
    ("launch", "run_server", "sglang/launch_server.py"),
    ("launch", "<module>", "sglang/launch_server.py"),
    ("launch", "prepare_server_args", None),
    ("launch", "ServerArgs.*", "sglang/srt/server_args.py"),
    ("launch", "*", "sglang/srt/arg_groups/**"),  # 0.5.15+: server arguments resolved by groups and hooks
    ("launch", "_set_envs_and_config", None),
    ("launch", "run_scheduler_process", None),
    ("launch", "run_data_parallel_controller_process", None),
    ("launch", "run_detokenizer_process", None),
    ("launch", "Scheduler.__init__", None),
    ("launch", "TpModelWorker.__init__", None),
    ("launch", "TpModelWorkerClient.__init__", None),
    ("launch", "ModelRunner.__init__", None),
    ("launch", "ModelConfig.__init__", None),
    ("launch", "DataParallelController.__init__", None),
    ("launch", "DetokenizerManager.__init__", None),
    ("launch", "TokenizerManager.__init__", None),
]

# method names defined everywhere: following them by name would join unrelated code
TOO_GENERIC = frozenset(
    {
        "forward", "__call__", "__init__", "__post_init__", "get", "set", "run", "init", "update",
        "start", "close", "reset", "clear", "step", "wait", "send", "recv", "build", "apply", "to",
        "copy", "put", "pop", "append", "extend", "items", "keys", "values", "join", "format",
        "item", "cuda", "cpu", "size", "view", "__enter__", "__exit__", "process", "handle",
        "shutdown", "exit", "check", "load", "save", "register", "setup", "prepare", "execute",
        "initialize",
    }
)
AMBIGUOUS = 3  # a name called on an unknown receiver is followed only when it has this few definitions


Ref = tuple[str, str, str, int]  # (kind, name, receiver hint, line)


def call_ref(node: ast.AST) -> tuple[str, str, str] | None:
    """How a call (or a `target=` reference) names its callee: (kind, name, receiver hint)."""
    if isinstance(node, ast.Name):
        return ("name", node.id, "")
    if not isinstance(node, ast.Attribute):
        return None
    value = node.value
    if isinstance(value, ast.Name) and value.id in ("self", "cls"):
        return ("self", node.attr, "")
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "super":
        return ("super", node.attr, "")
    if isinstance(value, ast.Attribute):
        return ("attr", node.attr, value.attr)
    if isinstance(value, ast.Name):
        return ("attr", node.attr, value.id)
    return ("attr", node.attr, "")


def _squash(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.lower())


def _subsequence(short: str, long: str) -> bool:
    """'tpworker' in 'tpmodelworker': a receiver named after its class, words left out."""
    rest = iter(long)
    return all(ch in rest for ch in short)


class CallGraph:
    """Functions of one release (``path`` -> qualified names), their calls and classes' bases."""

    def __init__(
        self,
        functions: dict[str, list[str]],
        calls: dict[str, dict[str, list[Ref]]],
        bases: dict[str, dict[str, list[str]]],
    ) -> None:
        self.functions = functions
        self.calls = calls
        self.nodes = {(p, q) for p, qs in functions.items() for q in qs}
        self.methods: dict[str, list[tuple[str, str]]] = {}  # method name -> (path, Class.name)
        self.module_funcs: dict[str, list[tuple[str, str]]] = {}
        self.classes: dict[str, list[tuple[str, str]]] = {}  # class name -> (path, class qual)
        self.bases: dict[tuple[str, str], list[str]] = {}
        for path, qs in functions.items():
            for q in qs:
                parts = q.split(".")
                if len(parts) == 1:
                    self.module_funcs.setdefault(q, []).append((path, q))
                elif len(parts) == 2:
                    self.methods.setdefault(parts[1], []).append((path, q))
        for path, cls_bases in bases.items():
            for cls, names in cls_bases.items():
                self.classes.setdefault(cls.split(".")[-1], []).append((path, cls))
                self.bases[(path, cls)] = names

    # -- resolution -------------------------------------------------------------------------------

    def _method_of(self, path: str, cls: str, name: str, seen: frozenset[str] = frozenset()) -> list[tuple[str, str]]:
        """`name` as class `cls` (of `path`) has it: its own method, else its bases'."""
        if (path, f"{cls}.{name}") in self.nodes:
            return [(path, f"{cls}.{name}")]
        found: list[tuple[str, str]] = []
        for base in self.bases.get((path, cls), []):
            short = base.split(".")[-1]
            if short in seen:
                continue
            for bpath, bcls in self.classes.get(short, []):
                found += self._method_of(bpath, bcls, name, seen | {short})
        return found

    def _by_receiver(self, name: str, hint: str) -> list[tuple[str, str]]:
        candidates = self.methods.get(name, [])
        if hint:
            h = _squash(hint)
            named = [c for c in candidates if h and (_subsequence(h, _squash(c[1].split(".")[0])) or _squash(c[1].split(".")[0]) in h)]
            if named:
                return named
            cls_named = [c for c in candidates if c[1].split(".")[0] == hint]
            if cls_named:
                return cls_named
            # a receiver that names no class of ours (`sgl_kernel.ops.initialize()`): not ours
            return []
        if name in TOO_GENERIC or len(candidates) > AMBIGUOUS:
            return []
        return candidates

    def _constructor(self, name: str) -> list[tuple[str, str]]:
        found: list[tuple[str, str]] = []
        for path, cls in self.classes.get(name, []):
            found += self._method_of(path, cls, "__init__") + self._method_of(path, cls, "__post_init__")
        return found

    def resolve(self, path: str, qual: str, ref: Ref) -> list[tuple[str, str]]:
        kind, name, hint = ref[:3]
        owner = qual.split(".")[0] if "." in qual else ""
        if kind == "self" and owner and owner in {c for _, c in self.classes.get(owner, [])}:
            own = self._method_of(path, owner, name)
            return own or self._by_receiver(name, "")
        if kind == "super" and owner:
            found: list[tuple[str, str]] = []
            for base in self.bases.get((path, owner), []):
                for bpath, bcls in self.classes.get(base.split(".")[-1], []):
                    found += self._method_of(bpath, bcls, name)
            return found
        if kind == "name":
            nested = f"{qual}.{name}"
            if (path, nested) in self.nodes:
                return [(path, nested)]
            if (path, name) in self.nodes:
                return [(path, name)]
            if name in self.classes:
                return self._constructor(name)
            others = self.module_funcs.get(name, [])
            return others if name not in TOO_GENERIC and len(others) <= AMBIGUOUS else []
        if kind == "attr":
            if hint in self.classes:  # Class.method(...) / Class.create(...)
                found = [m for p, c in self.classes[hint] for m in self._method_of(p, c, name)]
                if found:
                    return found
            funcs = self.module_funcs.get(name, [])
            if name in self.classes and name[:1].isupper():
                return self._constructor(name)
            methods = self._by_receiver(name, hint)
            if funcs and name not in TOO_GENERIC and len(funcs) <= AMBIGUOUS:
                return funcs + methods
            return methods
        return []

    def edges(self) -> dict[tuple[str, str], set[tuple[str, str]]]:
        out: dict[tuple[str, str], set[tuple[str, str]]] = {n: set() for n in self.nodes}
        for path, by_fn in self.calls.items():
            for qual, refs in by_fn.items():
                if (path, qual) not in self.nodes:
                    continue
                for ref in refs:
                    out[(path, qual)].update(t for t in self.resolve(path, qual, ref) if t != (path, qual))
        # a nested function runs when its outer function calls it (or hands it to a thread)
        for path, qual in self.nodes:
            outer = qual.rsplit(".", 1)[0]
            if "." in qual and (path, outer) in self.nodes and outer.split(".")[0] not in self.classes:
                out[(path, outer)].add((path, qual))
        return out


def root_rank(path: str, qual: str, roots: Roots = PHASE_ROOTS) -> int | None:
    """The row of ``roots`` (a server's phase roots; SGLang's by default) a function is a root of
    (its index), or None."""
    for i, (_, pattern, file_glob) in enumerate(roots):
        if file_glob is not None and not _glob(path, file_glob):
            continue
        if fnmatch.fnmatchcase(qual, pattern):
            return i
    return None


def _glob(path: str, pattern: str) -> bool:
    if pattern.endswith("/**"):
        return path.startswith(pattern[:-2])
    return fnmatch.fnmatchcase(path, pattern) and path.count("/") == pattern.count("/")


def assign_phases(graph: CallGraph, roots: Roots = PHASE_ROOTS) -> dict[tuple[str, str], dict[str, object]]:
    """Every function reachable from a phase root of ``roots`` (a server's; SGLang's by default):
    its phase, the roots reaching it, its distance.

    A function that directly calls roots of two or more phases runs through them in turn
    (``ModelRunner.initialize``, ``run_scheduler_process``): ``spans`` lists those phases, so a
    traceback frame in it is no more than a lower bound.
    """
    edges = graph.edges()
    best: dict[tuple[str, str], tuple[int, int]] = {}  # node -> (distance, root row)
    nearest: dict[tuple[tuple[str, str], str], int] = {}  # (node, phase) -> distance from its roots
    reached_by: dict[tuple[str, str], set[str]] = {}
    queue: deque[tuple[tuple[str, str], int, int]] = deque()
    starts = sorted(((root_rank(p, q, roots), (p, q)) for p, q in graph.nodes if root_rank(p, q, roots) is not None))
    for rank, node in starts:
        assert rank is not None
        queue.append((node, 0, rank))
    seen_from: set[tuple[tuple[str, str], str]] = set()  # (node, phase): one walk per phase
    while queue:
        node, dist, rank = queue.popleft()
        phase = roots[rank][0]
        if node in best and (dist, rank) < best[node]:
            best[node] = (dist, rank)
        if (node, phase) in seen_from:
            continue
        seen_from.add((node, phase))
        nearest[(node, phase)] = dist
        reached_by.setdefault(node, set()).add(phase)
        best.setdefault(node, (dist, rank))
        for nxt in sorted(edges.get(node, ())):
            if root_rank(*nxt, roots) is None:
                queue.append((nxt, dist + 1, rank))
    out: dict[tuple[str, str], dict[str, object]] = {}
    for node, (dist, rank) in best.items():
        phase = roots[rank][0]
        entry: dict[str, object] = {"phase": phase, "distance": dist}
        others = sorted(reached_by[node] - {phase}, key=PHASES.index)
        if others:
            entry["also"] = others
        # as near to roots of other phases: a helper they share, whose own phase is no evidence
        tied = [p for p in others if nearest.get((node, p)) == dist]
        if tied and dist > 0:
            entry["tied"] = tied
        spans = sorted({roots[r][0] for n in edges.get(node, ()) if (r := root_rank(*n, roots)) is not None} | {phase}, key=PHASES.index)
        if len(spans) > 1:
            entry["spans"] = spans
        out[node] = entry
    return out


def _later(a: str, b: str) -> str:
    return a if PHASES.index(a) >= PHASES.index(b) else b


def reach(
    graph: CallGraph, assigned: dict[tuple[str, str], dict[str, object]], roots: Roots = PHASE_ROOTS
) -> dict[tuple[str, str], str]:
    """The last start-up phase each function runs through, itself or in what it calls (serving
    excluded): ``TpModelWorker.__init__`` is launch but runs until CUDA graph capture.
    Only into roots and along calls within a class: following every edge by name would let one
    wrong edge carry a line phases ahead."""
    edges = graph.edges()
    last = {n: str(e["phase"]) for n, e in assigned.items() if e["phase"] != "ready"}

    def follows(node: tuple[str, str], callee: tuple[str, str]) -> bool:
        return callee in assigned and _follows(node[0], node[1], callee, roots)

    changed = True
    while changed:  # a monotone maximum over the graph: it settles even on cycles
        changed = False
        for node, phase in list(last.items()):
            for callee in edges.get(node, ()):
                later = last.get(callee)
                if later is not None and follows(node, callee) and _later(later, phase) != phase:
                    phase = later
            if phase != last[node]:
                last[node] = phase
                changed = True
    return last


def phase_at(
    graph: CallGraph, last: dict[tuple[str, str], str], path: str, qual: str, line: int, own: str, roots: Roots = PHASE_ROOTS
) -> str:
    """The phase a line of a function is printed in: the function's own, or the last phase run by
    a call it made on an earlier line (``Scheduler.init_model_worker`` logs max_total_num_tokens
    after its TpModelWorker has captured the CUDA graphs)."""
    if own == "ready":
        return own
    phase = own
    for ref in graph.calls.get(path, {}).get(qual, []):
        if ref[3] >= line:
            continue
        for callee in graph.resolve(path, qual, ref):
            later = last.get(callee)
            if later is not None and _follows(path, qual, callee, roots):
                phase = _later(later, phase)
    return phase


def _follows(path: str, qual: str, callee: tuple[str, str], roots: Roots) -> bool:
    """A call whose phases carry over to the caller's next lines: into a phase root, or into a
    method of the same class (`self.init_tp_model_worker()`). A shared helper
    (`get_available_gpu_memory`) takes some phase of its own, but runs in every phase."""
    same_class = path == callee[0] and "." in qual and qual.split(".")[0] == callee[1].split(".")[0]
    rank = root_rank(*callee, roots)
    # (a whole file's row, weight_utils.py, is a root of where its helpers run, not a step of start-up)
    return same_class or (rank is not None and roots[rank][1] != "*")
