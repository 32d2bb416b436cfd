#!/usr/bin/env python3
"""The overrides of each server's catalogue as its pack's data: ``grammars/<pack>/overrides.json``.

Every override a release's source holds (``mine_overrides.py``: a log call next to an assignment to
a setting, in the catalogue's ``overrides``) that a server prints while it starts becomes a row:
the literal pieces of its first line (the text between its placeholders, as the notes'), the
setting it changes, what each placeholder of that line holds (``requested``: the value asked
for; ``actual``: the value in force; ``other``), the value the source assigns when it is a
constant (the value in force when the text does not print it), its level and the releases that
print it. ``logphase/recognising/overrides.py`` reads them: a line whose whole message is a row's
becomes a ``parameter_override`` event, an ``ignored_parameter`` warning in the report.

Left out: a setting filled in because it was unset (``default``: a choice, not a change of what
was asked for), lines printed below the default log level or while serving, and texts with too
little literal text to be specific (the notes' measure, ``sglang_notes.specific``). When two
releases print the same text for different settings, the newest release's row is kept.

    python scripts/override_rows.py     # rewrites both files (python scripts/knowledge.py --update runs it)
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from knowledge import (  # the scripts folder is not a package: found through sys.path
    ROOT,
    catalogue,
    printed_override,
    versions,
    vllm_catalogue,
    vllm_versions,
)
from sglang_notes import specific

COLUMNS = ("pieces", "setting", "roles", "value", "level", "releases")
_FIELD = re.compile(r"\{\{|\}\}|\{([^{}]*(?:\{[^{}]*\}[^{}]*)*)\}")
_PERCENT = re.compile(r"%%|%(?:\([^)]*\))?[-+ #0]*(?:\d+|\*)?(?:\.(?:\d+|\*))?[sdifrgexXcaou]")
_HOLE = re.compile(r"\x00(\d+)\x01")


def line_pieces(template: str, fmt: str, roles: list[str]) -> tuple[list[str], list[str]] | None:
    """(the literal pieces of the message's first line that shows anything, the roles of the
    placeholders on it), or None for a message that is a runtime value."""
    if fmt in ("expr", "none"):
        return None
    pattern = _FIELD if fmt in ("fstring", "format") else _PERCENT if fmt == "percent" else None
    escapes = {"{{": "{", "}}": "}", "%%": "%"}
    out, pos, n = "", 0, 0
    for m in pattern.finditer(template) if pattern else ():
        out += template[pos : m.start()]
        if m.group(0) in escapes:
            out += escapes[m.group(0)]
        else:
            out += f"\x00{n}\x01"
            n += 1
        pos = m.end()
    out += template[pos:]
    for line in out.split("\n"):
        if _HOLE.sub("x", line).strip():
            parts = _HOLE.split(line)
            pieces, holes = parts[0::2], [int(i) for i in parts[1::2]]
            pieces[0], pieces[-1] = pieces[0].lstrip(), pieces[-1].rstrip()
            return pieces, [roles[i] if i < len(roles) else "other" for i in holes]
    return None


def _rows(releases: list[str], overrides_of: dict[str, list[dict]]) -> list[list]:
    """The rows of one server, from its releases' overrides (oldest first: a newer release's row wins)."""
    found: dict[tuple[str, ...], list] = {}
    for i, version in enumerate(releases):
        for o in overrides_of[version]:
            line = line_pieces(o["template"], o["format"], o["roles"])
            if line is None or not specific(line[0]):
                continue
            pieces, roles = line
            key = tuple(pieces)
            row = found.get(key)
            if row is None or row[1] != o["setting"]:
                found[key] = row = [list(pieces), o["setting"], roles, o.get("value"), o["level"], []]
            if i not in row[5]:
                row[5].append(i)
    return [found[k] for k in sorted(found)]


def sglang_overrides(version: str) -> list[dict]:
    return [o for o in catalogue(version).get("overrides", []) if printed_override(o, None)]


def vllm_overrides(version: str) -> list[dict]:
    cat = vllm_catalogue(version)
    areas = {path: f["area"] for path, f in cat["files"].items()}
    return [o for o in cat.get("overrides", []) if printed_override(o, areas)]


def data(server: str) -> dict:
    releases = versions() if server == "sglang" else vllm_versions()
    of = sglang_overrides if server == "sglang" else vllm_overrides
    return {
        "schema": 1,
        "generator": "scripts/override_rows.py",
        "about": (
            f"The settings {server} changes on its own and says so, from the catalogue's `overrides` (scripts/mine_overrides.py: "
            "a log call next to an assignment to a setting), one row per text: the literal pieces of its first line, the "
            "setting, what each placeholder of the line holds (requested: the value asked for; actual: the value in force; "
            "other), the constant the source assigns (the value in force when the text does not print it), the level, the "
            "releases (indices into `releases`). Read by logphase/recognising/overrides.py: a line that is a row's whole "
            "message is a parameter_override event. Regenerate: python scripts/override_rows.py (python scripts/knowledge.py "
            "--update runs it)"
        ),
        "releases": releases,
        "columns": list(COLUMNS),
        "overrides": _rows(releases, {v: of(v) for v in releases}),
    }


def dumps(payload: dict) -> str:
    """One row a line: a regeneration's diff shows the rows that changed."""
    head = {k: v for k, v in payload.items() if k != "overrides"}
    body = ",\n".join(json.dumps(row, separators=(",", ":"), ensure_ascii=False) for row in payload["overrides"])
    return json.dumps(head, indent=1, ensure_ascii=False)[:-2] + ',\n "overrides": [\n' + body + "\n ]\n}\n"


def path_of(server: str) -> Path:
    return ROOT / "grammars" / server / "overrides.json"


def write() -> dict[str, int]:
    """Rewrite both packs' files; returns how many rows each."""
    out = {}
    for server in ("sglang", "vllm"):
        payload = data(server)
        path_of(server).write_text(dumps(payload))
        out[server] = len(payload["overrides"])
    return out


def main() -> int:
    for server, n in write().items():
        print(f"{n} overrides -> {path_of(server).relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
