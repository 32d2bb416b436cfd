"""logphase: which startup phase an SGLang server is in, how long each took, and why it failed.

The public API. Names are imported on first use, so that ``import logphase`` (and ``logphase
--help``) does not build the grammars' parsers.

    report = logphase.parse_file("server.log", expect={"mem_fraction_static": 0.88})
    print(report.outcome, report.phase, report.failure and report.failure.cause)
"""

from __future__ import annotations

import importlib

# (typing.TYPE_CHECKING without importing typing: `logphase probe` starts with this module, and a
# probe run every few seconds imports nothing it does not need; mypy reads this name as typing's)
TYPE_CHECKING = False

__version__ = "0.1.0"

# public name -> the module that defines it
_LAZY = {
    "Engine": "logphase.engine.engine",
    "parse_bytes": "logphase.engine.whole",
    "parse_file": "logphase.engine.whole",
    "parse_text": "logphase.engine.whole",
    "Event": "logphase.vocabulary.events",
    "EventBase": "logphase.vocabulary.events",
    "Phase": "logphase.vocabulary.phases",
    "Cause": "logphase.vocabulary.causes",
    "Report": "logphase.reporting.report",
    "MergedReport": "logphase.reporting.merge",
    "merge": "logphase.reporting.merge",
    "SCHEMA_VERSION": "logphase.reporting.report",
    "FollowOptions": "logphase.faces.live.follow",
    "Follower": "logphase.faces.live.follow",
    "follow_file": "logphase.faces.live.follow",
    "follow_stream": "logphase.faces.live.follow",
    "FollowRecord": "logphase.faces.live.follow_records",
    "CheckResult": "logphase.faces.oracle",
    "Comparison": "logphase.faces.oracle",
    "Expectations": "logphase.faces.oracle",
    "check": "logphase.faces.oracle",
    "compare": "logphase.faces.oracle",
    "assert_startup": "logphase.testing",
    "LogphaseError": "logphase.vocabulary.errors",
    "keep_cache": "logphase.packs.derived",
}

if TYPE_CHECKING:
    from logphase.engine.engine import Engine
    from logphase.engine.whole import parse_bytes, parse_file, parse_text
    from logphase.faces.live.follow import Follower, FollowOptions, follow_file, follow_stream
    from logphase.faces.live.follow_records import FollowRecord
    from logphase.faces.oracle import CheckResult, Comparison, Expectations, check, compare
    from logphase.packs.derived import keep_cache
    from logphase.reporting.merge import MergedReport, merge
    from logphase.reporting.report import SCHEMA_VERSION, Report
    from logphase.testing import assert_startup
    from logphase.vocabulary.causes import Cause
    from logphase.vocabulary.errors import LogphaseError
    from logphase.vocabulary.events import Event, EventBase
    from logphase.vocabulary.phases import Phase


def __getattr__(name: str) -> object:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'logphase' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # the next lookup is a plain attribute
    return value


def __dir__() -> list[str]:
    return sorted(__all__)


__all__ = [
    "SCHEMA_VERSION",
    "Cause",
    "CheckResult",
    "Comparison",
    "Engine",
    "Event",
    "EventBase",
    "Expectations",
    "FollowOptions",
    "FollowRecord",
    "Follower",
    "LogphaseError",
    "MergedReport",
    "Phase",
    "Report",
    "__version__",
    "assert_startup",
    "check",
    "compare",
    "follow_file",
    "follow_stream",
    "keep_cache",
    "merge",
    "parse_bytes",
    "parse_file",
    "parse_text",
]
