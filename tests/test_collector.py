"""The command line's garbage-collector policy (faces/collector.py): held while a command starts,
resumed (frozen start, fewer young collections) when its input is opened; the library and a
second call leave the collector alone."""

from __future__ import annotations

import gc
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from logphase.faces import collector
from logphase.faces.inputs import open_input

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "logs" / "c10d_watchdog_abort.log"


@pytest.fixture
def restored_collector() -> Iterator[None]:
    """Whatever a test does to the collector is undone (the rest of the session runs with the default)."""
    threshold, enabled = gc.get_threshold(), gc.isenabled()
    yield
    collector._held = False
    gc.unfreeze()
    gc.set_threshold(*threshold)
    if enabled:
        gc.enable()
    else:
        gc.disable()


@pytest.mark.usefixtures("restored_collector")
def test_reading_alone_leaves_the_collector_as_it_is() -> None:
    gc.enable()
    before = gc.get_threshold()
    collector.reading()
    assert gc.isenabled()
    assert gc.get_threshold() == before
    assert gc.get_freeze_count() == 0


@pytest.mark.usefixtures("restored_collector")
def test_starting_holds_and_opening_the_input_resumes() -> None:
    gc.enable()
    collector.starting()
    assert not gc.isenabled()
    handle, _ = open_input(str(FIXTURE))
    handle.close()
    assert gc.isenabled()
    assert gc.get_threshold() == collector._READING_THRESHOLD
    assert gc.get_freeze_count() > 0
    collector.reading()  # a second input: nothing more to do
    assert gc.isenabled()


@pytest.mark.usefixtures("restored_collector")
def test_starting_leaves_a_collector_someone_else_stopped() -> None:
    gc.disable()
    collector.starting()
    collector.reading()
    assert not gc.isenabled()  # not ours to resume
    assert gc.get_freeze_count() == 0


def test_a_command_reads_with_the_collector_on() -> None:
    """The whole entry point, as a process: by the time the log is read the collector runs again."""
    # entry_point ends with os._exit: its two steps are run here, then what the spy saw is printed
    probe = (
        "import gc\n"
        "from logphase.faces import cli, collector\n"
        "from logphase.engine import whole\n"
        "seen = []\n"
        "real = whole.read_all\n"
        "def spy(*args, **kwargs):\n"
        "    seen.append((gc.isenabled(), gc.get_freeze_count() > 0))\n"
        "    return real(*args, **kwargs)\n"
        "whole.read_all = spy\n"
        "collector.starting()\n"
        f"cli.main(['parse', {str(FIXTURE)!r}, '--json'])\n"
        "print(seen)\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=False)
    assert done.stderr == ""
    assert done.stdout.strip().splitlines()[-1] == "[(True, True)]"
