"""The settings a server changes on its own, from its source (issue 30, point 4).

scripts/mine_overrides.py finds, in a release's source, every log call next to an assignment to one
of its settings; scripts/override_rows.py writes them to each pack's overrides.json;
logphase/recognising/overrides.py reads a line that is one of them as a ``parameter_override``, the
report's ``ignored_parameter`` warning. These tests hold each step to what it must do, and the data
file to what the generator writes from the catalogue (so it cannot drift).
"""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from logphase import parse_bytes, parse_text
from tests.logs import script_module

M = script_module("mine_sglang")
OV = script_module("mine_overrides")
ROWS = script_module("override_rows")

FIELDS = frozenset({"mem_fraction_static", "page_size", "chunked_prefill_size", "disable_overlap_schedule", "random_seed", "tp_size"})

SOURCE = '''
class ServerArgs:
    def __post_init__(self):
        if self.page_size != 64:
            logger.warning(f"FlashMLA only supports a page_size of 64, changing page_size from {self.page_size} to 64.")
            self.page_size = 64
        if self.chunked_prefill_size is None:
            self.chunked_prefill_size = 8192
            logger.info("Chunked prefill size is set to 8192 by default.")
        if self.tp_size > 1:
            self.random_seed = 42
            logger.info(f"max_total_num_tokens={self.max_total_num_tokens}")


class ModelRunner:
    def __init__(self, server_args):
        if self.is_multimodal:
            self.mem_fraction_static *= 0.90
            logger.info(f"Automatically reduce --mem-fraction-static to {self.mem_fraction_static:.3f} because this is a multimodal model.")


class Scheduler:
    def __init__(self, server_args):
        if not self.is_generation:
            self.enable_overlap = False
            logger.info("Overlap scheduler is disabled for embedding models.")


def _handle_dp(server_args, cfg):
    original = cfg.chunked_prefill_size
    declare_resolution(server_args, "_handle_dp", chunked_prefill_size=cfg.chunked_prefill_size // 2)
    logger.warning(f"DP attention is enabled. chunked prefill size is adjusted from {original} to {cfg.chunked_prefill_size}.")
'''


@pytest.fixture(scope="module")
def mined() -> dict[str, dict]:
    tree = ast.parse(SOURCE)
    miner = M.Miner()
    miner.visit(tree)
    found = OV.mine(tree, miner.messages, M.sglang_setting(FIELDS), M.SGLANG_SETTERS)
    return {o["template"].split(" ")[0]: o for o in found}


def test_a_log_call_beside_an_assignment_to_a_setting_is_an_override(mined: dict[str, dict]) -> None:
    reduce = mined["Automatically"]
    assert reduce["setting"] == "mem_fraction_static"
    assert reduce["roles"] == ["actual"]  # printed after the change: the value in force
    assert "value" not in reduce  # `*= 0.90` assigns no constant: the text says the value
    flash = mined["FlashMLA"]
    assert (flash["setting"], flash["roles"], flash["value"]) == ("page_size", ["requested"], "64")


def test_a_copy_kept_as_the_opposite_flag_is_its_setting_negated(mined: dict[str, dict]) -> None:
    overlap = mined["Overlap"]
    assert (overlap["setting"], overlap["value"]) == ("disable_overlap_schedule", "True")


def test_a_hook_that_sets_by_keyword_and_prints_what_it_kept(mined: dict[str, dict]) -> None:
    dp = mined["DP"]
    assert (dp["setting"], dp["roles"]) == ("chunked_prefill_size", ["requested", "actual"])


def test_a_default_filled_in_is_marked_and_an_unrelated_line_is_none(mined: dict[str, dict]) -> None:
    assert mined["Chunked"]["default"] is True
    assert "max_total_num_tokens={self.max_total_num_tokens}" not in {o["template"] for o in mined.values()}


def test_the_setting_a_text_speaks_of() -> None:
    assert OV.names_setting("Overlap scheduler is disabled for embedding models.", "disable_overlap_schedule")
    assert OV.names_setting("The expert parallel size is adjusted", "ep_size")
    assert not OV.names_setting("Update weights end.", "load_format")


@pytest.mark.parametrize("server", ["sglang", "vllm"])
def test_the_pack_data_is_what_the_generator_writes(server: str) -> None:
    assert ROWS.path_of(server).read_text() == ROWS.dumps(ROWS.data(server)), "python scripts/override_rows.py"


@pytest.mark.parametrize("server", ["sglang", "vllm"])
def test_every_row_is_a_setting_of_its_server_with_roles_per_placeholder(server: str) -> None:
    data = json.loads(ROWS.path_of(server).read_text())
    at = {c: i for i, c in enumerate(data["columns"])}
    assert data["overrides"], server
    for row in data["overrides"]:
        pieces, roles = row[at["pieces"]], row[at["roles"]]
        assert len(roles) == len(pieces) - 1, row
        assert set(roles) <= {"requested", "actual", "other"}, row
        assert row[at["setting"]].isidentifier(), row


def open_fixture(name: str) -> bytes:
    return (Path(__file__).resolve().parents[1] / "fixtures" / "logs" / name).read_bytes()


def _warning(text: str):  # type: ignore[no-untyped-def]
    found = [w for w in parse_text(text + "\n").warnings if w.kind == "ignored_parameter"]
    assert len(found) == 1, text
    return found[0]


def test_an_older_sglang_wording_is_an_ignored_parameter_with_its_values() -> None:
    w = _warning("[2025-06-03 14:02:18 TP0] Automatically reduce --mem-fraction-static to 0.792 because this is a multimodal model.")
    assert (w.setting, w.expected, w.found) == ("mem_fraction_static", None, "0.792")
    assert "SGLang changed mem_fraction_static" in w.message
    w = _warning("[2025-06-03 14:02:18 TP0] Overlap scheduler is disabled for multimodal models.")
    assert (w.setting, w.expected, w.found) == ("disable_overlap_schedule", None, "True")


def test_the_value_asked_for_is_the_dumps_when_the_line_does_not_say_it() -> None:
    report = parse_bytes(open_fixture("era_04_multimodal_overrides.log"))
    found = {w.setting: (w.expected, w.found) for w in report.warnings if w.kind == "ignored_parameter"}
    assert found == {
        "disable_overlap_schedule": ("False", "True"),
        "mem_fraction_static": ("0.88", "0.792"),
        "chunked_prefill_size": ("8192", "-1"),
    }


def test_a_vllm_override_speaks_of_vllm() -> None:
    w = _warning(
        "INFO 08-14 10:00:01 [api_server.py:1839] vLLM API server version 0.11.0\n"
        "INFO 08-14 10:00:02 [cuda.py:165] Forcing kv cache block size to 64 for FlashMLA backend."
    )
    assert (w.setting, w.found) == ("block_size", "64")
    assert w.message.startswith("vLLM changed block_size")


# -- --expect: the server changed it, or the log is stale ----------------------------------------------

_DUMP = "[2025-06-03 14:02:11] server_args=ServerArgs(model_path='m', port=30000, {args})"
_REDUCE = "[2025-06-03 14:02:18 TP0] Automatically reduce --mem-fraction-static to 0.792 because this is a multimodal model."
_PAGE = "[2025-06-03 14:02:12] TensorRT-LLM MLA only supports page_size of 32 or 64, changing page_size from 16 to 64."


def _kinds(expect: dict[str, str], *lines: str) -> list[str]:
    report = parse_bytes(("\n".join(lines) + "\n").encode(), expect=expect)
    return sorted(w.kind for w in report.warnings)


def test_a_value_the_server_changed_is_no_stale_log() -> None:
    dump = _DUMP.format(args="mem_fraction_static=0.792")
    assert _kinds({"mem_fraction_static": "0.88"}, dump, _REDUCE) == ["ignored_parameter"]
    assert _kinds({"mem_fraction_static": "0.88"}, dump) == ["stale_log"]


def test_a_change_from_another_value_than_launched_is_a_stale_log() -> None:
    dump = _DUMP.format(args="page_size=64")
    assert _kinds({"page_size": "16"}, _PAGE, dump) == ["ignored_parameter"]
    assert _kinds({"page_size": "32"}, _PAGE, dump) == ["ignored_parameter", "stale_log"]
