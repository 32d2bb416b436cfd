"""What to change: a hint for each cause, aware of the phase it struck in and of the numbers the
log gives (the --mem-fraction-static in use, the largest captured batch ...).

The hints are the packs' rows (``pack.Hint``: cause, phases, the values a row needs, a template):
a run gets its server's rows (vLLM advice names vLLM's flags) and the shared ones. This module fills
the templates' values from the log and picks the row: for the cause, a row that needs a value the
log gives goes first, then a row for the phase, then the cause's general row.
"""

from __future__ import annotations

from typing import Any

from logphase.packs import PACKS
from logphase.packs.rows import Hint
from logphase.recognising.detect import server_of_config
from logphase.vocabulary.causes import Cause
from logphase.vocabulary.phases import Phase

HINTS: tuple[Hint, ...] = tuple(h for pack in PACKS for h in pack.hints)
# the server's config keys the hints quote, by the name the templates give them
SETTINGS: dict[str, str] = {name: key for pack in PACKS for name, key in pack.hint_settings.items()}
NO_HINT = "The log shows a failure but not its cause."

_SHARED = tuple(pack for pack in PACKS if not pack.server)
_SERVERS = {pack.name: pack for pack in PACKS if pack.server}


def _rows(server: str | None) -> tuple[Hint, ...]:
    """The server's own rows first, then the shared ones (a server's row wins a tie); the shared ones
    alone when no server is known: advice that names no server's flags."""
    own = _SERVERS[server].hints if server in _SERVERS else ()
    return (*own, *(h for shared in _SHARED for h in shared.hints))


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) else None


def hint_values(
    phase: Phase | None, config: dict[str, Any], facts: dict[str, Any], server: str | None = None
) -> dict[str, Any]:
    """The values a hint's template may name; a value the log does not give is absent (or, for the
    ``*_text`` parts, empty)."""
    values = _common_values(phase, config, facts)
    # every setting of the server's pack: '{gmu_text}' is ' (now 0.9)' when the dump gives it
    known = server or server_of_config(config)
    pack = _SERVERS.get(known) if known is not None else None
    for name, key in (pack.hint_settings if pack is not None else {}).items():
        values.setdefault(f"{name}_text", f" (now {config[key]})" if config.get(key) is not None else "")
    return values


def _common_values(phase: Phase | None, config: dict[str, Any], facts: dict[str, Any]) -> dict[str, Any]:
    mfs = config.get(SETTINGS.get("mfs", ""))
    max_bs = facts.get("max_capture_bs") or config.get(SETTINGS.get("max_bs", ""))
    port = config.get(SETTINGS.get("port", ""))
    mfs_n, max_bs_n = _number(mfs), _number(max_bs)
    values: dict[str, Any] = {
        "mfs_text": f" (now {mfs})" if mfs is not None else "",
        "target": f"{min(mfs_n + 0.04, 0.95):.2f}" if mfs_n is not None else "a higher value",
        "lower": f" to {max(mfs_n - 0.05, 0.1):.2f}" if mfs_n is not None else "",
        "bs_text": f" (largest captured: {max_bs}; try {max(1, int(max_bs_n) // 2)})" if max_bs_n is not None else "",
        "port_text": f" {port}" if port is not None else "",
        "where": f" during {phase.value}" if phase else "",
    }
    if phase is not None:
        values["phase"] = phase.value
    values["lagging_text"] = _lagging_text(facts.get("lagging"))
    values.update(facts.get("stated") or {})  # what the error itself states (the minimum that would fit)
    if facts.get("native_crash"):
        values["native_crash"] = True
    if facts.get("check"):
        values[f"{facts['check']}_check"] = True  # the server's own check raised it: its rows' advice
    return values


def _listed(names: list[str]) -> str:
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


def _lagging_text(lagging: tuple[list[str], list[str]] | None) -> str:
    """'{lagging_text}' of a timeout's hint: the rank the others waited for, when the log shows it
    (every other rank reported the wait, it did not); empty otherwise."""
    if not lagging:
        return ""
    late, waited = lagging
    return f" (here {_listed(late)}: {_listed(waited)} timed out waiting, {'it' if len(late) == 1 else 'they'} did not)"


def _fits(row: Hint, cause: Cause, phase: Phase | None, values: dict[str, Any]) -> bool:
    return row.cause is cause and (row.phases is None or phase in row.phases) and all(name in values for name in row.needs)


def _specificity(row: Hint) -> int:
    """A row that needs a value comes first, then a row for some phases, then the general one."""
    return 0 if row.needs else 1 if row.phases is not None else 2


def hint(cause: Cause, phase: Phase | None, config: dict[str, Any], facts: dict[str, Any], server: str | None = None) -> str:
    """What to change, for this cause in this phase, in the flags of the run's server (``server``, a
    pack's name; else told by the run's configuration dump), with numbers from the log where it has them;
    with no server known, the shared advice, which names no server's flags."""
    server = server or facts.get("server") or server_of_config(config)
    values = hint_values(phase, config, facts, server)
    rows = sorted((r for r in _rows(server) if _fits(r, cause, phase, values)), key=_specificity)
    return rows[0].text.format(**values) if rows else NO_HINT
