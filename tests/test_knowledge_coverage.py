"""What logphase knows of each SGLang release, measured on the catalogue (issue 20 point 2).

scripts/knowledge.py renders every catalogued start-up message with plausible values and reads it
with logphase's public API (``logphase.parse_text``); these tests hold the figures it measures to
the ratchet recorded in grammars/sglang/catalogue/coverage.json (coverage may rise, never fall),
check that docs/knowledge.md is what the script writes, that the noise list is sound, and that the
hand-written frame table (logphase/diagnosing/functions.py) agrees with the frame table mined from
the start-up call graph (grammars/sglang/functions.json).

After adding grammar rules: ``python scripts/knowledge.py --update`` (rewrites the doc and the
ratchet).
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

import pytest

from logphase.packs import pack_named
from tests.logs import script_module

ROOT = Path(__file__).resolve().parents[1]


K = script_module("knowledge")
VERSIONS = K.versions()
RATCHET = json.loads(K.RATCHET.read_text())["releases"]


@cache
def measured(version: str):  # type: ignore[no-untyped-def]
    return K.measure(version)


# -- the ratchet -----------------------------------------------------------------------------------


def test_the_ratchet_covers_every_release() -> None:
    assert sorted(RATCHET) == sorted(VERSIONS)


@pytest.mark.parametrize("version", VERSIONS)
def test_coverage_does_not_drop(version: str) -> None:
    now, then = measured(version).figures(), RATCHET[version]
    # the same catalogue: the same messages, raises and functions are counted
    for total in ("messages", "raises", "functions", "formats", "overrides"):
        assert now[total] == then[total], f"{version}: {total} changed; regenerate with scripts/knowledge.py --update"
    shares = ("covered", "recognised", "raises_mapped", "functions_in_table", "functions_placed", "formats_read", "overrides_read")
    for share in shares:
        assert now[share] >= then[share], (
            f"{version}: {share} fell from {then[share]} to {now[share]}; "
            f"not covered now: {[m['template'][:60] for m in measured(version).misses][:20]}"
        )


def test_the_doc_is_up_to_date() -> None:
    expected = K.doc([measured(v) for v in VERSIONS])
    assert K.DOC.read_text() == expected, "docs/knowledge.md is stale: python scripts/knowledge.py --update"


def test_the_markers_of_every_release_are_covered() -> None:
    """Lines logphase reads today are measured as covered: the measure itself can fail."""
    for version in VERSIONS:
        covered = {m["template"] for m in measured(version).misses}
        for path, f in K.catalogue(version)["files"].items():
            for m in f["messages"]:
                if m["template"].startswith(("Load weight begin.", "Memory pool end.")) and m["level"] == "info":
                    assert m["template"] not in covered, (version, path, m["template"])
                    assert m["phase"] in ("weight_loading", "memory_pool"), (version, m)


# -- the measure -----------------------------------------------------------------------------------


def test_render_fills_placeholders_with_plausible_values() -> None:
    m = {"format": "fstring", "template": "Load weight end. elapsed={time.perf_counter() - tic:.2f} s, mem usage={x} GB, bs={capture_bs}"}
    assert K.render(m) == "Load weight end. elapsed=12.34 s, mem usage=12.34 GB, bs=[1, 2, 4, 8]"
    assert K.render({"format": "percent", "template": "tp_rank=%d avail=%.2f GB %s 100%%"}) == "tp_rank=42 avail=12.34 GB value 100%"
    assert K.render({"format": "format", "template": "{} tokens, {{literal}}"}) == "value tokens, {literal}"
    assert K.render({"format": "expr", "template": "{msg}"}) is None
    assert K.render({"format": "plain", "template": "\nfirst line\nsecond"}) == "first line"


def test_a_line_no_grammar_reads_is_not_covered() -> None:
    made_up = {"format": "plain", "template": "Zorglub frobnicated the quux.", "level": "info", "phase": "launch"}
    assert K.judge("sglang/srt/managers/scheduler.py", "scheduler", made_up).kind == "unrecognised"
    known = {"format": "plain", "template": "Load weight begin. avail mem=12.34 GB", "level": "info", "phase": "weight_loading"}
    assert K.judge("sglang/srt/model_executor/model_runner.py", "model_runner", known).kind == "covered"
    elsewhere = dict(known, phase="memory_pool")
    assert K.judge("sglang/srt/model_executor/model_runner.py", "model_runner", elsewhere).kind == "other_phase"


def test_a_raise_is_mapped_only_to_a_specific_cause() -> None:
    oom = {"exception": "RuntimeError", "function": "ModelRunner.init_memory_pool", "line": 1}
    text = K.traceback_of("sglang/srt/model_executor/model_runner.py", oom, "Not enough memory. Please try to increase --mem-fraction-static.")
    assert K.read_traceback(text) == "kv_cache_insufficient_memory"
    # a raise no signature reads: SGLang's own check, named by where it was raised
    check = K.traceback_of("sglang/srt/server_args.py", {"exception": "ValueError", "function": "check", "line": 1}, "Zorglub")
    assert K.read_traceback(check) == "check:configuration"
    # the same exception raised in a library's code is no check of SGLang's: not mapped
    library = K.traceback_of("transformers/configuration_utils.py", {"exception": "ValueError", "function": "check", "line": 1}, "Zorglub")
    assert K.read_traceback(library) in K.GENERIC_CAUSES


@pytest.mark.parametrize("version", VERSIONS)
def test_every_start_up_raise_is_mapped_to_a_cause(version: str) -> None:
    """Issue 20's target: each raise statement of a start-up function names a cause (a signature's,
    or by where it was raised: a configuration or environment check, model_load_error)."""
    release = measured(version)
    assert release.raises["unmapped"] == 0, [(m["function"], m["template"][:60], m["cause"]) for m in release.raise_misses]
    assert release.raises["mapped"] > 0


# -- the log formats (point 5) ----------------------------------------------------------------------


@pytest.mark.parametrize("version", VERSIONS)
def test_every_mined_log_format_is_read(version: str) -> None:
    """Each log format the release's source configures (mined into its catalogue's `logging`),
    rendered with each rank-tag order and SGLANG_LOG_MS where it has them: the envelope peels it
    (time and rank read) and the message behind it is read."""
    release = measured(version)
    assert release.formats > 0
    assert release.format_misses == [], [(m["variant"], m["line"][:80], m["got"]) for m in release.format_misses]


def test_the_formats_are_mined_with_their_variants() -> None:
    newest = K.catalogue(VERSIONS[-1])["logging"]
    configure = [f for f in newest["formats"] if f["function"] == "configure_logger"]
    assert configure and "{maybe_ms}" in configure[0]["format"] and configure[0]["datefmt"] == "%Y-%m-%d %H:%M:%S"
    assert "SGLANG_LOG_MS" in newest["switches"]
    assert any(order[:2] == ["DP", "PP"] and "TP" in order for order in newest["rank_tags"])
    oldest = K.catalogue(VERSIONS[0])["logging"]
    assert [f["datefmt"] for f in oldest["formats"]] == ["%H:%M:%S"]  # 0.2: the time only
    lines = K.format_lines(newest, {**configure[0]})
    assert any(".123 DP0" in line for _, line, _, _ in lines), "SGLANG_LOG_MS and the rank tags are rendered"


def test_a_format_the_envelope_does_not_know_is_not_read() -> None:
    made_up = {"formats": [{"format": "<<%(asctime)s>> %(message)s", "datefmt": None, "file": "x.py", "function": "f"}]}
    total, read, misses = K.measure_formats(made_up)
    assert (total, read, len(misses)) == (1, 0, 1)


def test_the_formats_miner_reads_a_release(tmp_path: Path) -> None:
    import zipfile

    formats = script_module("sglang_formats")
    wheel = tmp_path / "sglang-9.9.9-py3-none-any.whl"
    source = (
        "import logging\n"
        "def configure_logger(server_args, prefix=''):\n"
        "    maybe_ms = '.%(msecs)03d' if envs.SGLANG_LOG_MS.get() else ''\n"
        "    format = f'[%(asctime)s{maybe_ms}{prefix}] %(message)s'\n"
        "    logging.basicConfig(format=format, datefmt='%Y-%m-%d %H:%M:%S')\n"
    )
    scheduler = "def run(dp_rank, tp_rank):\n    prefix = ''\n    prefix += f' DP{dp_rank}'\n    prefix += f' TP{tp_rank}'\n"
    with zipfile.ZipFile(wheel, "w") as z:
        z.writestr("sglang/srt/utils.py", source)
        z.writestr("sglang/srt/managers/scheduler.py", scheduler)
        z.writestr("sglang/test/helpers.py", "FMT = '%(asctime)s %(message)s'\n")  # a test's: not the server's
    mined = formats.mine_logging(wheel)
    assert [(f["function"], f["format"], f["datefmt"]) for f in mined["formats"]] == [
        ("configure_logger", "[%(asctime)s{maybe_ms}{prefix}] %(message)s", "%Y-%m-%d %H:%M:%S")
    ]
    assert mined["rank_tags"] == [["DP", "TP"]]
    assert mined["switches"] == ["SGLANG_LOG_MS"]


# -- the noise list --------------------------------------------------------------------------------


def test_every_noise_entry_has_a_reason_and_matches_something() -> None:
    data = json.loads(K.NOISE.read_text())
    for rule in data["rules"]:
        assert rule["reason"].strip() and rule["match"]
    everything = [m for v in VERSIONS for f in K.catalogue(v)["files"].values() for m in f["messages"]]
    for entry in data["messages"]:
        assert len(entry["reason"].strip()) > 10, entry
        assert any(m["template"].startswith(entry["template"]) for m in everything), f"stale noise entry: {entry['template']!r}"
    for entry in data.get("boundaries", []):
        assert entry["phase"] in (*K.START_UP_PHASES, "ready") and len(entry["reason"].strip()) > 10, entry
        assert any(m["template"].startswith(entry["template"]) for m in everything), f"stale boundary: {entry['template']!r}"


# -- the frame table -------------------------------------------------------------------------------

# Rows of logphase/diagnosing/functions.py whose phase the mined call graph does not confirm (or
# whose function is not in the start-up files the miner reads), and why.
OUTSIDE = "not in SGLang's start-up files (torch, huggingface_hub, model files): the miner does not read it"
KNOWN_DISAGREEMENTS: dict[str, str] = {
    "init_process_group": OUTSIDE,
    "_new_process_group_helper": OUTSIDE,
    "_create_c10d_store": OUTSIDE,
    "_tcp_rendezvous_handler": OUTSIDE,
    "_env_rendezvous_handler": OUTSIDE,
    "snapshot_download": OUTSIDE,
    "weight_loader": OUTSIDE + " (the layers' weight loaders live in sglang/srt/layers)",
    "_weight_loader_impl": OUTSIDE + " (layers)",
    "_weight_loader_physical": OUTSIDE + " (layers)",
    "load_weights": OUTSIDE + " (each model's load_weights is in sglang/srt/models)",
    "init_forward_metadata_capture_cuda_graph": OUTSIDE + " (the attention backends)",
    # a constructor the releases mined do not define (KVCacheConfigurator takes object's)
    "__init__@kv_cache_configurator.py": "no release mined defines KVCacheConfigurator.__init__",
}


@cache
def mined_by_name() -> dict[str, list[tuple[str, str, str]]]:
    """function name -> (file name, qualified name, phase) of functions.json."""
    table = K.frame_table()
    out: dict[str, list[tuple[str, str, str]]] = {}
    for key, row in table.items():
        path, _, qual = key.partition(":")
        out.setdefault(qual.split(".")[-1], []).append((path.rsplit("/", 1)[-1], qual, row["phase"]))
    return out


def _hand_row_phases(name: str, file: str | None, cls: str | None) -> set[str]:
    found = mined_by_name().get(name, [])
    if file is not None:
        found = [f for f in found if f[0] == file]
    if cls is not None:
        found = [f for f in found if f[1].split(".")[-2:-1] == [cls]]
    return {f[2] for f in found}


# the SGLang pack's hand-written rows (the mined ones are functions.json itself; other packs are other servers)
_SGLANG = pack_named("sglang")
assert _SGLANG is not None
SGLANG_HAND_ROWS = [f for f in _SGLANG.functions if not f.mined]


@pytest.mark.parametrize("row", SGLANG_HAND_ROWS, ids=lambda r: f"{r.name}@{r.file or '*'}{'/' + r.cls if r.cls else ''}")
def test_hand_table_row_is_in_the_mined_table(row) -> None:  # type: ignore[no-untyped-def]
    phases = _hand_row_phases(row.name, row.file, row.cls)
    if row.name in KNOWN_DISAGREEMENTS or f"{row.name}@{row.file}" in KNOWN_DISAGREEMENTS:
        # a listed disagreement that went away must leave the list
        assert row.phase.value not in phases, f"{row.name}: agrees now; remove it from KNOWN_DISAGREEMENTS"
        return
    assert phases, f"{row.name} ({row.file or 'any file'}): not in grammars/sglang/functions.json"
    assert row.phase.value in phases, f"{row.name}: hand table says {row.phase.value}, the call graph {sorted(phases)}"


def test_mined_table_rows_are_well_formed() -> None:
    data = json.loads((ROOT / "grammars" / "sglang" / "functions.json").read_text())
    versions = data["releases"]
    assert versions == VERSIONS
    for key, row in K.frame_table().items():
        path, _, qual = key.partition(":")
        assert path.startswith("sglang/") and path.endswith(".py") and qual, key
        assert row["phase"] in (*K.START_UP_PHASES, "ready"), key
        assert versions.index(row["first"]) <= versions.index(row["last"]), key
        for v, phase in row.get("changes", []):
            assert v in versions and phase in (*K.START_UP_PHASES, "ready"), key
