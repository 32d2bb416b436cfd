"""The registry of packs: everything logphase knows, one pack per server and one shared by all.

A pack (``pack.Pack``) is data: its grammars in ``grammars/<name>/``, its rows in
``logphase/servers/<name>.py``. The pipeline reads the packs in this order (the shared vocabularies
first); adding a server is a grammar folder, a module here, and one line in ``PACKS``.
"""

from __future__ import annotations

from logphase.servers import sglang, shared
from logphase.servers.pack import Pack

PACKS: tuple[Pack, ...] = (
    shared.PACK,
    sglang.PACK,
)
