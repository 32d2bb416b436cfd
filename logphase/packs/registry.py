"""The registry of packs: one line per pack, and the folders they live in. Light: ``logphase
--help`` reads it (the ``--server`` choices) and loads no pack.

A pack is a folder of ``grammars/``: its grammars (``*.lark``), its rows (``pack.py``: messages,
failure signatures, functions by phase, hints, start rules) and the data mined for it (notes,
catalogue). Adding a server is its folder and one line here. Packs from elsewhere are read from the
folders ``LOGPHASE_PACKS`` names (separated as ``PATH`` is), after the registry's, each a server's.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path

# (folder, the server's name as its project spells it; None: the vocabularies servers share), in the
# order the stages read the packs: the shared one first
REGISTRY: tuple[tuple[str, str | None], ...] = (
    ("shared", None),
    ("sglang", "SGLang"),
    ("vllm", "vLLM"),
    ("trtllm", "TensorRT-LLM"),
)
# folders of packs that are not in the registry (a pack being written, a private server)
EXTRA_PACKS_ENV = "LOGPHASE_PACKS"
SHARED_PACK = REGISTRY[0][0]


@functools.cache
def grammars_root() -> Path:
    """The folder of the registry's packs: inside the package when installed (the wheel carries it as
    ``logphase/grammars``), the checkout's top-level ``grammars/`` otherwise."""
    package = Path(__file__).resolve().parent.parent
    for candidate in (package / "grammars", package.parent / "grammars"):
        if (candidate / SHARED_PACK / "pack.py").is_file():
            return candidate
    raise FileNotFoundError("logphase's packs (grammars/) not found next to the package")


def extra_folders() -> tuple[Path, ...]:
    """The folders ``LOGPHASE_PACKS`` names, in its order."""
    value = os.environ.get(EXTRA_PACKS_ENV, "")
    return tuple(Path(part).resolve() for part in value.split(os.pathsep) if part)


@functools.cache
def pack_folders() -> tuple[Path, ...]:
    """Every pack's folder, in the order the stages read them."""
    root = grammars_root()
    return (*(root / name for name, _ in REGISTRY), *extra_folders())


# how the registry's servers' projects spell them (headlines; a pack of LOGPHASE_PACKS says it itself)
SERVER_NAMES: dict[str, str] = {name: display for name, display in REGISTRY if display is not None}
# the servers logphase reads, by the name a report gives them (``Report.server``, ``--server``)
SERVERS: tuple[str, ...] = (*SERVER_NAMES, *(folder.name for folder in extra_folders() if folder.name not in SERVER_NAMES))
