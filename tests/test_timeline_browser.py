"""`logphase report` pages rendered by a real browser: Debian's headless Chromium takes a screenshot
(not blank, the phase colours and the failure red are on it) and dumps the DOM (every phase of the
fixture and the failure cause are named).

These tests carry the ``browser`` marker. Without Chromium they are skipped with the reason shown
in pytest's summary; with ``LOGPHASE_REQUIRE_BROWSER=1`` (set by .ci/run, which installs Debian's
chromium first) a missing Chromium fails them instead, so CI always renders the page."""

from __future__ import annotations

import os
import shutil
import struct
import subprocess
import sys
import tempfile
import zlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from logphase.engine.whole import parse_file
from logphase.faces.timeline import FAILURE_COLOR, PHASE_COLORS
from tests.conftest import FIXTURES
from tests.test_timeline import synthetic_log

WINDOW = (1400, 1000)
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
]


MISSING = (
    "chromium is not installed: the timeline browser tests need Debian's chromium package "
    "(apt-get install -y --no-install-recommends chromium; .ci/run installs it and sets LOGPHASE_REQUIRE_BROWSER=1)"
)


# the names Chromium is installed under: Debian's package, Ubuntu's and older Debian's, Google's build
CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome")


def find_chromium() -> str | None:
    """$LOGPHASE_CHROMIUM if set (a path; one that does not exist means "no browser"), else the first
    of CHROMIUM_NAMES on $PATH (as the shell would find it: no fixed path comes first)."""
    chosen = os.environ.get("LOGPHASE_CHROMIUM")
    if chosen is not None:
        return chosen if os.access(chosen, os.X_OK) else None
    return next((found for name in CHROMIUM_NAMES if (found := shutil.which(name))), None)


def browser_required() -> bool:
    return os.environ.get("LOGPHASE_REQUIRE_BROWSER", "") not in ("", "0")


@pytest.fixture(scope="module")
def chromium() -> str:
    path = find_chromium()
    if path is None:
        if browser_required():
            pytest.fail(MISSING, pytrace=False)
        pytest.skip(MISSING)
    return path


def run_chromium(chromium: str, *args: str) -> subprocess.CompletedProcess[bytes]:
    with tempfile.TemporaryDirectory(prefix="logphase-chromium-") as profile:
        # Chromium writes to the user's home beside its profile (~/.cache/dconf, ~/.config, ~/.pki):
        # a home of its own in the temporary folder keeps the test from writing outside it
        home = {"HOME": profile, "XDG_CACHE_HOME": f"{profile}/cache", "XDG_CONFIG_HOME": f"{profile}/config"}
        return subprocess.run(
            [chromium, *CHROMIUM_FLAGS, f"--user-data-dir={profile}/profile", *args],
            capture_output=True,
            timeout=90,
            check=False,
            env={**os.environ, **home},
        )


# -- PNG, with the standard library only ------------------------------------------------------------


def decode_png(data: bytes) -> tuple[int, int, list[bytes]]:
    """(width, height, rows of RGB bytes) of an 8-bit RGB or RGBA, non-interlaced PNG."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat = 8, b""
    width = height = 0
    color_type = 0
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind = data[pos + 4 : pos + 8]
        body = data[pos + 8 : pos + 8 + length]
        pos += 12 + length
        if kind == b"IHDR":
            width, height, depth, color_type, _, _, interlace = struct.unpack(">IIBBBBB", body)
            assert depth == 8 and color_type in (2, 6) and interlace == 0, (depth, color_type, interlace)
        elif kind == b"IDAT":
            idat += body
        elif kind == b"IEND":
            break
    bpp = 3 if color_type == 2 else 4
    raw = zlib.decompress(idat)
    stride = width * bpp
    rows: list[bytes] = []
    prev = bytearray(stride)
    for y in range(height):
        start = y * (stride + 1)
        filt = raw[start]
        line = bytearray(raw[start + 1 : start + 1 + stride])
        if filt == 1:
            for i in range(bpp, stride):
                line[i] = (line[i] + line[i - bpp]) & 0xFF
        elif filt == 2:
            for i in range(stride):
                line[i] = (line[i] + prev[i]) & 0xFF
        elif filt == 3:
            for i in range(stride):
                left = line[i - bpp] if i >= bpp else 0
                line[i] = (line[i] + ((left + prev[i]) >> 1)) & 0xFF
        elif filt == 4:
            for i in range(stride):
                a = line[i - bpp] if i >= bpp else 0
                b = prev[i]
                c = prev[i - bpp] if i >= bpp else 0
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                pred = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
                line[i] = (line[i] + pred) & 0xFF
        else:
            assert filt == 0, f"unknown PNG filter {filt}"
        prev = line
        rows.append(bytes(line) if bpp == 3 else bytes(b for i in range(0, stride, 4) for b in line[i : i + 3]))
    return width, height, rows


def pixels(rows: list[bytes]) -> Iterator[bytes]:
    for row in rows:
        for i in range(0, len(row), 3):
            yield row[i : i + 3]


def rgb(color: str) -> bytes:
    return bytes.fromhex(color.lstrip("#"))


# -- the pages ---------------------------------------------------------------------------------------


CASES = {
    "kv_cache_insufficient": ("kv_cache_insufficient.log", ["--expect", "mem_fraction_static=0.88"]),
    "stale_two_runs": ("stale_two_runs.log", []),
    "sixty_four_ranks": (None, []),  # synthetic: 64 ranks in many timelines, TP17 fails
}


def case_log(case: str, tmp: Path) -> tuple[Path, list[str]]:
    name, extra = CASES[case]
    if name is not None:
        return FIXTURES / name, extra
    log = tmp / f"{case}.log"
    log.write_text(synthetic_log(ranks=64, slow={r: r * 0.5 for r in range(64)}, fail_rank=17))
    return log, extra


@pytest.mark.parametrize("case", CASES)
@pytest.mark.browser
def test_page_renders_in_chromium(case: str, chromium: str, tmp_path: Path) -> None:
    log, extra = case_log(case, tmp_path)
    name = case
    page = tmp_path / f"{name}.html"
    made = subprocess.run(
        [sys.executable, "-m", "logphase", "report", str(log), "-o", str(page), *extra], capture_output=True, timeout=60
    )
    assert made.returncode in (0, 1, 3), made.stderr
    report = parse_file(str(log))
    url = page.resolve().as_uri()

    shot = tmp_path / f"{name}.png"
    result = run_chromium(chromium, f"--screenshot={shot}", f"--window-size={WINDOW[0]},{WINDOW[1]}", url)
    assert shot.exists(), f"chromium wrote no screenshot (exit {result.returncode}): {result.stderr[-2000:]!r}"
    width, height, rows = decode_png(shot.read_bytes())
    assert (width, height) == WINDOW
    colours: dict[bytes, int] = {}
    for px in pixels(rows):
        colours[px] = colours.get(px, 0) + 1
    total = width * height
    non_white = total - colours.get(b"\xff\xff\xff", 0)
    assert non_white > total * 0.05, f"the page is nearly blank: {non_white} of {total} pixels are not white"
    assert len(colours) > 100, f"only {len(colours)} distinct colours: nothing was drawn"
    # the bars: every phase's colour fills some pixels (solid fills keep their exact colour)
    for p in report.phases:
        if p.start is not None and p.duration_s:
            assert colours.get(rgb(PHASE_COLORS[p.name]), 0) > 50, f"no {p.name.value} bar on the screenshot"
    if report.failure is not None:
        assert colours.get(rgb(FAILURE_COLOR), 0) > 100, "no failure marker on the screenshot"

    result = run_chromium(chromium, "--dump-dom", url)
    dom = result.stdout.decode("utf-8", errors="replace")
    assert "<svg" in dom and "</html>" in dom, f"chromium dumped no page: {result.stderr[-2000:]!r}"
    for p in report.phases:
        assert p.name.value in dom, f"the DOM does not name {p.name.value}"
    if report.failure is not None:
        assert report.failure.cause.value in dom
        assert f"line {report.failure.line}" in dom


def test_png_decoder_on_a_known_image() -> None:
    # 2x2 RGB, filter 0/2 rows: red, white / red, white
    raw = b"\x00" + b"\xff\x00\x00" + b"\xff\xff\xff" + b"\x02" + b"\x00" * 6
    ihdr = struct.pack(">IIBBBBB", 2, 2, 8, 2, 0, 0, 0)

    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    png = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b"")
    width, height, rows = decode_png(png)
    assert (width, height) == (2, 2)
    assert list(pixels(rows)) == [b"\xff\x00\x00", b"\xff\xff\xff"] * 2


# -- the skip is visible, and CI turns it into a failure ------------------------------------------------


def _run_browser_tests(**env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        # no -rs: the project's own addopts must show the reason
        [sys.executable, "-m", "pytest", "-n", "0", "-p", "no:cacheprovider", __file__, "-m", "browser", "-k", "stale_two_runs"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**os.environ, **env},
        cwd=FIXTURES.parents[1],
    )


def test_without_chromium_the_browser_tests_skip_with_the_reason() -> None:
    result = _run_browser_tests(LOGPHASE_CHROMIUM="/nonexistent/chromium", LOGPHASE_REQUIRE_BROWSER="0")
    assert result.returncode == 0, result.stdout[-2000:]
    assert "1 skipped" in result.stdout and "chromium is not installed" in result.stdout


def test_chromium_is_looked_up_on_path_under_each_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LOGPHASE_CHROMIUM", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    assert find_chromium() is None
    for name in reversed(CHROMIUM_NAMES):  # each name is found, the earlier ones first
        browser = tmp_path / name
        browser.write_text("#!/bin/sh\n")
        browser.chmod(0o755)
        assert find_chromium() == str(browser)
    monkeypatch.setenv("LOGPHASE_CHROMIUM", str(tmp_path / "absent"))
    assert find_chromium() is None  # the override wins, also over what PATH has


def test_ci_requires_chromium() -> None:
    result = _run_browser_tests(LOGPHASE_CHROMIUM="/nonexistent/chromium", LOGPHASE_REQUIRE_BROWSER="1")
    assert result.returncode != 0
    assert "chromium is not installed" in result.stdout and "skipped" not in result.stdout.splitlines()[-1]
