"""The packs (logphase/packs/): every message row and every signature row has example lines in its
grammar (``//: <line>`` above its rule) that reach it; no server's message text is written in Python;
adding a server is a grammar folder, a module and one registry line."""

from __future__ import annotations

import ast
import json
import re
from functools import cache
from pathlib import Path

import pytest

from logphase.diagnosing.cause_table import SIGNATURES, Signature
from logphase.diagnosing.signatures import ERROR_GRAMMARS, deciding_row, read_error
from logphase.packs import PACKS
from logphase.packs.grammars import examples, grammar_dir, parse
from logphase.packs.rows import ByLine
from logphase.reading.clock import LogClock
from logphase.reading.envelope import split_envelope
from logphase.recognising.classify import classify
from logphase.recognising.messages import MESSAGES, Message, evidence_of
from logphase.vocabulary import events as ev
from logphase.vocabulary.causes import SignatureRole
from logphase.vocabulary.events import LineInfo

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "logphase"

# Files other helpers are clearing of message text in their own branches (issue 19: engine.py, plain.py,
# merge.py, build_report.py, facts.py): a file named here may still hold a phrase until the lead merges
# those branches and empties this set. Empty: on this branch no such file holds one the scan knows.
PENDING_OTHER_BRANCHES: set[str] = set()


# -- every message row: its examples parse to its rule, its event, its evidence ----------------------


def _event(line: str) -> ev.EventBase | None:
    env = split_envelope(line)
    ts = LogClock().of(env)
    return classify(env, LineInfo(line=1, offset=0, raw=line, ts=ts, ts_inherited=False, rank=env.rank, writer=env.writer))


@pytest.mark.parametrize("rule", sorted(MESSAGES))
def test_every_message_row_has_an_example_that_reaches_it(rule: str) -> None:
    message: Message = MESSAGES[rule]
    lines = examples(message.grammar).get(rule, ())
    assert lines, f"{rule}: no '//: <example line>' above the rule in {message.grammar}.lark"
    for line in lines:
        if message.grammar != "server_args":  # a grammar of values, read by its own parser
            parsed = parse(message.grammar, line)
            assert parsed is not None and parsed.rule == rule, f"{line!r} is not {rule}"
        if message.build is None and message.grammar == "traceback":
            continue  # a line of a record: records.py assembles the event
        event = _event(line)
        assert event is not None and event.rule == rule, f"{line!r} becomes {event and event.rule}, not {rule}"
        evidence = evidence_of(event)
        if message.evidence is None:
            assert evidence is None
        elif isinstance(message.evidence, ByLine):
            # evidence that depends on the line: each example here is one that is evidence
            assert evidence is not None, f"{line!r}: no evidence from its chooser"
        else:
            assert evidence == message.evidence


# -- every signature row: its examples are decided by it, with its cause ----------------------------


def _signature_examples(rule: str) -> tuple[str, ...]:
    return tuple(line for g in ERROR_GRAMMARS for line in examples(g).get(rule, ()))


@pytest.mark.parametrize("signature", SIGNATURES, ids=lambda s: s.rule)
def test_every_signature_row_has_an_example_that_reaches_it(signature: Signature) -> None:
    lines = _signature_examples(signature.rule)
    assert lines, f"{signature.rule}: no '//: <example>' above the rule in an error grammar"
    for line in lines:
        row = deciding_row(line)
        assert row is not None and row.rule == signature.rule, f"{line!r} is decided by {row and row.rule}"
        reading = read_error(line)
        if signature.role is SignatureRole.WRAPPER:
            assert reading.phase == signature.phase or signature.phase is None
        else:
            assert reading.cause is signature.cause and reading.role is signature.role


def test_signatures_keep_the_order_of_the_table_before_packs() -> None:
    # the order decides (the first row whose phrases occur): the packs' ranks rebuild issue 19's table
    # (the vLLM pack's rows, issue 21, fall between them: test_vllm_rows_stand_where_their_words_need;
    # so do TensorRT-LLM's, issue 32: tests/test_trtllm.py)
    assert [s.rule for s in SIGNATURES if not s.rule.startswith(("vllm_", "trtllm_"))] == [
        "peer_finished_loading", "child_killed", "child_died", "sigquit", "init_failed_echo",
        "child_failed_error", "sibling_terminated", "peer_gone", "peer_timed_out", "harness_exit", "kill_tree", "exit_cleanup",
        "graph_capture_wrapper", "warmup_wrapper", "actor_wrapper", "worker_wrapper", "lazy_cuda_wrapper",
        "compile_wrapper", "spawn_wrapper", "kv_cache_no_room", "kv_pool_exhausted", "device_oom", "request_failed",
        "distributed_timeout", "port_in_use", "duplicate_gpu", "no_network_interface", "comm_error", "watchdog_summary",
        "import_failure", "argument_error", "model_files", "model_unsupported", "sglang_watchdog", "gpu_unavailable",
        "memory_imbalance", "device_kernel", "native_crash", "timed_out",
    ]  # fmt: skip


def test_vllm_rows_stand_where_their_words_need() -> None:
    # vLLM's echoes before every root (they hold root words: 'See root cause above'), a death by
    # SIGKILL still read as killed, the V0 worker's method-specific wrappers before its general one,
    # the sampler's 'CUDA out of memory occurred' before the shared CUDA OOM row
    order = [s.rule for s in SIGNATURES]
    echoes = [s.rule for s in SIGNATURES if s.rule.startswith("vllm_") and s.role is SignatureRole.ECHO]
    roots = [s.rule for s in SIGNATURES if s.role is SignatureRole.ROOT]
    assert max(order.index(e) for e in echoes) < min(order.index(r) for r in roots)
    assert order.index("child_killed") < order.index("vllm_worker_died")
    assert max(order.index(f"vllm_worker_exception_{m}") for m in ("device", "load", "memory", "capture")) < order.index(
        "vllm_worker_exception"
    )
    assert order.index("vllm_warmup_oom") < order.index("device_oom")


def test_an_example_that_misses_its_row_is_caught() -> None:
    # the check above can fail: a line of another row is decided by that row
    row = deciding_row("RuntimeError: Not enough memory. Please try to increase --mem-fraction-static.")
    assert row is not None and row.rule != "device_oom"


# -- no server's message text in Python ----------------------------------------------------------------

# shorter fragments are common English ('has no attribute', 'exited with code'), not a message's
MIN_PHRASE_CHARS = 20
_PLACEHOLDER = re.compile(r"\{[^{}]*\}|%[-#0 +]*\d*(?:\.\d+)?[sdifr]|%\([^)]*\)[sdifr]")


@cache
def known_phrases() -> frozenset[str]:
    """Phrases of SGLang's and vLLM's messages: the literal fragments (three words or more) of every
    message template of their catalogues (20 characters or more), and the string literals of their
    grammars (three words or more)."""
    phrases: set[str] = set()
    for release in sorted((grammar_dir() / "sglang" / "catalogue").glob("*.json")) + sorted(
        (grammar_dir() / "vllm" / "catalogue").glob("[0-9]*.json")
    ):
        data = json.loads(release.read_text(encoding="utf-8"))
        for file in data.get("files", {}).values():
            for message in file.get("messages", []):
                for fragment in _PLACEHOLDER.split(str(message.get("template") or "")):
                    fragment = fragment.strip(" .,:;=()[]'\"")
                    if len(fragment.split()) >= 3 and len(fragment) >= MIN_PHRASE_CHARS:
                        phrases.add(fragment)
    for grammar in sorted((grammar_dir() / "sglang").glob("*.lark")) + sorted((grammar_dir() / "vllm").glob("*.lark")):
        for literal in re.findall(r'"((?:[^"\\]|\\.)*)"', grammar.read_text(encoding="utf-8")):
            literal = literal.strip(" .,:;=()[]")
            if len(literal.split()) >= 3:
                phrases.add(literal)
    return frozenset(phrases)


def _string_constants(path: Path) -> list[tuple[int, str]]:
    """The string constants of a module, docstrings left out (and the ``description=`` of a schema
    field: the docstring of a field, which may quote the line it describes)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.keyword) and node.arg == "description" and isinstance(node.value, ast.Constant):
            docstrings.add(id(node.value))
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                docstrings.add(id(first.value))
    return [
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings
    ]


def phrases_in_python() -> dict[str, list[str]]:
    """Known message phrases found in the package's Python strings, by file."""
    phrases = known_phrases()
    found: dict[str, list[str]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        name = path.relative_to(ROOT).as_posix()
        for lineno, text in _string_constants(path):
            hits = [p for p in phrases if p in text]
            if hits:
                found.setdefault(name, []).append(f"{lineno}: {sorted(hits)[0]!r}")
    return found


def test_the_phrase_list_is_not_empty() -> None:
    phrases = known_phrases()
    assert "The server is fired up and ready to roll!".strip(" .!") in {p.strip("!") for p in phrases} or len(phrases) > 500


def test_no_message_phrase_in_python() -> None:
    found = phrases_in_python()
    pending = {name: hits for name, hits in found.items() if name in PENDING_OTHER_BRANCHES}
    unexpected = {name: hits for name, hits in found.items() if name not in PENDING_OTHER_BRANCHES}
    assert unexpected == {}, f"message text belongs in grammars/: {unexpected} (pending elsewhere: {sorted(pending)})"


def test_the_phrase_scan_sees_a_phrase(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text('"""Docstrings may quote: Load weight begin."""\nX = "a Load weight begin. line"\n', encoding="utf-8")
    hits = [text for _, text in _string_constants(module) if any(p in text for p in known_phrases())]
    assert hits == ["a Load weight begin. line"]


# -- adding a server ------------------------------------------------------------------------------------


def test_a_pack_is_a_folder_and_a_registry_line() -> None:
    """What a server is made of: its folder of grammars/ (its grammars, its rows in pack.py) and one
    line in the registry; no module of the stages names a pack's rows."""
    registry = (PACKAGE / "packs" / "registry.py").read_text(encoding="utf-8")
    for pack in PACKS:
        assert pack.folder == ROOT / "grammars" / pack.name, pack.name
        assert (pack.folder / "pack.py").is_file(), pack.name
        assert len(re.findall(rf'^    \("{pack.name}", ', registry, re.M)) == 1, f"{pack.name}: not one line in REGISTRY"
        # a pack's grammars live in its own folder (named by stem, found wherever they are)
        for grammar in (*pack.grammars, *pack.record_grammars, *pack.error_grammars):
            assert (pack.folder / f"{grammar}.lark").is_file(), f"{grammar}.lark not in {pack.folder}"
    for path in PACKAGE.rglob("*.py"):
        source = path.read_text(encoding="utf-8")
        assert "packs.loaded" not in source or path == PACKAGE / "packs" / "__init__.py", f"{path} names a pack's rows"


# -- each phrase once ----------------------------------------------------------------------------------

# the failure phrases issue 19 found typed in both sglang.lark and errors.lark (and their kin)
ONCE = (
    "sigquit from a child proces",
    "kill_process_tree called",
    "scheduler died during initialization",
    "scheduler is dead",
    "crashed with exit code",
    "Initialization failed",
    "atchdog timeout",
    "Not enough GPU memory for hybrid",
    "leave no GPU memory for the KV cache",
    "Port is already in use",
    "memory capacity is unbalanced",
    "graph failed",
    "Scheduler or DataParallelController",
)


def _grammar_text_without_comments() -> str:
    return "\n".join(
        line
        for path in sorted(grammar_dir().glob("*/*.lark"))
        for line in path.read_text(encoding="utf-8").splitlines()
        if not line.lstrip().startswith("//")
    )


@pytest.mark.parametrize("phrase", ONCE)
def test_a_failure_phrase_is_written_once(phrase: str) -> None:
    assert _grammar_text_without_comments().count(phrase) == 1
