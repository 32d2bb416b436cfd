"""Bad input at the command line: each case gets one clear line and a documented exit code."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

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
