"""A server, by the name a report gives it (``Report.server``, ``--server``): its pack's name. Which
servers there are is the packs' registry's to say (``logphase/packs/registry.py``)."""

from __future__ import annotations

Server = str
