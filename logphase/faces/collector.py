"""The garbage collector's policy for a logphase process: the command line owns its process, the
library leaves the collector as it finds it.

A start builds some 70,000 objects that live until exit (modules, the packs' tables, pydantic's
validators) and makes few reference cycles; reading then makes many short-lived objects that
reference counting frees. CPython's default collects the youngest objects every 700 allocations and,
every few of those, scans everything again: that was 13 % of a 50-line parse and 8 % of the real
logs (docs/performance.md). So no collection runs while a command starts; when its input is about
to be read, what exists is frozen (never scanned again) and collections resume, less often.
"""

from __future__ import annotations

import gc

# the youngest generation's threshold once reading: each young collection then looks at ~10,000
# objects that mostly died already, and the rare cycles of a long ``follow`` are still freed
_READING_THRESHOLD = (10_000, 10, 10)

_held = False  # starting() stopped the collector and reading() has not resumed it yet


def starting() -> None:
    """Stop collections while the command starts (its imports and tables)."""
    global _held
    if gc.isenabled():
        gc.disable()
        _held = True


def reading() -> None:
    """The input is about to be read: freeze what the start built and collect again. Does nothing
    unless :func:`starting` stopped the collector (the library, tests, a second call)."""
    global _held
    if not _held:
        return
    _held = False
    gc.freeze()
    gc.set_threshold(*_READING_THRESHOLD)
    gc.enable()
