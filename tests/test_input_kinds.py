"""Issue 18, point 9: input that is not a log text gets a clear answer. Compressed logs (gzip, bz2,
xz; zstd when this Python has a module for it) are read through, by their magic bytes, from files
and stdin; executables, images and random bytes are refused in one line with exit code 2, by
``follow`` too; an empty input says it is empty. Real logs with a few odd bytes are never refused."""

from __future__ import annotations

import bz2
import gzip
import importlib.util
import io
import lzma
import random
import subprocess
import sys
from pathlib import Path

import pytest

from logphase.reading.sniff import NotALog, log_stream
from tests.logs import tp2_startup

LOG = tp2_startup().encode()
HAS_ZSTD = any(importlib.util.find_spec(m) is not None for m in ("zstandard",)) or sys.version_info >= (3, 14)

COMPRESSED = {"gzip": gzip.compress(LOG), "bz2": bz2.compress(LOG), "xz": lzma.compress(LOG)}
NOT_LOGS = {
    "elf": (b"\x7fELF\x02\x01\x01" + bytes(range(256)) * 4, "ELF executable"),
    "png": (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(300), "PNG image"),
    "jpeg": (b"\xff\xd8\xff\xe0\x00\x10JFIF" + bytes(300), "JPEG image"),
    "gif": (b"GIF89a" + bytes(range(256)), "GIF image"),
    "random": (random.Random(9).randbytes(20000), "binary data"),
}


def logphase(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "logphase", *args], input=stdin, capture_output=True, timeout=120, check=False
    )


def read(data: bytes) -> bytes:
    return log_stream(io.BytesIO(data), "x").read()


@pytest.mark.parametrize("kind", COMPRESSED)
def test_compressed_logs_are_read_through(kind: str) -> None:
    assert read(COMPRESSED[kind]) == LOG


def test_concatenated_and_cut_gzip() -> None:
    assert read(gzip.compress(LOG) + gzip.compress(LOG)) == LOG + LOG  # gzip members, as rotation appends them
    big = "".join(f"[2026-05-09 09:20:00] line {i} {random.Random(i).random()}\n" for i in range(20000)).encode()
    cut = gzip.compress(big)[:-5000]
    out = read(cut)  # a rotated file still being written: what it holds is read
    assert out and big.startswith(out)


@pytest.mark.parametrize("name", NOT_LOGS)
def test_what_is_no_log_is_refused(name: str) -> None:
    data, said = NOT_LOGS[name]
    with pytest.raises(NotALog, match=said):
        read(data)


def test_a_log_with_odd_bytes_is_still_a_log() -> None:
    odd = LOG.replace(b"Load weight", b"Load\x00weight", 1).replace(b"ready", b"re\xffady", 1) + b"\x07bell\x1b[0m\n"
    assert read(odd) == odd
    holes = b"\x00" * 200_000 + LOG  # copytruncate: the writer kept its offset, the file starts with NULs
    assert read(holes) == holes
    latin1 = ("[2026-05-09 09:20:00] Modèle chargé: café, naïve résumé\n" * 50).encode("latin-1") + LOG
    assert read(latin1) == latin1


def test_empty_input_says_so() -> None:
    with pytest.raises(NotALog, match="empty"):
        read(b"")


def test_commands_read_compressed_files_and_stdin(tmp_path: Path) -> None:
    path = tmp_path / "server.log.1.gz"
    path.write_bytes(COMPRESSED["gzip"])
    xz = tmp_path / "server.log.xz"
    xz.write_bytes(COMPRESSED["xz"])
    assert logphase("parse", str(path), str(xz)).returncode == 0
    assert logphase("parse", "-", stdin=COMPRESSED["bz2"]).returncode == 0
    assert logphase("check", str(path), "--outcome", "ready").returncode == 0
    assert logphase("report", str(xz), "-o", str(tmp_path / "p.html")).returncode == 0


@pytest.mark.skipif(HAS_ZSTD, reason="this Python reads zstd: nothing to refuse")
def test_zstd_without_a_module_says_how_to_decompress(tmp_path: Path) -> None:
    path = tmp_path / "server.log.zst"
    path.write_bytes(b"\x28\xb5\x2f\xfd" + bytes(64))
    done = logphase("parse", str(path))
    assert done.returncode == 2 and b"zstd -dc" in done.stderr and done.stderr.count(b"\n") == 1


def test_commands_refuse_what_is_no_log_in_one_line(tmp_path: Path) -> None:
    elf = tmp_path / "a.out"
    elf.write_bytes(NOT_LOGS["elf"][0])
    noise = tmp_path / "noise.log"
    noise.write_bytes(NOT_LOGS["random"][0])
    empty = tmp_path / "empty.log"
    empty.write_bytes(b"")
    for args in (
        ["parse", str(elf)],
        ["check", str(noise), "--outcome", "ready"],
        ["report", str(elf), "-o", str(tmp_path / "p.html")],
        ["follow", str(noise)],
        ["parse", str(empty)],
    ):
        done = logphase(*args)
        assert done.returncode == 2, (args, done.stderr)
        assert done.stderr.count(b"\n") == 1 and b"Traceback" not in done.stderr, (args, done.stderr)
    assert b"empty" in logphase("parse", str(empty)).stderr
    gz = tmp_path / "old.log.gz"
    gz.write_bytes(COMPRESSED["gzip"])
    follow = logphase("follow", str(gz))
    assert follow.returncode == 2 and b"logphase parse" in follow.stderr
    # an empty pipe: nothing was written, the server is still starting
    piped = logphase("follow", "-", stdin=b"")
    assert piped.returncode == 3 and b"empty" in piped.stderr


def test_follow_refuses_a_pipe_of_what_is_no_log_and_reads_a_short_one() -> None:
    """On a pipe as on a file: binary or compressed bytes are one line and exit 2; a log shorter
    than the bytes looked at (or one whose first read cuts a character) is read as a log."""
    for data in (NOT_LOGS["elf"][0], NOT_LOGS["random"][0], COMPRESSED["gzip"]):
        done = logphase("follow", "-", stdin=data)
        assert done.returncode == 2 and done.stderr.count(b"\n") == 1 and b"Traceback" not in done.stderr, done.stderr
    assert b"decompress" in logphase("follow", "-", stdin=COMPRESSED["xz"]).stderr
    short = "[2026-05-09 10:00:00] Load weight begin. avail mem=70.00 GB ü\n".encode()
    done = logphase("follow", "-", stdin=short)
    assert done.returncode == 3 and b"weight_loading" in done.stdout, done.stderr
    assert logphase("follow", "-", stdin=LOG).returncode == 0  # ready
