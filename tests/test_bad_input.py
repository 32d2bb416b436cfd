"""Bad input at the command line: each case gets one clear line and a documented exit code."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from tests.logs import tp2_startup


def logphase(*args: str, **kwargs: object) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-m", "logphase", *args], capture_output=True, timeout=60, **kwargs)  # type: ignore[call-overload]


def test_named_pipe_is_read_to_its_end(tmp_path: Path) -> None:
    fifo = tmp_path / "server.fifo"
    os.mkfifo(fifo)

    def writer() -> None:
        with open(fifo, "wb") as f:
            f.write(tp2_startup().encode())

    thread = threading.Thread(target=writer)
    thread.start()
    result = logphase("parse", str(fifo), "--json")
    thread.join(timeout=10)
    assert result.returncode == 0 and json.loads(result.stdout)["outcome"] == "ready"


def test_file_deleted_while_being_read(tmp_path: Path) -> None:
    # parse keeps its open handle: the bytes it was given are read to the end
    log = tmp_path / "server.log"
    log.write_text(tp2_startup() * 50)
    proc = subprocess.Popen(
        [sys.executable, "-m", "logphase", "parse", str(log), "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    log.unlink()
    out, err = proc.communicate(timeout=60)
    assert proc.returncode in (0, 2) and b"Traceback" not in err
    if proc.returncode == 2:
        assert err.count(b"\n") == 1 and b"no such file" in err
    else:
        assert json.loads(out)["runs"] >= 1


def test_follow_survives_the_file_disappearing(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_text(tp2_startup(ready=False))
    proc = subprocess.Popen(
        [sys.executable, "-m", "logphase", "follow", str(log), "--json", "--timeout", "3"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None
    first = json.loads(proc.stdout.readline())
    assert first["kind"] == "phase"
    log.unlink()
    out, err = proc.communicate(timeout=60)
    kinds = [json.loads(line)["kind"] for line in out.splitlines()]
    assert proc.returncode == 124 and kinds[-1] == "timeout" and b"Traceback" not in err


def test_broken_stdout_is_not_an_error(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_text(tp2_startup() * 40)  # ~1,000 events, several times what a pipe holds
    proc = subprocess.Popen(
        [sys.executable, "-m", "logphase", "parse", str(log), "--events"], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    assert proc.stdout is not None
    proc.stdout.readline()
    proc.stdout.close()  # what `| head -1` does
    proc.wait(timeout=60)
    assert proc.stderr is not None
    err = proc.stderr.read()
    assert b"Traceback" not in err and b"Exception ignored" not in err
    assert proc.returncode == 141  # output closed: documented, never 0 (which would say ready)


def test_directory_and_missing_file_for_follow(tmp_path: Path) -> None:
    result = logphase("follow", str(tmp_path))
    assert result.returncode == 2 and b"is a directory" in result.stderr and b"Traceback" not in result.stderr


def test_bad_numbers_for_follow(tmp_path: Path) -> None:
    for args in (["--timeout", "-1"], ["--stall-after", "0"], ["--timeout", "soon"], ["--until", "lunch"]):
        result = logphase("follow", str(tmp_path / "x.log"), *args)
        assert result.returncode == 2 and b"Traceback" not in result.stderr, args


def test_unknown_command_and_no_command() -> None:
    assert logphase("frobnicate").returncode == 2
    result = logphase()
    assert result.returncode == 2 and b"usage" in result.stdout.lower()


# Issue 30, point 5: a file name is bytes. One that is not UTF-8 crashed parse --json and report;
# one with an escape code or a newline reached the terminal raw (a newline forged a verdict line).
# Every output shows such a name escaped (\xff, \n, \x1b), and the file is read all the same.
def _named_copy(tmp_path: Path, name: bytes) -> Path:
    from tests.conftest import FIXTURES

    path = Path(os.fsdecode(bytes(tmp_path) + b"/" + name))
    path.write_bytes((FIXTURES / "kv_cache_insufficient.log").read_bytes())
    return path


def test_a_name_that_is_not_utf8_is_shown_escaped_in_every_output(tmp_path: Path) -> None:
    log = _named_copy(tmp_path, b"server-\xff\xfe.log")
    done = logphase("parse", "--json", str(log))
    assert done.returncode == 1 and b"Traceback" not in done.stderr
    assert json.loads(done.stdout)["source"].endswith("server-\\xff\\xfe.log")
    text = logphase("parse", str(log))
    assert text.returncode == 1 and b"server-\\xff\\xfe.log (SGLang): FAILED" in text.stdout
    page, svg = tmp_path / "p.html", tmp_path / "p.svg"
    drawn = logphase("report", str(log), "-o", str(page), "--svg", str(svg))
    assert drawn.returncode == 1 and b"Traceback" not in drawn.stderr
    assert "server-\\xff\\xfe.log" in page.read_text(encoding="utf-8")
    odd_page = Path(os.fsdecode(bytes(tmp_path) + b"/page-\xff.html"))
    named = logphase("report", str(log), "-o", str(odd_page))
    assert named.returncode == 1 and named.stdout.endswith(b"wrote " + bytes(tmp_path) + b"/page-\\xff.html\n") and odd_page.exists()
    many = logphase("parse", "--json", str(log), str(log), "--jobs", "1")
    assert [json.loads(line)["source"][-19:] for line in many.stdout.splitlines()] == ["server-\\xff\\xfe.log"] * 2


def test_a_newline_in_a_name_forges_no_verdict_line(tmp_path: Path) -> None:
    log = _named_copy(tmp_path, b"x.log: READY after 1 s\n\x1b[32mfake.log")
    done = logphase("parse", str(log))
    lines = done.stdout.decode().splitlines()
    assert done.returncode == 1 and b"\x1b" not in done.stdout
    assert lines[0].endswith("x.log: READY after 1 s\\n\\x1b[32mfake.log (SGLang): FAILED in memory_pool after 43 s: kv_cache_insufficient_memory")
    assert sum("READY" in line for line in lines) == 1  # only the name says it, on the verdict's own line
    several = logphase("parse", str(log), str(log), "--jobs", "1").stdout.decode().splitlines()
    assert len(several) == 3 and all("\\n\\x1b[32mfake.log: FAILED" in line for line in several[:2])
    missing = logphase("parse", str(log) + "\nlogphase: all good")
    assert missing.returncode == 2 and missing.stderr.count(b"\n") == 1 and b"\x1b" not in missing.stderr
    assert b"\\nlogphase: all good: no such file" in missing.stderr


def test_a_cut_server_args_dump_is_not_handed_to_the_grammar(monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 30, point 5: server_args lines just over 64 KiB (a long --json-model-override-args) cost
    35 times a normal log's time a MB: the reader keeps a line's first 64 KiB, the grammar read each
    cut dump to its end in vain, and a failed read was not remembered, so every run's dump was read
    again. A dump that does not end as one does goes to the key=value reading at once, and a dump the
    grammar cannot read is tried once. Counted, not timed (bench/overlong_lines.py times it)."""
    from logphase import Engine
    from logphase.packs import server_args

    calls: list[int] = []
    real = server_args._values_parser()

    class Counting:
        def parse(self, text: str) -> object:
            calls.append(len(text))
            return real.parse(text)

    monkeypatch.setattr(server_args, "_values_parser", Counting)
    server_args._read_dump.cache_clear()
    pairs = ", ".join(f"layer_{i}={i}" for i in range(8000))
    dump = f"[2026-05-12 18:20:05] server_args=ServerArgs(model_path='m', tp_size=2, mem_fraction_static=0.8, {pairs})\n"
    assert len(dump) > 70_000
    unreadable = "[2026-05-12 18:21:05] server_args=ServerArgs(model_path='m', tp_size=2, x=[1, 2)\n"  # ends as a dump, reads as none
    engine = Engine(source="cut.log")
    engine.feed((dump + "[2026-05-12 18:20:06 TP0] Init torch distributed begin.\n") * 3 + unreadable * 3)
    report = engine.report()
    assert calls == [len(unreadable.split("] ", 1)[1].strip())]  # the cut dumps never, the unreadable one once
    assert report.runs == 6 and report.lines.overlong == 3
    assert report.config.get("tp_size") == 2 and report.config.get("model_path") == "m"


def test_a_missing_dependency_is_one_line_not_a_traceback() -> None:
    """Run from a checkout by a Python without what `pip install .` brings (no Lark): one line, exit 2."""
    blocked = "import sys; sys.modules['lark'] = None; sys.argv = ['logphase', 'parse', 'fixtures/logs/kv_cache_insufficient.log']; "
    code = blocked + "from logphase.faces.entry import command_line; command_line()"
    root = Path(__file__).resolve().parents[1]
    done = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "lark is not installed" in done.stderr and "Traceback" not in done.stderr
