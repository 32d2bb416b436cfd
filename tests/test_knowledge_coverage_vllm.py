"""What logphase knows of each vLLM release, measured on vLLM's catalogue (issue 21 point 1).

scripts/knowledge.py (its vLLM section) renders every catalogued start-up message of vLLM behind the
release's own prefix and reads it with ``logphase.parse_text``; these tests hold the figures to the
ratchet recorded in grammars/vllm/catalogue/coverage.json (coverage may rise, never fall), check
that the noise list is sound and that the measure itself can fail. The doc (docs/knowledge.md, both
servers' tables) is checked by tests/test_knowledge_coverage.py.

After adding grammar rules: ``python scripts/knowledge.py --update``.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

import pytest

from tests.logs import script_module

ROOT = Path(__file__).resolve().parents[1]


K = script_module("knowledge")
VERSIONS = K.vllm_versions()
RATCHET = json.loads(K.VLLM_RATCHET.read_text())["releases"]


@cache
def measured(version: str):  # type: ignore[no-untyped-def]
    return K.vllm_measure(version)


def test_the_ratchet_covers_every_release() -> None:
    assert sorted(RATCHET) == sorted(VERSIONS)


@pytest.mark.parametrize("version", VERSIONS)
def test_coverage_does_not_drop(version: str) -> None:
    now, then = measured(version).figures(), RATCHET[version]
    for total in ("messages", "raises", "overrides"):
        assert now[total] == then[total], f"{version}: {total} changed; regenerate with scripts/knowledge.py --update"
    for share in ("covered", "recognised", "raises_mapped", "overrides_read"):
        assert now[share] >= then[share], (
            f"{version}: {share} fell from {then[share]} to {now[share]}; "
            f"not covered now: {[m['template'][:60] for m in measured(version).misses][:20]}"
        )


def test_the_doc_carries_the_vllm_table() -> None:
    text = K.DOC.read_text()
    assert "# What logphase knows of vLLM, per release" in text
    for version in VERSIONS:
        assert f"| {version} | " in text


def test_the_prefix_is_the_releases() -> None:
    m = {"level": "info", "line": 34, "format": "plain", "template": "x"}
    assert K.vllm_log_line("0.6.4.post1", "vllm/engine/llm_engine.py", m, "x") == "INFO 01-01 10:00:00 llm_engine.py:34] x"
    assert K.vllm_log_line("0.11.0", "vllm/v1/engine/core.py", m, "x") == "INFO 01-01 10:00:00 [core.py:34] x"


def test_positional_placeholders_are_read_by_their_words() -> None:
    assert K.vllm_render({"format": "percent", "template": "vLLM API server version %s"}) == "vLLM API server version 0.11.0"
    assert K.vllm_render({"format": "percent", "template": "GPU KV cache size: %s tokens"}) == "GPU KV cache size: 42 tokens"
    assert K.vllm_render({"format": "percent", "template": "finished in %.0f secs, took %.2f GiB"}) == "finished in 12 secs, took 12.34 GiB"


def test_the_measure_can_fail() -> None:
    """A made-up line is not covered; a line of vLLM's grammar is covered in its area's phase only."""
    made_up = {"format": "plain", "template": "Zorglub frobnicated the quux.", "level": "info", "line": 1}
    assert K.vllm_judge("0.11.0", "vllm/v1/worker/gpu_worker.py", "worker", made_up).kind == "unrecognised"
    known = {"format": "percent", "template": "Loading weights took %.2f seconds", "level": "info", "line": 1}
    path = "vllm/model_executor/model_loader/default_loader.py"
    assert K.vllm_judge("0.11.0", path, "weight_loading", known).kind == "covered"
    assert K.vllm_judge("0.11.0", path, "memory_pool", known).kind == "other_phase"


def test_a_raise_is_mapped_only_to_a_specific_cause() -> None:
    no_room = {"exception": "ValueError", "function": "check_enough_kv_cache_memory", "line": 1}
    text = K.traceback_of("vllm/v1/core/kv_cache_utils.py", no_room, "No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when initializing the engine.")
    assert K.read_traceback(text) not in K.GENERIC_CAUSES
    # a raise no signature reads: vLLM's own check, named by where it was raised
    check = K.traceback_of("vllm/config.py", {"exception": "ValueError", "function": "verify", "line": 1}, "Zorglub")
    assert K.read_traceback(check) == "check:configuration"
    # the same raised by a model's code is no check of vLLM's start-up: not mapped
    other = K.traceback_of("vllm/model_executor/models/zorglub.py", {"exception": "ValueError", "function": "f", "line": 1}, "Zorglub")
    assert K.read_traceback(other) in K.GENERIC_CAUSES


def test_every_noise_entry_has_a_reason_and_matches_something() -> None:
    data = json.loads(K.VLLM_NOISE.read_text())
    for rule in data["rules"]:
        assert rule["reason"].strip() and rule["match"]
    everything = [m for v in VERSIONS for f in K.vllm_catalogue(v)["files"].values() for m in f["messages"]]
    for entry in data["messages"]:
        assert len(entry["reason"].strip()) > 10, entry
        assert any(m["template"].startswith(entry["template"]) for m in everything), f"stale noise entry: {entry['template']!r}"


# -- the notes (grammars/vllm/notes.json, scripts/vllm_notes.py) -------------------------------------


def test_the_notes_are_what_the_generator_writes() -> None:
    notes = script_module("vllm_notes")
    assert json.loads(notes.NOTES.read_text()) == json.loads(notes.dumps(notes.notes_data(notes.collect())))


def test_a_note_places_a_line_no_grammar_reads_in_its_areas_phase() -> None:
    """A configuration line of vLLM's (ModelConfig's), read through the notes: launch evidence; the
    same text unknown to every release is not read."""
    import logphase

    note = "WARNING 01-01 10:00:00 [config.py:1] Casting torch.bfloat16 to torch.float16.\n"
    report = logphase.parse_text("INFO 01-01 09:59:59 [api_server.py:1] vLLM API server version 0.9.2\n" + note)
    assert report.lines.unrecognized == 0 and [p.name.value for p in report.phases] == ["launch"]
    unknown = logphase.parse_text("WARNING 01-01 10:00:00 [config.py:1] Zorglub frobnicated the quux.\n")
    assert unknown.lines.unrecognized == 1
