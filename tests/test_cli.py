"""The command line as a user runs it: a real process, real files, exit codes, one-line errors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from logphase.reporting.report import SCHEMA_VERSION
from tests.logs import kv_failure, tp2_startup


def run(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-m", "logphase", *args], input=stdin, capture_output=True, timeout=60)


@pytest.fixture
def logs(tmp_path: Path) -> dict[str, Path]:
    paths = {"ready": tmp_path / "ready.log", "failed": tmp_path / "failed.log", "starting": tmp_path / "starting.log"}
    paths["ready"].write_text(tp2_startup())
    paths["failed"].write_text(kv_failure())
    paths["starting"].write_text(tp2_startup(ready=False))
    return paths


@pytest.mark.parametrize(("which", "code"), [("ready", 0), ("failed", 1), ("starting", 3)])
def test_exit_code_follows_outcome(logs: dict[str, Path], which: str, code: int) -> None:
    result = run("parse", str(logs[which]))
    assert result.returncode == code, result.stderr
    assert which.upper() in result.stdout.decode()


def test_json_report_and_stdin(logs: dict[str, Path]) -> None:
    result = run("parse", "-", "--json", stdin=logs["failed"].read_bytes())
    report = json.loads(result.stdout)
    assert result.returncode == 1
    assert report["schema_version"] == SCHEMA_VERSION and report["source"] == "<stdin>"
    assert report["failure"]["cause"] == "kv_cache_insufficient_memory"


def test_expect_on_the_command_line(logs: dict[str, Path]) -> None:
    result = run("parse", str(logs["failed"]), "--json", "--expect", "mem_fraction_static=0.88")
    kinds = [w["kind"] for w in json.loads(result.stdout)["warnings"]]
    assert "stale_log" in kinds


def test_events_are_json_lines(logs: dict[str, Path]) -> None:
    result = run("parse", str(logs["ready"]), "--events")
    events = [json.loads(line) for line in result.stdout.splitlines()]
    assert events[0]["kind"] == "server_args" and events[-1]["kind"] == "server_ready"
    assert all("line" in e and "kind" in e for e in events)


def test_schema_command() -> None:
    result = run("schema")
    schema = json.loads(result.stdout)
    assert result.returncode == 0
    assert "outcome" in schema["report"]["properties"] and "oneOf" in schema["event"]


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda p: p / "missing.log", "no such file"),
        (lambda p: p, "is a directory"),
    ],
)
def test_bad_input_is_one_line_exit_2(tmp_path: Path, make, message: str) -> None:  # type: ignore[no-untyped-def]
    result = run("parse", str(make(tmp_path)))
    err = result.stderr.decode()
    assert result.returncode == 2 and message in err
    assert err.count("\n") == 1 and "Traceback" not in err


def test_unreadable_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    # CI runs as root, who can read a chmod 000 file; so the refusal is simulated in-process
    from logphase.faces import cli

    path = tmp_path / "secret.log"
    path.write_text("x\n")

    def refuse(*args: object, **kwargs: object) -> None:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr("builtins.open", refuse)
    assert cli.main(["parse", str(path)]) == 2
    assert "permission denied" in capsys.readouterr().err


def test_bad_expect_and_since(logs: dict[str, Path]) -> None:
    bad_expect = run("parse", str(logs["ready"]), "--expect", "novalue")
    bad_since = run("parse", str(logs["ready"]), "--since", "yesterday")
    for result in (bad_expect, bad_since):
        assert result.returncode == 2 and "Traceback" not in result.stderr.decode()


def test_empty_and_binary_input(tmp_path: Path) -> None:
    empty = tmp_path / "empty.log"
    empty.write_bytes(b"")
    binary = tmp_path / "bin.log"
    binary.write_bytes(bytes(range(256)) * 50)
    for path, said in ((empty, b"empty"), (binary, b"binary data"), (Path("/dev/null"), b"empty")):
        result = run("parse", str(path), "--json")
        assert result.returncode == 2, result.stderr  # no log text: an input error (issue 18)
        assert said in result.stderr and result.stderr.count(b"\n") == 1 and not result.stdout


def test_version_and_help() -> None:
    assert run("--version").stdout.decode().startswith("logphase ")
    assert "exit codes" in run("--help").stdout.decode()


def test_help_builds_no_parser_and_imports_no_heavy_module() -> None:
    """`logphase --help` and `import logphase` stay cheap: no Lark, no pydantic, no grammar."""
    code = (
        "import sys, contextlib, io\n"
        "import logphase\n"
        "from logphase.faces import cli\n"
        "with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):\n"
        "    cli.main(['--help'])\n"
        "heavy = [m for m in ('lark', 'pydantic', 'orjson', 'logphase.packs.grammars') if m in sys.modules]\n"
        "assert not heavy, heavy\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)
