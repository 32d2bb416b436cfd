"""The library as a monitoring script uses it, and the package as pip installs it."""

from __future__ import annotations

import inspect
import subprocess
import sys
import warnings
from importlib import resources
from pathlib import Path

import pytest
from pydantic import TypeAdapter

import logphase
from logphase import Engine, parse_file, parse_text
from logphase.faces.live.follow_records import FOLLOW_RECORD_ADAPTER
from logphase.packs.server_args import parse_server_args
from logphase.reporting.report import Report
from logphase.vocabulary.events import Event
from tests.conftest import FIXTURES
from tests.logs import kv_failure, tp2_startup

KV = FIXTURES / "kv_cache_insufficient.log"


def test_parse_file_takes_a_path_object() -> None:
    report = parse_file(KV)
    assert report.outcome == "failed" and report.source == str(KV)
    assert parse_file(str(KV)) == report


def test_expect_takes_numbers_and_flags_as_written() -> None:
    report = parse_file(KV, expect={"mem_fraction_static": 0.88, "--tp-size": 2})
    stale = [w for w in report.warnings if w.kind == "stale_log"]
    assert [(w.setting, w.expected, w.found) for w in stale] == [("mem_fraction_static", "0.88", "0.85")]


def test_engine_feed_takes_text_or_refuses_clearly() -> None:
    engine = Engine()
    engine.feed(tp2_startup())
    engine.finish()
    assert engine.report().outcome == "ready"
    with pytest.raises(TypeError, match="takes bytes or str, not int"):
        Engine().feed(3)  # type: ignore[arg-type]


def test_phase_and_cause_print_as_their_values() -> None:
    report = parse_text(kv_failure())
    assert report.failure is not None
    assert f"{report.phase} {report.failure.cause}" == "memory_pool kv_cache_insufficient_memory"


def _public_names() -> list[tuple[str, object]]:
    names = [(n, getattr(logphase, n)) for n in logphase.__all__ if not n.startswith("__") and n != "SCHEMA_VERSION"]
    for name, cls in (("Engine", logphase.Engine), ("Report", logphase.Report)):
        for attr, member in vars(cls).items():
            if not attr.startswith("_") and (inspect.isfunction(member) or isinstance(member, property)):
                names.append((f"{name}.{attr}", member))
    return names


@pytest.mark.parametrize(("name", "obj"), _public_names(), ids=[n for n, _ in _public_names()])
def test_every_public_name_has_a_docstring(name: str, obj: object) -> None:
    doc = obj.__doc__ if not isinstance(obj, property) else obj.fget.__doc__  # type: ignore[union-attr]
    assert doc and doc.strip(), f"{name} has no docstring"


def _undescribed(schema: dict[str, object]) -> list[str]:
    missing = []
    defs = schema.get("$defs", {})
    assert isinstance(defs, dict)
    for where, obj in [("<root>", schema), *defs.items()]:
        for field, spec in obj.get("properties", {}).items():
            if "description" not in spec:
                missing.append(f"{where}.{field}")
    return missing


@pytest.mark.parametrize(
    "schema",
    [Report.model_json_schema(), TypeAdapter(Event).json_schema(), FOLLOW_RECORD_ADAPTER.json_schema()],
    ids=["report", "event", "follow_record"],
)
def test_every_field_in_the_schemas_is_described(schema: dict[str, object]) -> None:
    assert _undescribed(schema) == []


def test_schema_command_documents_follow_records() -> None:
    import json

    out = subprocess.run([sys.executable, "-m", "logphase", "schema"], capture_output=True, check=True, timeout=60).stdout
    schema = json.loads(out)
    assert set(schema) == {"report", "event", "follow_record", "merged_report"}
    assert "PhaseRecord" in schema["follow_record"]["$defs"]


def test_py_typed_ships_with_the_package() -> None:
    assert (resources.files("logphase") / "py.typed").is_file()


def test_server_args_with_invalid_escapes_raise_no_warning() -> None:
    dump = r"server_args=ServerArgs(model_path='/m', tool_call_parser='\d+\]', chat_template='a\nb', x=1)"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        args, fmt = parse_server_args(dump)
    assert fmt == "call" and args["tool_call_parser"] == r"\d+\]" and args["chat_template"] == "a\nb"


def test_models_raise_no_warning_when_built() -> None:
    """pydantic < 2.10 warns about fields named model_* unless told they are ours."""
    code = (
        "import warnings; warnings.simplefilter('error');"
        "from pydantic import TypeAdapter; from logphase.vocabulary.events import Event, WeightLoadEnd;"
        "TypeAdapter(Event).json_schema(); WeightLoadEnd(line=1, offset=0, raw='x', model_class='M')"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60, cwd=Path(__file__).parents[1])


def test_license_is_in_the_repository() -> None:
    text = (Path(__file__).parents[1] / "LICENSE").read_text()
    assert "Apache License" in text and "Version 2.0" in text


def test_incomplete_escapes_in_server_args_are_kept() -> None:
    args, _ = parse_server_args(r"server_args=ServerArgs(a='\x', b='\u12', c='\U0001f60', e='\UFFFFFFFF', d='ok')")
    assert args == {"a": r"\x", "b": r"\u12", "c": r"\U0001f60", "e": r"\UFFFFFFFF", "d": "ok"}


def test_a_repeated_dump_is_not_changed_through_an_earlier_reading() -> None:
    """A dump is read once and its values kept for the next line with the same text: what each
    line gets is its own copy, nested dicts and lists included."""
    dump = "server_args=ServerArgs(model_path='/m', json_model_override_args={'a': [1, 2]}, cuda_graph_bs=[1, 2], x=(1, {3}))"
    first, _ = parse_server_args(dump)
    first["json_model_override_args"]["a"].append(99)
    first["cuda_graph_bs"].clear()
    first["x"][1].append(4)
    first["model_path"] = "changed"
    second, fmt = parse_server_args(dump)
    assert fmt == "call"
    assert second == {"model_path": "/m", "json_model_override_args": {"a": [1, 2]}, "cuda_graph_bs": [1, 2], "x": [1, [3]]}
