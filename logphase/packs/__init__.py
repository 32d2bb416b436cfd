"""Stage 1, packs: everything logphase knows, one pack per server and one shared by all; this
module is their registry.

A pack (``rows.Pack``) is data: its grammars in ``grammars/<name>/``, its rows in
``logphase/packs/<name>.py``. The pipeline reads the packs in the order of ``PACKS`` (the shared
vocabularies first); adding a server is a grammar folder, a module here, and one line in ``PACKS``.
The packs are loaded on first use (``from logphase.packs import PACKS``): their rows name the event
builders, and ``import logphase`` or ``logphase --help`` need none of them.
"""

from __future__ import annotations

import functools

from logphase.packs.rows import Pack


@functools.cache
def packs() -> tuple[Pack, ...]:
    """Every pack, in the order the pipeline reads them."""
    from logphase.packs import sglang, shared, vllm

    return (
        shared.PACK,
        sglang.PACK,
        vllm.PACK,
    )


# every pack, in order: the value of packs(), read on first use (module __getattr__ below)
PACKS: tuple[Pack, ...]


def __getattr__(name: str) -> object:
    if name == "PACKS":
        return packs()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
